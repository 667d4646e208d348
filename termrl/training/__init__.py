"""Training built on TRL: ``grpo`` (online, in termrl environments), ``ahead`` (TRL's GRPO trainer
that starts each rollout's tool calls and reward while the batch still generates), ``sft`` (the
warm start on reference solutions), ``rft`` (rejection-sampling fine-tuning on trajectories) and
``dpo`` (pairs ranked by execution). ``termrl quickstart`` is ``train(QUICKSTART)``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from termrl.training.config import TrainConfig, load_config

QUICKSTART = Path(__file__).resolve().parents[2] / "configs" / "quickstart.toml"
"""The quickstart's config (``termrl quickstart``), in the source tree termrl runs from."""


def train(config: TrainConfig | str | os.PathLike, *, resume: bool = False, overrides: Sequence[str] = ()) -> dict:
    """One training run as ``config`` says (a ``TrainConfig``, or the path of its TOML file with
    ``overrides`` such as ``"grpo.learning_rate=1e-5"`` applied), held-out evaluation included;
    returns what ``termrl train --json`` prints (``output_dir/results.json``). ``resume``: finish
    the run in ``output_dir`` from its last checkpoint.

    Raises ``ConfigError`` for a config that cannot be read or is not valid, ``ResumeError`` for
    an ``output_dir`` that holds another run (or a run, without ``resume``)."""
    from termrl.training.run import run_training  # heavy: torch, transformers and TRL load with the trainer

    if not isinstance(config, TrainConfig):
        config = load_config(config, list(overrides))
    elif overrides:
        raise TypeError("overrides apply to a config file; change the TrainConfig's fields instead")
    return run_training(config, resume=resume)
