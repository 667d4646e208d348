"""Sandboxes started ahead of the episodes (``termrl.sandbox.warm``): handed out once, of the
right shape only, never dead, and every one closed."""

from __future__ import annotations

import os
import time

import pytest

from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import Limits, Task, TaskFile
from termrl.sandbox import make_sandbox
from termrl.sandbox.bwrap import RUNTIME_DIR
from termrl.sandbox.warm import WarmSandboxes, shared, warm_sandboxes_closed
from termrl.tasks.runtime import open_sandbox

pytestmark = pytest.mark.sandbox

TASK = Task(id="warm-check", instruction="Write hi to out.txt.", workspace={"seed.txt": TaskFile(b"s\n")},
            tests={"test_out.py": TaskFile(b"import pathlib\n\n\ndef test_out():\n"
                                           b"    assert pathlib.Path('out.txt').read_text().strip() == 'hi'\n")})


def ready(warm: WarmSandboxes, shape, count: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while len(warm._ready.get(shape, [])) < count:
        assert time.monotonic() < deadline, "the warm sandboxes were never started"
        time.sleep(0.02)


def test_a_ready_sandbox_is_handed_out_once_of_its_own_shape_only():
    warm = WarmSandboxes(size=2)
    small = lambda: make_sandbox("bwrap", limits=Limits(memory_mb=256))  # noqa: E731
    large = lambda: make_sandbox("bwrap", limits=Limits(memory_mb=512))  # noqa: E731
    try:
        assert warm.take("small", small) is None and warm.misses == 1
        ready(warm, "small", 2)
        first, second = warm.take("small", small), warm.take("small", small)
        assert first is not second and warm.hits == 2
        assert first.limits.memory_mb == 256 and first.exec("echo $((6 * 7))").stdout.strip() == "42"
        assert warm.take("large", large) is None  # another shape never gets a small one
        ready(warm, "large", 1)
        assert warm.take("large", large).limits.memory_mb == 512
        ready(warm, "small", 2)
        dead = warm._ready["small"][-1]
        dead._kill_all()  # its shell dies while it waits
        got = warm.take("small", small)
        assert got is not dead and dead._closed, "a dead sandbox is closed, never handed out"
        for box in (first, second, got):
            box.close()
    finally:
        waiting = [b for bs in warm._ready.values() for b in bs]
        warm.close()
    assert waiting and all(b._closed and not b._root.exists() for b in waiting)
    assert warm.take("small", small) is None


def test_episodes_on_warm_sandboxes_are_isolated_and_verified_as_usual():
    warm = WarmSandboxes(size=1)
    try:
        box = open_sandbox(TASK, warm=warm)
        box.exec("echo leak > leak.txt; echo hi > out.txt")
        box.close()
        time.sleep(0.5)
        again = open_sandbox(TASK, warm=warm)
        try:
            assert warm.hits == 1
            listing = sorted(os.listdir(again.host_workspace()))
            assert listing == ["seed.txt"], "a warm sandbox holds the task's files and nothing an episode left"
        finally:
            again.close()
    finally:
        warm.close()
    env = TerminalEnv(EnvConfig(static=False, warm_sandboxes=1), spec="sparse")
    with warm_sandboxes_closed():  # as termrl train and the quickstart wrap a run
        for _ in range(2):
            env.reset(TASK)
            env.step('<tool_call>{"name": "bash", "arguments": {"command": "echo hi > out.txt"}}</tool_call>')
            env.step('<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
            assert env.outcome.evidence.passed and env.outcome.total == 1.0
        assert shared(1).hits >= 1
    mine = [p for p in RUNTIME_DIR.glob("*/owner.pid") if p.read_text().strip() == str(os.getpid())]
    assert mine == [], "the run's end closed the sandboxes waiting for it"
    with pytest.raises(ValueError, match="warm_sandboxes"):
        EnvConfig(warm_sandboxes=-1)
