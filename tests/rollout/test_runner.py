"""The rollout runner: episodes on a worker pool, batching, failures recorded, resume from the store."""

from __future__ import annotations

import threading

import pytest

from termrl.policies.scripted import NopPolicy, OraclePolicy
from termrl.protocols import Reply
from termrl.rollout.accounting import Accountant
from termrl.rollout.runner import RolloutConfig, episode_id, play_stored, run_rollouts
from termrl.rollout.store import TrajectoryStore
from termrl.tasks.suites import find_task

pytestmark = pytest.mark.sandbox

TASKS = ["shell-count-errors", "py-roman-numerals", "logs-count-7"]


@pytest.fixture(scope="module")
def tasks():
    return [find_task(t) for t in TASKS]


def test_oracle_passes_and_nop_fails_with_full_records(tasks, tmp_path):
    store = TrajectoryStore(tmp_path / "run")
    acc = Accountant()
    with acc:
        got = run_rollouts(tasks, OraclePolicy(), RolloutConfig(samples=2, workers=2), store=store, accountant=acc)
    assert sorted(t.episode_id for t in got) == sorted(episode_id(t, s) for t in tasks for s in (0, 1))
    assert all(t.passed and t.ending == "submitted" and t.reward > 0 for t in got)
    first = got[0]
    assert [s.action["kind"] for s in first.steps] == ["write", "command", "submit"]
    task = next(t for t in tasks if t.id == first.task_id)
    assert [m["role"] for m in first.prompt] == ["system", "user"]
    assert first.prompt[1]["content"].startswith(task.instruction.strip()[:40])
    assert first.evidence["passed"] and first.components["outcome"]["value"] == 1.0
    assert first.timing["verification"] > 0 and first.timing["environment"] > 0
    assert {t.episode_id for t in store.read()} == {t.episode_id for t in got}
    summary = acc.summary()
    total = sum(p["wall_s"] for p in summary["phases"].values())
    assert total == pytest.approx(summary["wall_s"], rel=0.05)

    nops = run_rollouts(tasks, NopPolicy(), RolloutConfig(workers=2))
    assert all(not t.passed and t.ending == "submitted" for t in nops)
    assert all(any(f["kind"] == "empty_work" for f in t.findings) for t in nops)


class Flaky:
    """Fails whenever a turn of the py task is in the batch: the harness's fault, not the agent's."""

    name = "flaky"

    def __init__(self):
        self.batches: list[int] = []
        self.lock = threading.Lock()

    def generate(self, turns):
        with self.lock:
            self.batches.append(len(turns))
        if any(t.task.id == "py-roman-numerals" for t in turns):
            raise ConnectionError("endpoint went away")
        return [Reply('<tool_call>{"name": "submit", "arguments": {}}</tool_call>') for _ in turns]


def test_a_failing_episode_is_recorded_and_the_run_goes_on(tasks):
    got = {t.task_id: t for t in run_rollouts(tasks, Flaky(), RolloutConfig(workers=1))}
    assert set(got) == set(TASKS)
    bad = got["py-roman-numerals"]
    assert bad.ending == "error" and "ConnectionError: endpoint went away" in bad.error and bad.reward is None
    assert got["shell-count-errors"].ending == "submitted" and got["shell-count-errors"].error is None


def test_turns_of_live_episodes_are_batched(tasks):
    policy = Flaky()
    run_rollouts([tasks[0], tasks[2]], policy, RolloutConfig(samples=2, workers=4, batch_window_s=0.5))
    assert max(policy.batches) >= 2  # several live episodes answered by one policy call
    assert sum(policy.batches) == 4


def test_resume_skips_stored_episodes(tasks, tmp_path):
    store = TrajectoryStore(tmp_path / "run")
    run_rollouts(tasks[:1], NopPolicy(), RolloutConfig(samples=2), store=store)
    again = run_rollouts(tasks[:2], NopPolicy(), RolloutConfig(samples=2), store=store)
    assert sorted(t.episode_id for t in again) == sorted(episode_id(tasks[1], s) for s in (0, 1))
    ids = [t.episode_id for t in store.read()]
    assert len(ids) == len(set(ids)) == 4


def test_a_run_that_keeps_nothing_streams_every_episode_to_the_store(tasks, tmp_path):
    store = TrajectoryStore(tmp_path / "run")
    seen = []
    kept = run_rollouts(tasks[:2], NopPolicy(), RolloutConfig(samples=2), store=store, keep=False,
                        on_episode=seen.append)
    assert kept == [] and len(seen) == 4  # nothing held by the run; the caller saw each one
    assert sorted(t.episode_id for t in store.read()) == sorted(t.episode_id for t in seen)


