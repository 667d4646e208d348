"""A tiny local Hugging Face model plays whole episodes: env, runner, store, tokens and logprobs."""

from __future__ import annotations

import math

import pytest

from termrl.env import EnvConfig
from termrl.policies import make_policy
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.rollout.store import TrajectoryStore
from termrl.tasks.suites import find_task

pytestmark = pytest.mark.sandbox


def test_tiny_model_completes_episodes_with_tokens_and_logprobs(tiny_model, tmp_path):
    policy = make_policy(f"hf:{tiny_model}", temperature=1.0, max_new_tokens=24, seed=0)
    tasks = [find_task("logs-count-1"), find_task("shell-count-errors")]
    store = TrajectoryStore(tmp_path / "run")
    config = RolloutConfig(samples=2, workers=2, env=EnvConfig(max_steps=3, max_format_errors=3))
    got = run_rollouts(tasks, policy, config, store=store)

    assert len(got) == 4 and all(t.ending != "error" for t in got), [t.error for t in got]
    assert all(t.reward is not None and t.evidence is not None for t in got)
    steps = [s for t in got for s in t.steps]
    assert steps and all(s.tokens and len(s.logprobs) == len(s.tokens) for s in steps)
    assert all(lp <= 0 and math.isfinite(lp) for s in steps for lp in s.logprobs)
    assert all(s.prompt_tokens and s.gen_s > 0 for s in steps)
    assert all(t.timing.get("generation", 0) > 0 for t in got)
    back = {t.episode_id: t for t in store.read()}
    first = got[0]
    assert back[first.episode_id].steps[0].tokens == first.steps[0].tokens
