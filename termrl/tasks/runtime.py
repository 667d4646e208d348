"""Put a task into a sandbox and run its reference solution.

The hidden tests are never in the sandbox while the agent works: the verifier
(``termrl.verify``) copies them in fresh from the ``Task`` (never from the
workspace) and runs them in a clean process (fresh /tmp and HOME, the base
environment, no agent shell).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from termrl.protocols import ExecResult, Sandbox, SetupError, StopReason, Task, TaskFile
from termrl.sandbox import make_sandbox
from termrl.tasks import pyenv, sysenv

SOLUTION_DIR = "/solution"
REWARD_DIR = "/logs/verifier"


def open_sandbox(task: Task, backend: str = "bwrap", command_timeout: float = 120.0) -> Sandbox:
    """A started sandbox holding the task's workspace, with its setup commands run."""
    if task.unsupported:
        raise SetupError(f"task {task.id} is unsupported here: {task.unsupported}")
    box = make_sandbox(backend, workdir=task.workdir, limits=task.limits, dirs=list(task.extra_files),
                       env=pyenv.environment(task), command_timeout=command_timeout, binds=pyenv.binds(task),
                       system_root=sysenv.system_root(task))
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
class RewardFile:
    """What a Harbor-style test script reported in its reward file."""

    passed: bool
    reward: float | None = None
    verify_error: str | None = None
    """Set when the script wrote no usable reward: the harness cannot judge."""


def judge_reward_file(box: Sandbox, res: ExecResult) -> RewardFile:
    """Harbor's rule: reward.json (a number or {"reward": x}) wins over reward.txt (a number);
    the task passes at reward >= 1."""
    for name in ("reward.json", "reward.txt"):
        try:
            raw = box.read_file(f"{REWARD_DIR}/{name}").decode().strip()
        except (FileNotFoundError, PermissionError):
            continue
        try:
            value = json.loads(raw) if name.endswith(".json") else raw
            reward = float(value["reward"] if isinstance(value, dict) else value)
        except (ValueError, TypeError, KeyError):
            return RewardFile(False, verify_error=f"{REWARD_DIR}/{name} does not hold a number: {raw[:80]!r}")
        return RewardFile(reward >= 1.0, reward)
    if res.stop is not StopReason.EXITED:
        return RewardFile(False, 0.0)  # the agent's code made the script time out or blow up
    return RewardFile(False, verify_error=f"the test script wrote no {REWARD_DIR}/reward.txt or reward.json")
