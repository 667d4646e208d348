"""Put a task into a sandbox, run its reference solution, run its hidden tests.

The hidden tests are never in the sandbox while the agent works: ``run_hidden_tests``
copies them in fresh from the ``Task`` (never from the workspace) and runs them
in a clean process (fresh /tmp and HOME, the base environment, no agent shell).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from termrl.protocols import ExecResult, Sandbox, StopReason, Task, TaskFile, TestKind
from termrl.sandbox import make_sandbox

SOLUTION_DIR = "/solution"
REWARD_DIR = "/logs/verifier"
PYTEST_ARGS = ["-q", "-rA", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning"]


class SetupError(RuntimeError):
    """The task's setup failed in the sandbox: the task (or host) is at fault, not the agent."""


def open_sandbox(task: Task, backend: str = "bwrap", command_timeout: float = 120.0) -> Sandbox:
    """A started sandbox holding the task's workspace, with its setup commands run."""
    if task.unsupported:
        raise SetupError(f"task {task.id} is unsupported here: {task.unsupported}")
    box = make_sandbox(backend, workdir=task.workdir, limits=task.limits, dirs=list(task.extra_files),
                       env=dict(task.env), command_timeout=command_timeout)
    try:
        box.start()
        box.put_files(task.workdir, task.workspace)
        for directory, files in task.extra_files.items():
            box.put_files(directory, files)
        for command in task.setup:
            res = box.run(["/bin/bash", "-ec", command], timeout=task.limits.verifier_timeout_sec)
            if not res.ok:
                raise SetupError(f"setup command failed ({res.stop.value}, exit {res.exit_code}): "
                                 f"{command[:200]!r}\n{(res.stdout + res.stderr)[-2000:]}")
    except BaseException:
        box.close()
        raise
    return box


def run_solution(box: Sandbox, task: Task) -> ExecResult:
    """Run the reference solution in the workdir (the agent phase of the oracle)."""
    if task.solution is None:
        raise SetupError(f"task {task.id} has no reference solution")
    return box.run(["/bin/bash", f"{SOLUTION_DIR}/solve.sh"], timeout=task.limits.agent_timeout_sec,
                   mounts={SOLUTION_DIR: {"solve.sh": TaskFile(task.solution.encode(), 0o755)}})


@dataclass
class TestRun:
    """Outcome of the hidden tests of one task on one workspace."""

    passed: bool
    exit_code: int
    stop: StopReason
    output: str
    reward: float | None = None
    """For reward-file tasks: the number the task's script wrote."""
    verify_error: str | None = None
    """Set when the tests could not be run for a reason that is not the agent's."""
    holdout_passed: bool | None = None
    details: dict = field(default_factory=dict)


def _pytest_command(task: Task, tests_dir: str) -> list[str]:
    files = [f"{tests_dir}/{f}" for f in task.test_spec.pytest_files] or [tests_dir]
    # -P: the workdir is not put on sys.path, so a planted pytest.py or json.py cannot
    # replace pytest or the standard library; -s: no user site-packages; -B: no .pyc litter
    return ["python3", "-P", "-s", "-B", "-m", "pytest", *PYTEST_ARGS, *files]


def _env(task: Task) -> dict[str, str]:
    return {**dict(task.env), **dict(task.test_spec.env), "PYTHONDONTWRITEBYTECODE": "1"}


def run_hidden_tests(box: Sandbox, task: Task) -> TestRun:
    spec = task.test_spec
    cwd = spec.cwd or task.workdir
    timeout = task.limits.verifier_timeout_sec
    if spec.kind is TestKind.PYTEST:
        res = box.run(_pytest_command(task, spec.tests_dir), timeout=timeout, cwd=cwd, env=_env(task),
                      mounts={spec.tests_dir: task.tests})
        run = _judge_pytest(res)
    elif spec.kind is TestKind.SCRIPT:
        res = box.run(["/bin/bash", f"{spec.tests_dir}/{spec.script}"], timeout=timeout, cwd=cwd,
                      env=_env(task), mounts={spec.tests_dir: task.tests})
        run = TestRun(res.ok, res.exit_code, res.stop, res.stdout + res.stderr)
    else:
        res = box.run(["/bin/bash", f"{spec.tests_dir}/{spec.script}"], timeout=timeout, cwd=cwd,
                      env=_env(task), mounts={spec.tests_dir: task.tests}, outputs=[REWARD_DIR])
        run = _judge_reward_file(box, res)
    if task.holdout_tests and run.verify_error is None:
        hold = box.run(_pytest_command(task, spec.tests_dir), timeout=timeout, cwd=cwd, env=_env(task),
                       mounts={spec.tests_dir: task.holdout_tests})
        run.holdout_passed = _judge_pytest(hold).passed
    return run


def _judge_pytest(res: ExecResult) -> TestRun:
    output = res.stdout + res.stderr
    if res.stop is StopReason.EXITED and res.exit_code in (3, 4) and "ERROR: usage" in output:
        # pytest could not start (bad arguments, missing plugin): the harness's fault
        return TestRun(False, res.exit_code, res.stop, output, verify_error="pytest could not start")
    if res.stop is StopReason.EXITED and res.exit_code == 127:
        return TestRun(False, res.exit_code, res.stop, output,
                       verify_error="python3 or pytest is missing in the sandbox (apt-get install python3-pytest)")
    return TestRun(res.ok, res.exit_code, res.stop, output)


def _judge_reward_file(box: Sandbox, res: ExecResult) -> TestRun:
    """Harbor's rule: reward.json (a number or {"reward": x}) wins over reward.txt (a number)."""
    output = res.stdout + res.stderr
    for name in ("reward.json", "reward.txt"):
        try:
            raw = box.read_file(f"{REWARD_DIR}/{name}").decode().strip()
        except (FileNotFoundError, PermissionError):
            continue
        try:
            value = json.loads(raw) if name.endswith(".json") else raw
            reward = float(value["reward"] if isinstance(value, dict) else value)
        except (ValueError, TypeError, KeyError):
            return TestRun(False, res.exit_code, res.stop, output,
                           verify_error=f"{REWARD_DIR}/{name} does not hold a number: {raw[:80]!r}")
        return TestRun(reward >= 1.0, res.exit_code, res.stop, output, reward=reward)
    if res.stop is not StopReason.EXITED:
        return TestRun(False, res.exit_code, res.stop, output, reward=0.0)
    return TestRun(False, res.exit_code, res.stop, output,
                   verify_error=f"the test script wrote no {REWARD_DIR}/reward.txt or reward.json")
