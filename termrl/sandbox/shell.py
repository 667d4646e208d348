"""A persistent bash session driven over pipes, shared by every sandbox backend.

Each command is sent as one line: ``: ; { eval $'<command>'; } </dev/null`` followed by
a marker carrying a fresh random nonce and the exit status. The command runs
in the shell itself, so ``cd`` and ``export`` persist; it reads /dev/null, so it
can never swallow the protocol; a syntax error only fails that ``eval``.
Background jobs are disowned before the marker, so the backend can kill them
without bash reporting "Killed" into the next command's output.
The session reads stdout and stderr until both markers arrive, enforcing a
deadline and an output budget. What to do when a command must be stopped
(kill its processes, restart the shell) is the backend's business, passed in
as callbacks.
"""

from __future__ import annotations

import os
import secrets
import selectors
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from termrl.protocols import ExecResult, Files, SandboxError, StopReason

MARK = b"\x1e\x1f"


def ansi_c_quote(text: str) -> str:
    """Quote ``text`` as a bash ``$'...'`` string (builtin-only, no fork to decode)."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


@dataclass
class Captured:
    stdout: bytearray
    stderr: bytearray
    exit_code: int | None
    """None when the stdout marker never arrived (shell died or the deadline passed)."""
    eof: bool
    """The shell's pipes closed: the shell is gone."""
    timed_out: bool
    over_limit: bool


def read_until_markers(proc: subprocess.Popen, nonce: bytes | None, deadline: float, limit: int,
                       on_stop: Callable[[], None], grace_s: float = 1.0) -> Captured:
    """Read ``proc``'s stdout/stderr until both end markers for ``nonce`` appear
    (or, with ``nonce=None``, until both pipes close).

    At most ``limit`` bytes of output are kept. ``on_stop`` is called once when
    the deadline passes or the output budget is spent; reading then goes on
    for ``grace_s`` so the shell can report the command's status.
    """
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    marks = {out_fd: MARK + nonce + b" ", err_fd: MARK + nonce + b"\n"} if nonce else None
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    windows = {out_fd: b"", err_fd: b""}
    exit_code = None
    eof = timed_out = over_limit = False
    total = 0
    sel = selectors.DefaultSelector()
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                if timed_out or over_limit:
                    break
                timed_out = True
                on_stop()
                deadline = time.monotonic() + grace_s
                continue
            for key, _ in sel.select(timeout=deadline - now):
                fd = key.fd
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    eof = True
                    sel.unregister(fd)
                    continue
                room = max(0, limit - total)
                bufs[fd] += chunk[:room]
                total += len(chunk)
                if total > limit and not over_limit:
                    over_limit = True
                    on_stop()
                    deadline = min(deadline, time.monotonic() + 5.0)
                if marks is None:
                    continue
                window = windows[fd] = (windows[fd] + chunk)[-(len(chunk) + 128):]
                pos = window.find(marks[fd])
                if pos < 0:
                    continue
                if fd == out_fd:
                    end = window.find(MARK, pos + len(marks[fd]))
                    if end < 0:
                        continue  # the status digits have not all arrived yet
                    exit_code = int(window[pos + len(marks[fd]):end])
                sel.unregister(fd)
                cut = bufs[fd].rfind(MARK + nonce)
                if cut < 0 and not over_limit:
                    cut = len(bufs[fd]) - (len(window) - pos)
                if cut >= 0:
                    del bufs[fd][cut:]
                if bufs[fd].endswith(b"\n"):
                    del bufs[fd][-1:]  # the newline the protocol printed before its marker
    finally:
        sel.close()
    return Captured(bufs[out_fd], bufs[err_fd], exit_code, eof, timed_out, over_limit)


def stop_reason(cap: Captured, oom: bool = False, shell_gone: bool = False,
                late: bool = False) -> StopReason:
    """Why a command ended, most specific first."""
    if cap.over_limit:
        return StopReason.OUTPUT_LIMIT
    if oom:
        return StopReason.MEMORY
    if cap.timed_out or late:
        return StopReason.TIMEOUT
    if shell_gone:
        return StopReason.SHELL_DIED
    return StopReason.EXITED


