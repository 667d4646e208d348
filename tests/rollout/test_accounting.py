"""Compute accounting: the wall-time split of concurrent phases, busy and CPU seconds, nesting."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from itertools import pairwise

import pytest

from termrl.rollout.accounting import OTHER, PHASES, Accountant

U = 0.2
"""One unit of the schedules, in seconds."""


def until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.perf_counter()))


def play(accountant: Accountant, schedule: dict[str, list[tuple[str, float, float]]]) -> list[tuple[str, float, float]]:
    """Each thread opens its phases over [start, end] units after now, idle in between.

    Returns the intervals as they really ran, ``(phase, entered, left)`` in ``perf_counter``
    seconds, taken just outside each ``with``: on a loaded machine a thread wakes late, and
    the accountant must be checked against what happened, not against the schedule."""
    t0 = time.perf_counter()
    ran: list[tuple[str, float, float]] = []

    def thread(intervals):
        for phase, start, end in intervals:
            until(t0 + start * U)
            entered = time.perf_counter()
            with accountant.phase(phase, episode=f"ep-{phase}"):
                until(t0 + end * U)
            ran.append((phase, entered, time.perf_counter()))

    threads = [threading.Thread(target=thread, args=(intervals,)) for intervals in schedule.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ran


def split(ran: list[tuple[str, float, float]], start: float, stop: float) -> dict[str, float]:
    """Wall seconds per phase over [start, stop]: each moment shared equally by the open phases."""
    cuts = sorted({start, stop, *(t for _, a, b in ran for t in (a, b))})
    wall: dict[str, float] = {}
    for a, b in pairwise(cuts):
        open_ = [phase for phase, x, y in ran if x <= a and y >= b]
        for phase in open_ or [OTHER]:
            wall[phase] = wall.get(phase, 0.0) + (b - a) / max(len(open_), 1)
    return wall


def test_three_threads_split_the_wall_time_as_scheduled():
    accountant = Accountant()
    start = time.perf_counter()
    accountant.start()
    ran = play(accountant, {
        "a": [("generation", 0, 2)],
        "b": [("environment", 1, 3)],
        "c": [("reward", 2, 3), ("verification", 4, 5)],
    })
    accountant.stop()
    stop = time.perf_counter()
    s = accountant.summary()
    phases = s["phases"]
    # On time: [0,1] generation alone; [1,2] generation + environment; [2,3] environment +
    # reward; [3,4] nothing (other); [4,5] verification alone. Checked against the intervals
    # as they really ran, so a late wake-up on a loaded machine is not a failure.
    expected_wall = split(ran, start, stop)
    assert expected_wall["generation"] > expected_wall["reward"] > 0 and expected_wall[OTHER] > 0
    for phase in PHASES + (OTHER,):
        assert phases[phase]["wall_s"] == pytest.approx(expected_wall.get(phase, 0.0), abs=0.01), phase
        assert phases[phase]["share"] == pytest.approx(phases[phase]["wall_s"] / s["wall_s"])
    assert sum(p["wall_s"] for p in phases.values()) == pytest.approx(s["wall_s"], rel=0.01)
    assert s["wall_s"] == pytest.approx(stop - start, abs=0.01)
    for phase, entered, left in ran:
        assert phases[phase]["busy_s"] == pytest.approx(left - entered, abs=0.01), phase
    generation = next(left - entered for phase, entered, left in ran if phase == "generation")
    assert accountant.episode_timing("ep-generation") == {"generation": pytest.approx(generation, abs=0.01)}


def test_shares_always_sum_to_the_run_even_with_many_threads():
    with Accountant() as accountant:
        play(accountant, {str(k): [(PHASES[k % 4], k % 3 * 0.25, 1 + k % 2 * 0.5)] for k in range(8)})
    s = accountant.summary()
    assert sum(p["wall_s"] for p in s["phases"].values()) == pytest.approx(s["wall_s"], rel=1e-9)
    assert sum(p["share"] for p in s["phases"].values()) == pytest.approx(1.0)
    assert sum(p["busy_s"] for p in s["phases"].values()) > s["wall_s"]  # 8 threads overlap


def test_an_inner_phase_takes_the_time_over_from_the_outer_one():
    accountant = Accountant()
    with accountant:
        t0 = time.perf_counter()
        with accountant.phase("verification", episode="e1"):
            time.sleep(U)
            t1 = time.perf_counter()
            with accountant.phase("reward"):
                time.sleep(U)
            t2 = time.perf_counter()
            time.sleep(U)
        t3 = time.perf_counter()
    s = accountant.summary()["phases"]
    inner, outer = t2 - t1, (t1 - t0) + (t3 - t2)  # as they ran (a loaded machine wakes late)
    assert s["verification"]["busy_s"] == pytest.approx(outer, abs=0.01)
    assert s["verification"]["wall_s"] == pytest.approx(outer, abs=0.01)
    assert s["reward"]["busy_s"] == pytest.approx(inner, abs=0.01)
    assert s["reward"]["wall_s"] == pytest.approx(inner, abs=0.01)
    timing = accountant.episode_timing("e1")
    assert list(timing) == ["verification", "reward"]  # the inner phase inherits the episode
    assert timing["reward"] == pytest.approx(inner, abs=0.01)


def test_a_phase_that_raises_is_closed():
    accountant = Accountant()
    with accountant:
        t0 = time.perf_counter()
        with pytest.raises(KeyError), accountant.phase("environment", episode="e"):
            time.sleep(U / 2)
            raise KeyError("sandbox died")
        t1 = time.perf_counter()
        time.sleep(U / 2)  # no phase open: other
    s = accountant.summary()
    phases = s["phases"]
    assert phases["environment"]["busy_s"] == pytest.approx(t1 - t0, abs=0.01)
    assert phases[OTHER]["wall_s"] == pytest.approx(s["wall_s"] - (t1 - t0), abs=0.01)
    assert phases[OTHER]["wall_s"] >= U / 2
    assert accountant.episode_timing("e", pop=True)["environment"] == pytest.approx(t1 - t0, abs=0.01)
    assert accountant.episode_timing("e") == {}


def test_cpu_seconds_of_threads_and_of_child_processes():
    accountant = Accountant()
    with accountant:
        with accountant.phase("reward"):
            end = time.thread_time() + 0.15
            while time.thread_time() < end:
                pass
        with accountant.phase("environment"):
            burn = "import time\nt = time.process_time() + 0.2\nwhile time.process_time() < t: pass"
            subprocess.run([sys.executable, "-c", burn], check=True)
    s = accountant.summary()
    assert s["phases"]["reward"]["cpu_s"] == pytest.approx(0.15, abs=0.03)
    assert s["phases"]["environment"]["cpu_s"] < 0.1  # a child's CPU is not the thread's
    assert s["children_cpu_s"] >= 0.2
    assert s["cpu_s"] == pytest.approx(s["self_cpu_s"] + s["children_cpu_s"])
    assert s["phases"][OTHER]["cpu_s"] >= 0.2
    assert "wall_s" in s["note"]


def test_batched_generation_is_credited_to_each_episode():
    accountant = Accountant()
    with accountant.phase("generation"):  # the first phase starts the run
        pass
    accountant.add_episode("a", "generation", 0.5)
    accountant.add_episode("a", "generation", 0.25)
    assert accountant.episode_timing("a") == {"generation": 0.75}


def test_misuse_is_refused_clearly():
    accountant = Accountant()
    with pytest.raises(RuntimeError, match="not started"):
        accountant.summary()
    with pytest.raises(ValueError, match="unknown phase 'gradient'.*training"), accountant.phase("gradient"):
        pass
    with pytest.raises(ValueError, match="unknown phase 'other'"):
        accountant.add_episode("a", OTHER, 1.0)


def test_table_lists_every_phase_and_the_run():
    with Accountant() as accountant, accountant.phase("training"):
        time.sleep(0.01)
    table = accountant.as_table()
    assert [line.split()[0] for line in table.splitlines()] == ["phase", *PHASES, OTHER, "run"]
    assert "100.0%" in table
