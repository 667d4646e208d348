"""``termrl serve`` under load: N concurrent clients on loopback against the in-process rate, side by side in one run.

Plays the same episodes two ways, one mode after the other, with the same tasks (the suite's,
round-robin), the same tool calls and the same episode count:
  in-process  N threads, each playing episodes on a ``TerminalEnv`` of its own: reset, S bash tool
              calls (``ls -la``, ``wc -l`` of a workspace file, ``echo step K``), then submit.
  server      the server in this process (``termrl.serve.server.running``: uvicorn in a thread, at
              most N sessions) and N client threads, each playing its episodes through OpenEnv's
              sync client (``TermrlEnvClient(url).sync()``): one WebSocket session per episode, as
              ``RemoteTerminalEnv`` (the trainer's remote episodes) opens them; ``--session client``
              keeps one session per client thread instead.
One untimed warm-up episode precedes each mode. Each mode stops starting episodes once its
``--time-budget`` is spent and reports how many it finished; every thread is joined with a
timeout, so the run ends by itself.

Prints, for each mode (prefix ``in_process_`` or ``server_``):
  episodes=           episodes finished (of --episodes)
  wall_s=             seconds from the first episode's start to the last one's end
  episodes_per_s=     episodes / wall_s
  step_p50_ms=, step_p99_ms=   latency of one bash tool call (``step``), all episodes together
  reset_p50_ms=       latency of reset (the sandbox's start; server: with the session's connect)
  submit_p50_ms=      latency of the final submit (it runs the hidden tests and the detectors)
  harness_errors=     episodes that raised, or ended with a reward of None (must be 0)
  loadavg_before=, loadavg_after=   the 1-minute load average around the mode (a shared machine)
and then:
  episodes_per_s_ratio=  server / in-process
  step_p50_ratio=        server / in-process
  server_log_warnings=   warnings and errors the server logged (their first lines go to stderr)
  sandboxes_left=        sandboxes of this process still open at the end (must be 0)

Usage: python bench/serve_load.py [--suite logs-count:0-7] [--clients 4] [--episodes 16] [--steps 3]
                                  [--time-budget 300] [--spec staged] [--session episode|client]
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field

GRACE_S = 120.0
"""How long a mode waits past its budget for the episodes under way (a submit runs hidden tests)."""


@dataclass
class Tally:
    """One mode's measurements, filled by its threads."""

    steps: list[float] = field(default_factory=list)
    resets: list[float] = field(default_factory=list)
    submits: list[float] = field(default_factory=list)
    finished: int = 0
    errors: list[str] = field(default_factory=list)
    endings: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def episode(self, steps: list[float], reset: float, submit: float, reward, ending: str) -> None:
        with self.lock:
            self.steps += steps
            self.resets.append(reset)
            self.submits.append(submit)
            self.endings[ending] = self.endings.get(ending, 0) + 1
            if reward is None:
                self.errors.append(f"reward None (ending {ending})")
            else:
                self.finished += 1

    def error(self, text: str) -> None:
        with self.lock:
            self.errors.append(text)


class Schedule:
    """Hands out episode numbers until ``total`` are given or the deadline has passed."""

    def __init__(self, total: int, budget_s: float):
        self.total, self.deadline = total, time.monotonic() + budget_s
        self._next, self._lock = 0, threading.Lock()
        self.out_of_time = False

    def take(self) -> int | None:
        with self._lock:
            if self._next >= self.total:
                return None
            if time.monotonic() >= self.deadline:
                self.out_of_time = True
                return None
            self._next += 1
            return self._next - 1


class LogCounter(logging.Handler):
    """Counts the warnings and errors logged while the server runs; keeps the first few."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count, self.first = 0, []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.first) < 5:
            text = record.getMessage()
            if record.exc_info:
                text += " | " + repr(record.exc_info[1])
            self.first.append(f"{record.name}: {text}"[:500])


def commands(task, steps: int) -> list[str]:
    """The episode's bash tool calls: cheap, each a different kind."""
    path = next(iter(task.workspace), None)
    kinds = ["ls -la", f"wc -l {path}" if path else "wc -l /etc/hostname", "echo step {k}"]
    return [kinds[k % len(kinds)].format(k=k) for k in range(steps)]