def exit_status(returncode: int) -> int:
    """A Popen return code as a shell would report it (killed by signal N -> 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def command_line(command: str, nonce: bytes) -> bytes:
    """The one line sent to the shell for ``command``.

    It starts with an assignment because bash 5.2 misparses the first word of the line after
    an ``eval`` that failed on an unterminated quote: a leading ``{`` (or ``if``) is no longer
    a reserved word, the line is a syntax error and the non-interactive shell exits,
    losing the agent's cwd and variables. A plain assignment there absorbs it, and unlike
    ``:`` it is no name an agent can redefine: a function named ``:`` (a fork bomb's) would
    otherwise run again before every later command. The protocol's commands go through
    ``builtin`` for the same reason (functions named ``eval`` or ``printf`` are skipped); an
    agent that redefines ``builtin`` itself, or replaces the shell (``exec``), breaks only its
    own markers: the command times out and a clean shell replaces it.
    """
    n = nonce.decode()
    return (
        f"__termrl_rc=0; {{ builtin eval {ansi_c_quote(command)}; }} </dev/null; __termrl_rc=$?; "
        f"builtin disown -a 2>/dev/null; "
        f"builtin printf '\\n\\036\\037{n} %d\\036\\037\\n' $__termrl_rc; "
        f"builtin printf '\\n\\036\\037{n}\\n' >&2\n"
    ).encode()


def new_nonce() -> bytes:
    return secrets.token_hex(8).encode()


class ShellSandbox:
    """The persistent-shell half of a sandbox, shared by every backend.

    A backend provides ``_proc`` (the shell, with stdin/stdout/stderr pipes), ``_run()``
    (a fresh process, wrapped by ``run``), ``_spawn_shell()``, ``_kill_strays() -> int``
    (kill every process but the shell's own), ``_kill_all()`` and ``_oom_count()``, plus
    ``start()``, ``limits`` and ``command_timeout``.
    """

    _proc: subprocess.Popen | None

    def _drain(self) -> None:
        """Discard output that killed strays wrote after the marker, so it never reaches the next command."""
        for f in (self._proc.stdout, self._proc.stderr):
            try:
                while os.read(f.fileno(), 1 << 16):
                    pass
            except (BlockingIOError, OSError, ValueError):
                pass

    def _roundtrip(self, command: str, timeout: float) -> Captured:
        nonce = new_nonce()
        try:
            self._proc.stdin.write(command_line(command, nonce))
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return Captured(bytearray(), bytearray(), None, True, False, False)
        return read_until_markers(self._proc, nonce, time.monotonic() + timeout,
                                  self.limits.output_bytes, on_stop=self._kill_strays)

    def run(self, argv: list[str] | str, timeout: float | None = None, cwd: str | None = None,
            env: Mapping[str, str] | None = None, mounts: Mapping[str, Files] | None = None,
            outputs: Sequence[str] = ()) -> ExecResult:
        """The backend's ``_run`` (a fresh process, see ``Sandbox.run``); a host error while
        preparing or starting it (a full tmpfs, no processes left) is the harness's: ``SandboxError``."""
        try:
            return self._run(argv, timeout, cwd, env, mounts, outputs)
        except OSError as e:
            program = argv if isinstance(argv, str) else argv[0]
            raise SandboxError(f"could not run {program!r} in the sandbox: {type(e).__name__}: {e}") from e

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` in the persistent shell; no process it started survives the call."""
        with self._lock:
            if self._proc is None:
                self.start()
            timeout = self.command_timeout if timeout is None else timeout
            t0 = time.monotonic()
            ooms = self._oom_count()
            cap = self._roundtrip(command, timeout)
            killed = self._kill_strays()
            self._drain()
            shell_gone = cap.exit_code is None
            stop = stop_reason(cap, oom=self._oom_count() > ooms, shell_gone=shell_gone)
            exit_code = cap.exit_code
            if shell_gone:
                # the command ended, hijacked or outlived the shell: start a clean one
                exit_code = 137
                if stop is StopReason.SHELL_DIED:
                    try:
                        exit_code = exit_status(self._proc.wait(timeout=1.0))  # bwrap passes on bash's
                    except subprocess.TimeoutExpired:
                        pass
                self._kill_all()
                self._spawn_shell()
            return ExecResult(
                exit_code=exit_code, stdout=cap.stdout.decode(errors="replace"),
                stderr=cap.stderr.decode(errors="replace"), stop=stop,
                duration_s=time.monotonic() - t0, output_truncated=cap.over_limit,
                killed_processes=killed)

