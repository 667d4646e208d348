"""Opt-in tier (``pytest -m realmodel``): a real pretrained code model plays built-in tasks.

Build it once (about 3 minutes, no hub access)::

    ../shared/tools/qwen-coder-1.5b.sh /work/qwen-coder
    TERMRL_REAL_MODEL=/work/qwen-coder .venv/bin/python -m pytest -m realmodel

The model answers in its own words through its own chat template; the environment
parses its tool calls or fenced blocks. This tier checks that episodes complete end to
end with parsed actions, tokens and logprobs -- not how well the model does (the README
reports its measured pass@1 with the command that reproduces it).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from termrl.env import EnvConfig
from termrl.policies import make_policy
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.tasks.suites import find_task

pytestmark = [pytest.mark.realmodel, pytest.mark.sandbox]

TASKS = ["shell-count-errors", "py-roman-numerals", "c-fix-compile-error"]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    path = Path(os.environ.get("TERMRL_REAL_MODEL", "/work/qwen-coder"))
    if not (path / "config.json").is_file():
        pytest.fail(f"no model at {path}: build it with ../shared/tools/qwen-coder-1.5b.sh {path} "
                    "(or point TERMRL_REAL_MODEL at one)")
    return path


def test_real_model_completes_episodes_with_its_own_chat_template(model_dir):
    policy = make_policy(f"hf:{model_dir}", temperature=0.0, max_new_tokens=320)
    config = RolloutConfig(workers=3, env=EnvConfig(max_steps=3, time_limit_s=3600))
    got = run_rollouts([find_task(t) for t in TASKS], policy, config)

    assert len(got) == len(TASKS)
    assert all(t.ending != "error" and t.reward is not None for t in got), [t.error for t in got]
    steps = [s for t in got for s in t.steps]
    acted = [s for s in steps if s.action and s.action["kind"] in ("command", "write")]
    assert acted, [s.reply[:200] for s in steps]  # the model's native output was understood
    assert all(s.tokens and len(s.logprobs) == len(s.tokens) for s in steps)
    assert all(math.isfinite(lp) and lp <= 0 for s in steps for lp in s.logprobs)
    assert "<|im_start|>" not in "".join(s.reply for s in steps)