def test_a_stored_run_prints_its_progress_and_resumes(tasks, tmp_path, capsys):
    first = play_stored(tasks[:1], OraclePolicy(), RolloutConfig(samples=2), tmp_path / "run", label="eval: x")
    err = capsys.readouterr().err
    assert "termrl eval: x: 2 of 2 episodes to play" in err
    assert "termrl eval: x: 2/2 episodes, 2 of this session's passed" in err
    both = play_stored(tasks[:2], NopPolicy(), RolloutConfig(samples=2), tmp_path / "run", label="eval: x")
    err = capsys.readouterr().err
    assert "2 of 4 episodes to play" in err and "4/4 episodes, 0 of this session's passed" in err
    assert len(first) == 2 and len(both) == 4
    assert sorted(t.passed for t in both) == [False, False, True, True]  # the stored ones are kept, not replayed
    assert play_stored(tasks[:2], NopPolicy(), RolloutConfig(samples=2), tmp_path / "run", label="eval: x")
    assert capsys.readouterr().err == ""  # nothing left to play: nothing said


def test_a_run_gives_the_c_heaps_free_memory_back_every_few_episodes_and_at_its_end(tasks, monkeypatch):
    from termrl.rollout import runner

    calls = []
    monkeypatch.setattr(runner, "TRIM_EVERY", 2)
    monkeypatch.setattr(runner, "release_free_heap", lambda: calls.append(1) or True)
    run_rollouts(tasks, NopPolicy(), RolloutConfig(samples=2, workers=2), keep=False)
    assert len(calls) == 6 // 2 + 1, "every 2nd of the 6 episodes, and once when the run ends"


def test_release_free_heap_calls_malloc_trim_where_the_c_library_has_it():
    import ctypes

    from termrl.rollout.runner import release_free_heap

    has_trim = hasattr(ctypes.CDLL(None), "malloc_trim")
    assert release_free_heap() is has_trim


HEAP_CHURN = r'''
import random, sys
from termrl.rollout import runner

if sys.argv[1] == "fixed":
    assert runner.keep_large_buffers_off_the_heap()
rng = random.Random(0)
kept = []
before = runner.c_heap()["free"]
for _ in range(400):
    output = bytearray(rng.randrange(100_000, 4_000_000))  # a command's output, freed at once
    kept.append(bytearray(rng.randrange(600, 3000)))       # something small that outlives it
    del output
print(runner.c_heap()["free"] - before)
'''


def test_a_runs_large_buffers_leave_no_holes_in_the_c_heap(tmp_path):
    """Megabyte buffers freed between small objects that stay: with glibc's moving threshold they
    leave megabytes more free but held in the heap; with the threshold fixed, almost none."""
    import subprocess
    import sys

    from termrl.rollout.runner import c_heap

    assert c_heap(), "this machine's glibc has mallinfo2: the test must run here"
    script = tmp_path / "churn.py"
    script.write_text(HEAP_CHURN)
    free = {mode: int(subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                                     check=True).stdout) for mode in ("default", "fixed")}
    assert free["default"] > 2 * 2**20, free  # the churn does fragment glibc's default heap
    assert free["fixed"] < 2**20, free


def test_a_run_fixes_the_mmap_threshold(tasks, monkeypatch):
    from termrl.rollout import runner

    calls = []
    monkeypatch.setattr(runner, "keep_large_buffers_off_the_heap", lambda: calls.append(1) or True)
    run_rollouts(tasks[:1], NopPolicy(), RolloutConfig(samples=1), keep=False)
    assert calls == [1]


def test_a_spec_named_in_the_config_is_loaded_once_and_ships_to_workers(tasks, monkeypatch):
    import pickle

    from termrl.reward import spec as spec_module

    loads = []
    real = spec_module.load_spec
    monkeypatch.setattr(spec_module, "load_spec", lambda name: loads.append(name) or real(name))
    config = RolloutConfig(spec="sparse", workers=1)
    assert isinstance(config.spec, spec_module.RewardSpec) and loads == ["sparse"]
    assert pickle.loads(pickle.dumps(config)).spec == config.spec  # what Ray sends to a worker
    (got,) = run_rollouts(tasks[:1], OraclePolicy(), config)
    assert got.reward == 1.0 and list(got.components) == ["outcome", "hack"]
    assert loads == ["sparse"], "nothing beneath the config loads the spec again"
