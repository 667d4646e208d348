"""``local``: NO ISOLATION. Commands run as the harness's own user, on the host.

For debugging a task or the harness only. The workdir is a host temporary
directory (an absolute task workdir such as /app is *not* honoured; commands see
the real path), the network and every host file are reachable, and nothing
but wall time and output size is limited. Never train or evaluate an untrusted
policy with it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from termrl.protocols import ExecResult, Files, Limits, SandboxError
from termrl.sandbox.bwrap import BASE_ENV
from termrl.sandbox.shell import ShellSandbox, exit_status, read_until_markers, stop_reason

WARNING = "termrl: the 'local' sandbox has NO isolation: commands run on the host as you."


def _descendants(root: int) -> set[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, stack = set(), [root]
    while stack:
        for child in parents.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


class LocalSandbox(ShellSandbox):
    backend = "local"

    def __init__(self, workdir: str = "/workspace", limits: Limits = Limits(),
                 command_timeout: float = 120.0, dirs: Sequence[str] = (),
                 env: Mapping[str, str] | None = None):
        self.task_workdir = workdir
        self.limits = limits
        self.command_timeout = command_timeout
        self._root = Path(tempfile.mkdtemp(prefix="termrl-local-"))
        self.workdir = str(self._root / "ws")
        self.env = {**BASE_ENV, **(env or {}), "HOME": str(self._root / "home"),
                    "TMPDIR": str(self._root / "tmp")}
        self._dirs = {d: self._root / f"d{i}" for i, d in enumerate(dirs)}
        self._proc: subprocess.Popen | None = None
        self._closed = False
        self._lock = threading.RLock()

    def start(self) -> None:
        """Raises ``SandboxError`` once the sandbox is closed."""
        if self._closed:
            raise SandboxError("this sandbox was closed; create a new one")
        if self._proc is not None:
            return
        print(WARNING, file=sys.stderr)
        for sub in ("ws", "home", "tmp"):
            (self._root / sub).mkdir(exist_ok=True)
        for d in self._dirs.values():
            d.mkdir(exist_ok=True)
        self._spawn_shell()

    def _spawn_shell(self) -> None:
        self._proc = subprocess.Popen(["/bin/bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.workdir,
                                      env=self.env, start_new_session=True)

    def _oom_count(self) -> int:
        return 0

    def _kill_strays(self) -> int:
        strays = _descendants(self._proc.pid) if self._proc else set()
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return len(strays)

    def _kill_all(self) -> None:
        if self._proc is None:
            return
        self._kill_strays()
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._proc.wait()
        for f in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            f.close()
        self._proc = None

    def _path(self, path: str) -> Path:
        for sandbox_dir, host in [(self.task_workdir, Path(self.workdir)), *self._dirs.items()]:
            if path == sandbox_dir or path.startswith(sandbox_dir.rstrip("/") + "/"):
                return host / os.path.relpath(path, sandbox_dir)
        return Path(path) if path.startswith("/") else Path(self.workdir) / path

    def _run(self, argv: list[str] | str, timeout: float | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, mounts: Mapping[str, Files] | None = None,
            outputs: Sequence[str] = ()) -> ExecResult:
        """A fresh process; ``mounts`` and ``outputs`` are host temp dirs (writable: no
        isolation), and absolute paths naming them in ``argv`` are rewritten."""
        if self._proc is None:
            self.start()
        run_env = {**self.env, **(env or {})}
        for i, (path, files) in enumerate({**{p: {} for p in outputs}, **(mounts or {})}.items()):
            host = self._root / f"m{i}"
            shutil.rmtree(host, ignore_errors=True)
            self._dirs[path] = host
            self.put_files(path, files)
            host.mkdir(exist_ok=True)
        if isinstance(argv, str):
            argv = ["/bin/bash", "-c", argv]
        argv = [str(self._path(a)) if a.startswith("/") and self._path(a) != Path(a) else a for a in argv]
        t0 = time.monotonic()
        timeout = self.command_timeout if timeout is None else timeout
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=str(self._path(cwd or self.task_workdir)),
                                env=run_env, start_new_session=True)

        def stop() -> None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        cap = read_until_markers(proc, None, t0 + timeout, self.limits.output_bytes, on_stop=stop)
        stop()
        code = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        return ExecResult(exit_status(code), cap.stdout.decode(errors="replace"),
                          cap.stderr.decode(errors="replace"), stop_reason(cap), time.monotonic() - t0,
                          cap.over_limit)

    def put_files(self, directory: str, files: Files) -> None:
        for rel, f in files.items():
            try:
                self.write_file(f"{directory.rstrip('/')}/{rel}", f.data, f.mode)
            except OSError as e:
                raise SandboxError(f"could not write {rel}: {type(e).__name__}: {e}") from e

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(mode)

    def read_file(self, path: str) -> bytes:
        return self._path(path).read_bytes()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._kill_all()
            shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> "LocalSandbox":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
