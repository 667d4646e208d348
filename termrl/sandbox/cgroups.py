"""cgroup v1 memory and pids limits for one sandbox (when the host lets us write them).

Every process of a sandbox joins one ``memory`` and one ``pids`` cgroup named
after the sandbox, so that a memory hog is OOM-killed inside its own limit, a
fork bomb hits ``pids.max``, and the harness can list every process of the
sandbox (``cgroup.procs``) however it was started (setsid, double fork).
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(os.environ.get("TERMRL_CGROUP_ROOT", "/sys/fs/cgroup"))
PARENT = "termrl"


def available() -> bool:
    """True when cgroup v1 memory and pids hierarchies exist and are writable by us."""
    return all(os.access(ROOT / c, os.W_OK) and (ROOT / c / "cgroup.procs").exists()
               for c in ("memory", "pids"))


class CgroupPair:
    """The memory and pids cgroups of one sandbox."""

    def __init__(self, name: str, memory_bytes: int, pids: int):
        self.dirs = {c: ROOT / c / PARENT / name for c in ("memory", "pids")}
        self.memory_bytes, self.max_pids = memory_bytes, pids
        self._create()

    def ensure(self) -> None:
        """Make the cgroups again if they are gone: while a sandbox starts a new shell they are
        empty for an instant, and another harness's ``sweep`` (one with another sandboxes'
        folder, which does not list this sandbox) may remove them then."""
        if not all(d.is_dir() for d in self.dirs.values()):
            self._create()

    def _create(self) -> None:
        memory_bytes, pids = self.memory_bytes, self.max_pids
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        mem = self.dirs["memory"]
        (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
        swap = mem / "memory.memsw.limit_in_bytes"
        if swap.exists():
            try:
                swap.write_text(str(memory_bytes))
            except OSError:
                pass  # swap accounting disabled: no swap to limit
        (self.dirs["pids"] / "pids.max").write_text(str(pids))

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def pids(self) -> set[int]:
        """Every process in the sandbox's cgroup (none once it was removed)."""
        try:
            text = (self.dirs["pids"] / "cgroup.procs").read_text()
        except FileNotFoundError:
            return set()
        return {int(p) for p in text.split()}

    @contextmanager
    def no_forks(self):
        """No new process can start in the sandbox meanwhile (``pids.max`` 0): a fork bomb cannot
        outpace the harness killing it."""
        limit = self.dirs["pids"] / "pids.max"
        before = limit.read_text().strip()
        limit.write_text("0")
        try:
            yield
        finally:
            limit.write_text(before)

    def oom_kills(self) -> int:
        """How many processes the kernel OOM-killed in this cgroup so far."""
        for line in (self.dirs["memory"] / "memory.oom_control").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return int((self.dirs["memory"] / "memory.failcnt").read_text())

    def remove_when_empty(self, wait_s: float = 0.5, patience_s: float = 30.0) -> None:
        """Remove the cgroups once their processes (already killed) are gone: wait up to
        ``wait_s`` here, then leave it to a daemon thread that polls for up to ``patience_s``.
        Killed processes of a loaded machine can take longer than ``wait_s`` to die; their
        cgroups then stayed until some later start's ``sweep``."""
        if self._empty_within(wait_s, 0.01):
            self.remove()
            return
        threading.Thread(target=lambda: (self._empty_within(patience_s, 0.05), self.remove()),
                         name="termrl-cgroup-reaper", daemon=True).start()

    def _empty_within(self, seconds: float, poll_s: float) -> bool:
        """Whether the cgroups hold no process within ``seconds`` (polled every ``poll_s``)."""
        deadline = time.monotonic() + seconds
        while self.pids():
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
        return True

    def remove(self) -> None:
        for d in self.dirs.values():
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                # still populated by dying processes: the sweep on next start retries
                pass


YOUNG_S = 60.0
"""A cgroup made this recently may be a sandbox another harness is starting: ``sweep`` keeps it."""


def sweep(alive: set[str]) -> None:
    """Remove empty leftover cgroups of sandboxes that are not in ``alive`` and were made more
    than ``YOUNG_S`` ago. ``alive`` lists this harness's sandboxes folder only: a harness with
    another folder (a bench, a test suite, a second run) makes its cgroups empty, and starts
    its shell in them an instant later; removing them then failed that sandbox's start."""
    now = time.time()
    for c in ("memory", "pids"):
        parent = ROOT / c / PARENT
        if not parent.is_dir():
            continue
        for d in parent.iterdir():
            if d.name in alive:
                continue
            try:
                if not d.is_dir() or now - d.stat().st_mtime < YOUNG_S:
                    continue
                d.rmdir()
            except OSError:
                pass