def play_in_process(task, steps: int, config, spec, tally: Tally | None) -> None:
    from termrl.env import TerminalEnv
    from termrl.protocols import Action, ActionKind

    env = TerminalEnv(config, spec=spec)
    try:
        t = time.perf_counter()
        env.reset(task)
        reset = time.perf_counter() - t
        took = []
        for command in commands(task, steps):
            t = time.perf_counter()
            _, _, terminated, truncated, info = env.step(Action(ActionKind.COMMAND, command=command))
            took.append(time.perf_counter() - t)
            if terminated or truncated:
                raise RuntimeError(f"{task.id}: the episode ended early ({info['ending'].value})")
        t = time.perf_counter()
        _, reward, _, _, info = env.step(Action(ActionKind.SUBMIT))
        submit = time.perf_counter() - t
        if tally is not None:
            tally.episode(took, reset, submit, reward, info["ending"].value)
    finally:
        env.close()


def play_server(client, task, steps: int, tally: Tally | None, connect: bool) -> None:
    from termrl.serve.protocol import TermrlAction

    t = time.perf_counter()
    if connect:
        client.connect()
    result = client.reset(task_id=task.id)
    reset = time.perf_counter() - t
    if result.done:
        raise RuntimeError(f"{task.id}: reset ended the episode: {result.observation.error}")
    took = []
    for command in commands(task, steps):
        t = time.perf_counter()
        result = client.step(TermrlAction(tool="bash", arguments={"command": command}))
        took.append(time.perf_counter() - t)
        if result.done:
            raise RuntimeError(f"{task.id}: the episode ended early ({result.observation.ending})")
    t = time.perf_counter()
    result = client.step(TermrlAction(tool="submit"))
    submit = time.perf_counter() - t
    if tally is not None:
        tally.episode(took, reset, submit, result.reward, result.observation.ending or "?")


