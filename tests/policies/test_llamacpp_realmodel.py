"""Opt-in tier (``pytest -m realmodel``): llama.cpp (GGUF q8_0) against CTranslate2 int8 on a real model.

    bash scripts/build_llamacpp.sh                      # llama-server, llama-quantize (15 minutes)
    ../shared/tools/qwen2.5-coder-0.5b.sh /root/.cache/termrl/models/qwen2.5-coder-0.5b-instruct
    TERMRL_REAL_MODEL=/root/.cache/termrl/models/qwen2.5-coder-0.5b-instruct \\
        .venv/bin/python -m pytest -m realmodel tests/policies/test_llamacpp_realmodel.py

Both backends play the same held-out slice greedily, replies stopped at their action: their pass
rates must not differ beyond noise (the paired McNemar test over the episodes), as CTranslate2's
did against transformers (``test_ct2_realmodel.py``). results/cpu-engines reports the counts, with
``bench/cpu_engines.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from termrl.env import EnvConfig
from termrl.eval.metrics import paired, passed_fraction
from termrl.policies import make_policy
from termrl.policies.llamacpp import find_llama_cpp
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.tasks.suites import resolve

pytestmark = [pytest.mark.realmodel, pytest.mark.sandbox]

SLICE = os.environ.get("TERMRL_LLAMACPP_PARITY_SLICE", "py-function:heldout-v1:0-19")
DECODING = {"temperature": 0.0, "max_new_tokens": 384, "stop_at_action": True, "threads": 1}


@pytest.fixture(scope="module")
def model_dir() -> Path:
    path = Path(os.environ.get("TERMRL_REAL_MODEL", "/work/qwen-coder"))
    if not (path / "config.json").is_file():
        pytest.fail(f"no model at {path}: build it with ../shared/tools/qwen2.5-coder-0.5b.sh {path} "
                    "(or point TERMRL_REAL_MODEL at one)")
    try:
        find_llama_cpp()
    except ValueError as e:
        pytest.fail(str(e))
    return path


def test_q8_0_pass_rate_is_ctranslate2_int8_within_noise(model_dir):
    tasks = [entry.task for entry in resolve(SLICE)]
    config = RolloutConfig(workers=4, env=EnvConfig(max_steps=2, time_limit_s=3600))
    played = {}
    for kind in ("ct2", "llamacpp"):
        policy = make_policy(f"{kind}:{model_dir}", **DECODING)
        played[kind] = run_rollouts(tasks, policy, config)
        getattr(policy, "close", lambda: None)()
    for episodes in played.values():
        assert all(t.ending != "error" for t in episodes), [t.error for t in episodes]
    pairs = paired(played["ct2"], played["llamacpp"])
    (ct2, n), (llama, _) = passed_fraction(played["ct2"]), passed_fraction(played["llamacpp"])
    assert pairs and pairs["episodes"] == n == len(tasks)
    assert pairs["mcnemar_p"] >= 0.05, (ct2, llama, pairs)
    assert llama >= ct2 - max(2, n // 10), (ct2, llama)
