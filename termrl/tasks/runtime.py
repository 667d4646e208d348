"""Put a task into a sandbox and run its reference solution.

The hidden tests are never in the sandbox while the agent works: the verifier
(``termrl.verify``) copies them in fresh from the ``Task`` (never from the
workspace) and runs them in a clean process (fresh /tmp and HOME, the base
environment, no agent shell).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from termrl.protocols import ExecResult, Sandbox, SetupError, StopReason, Task, TaskFile
from termrl.sandbox import make_sandbox
from termrl.sandbox.workspace import fingerprint, walk
from termrl.tasks import npmenv, pyenv, sysenv

SOLUTION_DIR = "/solution"
REWARD_DIR = "/logs/verifier"


def open_sandbox(task: Task, backend: str = "bwrap", command_timeout: float = 120.0,
                 workdir_from: Path | None = None, warm=None) -> Sandbox:
    """A started sandbox holding the task's workspace, with its setup commands run; or, with
    ``workdir_from`` (a workdir an earlier sandbox's setup left, see ``SetupReuse``), a copy of
    that instead of the workspace and the setup. ``warm``: a ``termrl.sandbox.warm.WarmSandboxes``
    to take an already started sandbox of the same shape from (bwrap only)."""
    if task.unsupported:
        raise SetupError(f"task {task.id} is unsupported here: {task.unsupported}")
    env, root = pyenv.environment(task), sysenv.system_root(task)
    binds = {**pyenv.binds(task), **npmenv.binds(task), **sysenv.binds(root)}

    def make() -> Sandbox:
        return make_sandbox(backend, workdir=task.workdir, limits=task.limits, dirs=list(task.extra_files),
                            env=env, command_timeout=command_timeout, binds=binds, system_root=root)

    box = None
    if warm is not None and backend == "bwrap" and workdir_from is None:
        shape = (backend, task.workdir, task.limits, tuple(sorted(task.extra_files)), tuple(sorted(env.items())),
                 tuple(sorted(binds.items())), root, command_timeout)
        box = warm.take(shape, make)
    if box is None:
        box = make()
    try:
        box.start()
        if workdir_from is not None:
            box.copy_workspace_from(workdir_from)
            return box
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


class SetupReuse:
    """A task's setup run twice instead of for every sandbox: when two runs of it leave the same
    workdir, each later sandbox of the task starts from a copy of that workdir (contents, modes,
    times, links) instead of running the setup again. For many episodes of the same tasks (an
    audit): a setup that builds a git history or a file tree costs a second or two each time.

    Only a setup shown to be deterministic is copied, so a copy gives what running it again
    would: the second run starts a clock second after the first ended, and the two workdirs must
    have the same ``workspace.fingerprint`` (which reads git's index and reflogs without their
    times). A setup that draws random data or stamps the time (a commit dated now) runs for
    every sandbox, as in training; an answer a policy could memorise must stay as unmemorisable
    as training makes it.

    Setup commands run in a fresh sandbox process with their own /tmp and HOME (``Sandbox.run``),
    and what they start dies with them, so what they leave is the workdir and the task's other
    writable directories. A task is also set up afresh each time when its setup is empty, it has
    other writable directories, a process still runs in the sandbox (a guard: none can today), or
    the workdir holds what a copy cannot reproduce (hard links, devices, sockets, pipes); and on
    backends without a host workdir. A copy differs from a run in inode numbers and change times
    only (git's index records them; git then re-reads the file, with the same results).

    ``reused`` and ``ran`` count sandboxes of each kind."""

    def __init__(self):
        self._dir: Path | None = None
        self._lock = threading.Lock()
        self._tasks: dict[str, _Setups] = {}
        self.reused = self.ran = 0

    def open(self, task: Task, backend: str = "bwrap") -> Sandbox:
        if not task.setup or task.extra_files or backend != "bwrap":
            return open_sandbox(task, backend)
        key = hashlib.sha256(json.dumps([task.id, task.workdir, list(task.setup),
                                         sorted((k, hashlib.sha256(f.data).hexdigest(), f.mode)
                                                for k, f in task.workspace.items())]).encode()).hexdigest()
        with self._lock:
            if self._dir is None:
                self._dir = Path(tempfile.mkdtemp(prefix="termrl-setups-"))
            state = self._tasks.setdefault(key, _Setups(self._dir / key[:32]))
            turn, state.opened = state.opened, state.opened + 1
        if turn == 0:
            return self._run(task, backend, state.first, lambda box: _keep(box, state.path))
        if turn == 1:
            first = state.first.result()
            if first is None:
                state.verdict.set_result(None)
                return self._run(task, backend, None, None)
            _next_second(first[1])
            return self._run(task, backend, state.verdict,
                             lambda box: state.path if _fingerprint(box) == first[0] else None)
        source = state.verdict.result()
        if source is None:
            return self._run(task, backend, None, None)
        with self._lock:
            self.reused += 1
        return open_sandbox(task, backend, workdir_from=source)

    def _run(self, task: Task, backend: str, result: Future | None, judge) -> Sandbox:
        """A sandbox with the setup run; ``judge(box)`` (None on failure) resolves ``result``."""
        with self._lock:
            self.ran += 1
        try:
            box = open_sandbox(task, backend)
        except BaseException:
            if result is not None:
                result.set_result(None)
            raise
        if result is not None:
            try:
                kept = judge(box)
            except OSError:  # the copy failed (a full disk): set up afresh from now on
                kept = None
            result.set_result(kept)
        return box

    def close(self) -> None:
        """Remove the kept workdirs."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "SetupReuse":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class _Setups:
    """One task's setups in a ``SetupReuse``: how many sandboxes asked, the first run's workdir
    (fingerprint, the clock second it ended in; kept at ``path``), and the verdict: the copy to
    start from, or None."""

    path: Path
    opened: int = 0
    first: Future = field(default_factory=Future)
    verdict: Future = field(default_factory=Future)


def _keep(box: Sandbox, target: Path) -> tuple[str, int] | None:
    """Copy the box's workdir to ``target``: its fingerprint and the clock second now, or None
    when it cannot be copied faithfully."""
    host = getattr(box, "host_workspace", None)
    if host is None or not _settled(box):
        return None
    root = Path(host())
    for dirpath, dirnames, filenames in walk(root):
        for name in dirnames + filenames:
            info = os.lstat(os.path.join(dirpath, name))
            if not (stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode)
                    or (stat.S_ISREG(info.st_mode) and info.st_nlink == 1)):
                return None
    fingerprint = _fingerprint(box)
    shutil.copytree(root, target, symlinks=True)
    return fingerprint, int(time.time())


def _fingerprint(box: Sandbox) -> str | None:
    return fingerprint(box)


def _next_second(after: int) -> None:
    """Sleep until the clock's whole second is past ``after``, so a second run of a setup cannot
    stamp the same second as the first."""
    while int(time.time()) <= after:
        time.sleep(max(0.01, after + 1 - time.time()))


def _settled(box: Sandbox, wait_s: float = 0.5) -> bool:
    """No process of the sandbox runs besides its shell, allowing ``wait_s`` for the last
    command's own processes to finish exiting."""
    strays = getattr(box, "stray_processes", None)
    if strays is None:
        return False
    deadline = time.monotonic() + wait_s
    while strays():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


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
