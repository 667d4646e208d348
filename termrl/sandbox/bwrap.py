"""The default sandbox: bubblewrap namespaces, cgroup limits, a tmpfs workspace.

See ``termrl.sandbox`` for the threat model. Host layout of one sandbox::

    $TERMRL_SANDBOX_DIR/<name>/owner.pid   pid of the harness (stale sandboxes are swept)
    $TERMRL_SANDBOX_DIR/<name>/fs/         a tmpfs of ``disk_mb`` (when root), holding:
        ws/      -> the task's workdir        tmp/  -> /tmp        home/ -> /root
        d<i>/    -> other writable dirs       r<n>/ -> a fresh /tmp, /root and mounts of one run()
"""

from __future__ import annotations

import base64
import ctypes
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from contextlib import nullcontext
from pathlib import Path, PurePosixPath
from typing import Mapping, Sequence

from termrl.protocols import ExecResult, Files, Limits, SandboxError
from termrl.sandbox import cgroups
from termrl.sandbox.shell import ShellSandbox, exit_status, read_until_markers, stop_reason

SANDBOX_UID = 65534
"""Host uid the sandbox runs as when the harness is root (``nobody``); uid 0 inside."""
RUNTIME_DIR = Path(os.environ.get("TERMRL_SANDBOX_DIR", Path(tempfile.gettempdir()) / "termrl-sandboxes"))
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV = {
    "PATH": DEFAULT_PATH,
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "dumb",
    "TMPDIR": "/tmp",
    "TAR_OPTIONS": "--no-same-owner",  # one uid is mapped: tar as root cannot give files other owners
    "GIT_AUTHOR_NAME": "agent",
    "GIT_AUTHOR_EMAIL": "agent@termrl.local",
    "GIT_COMMITTER_NAME": "agent",
    "GIT_COMMITTER_EMAIL": "agent@termrl.local",
}
"""The whole environment of a sandbox: built from scratch, nothing of the harness's leaks in."""
LAUNCH_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
"""The environment bubblewrap itself starts with. Its process is PID 1 of the sandbox and its
/proc/1/environ is readable inside, so it must not carry the harness's variables either."""

_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
NAMESPACE_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
                  "CAP_SETUID", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT")
"""Docker's default capabilities, held inside the sandbox's user namespace only: they act on
the sandbox's own files and processes (so root can fix a mode-000 file, as in Docker), never
on host files, whose owners are not mapped into the namespace."""
_sweep_lock = threading.Lock()
_swept = False


def bwrap_path() -> str | None:
    return shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/usr/local/bin")


def launch(argv: list[str], **popen) -> subprocess.Popen:
    """Start a bwrap command line with its options (mounts, environment) read from a memory file
    (``--args FD``), not its argv: the sandbox's PID 1 is bwrap itself, and its /proc/1/cmdline
    is readable inside, so a variable set for one run (a report's key) would be too."""
    start = next(i for i, a in enumerate(argv) if a == bwrap_path())
    end = argv.index("--", start)
    fd = os.memfd_create("bwrap-args")
    try:
        os.write(fd, b"".join(a.encode() + b"\0" for a in argv[start + 1:end]))
        os.lseek(fd, 0, os.SEEK_SET)
        return subprocess.Popen([*argv[:start + 1], "--args", str(fd), *argv[end:]], pass_fds=(fd,), cwd="/",
                                close_fds=True, env=LAUNCH_ENV, **popen)
    finally:
        os.close(fd)


def _mount_tmpfs(target: Path, size_mb: int, uid: int) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    opts = f"size={size_mb}m,mode=0755,uid={uid},gid={uid}".encode()
    return libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", 0, opts) == 0


