"""The one road from a finished episode to its reward (``termrl.episode``) and the one contract for
harness failures: every caller finishes the same way, and a ``HarnessError`` is always reward None."""

from __future__ import annotations

import pytest

from termrl.actions import render_tool_call
from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import SandboxVerifier, finish_episode, harness_failure, score
from termrl.policies import PolicyError
from termrl.protocols import (
    Action,
    ActionKind,
    Ending,
    Evidence,
    HarnessError,
    Outcome,
    SandboxError,
    SetupError,
    Task,
    TaskFile,
)
from termrl.reward.spec import load_spec
from termrl.tasks.runtime import open_sandbox
from termrl.sandbox import workspace

TEST = b"""
from pathlib import Path

def test_greeting():
    assert Path("greeting.txt").read_text() == "hello\\n"
"""
TASK = Task(id="greet", instruction="Write hello into greeting.txt.", tests={"test_greet.py": TaskFile(TEST)},
            solution="echo hello > greeting.txt\n")


def cmd(command: str) -> str:
    return render_tool_call(Action(ActionKind.COMMAND, command=command))


def test_every_harness_failure_is_a_harness_error():
    for error in (SandboxError, SetupError, PolicyError):
        assert issubclass(error, HarnessError)
    from termrl.sandbox.bwrap import SandboxError as from_backend
    from termrl.tasks.runtime import SetupError as from_runtime

    assert from_backend is SandboxError and from_runtime is SetupError  # one class, re-exported


def test_truncated_has_one_definition():
    assert [e.value for e in Ending if e.terminated] == ["submitted"]
    assert {e for e in Ending if e.truncated} == set(Ending) - {Ending.SUBMITTED}
    assert Ending.FORMAT_ERRORS.truncated and Ending.ERROR.truncated  # the copies used to disagree here


def test_harness_failure_scores_none_under_every_spec():
    outcome = harness_failure("t", SandboxError("the shell died"), "step")
    assert outcome.ending is Ending.ERROR and not outcome.findings and outcome.total is None
    assert outcome.error.startswith("SandboxError: the shell died")
    for preset in ("sparse", "partial", "coderl", "staged"):
        reward = score(outcome, load_spec(preset), progress=0.5)
        assert reward.total is None and all(c.contribution is None for c in reward.components.values())


@pytest.mark.sandbox
def test_finish_episode_is_what_terminal_env_returns():
    spec = load_spec("staged")
    with TerminalEnv(spec=spec, progress=0.5) as env:
        env.reset(TASK)
        env.step(cmd("echo hello > greeting.txt"))
        _, total, terminated, truncated, info = env.step(render_tool_call(Action(ActionKind.SUBMIT)))
    assert (terminated, truncated) == (True, False) and info["outcome"] is env.outcome
    box = open_sandbox(TASK)
    try:
        before = workspace.snapshot(box)
        box.exec("echo hello > greeting.txt")
        trace = [s.trace() for s in env.steps]
        direct = finish_episode(TASK, box, Ending.SUBMITTED, before=before, trace=trace, spec=spec, progress=0.5, verifier=SandboxVerifier())
    finally:
        box.close()
    assert direct.evidence.passed and direct.total == pytest.approx(total)
    assert {k: c.contribution for k, c in direct.reward.components.items()} == pytest.approx(
        {k: c.contribution for k, c in info["reward"].components.items()})


@pytest.mark.sandbox
def test_a_sandbox_that_dies_mid_episode_ends_it_as_error_with_reward_none():
    with TerminalEnv(EnvConfig(static=False), spec="coderl") as env:
        env.reset(TASK)
        env.box.close()  # the harness loses the sandbox, not the agent's doing
        _, total, terminated, truncated, info = env.step(cmd("echo hello > greeting.txt"))
    assert info["ending"] is Ending.ERROR and total is None and (terminated, truncated) == (False, True)
    assert "SandboxError" in info["outcome"].error and "during step" in info["outcome"].error
    assert env.box is None and len(env.steps) == 1


@pytest.mark.sandbox
def test_a_failing_snapshot_at_the_end_is_a_harness_failure():
    class Broken(SandboxVerifier):
        def __call__(self, task, box, before, after, trace):
            raise SandboxError("the verifier's sandbox vanished")

    box = open_sandbox(TASK)
    try:
        outcome = finish_episode(TASK, box, Ending.SUBMITTED, before={}, trace=[], verifier=Broken(),
                                 spec=load_spec("coderl"))
    finally:
        box.close()
    assert outcome.ending is Ending.ERROR and outcome.total is None and "(during finishing)" in outcome.error


def test_outcome_total_without_a_spec():
    assert Outcome(Ending.SUBMITTED, Evidence("t", passed=True)).total == 1.0
    assert Outcome(Ending.STEP_LIMIT, Evidence("t", passed=False)).total == 0.0
    assert Outcome(Ending.SUBMITTED, Evidence("t", verified=False, verify_error="x")).total is None


@pytest.mark.sandbox
def test_rollout_records_a_harness_failure_as_error():
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig, run_episode

    broken = Task(id="needs-net", instruction="x", unsupported="needs the network")
    traj = run_episode(broken, 0, "nop", lambda turn: None, RolloutConfig(spec="coderl"), load_spec("coderl"),
                       Accountant())
    assert traj.ending == "error" and traj.reward is None and traj.error.startswith("SetupError")


@pytest.mark.sandbox
def test_detectors_read_only_verified_episodes():
    """The audit's copy ran the detectors on unverified evidence too; settled: an unverified
    episode has no findings (its reward is None whatever they say)."""

    class Unverified(SandboxVerifier):
        def __call__(self, task, box, before, after, trace):
            return Evidence(task.id, verified=False, verify_error="stage tests could not run")

    box = open_sandbox(TASK)
    try:
        box.exec("mkdir -p tests && echo 'def test_x(): pass' > conftest.py")  # would be high tampering
        before = {}
        outcome = finish_episode(TASK, box, Ending.SUBMITTED, before=before, trace=[], verifier=Unverified())
        verified = finish_episode(TASK, box, Ending.SUBMITTED, before=before, trace=[])
    finally:
        box.close()
    assert outcome.ending is Ending.SUBMITTED and outcome.total is None and outcome.findings == ()
    assert verified.verified and any(f.kind == "tampering" for f in verified.findings)


@pytest.mark.sandbox
def test_a_host_error_starting_a_process_is_a_sandbox_error(monkeypatch):
    import termrl.sandbox.bwrap as bwrap

    box = open_sandbox(TASK)
    try:
        def no_processes(*args, **kwargs):
            raise BlockingIOError(11, "Resource temporarily unavailable")

        monkeypatch.setattr(bwrap.subprocess, "Popen", no_processes)
        with pytest.raises(SandboxError, match="could not run 'true' in the sandbox: BlockingIOError"):
            box.run(["true"])
    finally:
        monkeypatch.undo()
        box.close()


def test_a_failed_reset_leaves_no_episode_to_step():
    broken = Task(id="needs-net", instruction="x", unsupported="needs the network")
    env = TerminalEnv()
    with pytest.raises(SetupError, match="unsupported"):
        env.reset(broken)
    assert env.box is None and env.task is None
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(cmd("ls"))
