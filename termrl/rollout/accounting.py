"""Where a run's time goes: generation, environment, verification, reward, detection, training.

Practitioners quote roughly 40% generation / 30% environment / 20% reward / 10% gradient;
``Accountant`` measures the real split of a run. Wrap each piece of work in
``with accountant.phase("environment", episode=episode_id):``, from any number of threads.
Per phase it records:

- ``busy_s``: the summed length of the phase's intervals. With concurrent episodes it
  exceeds the run's wall time (8 threads generating for 10 s are 80 busy seconds).
- ``wall_s``: the phase's share of the run's wall time. Each instant is divided equally
  among the intervals open at that instant (two threads generating and one in a sandbox:
  2/3 generation, 1/3 environment); an instant with none goes to ``other``. The wall_s of
  all phases, ``other`` included, sum to the run's wall time exactly.
- ``cpu_s``: CPU seconds of the threads inside the phase (``time.thread_time``). A child
  process (sandbox, compiler, test runner) is invisible to a thread's clock: it counts in
  the run's ``cpu_s`` (``getrusage``: this process and its reaped children) and in
  ``other``'s, which is the run's CPU that no phase saw.

A phase opened inside another on the same thread takes the time over from the outer one
until it closes (reward computed inside verification counts as reward, not as both), and
belongs to the outer phase's episode when it names none. Phases nest per thread: asyncio
tasks sharing one thread would interleave, so use threads.
"""

from __future__ import annotations

import contextlib
import resource
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Self

PHASES = ("generation", "environment", "verification", "reward", "detection", "training")
OTHER = "other"
NOTE = ("wall_s: the phase's share of the run's wall time (each instant divided equally among the phase "
        "intervals open then; no interval open: other), summing to the run's wall_s. busy_s: summed interval "
        "lengths, over wall time when episodes run concurrently. cpu_s: thread CPU inside the phase; the run's "
        "cpu_s is this process plus reaped children (sandboxes, compilers, tests), and other's cpu_s is the "
        "part no phase's thread clock saw. share: wall_s / run wall_s. An inner phase takes the time over "
        "from an outer one on the same thread.")


@dataclass
class _Open:
    """An open phase interval; ``since`` and ``cpu_since`` start its current segment."""

    phase: str
    episode: str | None
    since: float
    cpu_since: float


