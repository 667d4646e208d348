"""Reward engineering: turn ``Evidence`` of a finished episode into a ``Reward``.

A reward is a weighted sum of named components, declared in a TOML spec
(``spec``), each weight a number or a schedule over training progress
(``schedules``), each component a plain function of the evidence
(``components`` and the modules it lists). A failed verification gives
``total=None``, never 0.

>>> from termrl.protocols import Evidence
>>> load_spec("coderl").score(Evidence("t", passed=True)).total
1.0
"""

from termrl.reward.errors import SpecError
from termrl.reward.spec import Component, RewardSpec, as_spec, load_spec, preset_names, spec_from_dict

__all__ = ["Component", "RewardSpec", "SpecError", "as_spec", "load_spec", "preset_names", "spec_from_dict"]
