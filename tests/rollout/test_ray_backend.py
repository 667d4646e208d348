"""The Ray backend against a local Ray instance: the same episodes, records and resume as ``run_rollouts``."""

from __future__ import annotations

import sys

import pytest
import ray  # the [ray] extra, installed by scripts/setup.sh: a missing Ray fails here, loudly

from termrl.rollout.ray_backend import run_rollouts_ray
from termrl.rollout.runner import RolloutConfig, episode_id
from termrl.rollout.store import TrajectoryStore
from termrl.tasks.suites import find_task

TASK_IDS = ("shell-count-errors", "py-roman-numerals")


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def tasks():
    return [find_task(t) for t in TASK_IDS]


def ids(tasks, samples=1) -> set[str]:
    return {episode_id(t, s) for t in tasks for s in range(samples)}


@pytest.mark.sandbox
def test_oracle_passes_and_a_resumed_run_does_only_the_rest(local_ray, tasks, tmp_path):
    store = TrajectoryStore(tmp_path / "run")
    config = RolloutConfig(workers=2)
    first = run_rollouts_ray(tasks[:1], "oracle", config, store=store)
    assert {t.episode_id for t in first} == ids(tasks[:1])

    seen = []
    rest = run_rollouts_ray(tasks, "oracle", config, store=store, on_episode=seen.append)
    assert {t.episode_id for t in rest} == ids(tasks[1:])
    assert [t.episode_id for t in seen] == [t.episode_id for t in rest]
    assert store.done_ids() == ids(tasks)
    for traj in first + rest:
        assert traj.passed, (traj.episode_id, traj.ending, traj.error)
        assert traj.ending == "submitted" and traj.error is None and traj.policy == "oracle"
        assert traj.timing, "each trajectory carries its own phase split, measured on the worker"
    assert run_rollouts_ray(tasks, "oracle", config, store=store) == []


@pytest.mark.sandbox
def test_nop_fails_every_episode(local_ray, tasks):
    trajs = run_rollouts_ray(tasks, "nop", RolloutConfig(samples=2, workers=3))
    assert sorted(t.episode_id for t in trajs) == sorted(ids(tasks, samples=2))
    assert all(not t.passed and t.ending == "submitted" and t.error is None for t in trajs)


@pytest.mark.sandbox
def test_a_failing_remote_task_is_recorded_not_raised(local_ray, tasks, tmp_path):
    store = TrajectoryStore(tmp_path / "run")
    trajs = run_rollouts_ray(tasks, "script:/nonexistent.json", RolloutConfig(workers=2), store=store)
    assert {t.episode_id for t in trajs} == ids(tasks) == store.done_ids()
    for traj in trajs:
        assert traj.ending == "error" and not traj.passed and traj.reward is None
        assert "ScriptError" in traj.error and "no such script file" in traj.error, traj.error


def test_missing_ray_says_what_to_install(monkeypatch, tasks):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'termrl\[ray\]'"):
        run_rollouts_ray(tasks, "nop", RolloutConfig())



def test_an_address_where_nothing_listens_fails_at_once_and_says_how_to_start_a_cluster(tmp_path):
    """Through the command line, in its own process (this module's Ray instance would be joined)."""
    import socket
    import subprocess
    import time

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "termrl", "eval", "--policy", "oracle", "--suite", "builtin:0",
                        "--ray", f"127.0.0.1:{port}", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    out = " ".join((r.stdout + r.stderr).split())
    assert r.returncode != 0 and "Traceback" not in out
    assert f"no Ray cluster at '127.0.0.1:{port}' (nothing answers there: " in out
    assert "start one with `ray start --head`" in out
    assert took < 60  # Ray alone retries for minutes
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").glob("part-*"))
