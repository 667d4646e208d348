"""``docker``: one container per sandbox, for hosts with a Docker daemon.

The container runs ``sleep infinity`` with no network, a memory and pids
limit, and the task's workdir; the persistent shell is a ``docker exec -i``
bash. Files move with ``docker cp`` (tar streams). Fresh ``run()`` processes
are ``docker exec`` with a clean environment and fresh /tmp and HOME
directories. The image must provide bash, python3 with pytest, and whatever
the tasks need (set ``TERMRL_DOCKER_IMAGE``).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import threading
import time
import uuid
from pathlib import PurePosixPath
from typing import Mapping, Sequence

from termrl.protocols import ExecResult, Files, Limits, SandboxError, TaskFile
from termrl.sandbox.bwrap import BASE_ENV
from termrl.sandbox.shell import ShellSandbox, exit_status, read_until_markers, stop_reason

DEFAULT_IMAGE = os.environ.get("TERMRL_DOCKER_IMAGE", "python:3.11-bookworm")
_KILL_STRAYS = ('for p in /proc/[0-9]*; do p=${p#/proc/}; case " 1 $1 $$ " in *" $p "*) ;; '
                '*) kill -9 "$p" 2>/dev/null && echo "$p";; esac; done')


class DockerSandbox(ShellSandbox):
    backend = "docker"

    def __init__(self, workdir: str = "/workspace", limits: Limits = Limits(),
                 command_timeout: float = 120.0, dirs: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, image: str | None = None):
        self.workdir = workdir
        self.limits = limits
        self.command_timeout = command_timeout
        self.env = {**BASE_ENV, **(env or {})}
        self.image = image or DEFAULT_IMAGE
        self.name = f"termrl-{uuid.uuid4().hex[:12]}"
        self._dirs = list(dirs)
        self._proc: subprocess.Popen | None = None
        self._shell_pid = ""
        self._started = self._closed = False
        self._runs = 0
        self._lock = threading.RLock()

    def _docker(self, *args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", *args], input=input, capture_output=True, timeout=timeout)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        res = self._docker("run", "-d", "--rm", "--name", self.name, "--network", "none",
                           "--memory", f"{self.limits.memory_mb}m", "--pids-limit", str(self.limits.pids),
                           "--workdir", self.workdir, "--entrypoint", "sleep", self.image, "infinity",
                           timeout=300)
        if res.returncode != 0:
            raise SandboxError(f"docker run failed: {res.stderr.decode(errors='replace').strip()}")
        self._docker("exec", self.name, "mkdir", "-p", self.workdir, *self._dirs)
        self._spawn_shell()

    def _spawn_shell(self) -> None:
        env_args = [a for k, v in self.env.items() for a in ("-e", f"{k}={v}")]
        self._proc = subprocess.Popen(["docker", "exec", "-i", "-w", self.workdir, *env_args, self.name,
                                       "/bin/bash", "--noprofile", "--norc"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        res = self._roundtrip("echo $$", 60)
        if res.exit_code is None:
            raise SandboxError("the container's shell did not start: "
                               + res.stderr.decode(errors="replace")[-500:])
        self._shell_pid = res.stdout.decode().strip()

    def _oom_count(self) -> int:
        res = self._docker("inspect", "-f", "{{.State.OOMKilled}}", self.name)
        return int(res.stdout.strip() == b"true")

    def _kill_strays(self) -> int:
        res = self._docker("exec", self.name, "sh", "-c", _KILL_STRAYS, "sh", self._shell_pid or "0")
        return len(res.stdout.split())

    def _kill_all(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        self._kill_strays()

    def _run(self, argv: list[str] | str, timeout: float | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, mounts: Mapping[str, Files] | None = None,
            outputs: Sequence[str] = ()) -> ExecResult:
        if not self._started:
            self.start()
        self._runs += 1
        fresh = f"/tmp/.termrl-run{self._runs}"
        self._docker("exec", self.name, "mkdir", "-p", f"{fresh}/tmp", f"{fresh}/home")
        for path, files in {**{p: {} for p in outputs}, **(mounts or {})}.items():
            self._docker("exec", self.name, "rm", "-rf", path)
            self._docker("exec", self.name, "mkdir", "-p", path)
            self.put_files(path, files)
            if path not in outputs:
                self._docker("exec", self.name, "chmod", "-R", "a-w", path)
        run_env = {**self.env, **(env or {}), "HOME": f"{fresh}/home", "TMPDIR": f"{fresh}/tmp"}
        command = ["/bin/bash", "-c", argv] if isinstance(argv, str) else list(argv)
        full = ["docker", "exec", "-w", cwd or self.workdir, self.name, "env", "-i",
                *[f"{k}={v}" for k, v in run_env.items()], *command]
        t0 = time.monotonic()
        timeout = self.command_timeout if timeout is None else timeout
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cap = read_until_markers(proc, None, t0 + timeout, self.limits.output_bytes,
                                 on_stop=lambda: (self._kill_strays(), proc.kill()))
        code = proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        return ExecResult(exit_status(code), cap.stdout.decode(errors="replace"),
                          cap.stderr.decode(errors="replace"), stop_reason(cap), time.monotonic() - t0,
                          cap.over_limit)

    def put_files(self, directory: str, files: Files) -> None:
        base = directory if directory.startswith("/") else f"{self.workdir}/{directory}"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for rel, f in files.items():
                info = tarfile.TarInfo(rel)
                info.size, info.mode = len(f.data), f.mode
                tar.addfile(info, io.BytesIO(f.data))
        self._docker("exec", self.name, "mkdir", "-p", base)
        res = self._docker("cp", "-", f"{self.name}:{base}", input=buf.getvalue())
        if res.returncode != 0:
            raise SandboxError(f"docker cp into {base} failed: {res.stderr.decode(errors='replace')}")

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        p = PurePosixPath(path if path.startswith("/") else f"{self.workdir}/{path}")
        self.put_files(str(p.parent), {p.name: TaskFile(data, mode)})

    def read_file(self, path: str) -> bytes:
        p = path if path.startswith("/") else f"{self.workdir}/{path}"
        res = self._docker("cp", f"{self.name}:{p}", "-")
        if res.returncode != 0:
            raise FileNotFoundError(f"{path}: {res.stderr.decode(errors='replace').strip()}")
        with tarfile.open(fileobj=io.BytesIO(res.stdout)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise FileNotFoundError(f"{path}: not a regular file")
            return tar.extractfile(member).read()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait()
                self._proc = None
            if self._started:
                self._docker("rm", "-f", self.name)

    def __enter__(self) -> "DockerSandbox":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