def _umount(target: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(str(target).encode(), 2)  # MNT_DETACH


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> None:
    """Remove sandboxes whose harness died without closing them (kill -9)."""
    global _swept
    with _sweep_lock:
        if _swept or not RUNTIME_DIR.is_dir():
            _swept = True
            return
        _swept = True
        for d in RUNTIME_DIR.iterdir():
            try:
                owner = int((d / "owner.pid").read_text())
            except (OSError, ValueError):
                owner = -1
                try:
                    if time.time() - d.stat().st_mtime < 60:
                        continue  # being created by another harness: owner.pid not written yet
                except OSError:
                    continue
            if owner > 0 and _pid_alive(owner):
                continue
            _umount(d / "fs")
            shutil.rmtree(d, ignore_errors=True)
        if cgroups.available():
            cgroups.sweep(alive={d.name for d in RUNTIME_DIR.iterdir()})


def held_by(pid: int) -> list[str]:
    """The sandboxes process ``pid`` holds open: ``bwrap pid N`` for each bwrap child (of any of
    its threads) and the runtime directory of each sandbox it owns. Empty once it closed them all."""
    held = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
                command = (proc / "cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and command.endswith(b"bwrap"):
                held.append(f"bwrap pid {proc.name}")
    for owner in RUNTIME_DIR.glob("*/owner.pid"):
        try:
            if owner.read_text().strip() == str(pid):
                held.append(str(owner.parent))
        except OSError:
            continue
    return held


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _terminate(proc: subprocess.Popen) -> None:
    """Kill a running bwrap from the inside out: its PID namespace's init first (the kernel then
    kills and reaps everything in the namespace, and bwrap reaps the init and exits), then bwrap
    if it is still there. Killed the other way round, the init is orphaned and its zombie stays
    under the host's pid 1, for good where that is not a real init (a container's)."""
    for pid in _children(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    if proc.poll() is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _pidns_members(pidns: str) -> set[int]:
    """Host pids whose pid namespace is ``pidns`` (fallback when there are no cgroups)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if os.readlink(f"/proc/{entry.name}/ns/pid") == pidns:
                    found.add(int(entry.name))
            except OSError:
                pass
    return found


class BwrapSandbox(ShellSandbox):
    """A bubblewrap sandbox with a persistent shell. See ``termrl.sandbox`` for the threat model."""

    backend = "bwrap"

    def __init__(self, workdir: str = "/workspace", limits: Limits = Limits(),
                 command_timeout: float = 120.0, dirs: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, name: str | None = None,
                 binds: Mapping[str, str] | None = None, system_root: str | None = None):
        if not workdir.startswith("/"):
            raise ValueError(f"workdir must be an absolute path, got {workdir!r}")
        self.workdir = str(PurePosixPath(workdir))
        self.limits = limits
        self.command_timeout = command_timeout
        self.env = {**BASE_ENV, **(env or {})}
        self.name = name or f"sbx-{uuid.uuid4().hex[:12]}"
        self.extra_dirs = sorted({str(PurePosixPath(d)) for d in dirs
                                  if not _within(d, self.workdir)}, key=len)
        self.binds = dict(binds or {})
        """{sandbox path: host directory}, mounted read-only (a task's built environment)."""
        self.system_root = system_root
        """A host folder whose ``usr`` and ``etc`` stand for the host's (a task's system layer), or None."""
        self.privileged = os.geteuid() == 0
        self._proc: subprocess.Popen | None = None
        self._shell_pids: set[int] = set()
        self._pidns = ""
        self._cg: cgroups.CgroupPair | None = None
        self._root: Path | None = None
        self._fs: Path | None = None
        self._mounted = False
        self._closed = False
        self._runs = itertools.count()
        self._run_dirs: list[tuple[str, Path]] = []
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._proc is not None:
            return
        if self._closed:
            raise SandboxError("this sandbox was closed; create a new one")
        if not bwrap_path():
            raise SandboxError("bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
        sweep_stale()
        RUNTIME_DIR.mkdir(mode=0o711, parents=True, exist_ok=True)
        self._root = RUNTIME_DIR / self.name
        self._root.mkdir(mode=0o711)
        (self._root / "owner.pid").write_text(str(os.getpid()))
        self._fs = self._root / "fs"
        self._fs.mkdir()
        if self.privileged:
            self._mounted = _mount_tmpfs(self._fs, self.limits.disk_mb, SANDBOX_UID)
            if cgroups.available():
                self._cg = cgroups.CgroupPair(self.name, self.limits.memory_mb << 20, self.limits.pids)
        for sub in ["ws", "tmp", "home"] + [f"d{i}" for i in range(len(self.extra_dirs))]:
            self._mkdir(self._fs / sub)
        os.chmod(self._fs / "tmp", 0o1777)
        self._spawn_shell()

    def _mounts(self, tmp: Path, home: Path) -> list[str]:
        args = []
        for name in _ROOT_LINKS:
            p = Path("/") / name
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), str(p)]
            elif p.is_dir():
                args += ["--ro-bind", str(p), str(p)]
        system = self.system_root or ""
        args += ["--ro-bind", f"{system}/usr", "/usr", "--ro-bind", f"{system}/etc", "/etc",
                 "--proc", "/proc", "--dev", "/dev",
                 "--bind", str(tmp), "/tmp", "--bind", str(home), "/root"]
        for sandbox_path, host in sorted(self.binds.items()):
            args += ["--ro-bind", host, sandbox_path]
        pairs = [(self.workdir, self._fs / "ws")] + [
            (d, self._fs / f"d{i}") for i, d in enumerate(self.extra_dirs)]
        for sandbox_path, host in sorted(pairs, key=lambda p: len(p[0])):
            args += ["--bind", str(host), sandbox_path]
        return args

    def _argv(self, tmp: Path, home: Path, extra: list[str], cwd: str, env: Mapping[str, str],
              command: list[str]) -> list[str]:
        argv = [bwrap_path(), "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0",
                "--disable-userns", "--die-with-parent", "--new-session", "--hostname", "sandbox",
                *(a for cap in NAMESPACE_CAPS for a in ("--cap-add", cap)),
                *self._mounts(tmp, home), *extra, "--remount-ro", "/", "--clearenv"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += ["--chdir", cwd, "--", *command]
        prefix: list[str] = []
        if self.privileged:
            prefix = ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
                      "--inh-caps=-all", "--bounding-set=-all"]
        if self._cg is not None:
            self._cg.ensure()
            # join the sandbox's cgroups before anything else runs, then drop privileges
            joins = " && ".join(f"echo $$ > {f}" for f in self._cg.procs_files)
            prefix = ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *prefix]
        return prefix + argv

    def _spawn_shell(self) -> None:
        argv = self._argv(self._fs / "tmp", self._fs / "home", [], self.workdir, self.env,
                          ["/bin/bash", "--noprofile", "--norc"])
        self._proc = launch(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # handshake: proves the shell is up and learns which processes are the shell itself
        res = self._roundtrip(":", 30.0)
        if res.exit_code is None:
            err = bytes(res.stderr).decode(errors="replace")[-2000:]
            self._kill_all()
            raise SandboxError(f"the sandbox shell did not start: {err.strip() or 'no output'}")
        init = _children(self._proc.pid)
        self._shell_pids = {self._proc.pid, *init, *(c for i in init for c in _children(i))}
        if init:
            self._pidns = os.readlink(f"/proc/{init[0]}/ns/pid")

    def close(self) -> None:
        """Kill every process of the sandbox and delete its files. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._kill_all()
            if self._cg is not None:
                self._cg.remove_when_empty()
            if self._root is not None:
                if self._mounted:
                    _umount(self._fs)
                shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> "BwrapSandbox":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # ------------------------------------------------------------------ processes

    def _oom_count(self) -> int:
        return self._cg.oom_kills() if self._cg is not None else 0

    def _members(self) -> set[int]:
        if self._cg is not None:
            return self._cg.pids()
        return _pidns_members(self._pidns) if self._pidns else set()

    def _kill_strays(self) -> int:
        """Kill every sandbox process except the shell itself; return how many were killed."""
        killed: set[int] = set()
        if not self._members() - self._shell_pids:
            return 0
        with self._cg.no_forks() if self._cg is not None else nullcontext():
            for _ in range(200):
                strays = self._members() - self._shell_pids
                if not strays:
                    break
                for pid in strays:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed.add(pid)
                    except ProcessLookupError:
                        pass
                time.sleep(0.001)
        return len(killed)

    def _kill_all(self) -> None:
        if self._proc is not None:
            _terminate(self._proc)
            for pid in self._members():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for f in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
            self._proc = None

    # ------------------------------------------------------------------ commands

    def _run(self, argv: list[str] | str, timeout: float | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, mounts: Mapping[str, Files] | None = None,
            outputs: Sequence[str] = ()) -> ExecResult:
        """Run a command in a fresh sandbox process sharing this workspace.

        Fresh /tmp and /root, the base environment plus ``env``, no agent shell
        state. ``mounts`` maps absolute directories to files copied there,
        read-only, for this run only (hidden tests); ``outputs`` are empty
        writable directories (a reward file's), or writable copies of a
        mount's files when named in both. Both stay readable with
        ``read_file`` until the next ``run``.
        """
        with self._lock:
            if self._root is None:
                self.start()
            self._drop_run_dirs()
            self._kill_strays()
            run_dir = self._fs / f"r{next(self._runs)}"
            self._mkdir(run_dir)
            for sub in ("tmp", "home"):
                self._mkdir(run_dir / sub)
            os.chmod(run_dir / "tmp", 0o1777)
            extra = []
            dirs = [(p, f, "--bind" if p in outputs else "--ro-bind") for p, f in (mounts or {}).items()] + [
                (p, {}, "--bind") for p in outputs if p not in (mounts or {})]
            for i, (path, files, how) in enumerate(sorted(dirs, key=lambda d: len(d[0]))):
                host = run_dir / f"m{i}"
                self._mkdir(host)
                self._put(host, files)
                extra += [how, str(host), path]
                self._run_dirs.append((str(PurePosixPath(path)), host))
            command = ["/bin/bash", "-c", argv] if isinstance(argv, str) else list(argv)
            full = self._argv(run_dir / "tmp", run_dir / "home", extra, cwd or self.workdir,
                              {**self.env, **(env or {})}, command)
            timeout = self.command_timeout if timeout is None else timeout
            t0 = time.monotonic()
            ooms = self._oom_count()
            proc = launch(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                cap = read_until_markers(proc, None, t0 + timeout, self.limits.output_bytes,
                                         on_stop=lambda: _terminate(proc))
                code = proc.wait(timeout=max(0.1, t0 + timeout - time.monotonic()))
                late = False
            except subprocess.TimeoutExpired:
                late = True
            finally:
                if proc.poll() is None:
                    _terminate(proc)
                code = proc.wait()
                proc.stdout.close()
                proc.stderr.close()
            stop = stop_reason(cap, oom=self._oom_count() > ooms, late=late)
            return ExecResult(exit_code=exit_status(code),
                              stdout=cap.stdout.decode(errors="replace"),
                              stderr=cap.stderr.decode(errors="replace"), stop=stop,
                              duration_s=time.monotonic() - t0, output_truncated=cap.over_limit)

    def _drop_run_dirs(self) -> None:
        for name in [p for p in self._fs.iterdir() if p.name.startswith("r")] if self._fs else []:
            shutil.rmtree(name, ignore_errors=True)
        self._run_dirs = []

    # ------------------------------------------------------------------ files

    def _mkdir(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if self.privileged:
            os.chown(path, SANDBOX_UID, SANDBOX_UID)

    def _put(self, base: Path, files: Files) -> None:
        for rel, f in files.items():
            self._write_host(base, rel, f.data, f.mode)

    def _write_host(self, base: Path, rel: str, data: bytes, mode: int) -> None:
        target = base / rel
        parent = base
        for part in PurePosixPath(rel).parts[:-1]:
            parent = parent / part
            if not parent.is_dir() or parent.is_symlink():
                self._mkdir(parent)
        _check_inside(target, base)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        try:
            os.write(fd, data)
            os.fchmod(fd, mode)
            if self.privileged:
                os.fchown(fd, SANDBOX_UID, SANDBOX_UID)
        finally:
            os.close(fd)

    def _host_path(self, path: str) -> tuple[Path, str] | None:
        p = PurePosixPath(path if path.startswith("/") else f"{self.workdir}/{path}")
        table = [(self.workdir, self._fs / "ws"), ("/tmp", self._fs / "tmp"),
                 ("/root", self._fs / "home")]
        table += [(d, self._fs / f"d{i}") for i, d in enumerate(self.extra_dirs)] + self._run_dirs
        for sandbox_dir, host in sorted(table, key=lambda t: -len(t[0])):
            if _within(str(p), sandbox_dir):
                return host, str(p.relative_to(sandbox_dir))
        return None

    def put_files(self, directory: str, files: Files) -> None:
        """Copy ``files`` under the absolute or workdir-relative ``directory``.

        Raises:
            SandboxError: a file could not be written (a folder or a read-only file in its way).
        """
        for rel, f in files.items():
            try:
                self.write_file(f"{directory.rstrip('/')}/{rel}", f.data, f.mode)
            except OSError as e:
                raise SandboxError(f"could not write {rel}: {type(e).__name__}: {e}") from e

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        if self._root is None:
            self.start()
        mapped = self._host_path(path)
        if mapped is None:
            raise PermissionError(f"{path} is not in a writable directory of the sandbox "
                                  f"(workdir {self.workdir}, /tmp, /root)")
        self._write_host(mapped[0], mapped[1], data, mode)

    def read_file(self, path: str) -> bytes:
        if self._root is None:
            self.start()
        mapped = self._host_path(path)
        if mapped is not None:
            host = mapped[0] / mapped[1]
            try:
                _check_inside(host, mapped[0])
                return host.read_bytes()
            except PermissionError:
                pass  # a symlink leaving the workspace: resolve it inside the sandbox instead
        res = self.run(["/bin/sh", "-c", 'base64 -w0 -- "$1"', "sh", path], timeout=30)
        if res.exit_code != 0:
            raise FileNotFoundError(f"{path}: {res.stderr.strip()}")
        return base64.b64decode(res.stdout)

    def host_home(self) -> Path:
        """The host directory that holds the agent's HOME (/root)."""
        if self._root is None:
            self.start()
        return self._fs / "home"

    def stray_processes(self) -> int:
        """How many sandbox processes run besides the agent's shell (daemons a command left);
        one that has exited and waits to be reaped is not counted."""
        if self._root is None:
            return 0
        return sum(1 for pid in self._members() - self._shell_pids if _alive(pid))

    def copy_workspace_from(self, source: Path) -> None:
        """Fill the (empty) workdir with a copy of host directory ``source``: contents, modes,
        times and links as they are there, owned as the sandbox's own files are."""
        target = self.host_workspace()
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        if self.privileged:
            for dirpath, dirnames, filenames in os.walk(target):
                for name in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, name), SANDBOX_UID, SANDBOX_UID)

    def host_workspace(self) -> Path:
        """The host directory that holds the workdir (read it only when no command runs)."""
        if self._root is None:
            self.start()
        return self._fs / "ws"


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _within(path: str, directory: str) -> bool:
    path, directory = str(PurePosixPath(path)), str(PurePosixPath(directory))
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _check_inside(path: Path, base: Path) -> None:
    """Refuse host paths that a symlink planted by the agent would lead out of ``base``."""
    real = os.path.realpath(path)
    if not _within(real, os.path.realpath(base)):
        raise PermissionError(f"{path} resolves outside the sandbox ({real})")
