"""Sandboxes started ahead of the episodes that will use them.

Starting a bwrap sandbox (namespaces, mounts, a cgroup, the shell's handshake) costs tens of
milliseconds, and the kernel makes mount namespaces one at a time: with many episodes at once it
is most of an episode's environment time (``bench/side_scaling.py``). ``WarmSandboxes`` keeps
``size`` sandboxes of each recently used shape started by a background thread, so an episode
takes a ready one and the next is started while the policy generates.

A warm sandbox is used once, by one episode, and closed by it as any other: nothing carries from
one episode to the next. It is one started exactly as ``open_sandbox`` would start it (same
backend, workdir, limits, writable directories, environment, mounts), with nothing put in it
yet; an episode's files and set-up commands go in after it is taken. A ready sandbox whose shell
has died is closed and never handed out. Only the bwrap backend is kept warm.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from termrl.protocols import Sandbox
from termrl.sandbox.bwrap import _alive

MAX_SHAPES = 8
"""Shapes kept warm at once; the least recently used beyond it is dropped (its sandboxes closed)."""


def _usable(box: Sandbox) -> bool:
    proc = getattr(box, "_proc", None)
    if proc is None or proc.poll() is not None:
        return False

    return all(map(_alive, getattr(box, "_shell_pids", ()) or ()))


class WarmSandboxes:
    """``take(shape, make)``: a started sandbox of ``shape`` (a hashable key of everything that
    decides how it is started), or None when none is ready; either way ``make`` (which creates,
    unstarted, a sandbox of that shape) is used to start ``size`` more in the background."""

    def __init__(self, size: int = 2):
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size = size
        self._ready: OrderedDict[Hashable, list[Sandbox]] = OrderedDict()
        self._makers: dict[Hashable, Callable[[], Sandbox]] = {}
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.hits = self.misses = self.started = self.failures = 0

    def take(self, shape: Hashable, make: Callable[[], Sandbox]) -> Sandbox | None:
        box, stale = None, []
        with self._cond:
            if self._closed:
                return None
            ready = self._ready.setdefault(shape, [])
            self._ready.move_to_end(shape)
            self._makers[shape] = make
            while ready and box is None:
                candidate = ready.pop()
                if _usable(candidate):
                    box = candidate
                else:
                    stale.append(candidate)
            self.hits += box is not None
            self.misses += box is None
            while len(self._ready) > MAX_SHAPES:
                old, boxes = self._ready.popitem(last=False)
                self._makers.pop(old, None)
                stale += boxes
            if self._thread is None:
                self._thread = threading.Thread(target=self._fill, name="termrl-warm-sandboxes", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        for old in stale:
            old.close()
        return box

    def _wanted(self) -> tuple[Hashable, Callable[[], Sandbox]] | None:
        for shape, boxes in reversed(self._ready.items()):
            if len(boxes) < self.size and shape in self._makers:
                return shape, self._makers[shape]
        return None

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and self._wanted() is None:
                    self._cond.wait()
                if self._closed:
                    return
                shape, make = self._wanted()
            box = make()
            try:
                box.start()
            except Exception:  # noqa: BLE001 - the episode will start its own and report why
                box.close()
                with self._cond:
                    self.failures += 1
                    self._makers.pop(shape, None)  # no retry loop on a shape that cannot start
                continue
            with self._cond:
                if self._closed or shape not in self._ready:
                    box.close()
                    continue
                self._ready[shape].append(box)
                self.started += 1

    def close(self) -> None:
        """Close every ready sandbox and stop the thread; ``take`` gives None afterwards."""
        with self._cond:
            self._closed = True
            boxes = [b for bs in self._ready.values() for b in bs]
            self._ready.clear()
            self._cond.notify_all()
        for box in boxes:
            box.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)  # a sandbox it was starting is closed by it


_SHARED: dict[int, WarmSandboxes] = {}
_SHARED_LOCK = threading.Lock()


def shared(size: int) -> WarmSandboxes:
    """The process's ``WarmSandboxes`` keeping ``size`` of each shape, until ``close_shared`` (a
    run's end) or the process's exit."""
    with _SHARED_LOCK:
        if size not in _SHARED:
            _SHARED[size] = WarmSandboxes(size)
        return _SHARED[size]


def close_shared() -> None:
    """Close every shared ``WarmSandboxes`` (the sandboxes waiting in them); a later ``shared``
    starts afresh, and an episode still holding a closed one starts its own sandbox."""
    with _SHARED_LOCK:
        closing = list(_SHARED.values())
        _SHARED.clear()
    for warm in closing:
        warm.close()


atexit.register(close_shared)


@contextlib.contextmanager
def warm_sandboxes_closed():
    """A run's block: the shared warm sandboxes are closed when it ends, also when it raises."""
    try:
        yield
    finally:
        close_shared()

__all__ = ["MAX_SHAPES", "WarmSandboxes", "close_shared", "shared", "warm_sandboxes_closed"]
