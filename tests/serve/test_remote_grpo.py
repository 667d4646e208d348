"""GRPO with its episodes on a ``termrl serve`` server reproduces the in-process run bit for bit.

The same scripted tiny-model run as ``tests/train/test_grpo.py`` (real TRL, real sandboxes, real
verification), once with ``EnvironmentFactory`` and once with ``RemoteEnvironmentFactory`` against a
server on 127.0.0.1 serving the same tasks: the tool results the model is trained on, every
rollout's reward component, and the trained weights are identical."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from termrl.env import EnvConfig
from termrl.serve.server import Served, running
from termrl.tasks.suites import find_task
from termrl.training.grpo import train_grpo
from tests.train.test_grpo import (
    BAD,
    CONFIG,
    GOOD,
    HELLO,
    call,
    capture_batches,
    config,
    leftover_sandboxes,
    load,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from termrl.policies.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"), hidden_size=16, layers=1, heads=2)


def play(tiny, tmp_path, monkeypatch, remote: list[str]):
    from termrl.reward.exports.trl import BatchScorer

    logs = find_task("logs-count-3")
    scripts = {"Write the word hello": [GOOD, BAD],
               logs.instruction.strip()[:60]: [[call("bash", command="ls; cat var/log/*.log | head -3")],
                                               [call("write_file", path="x.sh", content="exit 1\n")]]}
    batches = capture_batches(monkeypatch)
    rewards: list[list[dict]] = []
    original = BatchScorer.rewards

    def recorded(self, prompts, completions, kwargs):
        out = original(self, prompts, completions, kwargs)
        rewards.append([{n: c.contribution for n, c in r.components.items()} | {"total": r.total} for r in out])
        return out

    monkeypatch.setattr(BatchScorer, "rewards", recorded)
    model, tokenizer = load(tiny, scripts)
    trainer = train_grpo(model, tokenizer, [HELLO, logs], "coderl", config(tmp_path), env_config=CONFIG,
                         remote=remote)
    monkeypatch.undo()
    seen = [tokenizer.decode(b["completion_ids"][i][b["completion_mask"][i].bool()])
            for b in batches for i in range(b["completion_ids"].size(0))]
    return trainer, rewards, seen


@pytest.mark.sandbox
def test_remote_episodes_train_exactly_as_in_process(tiny, tmp_path, monkeypatch):
    local, local_rewards, local_seen = play(tiny, tmp_path / "local", monkeypatch, remote=[])
    served = Served([HELLO, find_task("logs-count-3")], spec=None, env=CONFIG)
    with running(served) as url:
        remote, remote_rewards, remote_seen = play(tiny, tmp_path / "remote", monkeypatch, remote=[url])
        assert remote.environment_factories[None].environments  # the episodes did play remotely
        assert all(type(e).__name__ == "RemoteToolEnv" for e in remote.environment_factories[None].environments)
    assert local_seen == remote_seen  # the tool results the model reads, token for token
    assert any("wrote 6 bytes to /workspace/out.txt" in s for s in remote_seen)
    assert local_rewards == remote_rewards and any(r["total"] > 0 for batch in remote_rewards for r in batch)
    for (name, a), (_, b) in zip(local.model.named_parameters(), remote.model.named_parameters(), strict=True):
        assert torch.equal(a, b), name
    assert not leftover_sandboxes()


@pytest.mark.sandbox
def test_a_server_that_is_gone_is_a_harness_failure_never_a_zero(tmp_path):
    from termrl.reward.exports.trl_env import episode_outcome
    from termrl.serve.client import RemoteToolEnv

    served = Served([HELLO], spec=None, env=EnvConfig(static=False))
    with running(served) as url:
        env = RemoteToolEnv(url)
        assert "Write the word hello" in env.reset(task_id=HELLO.id)  # the first observation
        assert "exit code 0" in env.bash("echo hi")
    # the server stopped mid-episode: the next call ends the episode as the harness's failure
    said = env.bash("echo again")
    outcome = episode_outcome(env)
    assert "failed" in said and outcome.ending.value == "error" and outcome.total is None
    env = RemoteToolEnv(url)  # nothing listens there now: the reset itself fails, unscored
    assert "not scored" in env.reset(task_id=HELLO.id)
    assert episode_outcome(env).total is None


@pytest.mark.sandbox
def test_termrl_train_with_remote_servers_reproduces_the_in_process_run(tmp_path):
    """``[grpo] remote``: the same tiny run (configs/tiny-grpo.toml) through ``termrl train``'s own
    path, in-process and on a server serving its training tasks with its episode limits."""
    import copy
    import tomllib
    from pathlib import Path

    from safetensors.torch import load_file

    from termrl.training.config import load_config
    from termrl.training.run import _env, run_training, train_tasks

    base = tomllib.loads((Path(__file__).parents[2] / "configs" / "tiny-grpo.toml").read_text())
    base["eval"]["before"] = False
    results = {}
    for name in ("local", "remote"):
        data = copy.deepcopy(base)
        data["output_dir"] = str(tmp_path / name)
        cfg = load_config(data=data)
        if name == "local":
            results[name] = run_training(cfg)
            continue
        served = Served(train_tasks(cfg), spec=None, env=_env(cfg))
        with running(served) as url:
            data["grpo"]["remote"] = [url]
            results[name] = run_training(load_config(data=data))
        assert served.resets == 4  # 2 steps of 2 rollouts: every episode played on the server
    assert results["local"]["training"]["steps"] == results["remote"]["training"]["steps"] == 2
    logged = {name: [(e.get("reward"), e.get("loss")) for e in r["training"]["log"]] for name, r in results.items()}
    assert logged["local"] == logged["remote"] and logged["local"]
    local, remote = (load_file(tmp_path / name / "final" / "model.safetensors") for name in ("local", "remote"))
    assert local.keys() == remote.keys() and all(torch.equal(local[k], remote[k]) for k in local)
    assert results["local"]["heldout"]["pass@1"] == results["remote"]["heldout"]["pass@1"]


@pytest.mark.sandbox
def test_a_harness_failure_on_the_server_reaches_the_trainer_as_one():
    """A sandbox the server cannot start (its setup fails) is the harness's failure at the trainer:
    the rollout's reward is None in every function, never 0."""
    import dataclasses

    from termrl.reward.exports.trl import trl_reward_funcs
    from termrl.serve.client import RemoteEnvironmentFactory

    broken = dataclasses.replace(HELLO, id="grpo-test-broken-setup", setup=("exit 3",))
    with running(Served([broken, HELLO], spec=None, env=CONFIG)) as url:
        factory = RemoteEnvironmentFactory([url])
        envs = [factory(), factory()]
        said = [envs[0].reset(task_id=broken.id), envs[1].reset(task_id=HELLO.id)]
        assert "not scored" in said[0] and "Write the word hello" in said[1]
        assert "wrote 6 bytes" in envs[1].write_file("out.txt", "hello\n")
        funcs = trl_reward_funcs("coderl", num_generations=2)
        rewards = {f.__name__: f([None, None], [[], []], environments=envs) for f in funcs}
        factory.close()
    assert all(values[0] is None for values in rewards.values())
    assert rewards["termrl/outcome"][1] > 0  # the working rollout beside it is scored
