"""Opt-in tier (``pytest -m realmodel``): CTranslate2 int8 against transformers on a real model.

    ../shared/tools/qwen2.5-coder-0.5b.sh /root/.cache/termrl/models/qwen2.5-coder-0.5b-instruct
    TERMRL_REAL_MODEL=/root/.cache/termrl/models/qwen2.5-coder-0.5b-instruct \\
        .venv/bin/python -m pytest -m realmodel tests/policies/test_ct2_realmodel.py

Both backends play the same held-out slice greedily, replies stopped at their action: their pass
rates must not differ beyond noise (the paired McNemar test over the episodes). results/ct2 reports
the measured counts, with ``bench/ct2_speed.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from termrl.env import EnvConfig
from termrl.eval.metrics import paired, passed_fraction
from termrl.policies import make_policy
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.tasks.suites import resolve

pytestmark = [pytest.mark.realmodel, pytest.mark.sandbox]

SLICE = os.environ.get("TERMRL_CT2_PARITY_SLICE", "py-function:heldout-v1:0-19")
DECODING = {"temperature": 0.0, "max_new_tokens": 384, "stop_at_action": True}


@pytest.fixture(scope="module")
def model_dir() -> Path:
    path = Path(os.environ.get("TERMRL_REAL_MODEL", "/work/qwen-coder"))
    if not (path / "config.json").is_file():
        pytest.fail(f"no model at {path}: build it with ../shared/tools/qwen2.5-coder-0.5b.sh {path} "
                    "(or point TERMRL_REAL_MODEL at one)")
    return path


def test_int8_pass_rate_is_transformers_within_noise(model_dir):
    tasks = [entry.task for entry in resolve(SLICE)]
    config = RolloutConfig(workers=4, env=EnvConfig(max_steps=2, time_limit_s=3600))
    played = {kind: run_rollouts(tasks, make_policy(f"{kind}:{model_dir}", **DECODING), config)
              for kind in ("hf", "ct2")}
    for episodes in played.values():
        assert all(t.ending != "error" for t in episodes), [t.error for t in episodes]
    pairs = paired(played["hf"], played["ct2"])
    (hf, n), (ct2, _) = passed_fraction(played["hf"]), passed_fraction(played["ct2"])
    assert pairs and pairs["episodes"] == n == len(tasks)
    assert pairs["mcnemar_p"] >= 0.05, (hf, ct2, pairs)
    assert ct2 >= hf - max(2, n // 10), (hf, ct2)