class Accountant:
    """Compute accounting for one run: ``start()`` (or the first phase starts it), phases from
    any thread, ``stop()``, ``summary()``. One Accountant per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()
        self._busy = dict.fromkeys(PHASES, 0.0)
        self._cpu = dict.fromkeys(PHASES, 0.0)
        self._wall = dict.fromkeys((*PHASES, OTHER), 0.0)
        self._open = dict.fromkeys(PHASES, 0)
        """Open intervals per phase, counting only the innermost one of each thread."""
        self._episodes: dict[str, dict[str, float]] = {}
        self._started: float | None = None
        self._stopped: float | None = None
        self._swept = 0.0
        """Wall time is divided among the phases up to this instant."""
        self._cpu_start = self._cpu_stop = (0.0, 0.0)

    def start(self) -> None:
        """Start the run's clocks; the first phase starts them when nothing has."""
        with self._lock:
            self._start()

    def stop(self) -> None:
        """End the run; a second call does nothing. Phases closing later still add busy seconds."""
        with self._lock:
            self._check_started()
            if self._stopped is None:
                self._sweep(time.perf_counter())
                self._stopped = self._swept
                self._cpu_stop = _process_cpu()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @contextlib.contextmanager
    def phase(self, name: str, episode: str | None = None) -> Iterator[None]:
        """Count the block's time as ``name`` (and as ``episode``'s), even when it raises."""
        if name not in PHASES:
            raise ValueError(f"unknown phase {name!r}: use one of {', '.join(PHASES)} "
                             f"({OTHER!r} is the time no phase covers)")
        stack: list[_Open] = self._local.__dict__.setdefault("stack", [])
        outer = stack[-1] if stack else None
        with self._lock:
            self._start()
            now = time.perf_counter()
            self._sweep(now)
            if outer is not None:
                self._close_segment(outer, now)
            mine = _Open(name, episode if episode is not None or outer is None else outer.episode,
                         now, time.thread_time())
            self._open[name] += 1
        stack.append(mine)
        try:
            yield
        finally:
            stack.pop()
            with self._lock:
                now = time.perf_counter()
                self._sweep(now)
                self._close_segment(mine, now)
                if outer is not None:
                    outer.since, outer.cpu_since = now, time.thread_time()
                    self._open[outer.phase] += 1

    def add_episode(self, episode: str, phase: str, seconds: float) -> None:
        """Credit ``episode`` with ``seconds`` of a phase measured elsewhere, such as its part of
        a batched generation (the batch's interval counts once, in the run's totals)."""
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}: use one of {', '.join(PHASES)}")
        with self._lock:
            timing = self._episodes.setdefault(episode, {})
            timing[phase] = timing.get(phase, 0.0) + seconds

    def episode_timing(self, episode: str, pop: bool = False) -> dict[str, float]:
        """Busy seconds per phase of ``episode``'s closed intervals (``Trajectory.timing``);
        ``pop`` forgets the episode."""
        with self._lock:
            timing = self._episodes.pop(episode, {}) if pop else self._episodes.get(episode, {})
            return {phase: timing[phase] for phase in PHASES if phase in timing}

    def summary(self) -> dict:
        """The run so far (or until ``stop()``): wall and CPU seconds, per-phase split, and ``note``."""
        with self._lock:
            self._check_started()
            self._sweep(time.perf_counter())
            end = self._stopped if self._stopped is not None else self._swept
            cpu_end = self._cpu_stop if self._stopped is not None else _process_cpu()
            self_cpu, children_cpu = (b - a for a, b in zip(self._cpu_start, cpu_end))
            wall = end - self._started
            phases = {p: {"wall_s": self._wall[p], "busy_s": self._busy[p], "cpu_s": self._cpu[p]} for p in PHASES}
            phases[OTHER] = {"wall_s": self._wall[OTHER], "busy_s": self._wall[OTHER],
                             "cpu_s": max(0.0, self_cpu + children_cpu - sum(self._cpu.values()))}
        for row in phases.values():
            row["share"] = row["wall_s"] / wall if wall > 0 else 0.0
        return {"wall_s": wall, "cpu_s": self_cpu + children_cpu, "self_cpu_s": self_cpu,
                "children_cpu_s": children_cpu, "phases": phases, "note": NOTE}

    def as_table(self) -> str:
        """``summary()`` as plain text for the terminal."""
        return as_table(self.summary())

    # ----------------------------------------------------------------------- under the lock

    def _start(self) -> None:
        if self._started is None:
            self._started = self._swept = time.perf_counter()
            self._cpu_start = _process_cpu()

    def _check_started(self) -> None:
        if self._started is None:
            raise RuntimeError("the Accountant has not started: call start(), or open a phase, first")

    def _sweep(self, now: float) -> None:
        """Divide the wall time since the last event among the open phases (or give it to other)."""
        if self._stopped is not None or now <= self._swept:
            return
        elapsed, total = now - self._swept, sum(self._open.values())
        if total == 0:
            self._wall[OTHER] += elapsed
        for phase, count in self._open.items():
            if count:
                self._wall[phase] += elapsed * count / total
        self._swept = now

    def _close_segment(self, interval: _Open, now: float) -> None:
        """Credit ``interval``'s current segment to its phase and episode; it stops counting as open."""
        seconds = now - interval.since
        self._busy[interval.phase] += seconds
        self._cpu[interval.phase] += time.thread_time() - interval.cpu_since
        if interval.episode is not None:
            timing = self._episodes.setdefault(interval.episode, {})
            timing[interval.phase] = timing.get(interval.phase, 0.0) + seconds
        self._open[interval.phase] -= 1


def _process_cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its reaped children."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


def as_table(summary: dict) -> str:
    """An ``Accountant.summary()`` (a run's ``compute``) as plain text for the terminal."""
    lines = [f"{'phase':<14}{'wall s':>10}{'share':>8}{'busy s':>10}{'cpu s':>10}"]
    for phase, row in summary["phases"].items():
        lines.append(f"{phase:<14}{row['wall_s']:>10.2f}{row['share']:>8.1%}{row['busy_s']:>10.2f}"
                     f"{row['cpu_s']:>10.2f}")
    lines.append(f"{'run':<14}{summary['wall_s']:>10.2f}{1:>8.1%}{'':>10}{summary['cpu_s']:>10.2f}"
                 f"  (self {summary['self_cpu_s']:.2f}, children {summary['children_cpu_s']:.2f})")
    return "\n".join(lines)
