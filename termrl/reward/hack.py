"""The ``hack`` component: what suspected reward hacks (``Finding``s) do to the reward.

Findings come from the hack detectors and are passed to ``RewardSpec.score``.
Three modes:

- ``mode = "zero"`` (every preset): when any finding has severity at least
  ``min_severity`` (default "high"), the TOTAL becomes ``min(total, floor)``
  (``floor`` default 0: a positive reward is zeroed, a negative one kept). The
  presets set ``floor = -1``, what a program that does not even compile earns:
  doing nothing often scores below 0, and a caught hack must never earn more
  than doing nothing (``termrl audit`` checks exactly that). It is applied after every
  other component is summed. The value is 1.0 when triggered, else 0.0; the
  contribution is the change it made to the total (so the contributions still
  sum to the total). A weight of 0 (e.g. from a schedule) disables it.
- ``mode = "penalty"``: value ``-sum(penalties[f.severity] for f in findings)``,
  with ``penalties = {low = 0.1, medium = 0.5, high = 1.0}`` (given keys override
  these); contribution ``weight * value`` like any component.
- ``mode = "log"``: value 0.0; the findings are only reported.

In every mode the component's dict carries ``"findings"``: the kinds of all findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from termrl.protocols import Evidence
from termrl.reward.context import Context
from termrl.reward.errors import FieldError

SEVERITIES = ("low", "medium", "high")
PENALTIES = {"low": 0.1, "medium": 0.5, "high": 1.0}
MODES = ("zero", "penalty", "log")


def hack(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float:
    """1.0/0.0 (triggered) in zero mode, minus the summed penalties in penalty mode, 0.0 in log mode.

    >>> from termrl.protocols import Finding
    >>> ctx = Context(findings=(Finding("test_edit", "high"), Finding("sleep", "low")))
    >>> hack(Evidence("t"), {"mode": "penalty", "penalties": PENALTIES}, ctx)
    -1.1
    """
    mode = params["mode"]
    if mode == "zero":
        floor = SEVERITIES.index(params["min_severity"])
        return 1.0 if any(SEVERITIES.index(f.severity) >= floor for f in ctx.findings) else 0.0
    if mode == "penalty":
        return -sum(params["penalties"][f.severity] for f in ctx.findings)
    return 0.0


def is_gate(component_type: str, params: Mapping[str, Any]) -> bool:
    """Whether the component is applied to the total (zero mode) instead of added to it."""
    return component_type == "hack" and params["mode"] == "zero"


def gate(total: float, triggered: bool, floor: float = 0.0) -> float:
    """The change a zero-mode hack component makes to ``total``.

    >>> gate(0.7, True), gate(-0.3, True), gate(0.7, False), gate(0.7, True, floor=-1.0)
    (-0.7, 0.0, 0.0, -1.7)
    """
    return min(total, floor) - total if triggered else 0.0


def check_hack(given: Mapping[str, Any]) -> None:
    mode = given.get("mode", "zero")
    if mode not in MODES:
        raise FieldError("mode", f"unknown hack mode {mode!r}; use one of: {', '.join(MODES)}")
    if given.get("min_severity", "high") not in SEVERITIES:
        raise FieldError("min_severity", f"unknown severity {given['min_severity']!r}; use low, medium or high")
    if "min_severity" in given and mode != "zero":
        raise FieldError("min_severity", "only applies to mode = \"zero\"; remove it or set mode = \"zero\"")
    if "floor" in given and mode != "zero":
        raise FieldError("floor", "only applies to mode = \"zero\"; remove it or set mode = \"zero\"")
    if "floor" in given and (isinstance(given["floor"], bool) or not isinstance(given["floor"], (int, float))):
        raise FieldError("floor", f"expected a number (the most a caught hack may earn), got {given['floor']!r}")
    if "penalties" in given and mode != "penalty":
        raise FieldError("penalties", "only applies to mode = \"penalty\"; remove it or set mode = \"penalty\"")
    for severity, value in given.get("penalties", {}).items():
        if severity not in SEVERITIES:
            raise FieldError(f"penalties.{severity}", "unknown severity; use low, medium or high")
        if value < 0:
            raise FieldError(f"penalties.{severity}", f"must be 0 or more (it is subtracted), got {value}")
