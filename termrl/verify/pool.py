"""Warm verification sandboxes, for verifying many workspaces fast.

``VerifierPool(workers=N)`` keeps N long-lived bwrap sandboxes. Each runs
``forkserver.py``: a Python process that imported pytest once and forks a fresh
child per verification. A verification then costs: wiping and writing the
workspace (host side, a tmpfs), one fork, pytest collecting and running the
hidden tests in the child, and the host-side static analysis. No sandbox
creation, no interpreter start-up, no pytest import.

Isolation between verifications: every child starts from the pristine server
process; after it exits, every process it left (the sandbox's cgroup) is
killed, and the workspace, /tmp and HOME are wiped before the next job. The
hidden tests are bound read-only.

Tasks the fast path does not fit (setup commands, files outside the workdir,
task environment variables, non-pytest tests, another workdir) go through the
ordinary path: a fresh sandbox and ``verify``.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import select
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Mapping

from termrl.protocols import (
    Evidence,
    ExecResult,
    Files,
    HarnessError,
    Limits,
    SandboxError,
    StopReason,
    Task,
    TaskFile,
    TestKind,
)
from termrl.sandbox import workspace
from termrl.sandbox.bwrap import BwrapSandbox, _alive, _check_inside, _children, launch
from termrl.tasks.runtime import open_sandbox
from termrl.verify import assemble, per_test_default, stages, unverified, verify

SERVER = Path(__file__).with_name("harness") / "forkserver.py"
TESTS_DIR = "/tests"


def fits_fast_path(task: Task, workdir: str) -> bool:
    spec = task.test_spec
    return (task.workdir == workdir and not task.setup and not task.extra_files and not task.env
            and not task.python_requirements and not task.system_packages
            and spec.kind is TestKind.PYTEST and spec.tests_dir == TESTS_DIR and not spec.env
            and not spec.cwd and not task.unsupported)


class ForkServerSandbox(BwrapSandbox):
    """A bwrap sandbox whose main process is the pytest fork server instead of a shell."""

    def __init__(self, workdir: str = "/workspace", limits: Limits = Limits(memory_mb=2048)):
        super().__init__(workdir=workdir, limits=limits)

    def _spawn_shell(self) -> None:
        for sub in ("tests", "harness", "out"):
            self._mkdir(self._fs / sub)
        shutil.copy(SERVER, self._fs / "harness" / "forkserver.py")
        for source in stages.HARNESS_FILES:
            shutil.copy(source, self._fs / "harness" / source.name)
        extra = ["--ro-bind", str(self._fs / "tests"), TESTS_DIR,
                 "--ro-bind", str(self._fs / "harness"), stages.HARNESS_DIR,
                 "--bind", str(self._fs / "out"), stages.OUT_DIR]
        argv = self._argv(self._fs / "tmp", self._fs / "home", extra, self.workdir,
                          {**self.env, "PYTHONDONTWRITEBYTECODE": "1"},
                          ["python3", "-P", "-s", "-B", f"{stages.HARNESS_DIR}/forkserver.py",
                           json.dumps(stages.PYTEST_ARGS)])
        self._proc = launch(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self._read_line(60.0)
        if not line or not json.loads(line).get("ready"):
            self._kill_all()
            raise SandboxError("the verification fork server did not start (is python3-pytest installed?)")
        init = _children(self._proc.pid)
        self._shell_pids = {self._proc.pid, *init, *(c for i in init for c in _children(i))}

    def _read_line(self, timeout: float) -> str | None:
        out = self._proc.stdout
        ready, _, _ = select.select([out], [], [], timeout)
        if not ready:
            return None
        return out.readline().decode()  # "" at end of file: the server is gone

    def ensure_alive(self) -> None:
        """Start the fork server again when it died since the last job (a worker killed from outside)."""
        if self._proc is None or self._proc.poll() is not None or not all(map(_alive, self._shell_pids)):
            self._kill_all()
            self._spawn_shell()

    def reset(self, files: Files, tests: Files, folders: Mapping[str, int] | None = None) -> None:
        """Wipe the workspace, /tmp, HOME and the tests; put ``files``, ``folders`` (path ->
        permission bits, which must give the owner rwx: the next reset wipes them) and ``tests``
        in place."""
        for sub in ("ws", "tmp", "home", "tests", "out"):
            d = self._fs / sub
            for entry in os.scandir(d):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
        self._put(self._fs / "ws", files)
        for rel, mode in (folders or {}).items():
            if mode & 0o700 != 0o700:
                raise ValueError(f"folder {rel!r}: mode {mode:o} must give its owner rwx")
            target = self._fs / "ws" / rel
            _check_inside(target, self._fs / "ws")
            if not target.is_dir() or target.is_symlink():
                self._mkdir(target)
            os.chmod(target, mode)
        self._put(self._fs / "tests", tests)

    def pytest(self, args: list[str], env: Mapping[str, str], timeout: float
               ) -> tuple[ExecResult, bytes | None, bool]:
        """Run pytest in a forked child; (result, the bytes of the plugin's signed report or None,
        whether pytest started before the agent's code ran)."""
        t0 = time.monotonic()
        ooms = self._oom_count()
        job = {"cwd": self.workdir, "args": args, "env": dict(env), "timeout": timeout,
               "output": f"{stages.OUT_DIR}/output.txt"}
        try:
            self._proc.stdin.write((json.dumps(job) + "\n").encode())
            self._proc.stdin.flush()
            line = self._read_line(timeout + 10.0)
        except OSError:  # the server died (killed from outside, or by the job): a broken pipe
            line = ""
        self._kill_strays()
        if not line:  # None: no answer in time; "": the server is gone
            self._kill_all()
            self._spawn_shell()
            raise SandboxError("the fork server stopped answering" if line is None else "the fork server died")
        answer = json.loads(line)
        output = (self._fs / "out" / "output.txt")
        text = output.read_bytes()[-4000:].decode(errors="replace") if output.exists() else ""
        stop = StopReason.TIMEOUT if answer["timed_out"] else (
            StopReason.MEMORY if self._oom_count() > ooms else StopReason.EXITED)
        code = answer["code"]
        res = ExecResult(code if code >= 0 else 128 - code, text, "", stop, time.monotonic() - t0)
        try:
            raw = (self._fs / "out" / "report.json").read_bytes()
        except OSError:
            raw = None
        return res, raw, bool(answer.get("started"))


class VerifierPool:
    """N warm verification sandboxes; ``verify_files`` / ``map`` verify finished workspaces."""

    def __init__(self, workers: int = 2, workdir: str = "/workspace", static: bool = True,
                 memory_mb: int = 2048):
        self.workers, self.workdir, self.static = workers, workdir, static
        self._idle: queue.Queue[ForkServerSandbox] = queue.Queue()
        # started here, in the caller's thread: a sandbox dies with the thread that made it
        self._all = [ForkServerSandbox(workdir, Limits(memory_mb=memory_mb)) for _ in range(workers)]
        try:
            for box in self._all:
                box.start()
                self._idle.put(box)
        except BaseException:
            self.close()
            raise

    def verify_files(self, task: Task, files: Mapping[str, bytes], trace: list[dict] | None = None,
                     modes: Mapping[str, int] | None = None, folders: Mapping[str, int] | None = None) -> Evidence:
        """Verify ``task`` with its workspace replaced by ``files`` (path -> bytes, the agent's output
        over the task's initial files; ``modes``: their permission bits, where not 0o644 or the
        task's own; ``folders``: folders to make, empty ones too, path -> permission bits, each
        with the owner's rwx). A harness failure is unverified evidence, never raised."""
        # no planted .pyc runs in place of its source (``workspace.drop_bytecode``)
        files = {p: d for p, d in files.items() if "__pycache__" not in p.split("/")}
        before = {p: f.data for p, f in task.workspace.items()}
        after = {**before, **files}
        if not fits_fast_path(task, self.workdir):
            return _slow_path(task, files, trace, self.static)
        box = self._idle.get()
        try:
            canary = stages.Canary.draw()
            tests, targets = canary.add_to(task.tests, TESTS_DIR, [f"{TESTS_DIR}/{f}" for f in task.test_spec.pytest_files]
                                           or [TESTS_DIR])
            box.ensure_alive()
            given = {p: f.mode for p, f in task.workspace.items()} | dict(modes or {})
            box.reset({p: TaskFile(d, given.get(p, 0o644)) for p, d in after.items()}, tests, folders or {})
            build = stages.timed("build", stages.build, task, box, after)
            per_test = per_test_default(task)
            key = secrets.token_hex(32)
            env = stages.report_env(key, TESTS_DIR, per_test)
            t0 = time.monotonic()
            # the server passes the report plugin to pytest.main as an object
            res, raw, started = box.pytest([*stages.PYTEST_ARGS, *targets], env, task.limits.verifier_timeout_sec)
            report = stages.read_report(raw, key)
            tests, cases = stages.pytest_result(res, report, started, canary=canary)
            tests.name, tests.duration_s = "tests", round(time.monotonic() - t0, 4)
        except HarnessError as e:
            return unverified(task.id, e)
        finally:
            self._idle.put(box)
        return assemble(task, before, after, build, tests, cases, trace, self.static)

    def map(self, jobs: Iterable[tuple[Task, Mapping[str, bytes]]]) -> list[Evidence]:
        """Verify many (task, files) pairs on the pool's workers, in order."""
        with ThreadPoolExecutor(max_workers=self.workers) as ex:
            return list(ex.map(lambda job: self.verify_files(*job), jobs))

    def close(self) -> None:
        for box in self._all:
            box.close()
        self._all.clear()

    def __enter__(self) -> "VerifierPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _slow_path(task: Task, files: Mapping[str, bytes], trace, static: bool) -> Evidence:
    try:
        box = open_sandbox(task)
    except HarnessError as e:
        return unverified(task.id, e)
    try:
        before = workspace.snapshot(box)
        box.put_files(task.workdir, {p: TaskFile(d) for p, d in files.items()})
        return verify(task, box, before=before, trace=trace, static=static)
    except HarnessError as e:
        return unverified(task.id, e)
    finally:
        box.close()
