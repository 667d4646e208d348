"""Sandboxes killed from outside: an episode's sandbox mid-command, the verifier pool's fork
server between and during verifications. Each gives a typed result for what it cut, and the
next command or verification runs as usual."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from termrl.actions import render_tool_call
from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import Action, ActionKind, Task, TaskFile
from termrl.verify.pool import VerifierPool

pytestmark = pytest.mark.sandbox

TEST = b"import time\n\ndef test_g():\n    time.sleep(float(open('delay').read()))\n    " \
       b"assert open('greeting.txt').read() == 'hello\\n'\n"
TASK = Task(id="t", instruction="Write hello into greeting.txt.", tests={"test_g.py": TaskFile(TEST)})


def cmd(command: str) -> str:
    return render_tool_call(Action(ActionKind.COMMAND, command=command))


def running(pids, program: str) -> bool:
    """One of ``pids`` runs ``program`` (its command line's first word)."""
    for pid in pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if os.path.basename(f.read().split(b"\0")[0]) == program.encode():
                    return True
        except OSError:
            pass
    return False


def kill_all(pids, delay: float, once_running: str | None = None, first=frozenset()) -> threading.Thread:
    """SIGKILL every one of ``pids()`` after ``delay`` seconds, or as soon as one of them runs
    ``once_running``: the command is then surely in the shell, however loaded the machine.
    ``first`` are killed before the others: killing a command before its shell would let a loaded
    shell finish the line (``sleep 20; echo done``) and answer before its own kill lands."""
    def run():
        if once_running:
            end = time.monotonic() + 30
            while not running(pids, once_running) and time.monotonic() < end:
                time.sleep(0.02)
        else:
            time.sleep(delay)
        for pid in [*first, *(set(pids()) - set(first))]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    t = threading.Thread(target=run)
    t.start()
    return t


def test_an_episode_whose_sandbox_is_killed_mid_command_goes_on():
    env = TerminalEnv(EnvConfig(max_steps=6))
    try:
        env.reset(TASK)
        env.step(cmd("echo hello > greeting.txt; echo 0 > delay"))
        box = env.box
        killer = kill_all(box._members, 0, once_running="sleep", first=sorted(box._shell_pids))
        started = time.monotonic()
        obs, _, term, trunc, _ = env.step(cmd("sleep 20; echo done"))
        killer.join()
        assert time.monotonic() - started < 15 and "shell_died" in obs and not (term or trunc), obs
        obs, *_ = env.step(cmd("cat greeting.txt; echo alive"))
        assert obs.split()[-2:] == ["hello", "alive"], obs  # the workspace survived, a new shell answers
        *_, info = env.step(render_tool_call(Action(ActionKind.SUBMIT)))
        assert info["evidence"].passed
    finally:
        env.close()


def test_the_pool_restarts_a_fork_server_killed_between_or_during_verifications():
    files = {"greeting.txt": b"hello\n", "delay": b"0"}
    with VerifierPool(workers=1) as pool:
        assert pool.verify_files(TASK, files).passed
        box = pool._all[0]
        kill_all(box._members, 0).join()  # between two verifications
        time.sleep(0.2)
        assert pool.verify_files(TASK, files).passed
        killer = kill_all(box._members, 1.0)  # during one: its tests sleep 3 s
        cut = pool.verify_files(TASK, {**files, "delay": b"3"})
        killer.join()
        assert not cut.verified and "fork server" in (cut.verify_error or ""), cut
        assert pool.verify_files(TASK, files).passed