def run_mode(name: str, clients: int, episodes: int, budget_s: float, play_one, worker_setup=None) -> dict:
    """``clients`` threads playing ``episodes`` episodes (``play_one(index, tally, state)``) within the budget."""
    tally, schedule = Tally(), Schedule(episodes, budget_s)
    load_before = os.getloadavg()[0]

    def worker() -> None:
        try:
            state = worker_setup() if worker_setup else None
        except Exception as e:  # noqa: BLE001 - a client that cannot connect plays nothing: counted
            tally.error(f"{threading.current_thread().name} setup: {type(e).__name__}: {e}"[:500])
            return
        try:
            while (index := schedule.take()) is not None:
                try:
                    play_one(index, tally, state)
                except Exception as e:  # noqa: BLE001 - counted and shown, the run goes on
                    tally.error(f"episode {index}: {type(e).__name__}: {e}"[:500])
        finally:
            if state is not None:
                state.close()

    threads = [threading.Thread(target=worker, name=f"{name}-{i}", daemon=True) for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    limit = time.monotonic() + budget_s + GRACE_S
    for thread in threads:
        thread.join(timeout=max(limit - time.monotonic(), 0.1))
    wall = time.perf_counter() - start
    stuck = sum(thread.is_alive() for thread in threads)
    return {"tally": tally, "wall": wall, "stuck": stuck, "out_of_time": schedule.out_of_time,
            "load_before": load_before, "load_after": os.getloadavg()[0]}


def percentile(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the closest ranks; nan without samples."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def report(prefix: str, result: dict) -> dict:
    tally: Tally = result["tally"]
    figures = {
        "episodes": tally.finished,
        "wall_s": round(result["wall"], 2),
        "episodes_per_s": round(tally.finished / result["wall"], 3) if result["wall"] > 0 else math.nan,
        "step_p50_ms": round(percentile(tally.steps, 50) * 1000, 1),
        "step_p99_ms": round(percentile(tally.steps, 99) * 1000, 1),
        "step_max_ms": round(max(tally.steps, default=math.nan) * 1000, 1),
        "reset_p50_ms": round(percentile(tally.resets, 50) * 1000, 1),
        "submit_p50_ms": round(percentile(tally.submits, 50) * 1000, 1),
        "harness_errors": len(tally.errors),
        "endings": ",".join(f"{k}:{v}" for k, v in sorted(tally.endings.items())) or "-",
        "out_of_time": result["out_of_time"],
        "stuck_threads": result["stuck"],
        "loadavg_before": f"{result['load_before']:.2f}",
        "loadavg_after": f"{result['load_after']:.2f}",
    }
    for key, value in figures.items():
        print(f"{prefix}_{key}={value}", flush=True)
    for text in tally.errors[:5]:
        print(f"{prefix} error: {text}", file=sys.stderr, flush=True)
    return figures


def sandboxes_left() -> int:
    """Sandboxes this process still holds: bwrap children, and runtime directories it owns."""
    from termrl.sandbox.bwrap import held_by

    return len(held_by(os.getpid()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="logs-count:0-7")
    parser.add_argument("--clients", type=int, default=4, help="concurrent episodes (threads; the server's "
                                                               "max_sessions)")
    parser.add_argument("--episodes", type=int, default=16, help="episodes per mode, in all")
    parser.add_argument("--steps", type=int, default=3, help="bash tool calls per episode, before the submit")
    parser.add_argument("--time-budget", type=float, default=300.0,
                        help="seconds per mode after which no new episode starts")
    parser.add_argument("--spec", default="staged")
    parser.add_argument("--session", choices=("episode", "client"), default="episode",
                        help="server mode: a WebSocket session per episode, or one per client thread")
    args = parser.parse_args()
    if args.clients < 1 or args.episodes < 1 or args.steps < 0 or args.time_budget <= 0:
        parser.error("--clients and --episodes must be 1 or more, --steps 0 or more, --time-budget positive")

    from termrl.env import EnvConfig
    from termrl.reward.spec import as_spec
    from termrl.serve.client import TermrlEnvClient
    from termrl.serve.server import Served, running
    from termrl.tasks import envs
    from termrl.tasks.suites import resolve

    tasks, skipped = envs.runnable(envs.prepare(resolve(args.suite)))
    if not tasks:
        sys.exit(f"no runnable tasks in {args.suite!r}: {skipped[:3]}")
    config, spec = EnvConfig(static=False), as_spec(args.spec)
    message_timeout = GRACE_S  # a client waits no longer than the mode's grace for one answer
    print(f"suite={args.suite}")
    print(f"tasks={len(tasks)}")
    print(f"clients={args.clients}")
    print(f"episodes_per_mode={args.episodes}")
    print(f"steps={args.steps}")
    print(f"session={args.session}")
    print(f"cpus={os.cpu_count()}", flush=True)

    # ---- in-process
    play_in_process(tasks[0], args.steps, config, spec, None)  # warm-up, untimed
    local = run_mode("in-process", args.clients, args.episodes, args.time_budget,
                     lambda i, tally, _: play_in_process(tasks[i % len(tasks)], args.steps, config, spec, tally))
    inproc = report("in_process", local)

    # ---- server
    counter = LogCounter()
    served = Served(tasks, spec, config, max_sessions=args.clients)
    with running(served) as url:
        # after uvicorn's own logging set-up (it replaces the handlers of its loggers)
        watched = [logging.getLogger(), logging.getLogger("uvicorn")]  # uvicorn.error propagates to uvicorn
        for logger in watched:
            logger.addHandler(counter)

        def new_client():
            return TermrlEnvClient(url, message_timeout_s=message_timeout).sync()

        warm = new_client()
        try:
            play_server(warm, tasks[0], args.steps, None, connect=True)  # warm-up, untimed
        finally:
            warm.close()

        if args.session == "client":
            def setup():
                return new_client().connect()

            def play(i, tally, client):
                play_server(client, tasks[i % len(tasks)], args.steps, tally, connect=False)
        else:
            setup = None

            def play(i, tally, _):
                client = new_client()
                try:
                    play_server(client, tasks[i % len(tasks)], args.steps, tally, connect=True)
                finally:
                    client.close()

        remote = run_mode("server", args.clients, args.episodes, args.time_budget, play, setup)
        for logger in watched:
            logger.removeHandler(counter)
    server = report("server", remote)

    def ratio(key: str) -> str:
        a, b = server[key], inproc[key]
        return f"{a / b:.2f}" if b and not math.isnan(a) and not math.isnan(b) else "nan"

    print(f"episodes_per_s_ratio={ratio('episodes_per_s')}")
    print(f"step_p50_ratio={ratio('step_p50_ms')}")
    print(f"server_log_warnings={counter.count}")
    for text in counter.first:
        print(f"server log: {text}", file=sys.stderr)
    time.sleep(0.5)  # the server's session closes run on its loop as it stops
    print(f"sandboxes_left={sandboxes_left()}", flush=True)


if __name__ == "__main__":
    main()
