"""A soak: thousands of episodes in one run, with honest, failing, hostile and resource-hungry
agents, and what the harness holds before and after.

A scripted policy picks one behaviour per episode (by its task and sample): ``honest`` replays
the reference solution (``oracle``), ``failing`` writes garbage over the workspace and submits,
``hostile`` runs one of the attacks below (a fork bomb, a daemon, an output flood, ``kill -9
-1``, a sleep past the command limit, a memory hog, a disk fill), then submits, ``malformed``
sends unparseable and megabyte replies. Tasks cycle through the built-in suite's Python and
shell tasks and two seeded families; episodes are stored in a Parquet store.

Printed as ``name=value`` lines, measured in this process (the harness):
``episodes``, ``episodes_per_hour``, ``harness_errors`` (episodes whose harness failed),
``errors_by_type``, ``stored_once`` (every episode id stored exactly once), and before/after
pairs: ``processes`` (this process's descendants), ``mounts`` and ``sandbox_folders`` (in this
run's sandboxes' folder), ``cgroups`` (of the sandboxes this run started), ``temp_entries`` (the harness's temp folder, its own), ``fds``
(this process's open descriptors), ``rss_mb``, and what explains RSS: ``python_blocks`` (Python's
allocated blocks), ``heap_in_use_mb`` and ``heap_free_mb`` (glibc's main heap); ``rss_growth`` (after / before - 1, after a
warm-up of one episode per task: what the harness caches per task is there before
"before"); ``pass=1`` when the counts return to where they started,
RSS grows less than 10%, no harness error, and every episode is stored once.

Usage: python bench/soak.py [--episodes 2000] [--workers 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from termrl.actions import render_tool_call  # noqa: E402
from termrl.policies.scripted import SUBMIT, OraclePolicy  # noqa: E402
from termrl.protocols import Action, ActionKind, Reply, Turn  # noqa: E402

HOSTILE = [
    ":(){ :|:& };:; sleep 2",
    "setsid nohup sh -c 'while :; do date >> daemon.log; sleep 0.1; done' >/dev/null 2>&1 & echo started",
    "head -c 20000000 /dev/urandom",
    "yes | tr -d '\\n'",
    "kill -9 -1",
    "sleep 1000",
    "python3 -c 'x = bytearray(1 << 33)'",
    "dd if=/dev/zero of=fill.bin bs=1M count=4096 2>&1 | tail -1; rm -f fill.bin",
    "exec sleep 1000",
    "(while :; do :; done) & disown; echo spun",
]
MALFORMED = ["<tool_call>{" * 3000, "```bash\necho unterminated", "x" * (1 << 20),
             "<tool_call><tool_call>{}</tool_call></tool_call>", "\0\x1b[2J" * 1000]
BEHAVIOURS = ("honest", "failing", "hostile", "malformed")


def behaviour(task_id: str, sample: int) -> tuple[str, int]:
    h = int(hashlib.sha256(f"{task_id}#{sample}".encode()).hexdigest(), 16)
    return BEHAVIOURS[h % 4], h // 4


class MixedPolicy:
    """One behaviour per episode (see the module's docstring); deterministic per (task, sample)."""

    name = "soak-mixed"

    def __init__(self) -> None:
        self.oracle = OraclePolicy()

    def generate(self, turns: list[Turn]) -> list[Reply]:
        return [Reply(self._reply(t)) for t in turns]

    def _reply(self, turn: Turn) -> str:
        kind, h = behaviour(turn.task.id, turn.sample)
        if kind == "honest":
            return self.oracle._reply(turn)
        if turn.step >= 2:
            return SUBMIT
        if kind == "failing":
            target = next(iter(turn.task.workspace), "answer.txt")
            return render_tool_call(Action(ActionKind.WRITE, path=target, content="garbage\n"))
        if kind == "hostile":
            return render_tool_call(Action(ActionKind.COMMAND, command=HOSTILE[(h + turn.step) % len(HOSTILE)]))
        return MALFORMED[(h + turn.step) % len(MALFORMED)]


CREATED: set[str] = set()
"""Names of the sandboxes this run started: other harnesses on the machine have cgroups too."""


def descendants(pid: int) -> int:
    """Processes below ``pid`` (not counting it)."""
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(p.name))
    count, todo = 0, list(children.get(pid, []))
    while todo:
        c = todo.pop()
        count += 1
        todo += children.get(c, [])
    return count


def heap() -> dict:
    """glibc's heaps: bytes in use and free (kept for reuse), in MB; {} without glibc 2.33+."""
    from termrl.rollout.runner import c_heap

    return {f"heap_{k}_mb": round(v / 2**20, 1) for k, v in c_heap().items()}


COUNTS = ("processes", "mounts", "sandbox_folders", "cgroups", "temp_entries", "fds")
"""What must return to where it started."""


def snapshot(runtime: Path) -> dict:
    gc.collect()
    status = Path("/proc/self/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")) / 1024
    mounts = sum(1 for line in Path("/proc/self/mountinfo").read_text().splitlines()
                 if line.split()[4].startswith(str(runtime)))
    cgroups = sum(1 for c in ("memory", "pids") for g in (Path("/sys/fs/cgroup") / c / "termrl").glob("sbx-*")
                  if g.name in CREATED)
    return {"processes": descendants(os.getpid()), "mounts": mounts,
            "sandbox_folders": len(list(runtime.iterdir())) if runtime.exists() else 0, "cgroups": cgroups,
            "temp_entries": len(os.listdir(tempfile.gettempdir())), "fds": len(os.listdir("/proc/self/fd")),
            "rss_mb": round(rss, 1), "python_blocks": sys.getallocatedblocks(), **heap()}


def tasks_for(n: int):
    from termrl.tasks.suites import resolve

    entries = resolve("builtin") + resolve("logs-count:0-199") + resolve("csv-aggregate:0-199")
    pool = [e.task for e in entries if e.task is not None and not e.task.unsupported
            and e.category in ("python", "debug", "shell", "data")]
    return [pool[i % len(pool)] for i in range(n)], pool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    runtime = Path(tempfile.mkdtemp(prefix="termrl-soak-sandboxes-"))
    runtime.chmod(0o711)
    store_dir = Path(tempfile.mkdtemp(prefix="termrl-soak-store-"))
    private_tmp = Path(tempfile.mkdtemp(prefix="termrl-soak-tmp-"))  # the harness's temp files, apart
    os.environ["TERMRL_SANDBOX_DIR"] = str(runtime)
    os.environ["TMPDIR"] = str(private_tmp)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.rollout.store import TrajectoryStore
    from termrl.sandbox import bwrap

    bwrap.RUNTIME_DIR = runtime
    start = bwrap.BwrapSandbox.start

    def recorded_start(self):
        CREATED.add(self.name)
        return start(self)

    bwrap.BwrapSandbox.start = recorded_start
    chosen, pool = tasks_for(args.episodes)
    # every (task, sample) pair distinct: sample k is the k-th time a task comes round
    samples = -(-len(chosen) // len(pool))
    store = TrajectoryStore(store_dir)
    config = RolloutConfig(samples=samples, workers=args.workers, env=EnvConfig(max_steps=4, command_timeout_s=5.0))
    tasks = pool[: -(-args.episodes // samples)]
    print(f"soak: {len(tasks)} tasks x {samples} samples, {args.workers} workers", file=sys.stderr, flush=True)

    # warm-up: one episode of every task first, so that what the harness caches per task (the
    # detectors' parsed test files, bounded LRU caches) is there before "before" is measured;
    # the measured run then plays samples 1..N of each
    run_rollouts(tasks, MixedPolicy(), dataclasses.replace(config, samples=1), store=store, keep=False)
    config = dataclasses.replace(config, samples=samples + 1)
    before = snapshot(runtime)
    started = time.monotonic()
    done = [0]

    def progress(traj) -> None:
        done[0] += 1
        if done[0] % 100 == 0:
            print(f"soak: {done[0]} episodes, {snapshot(runtime)}", file=sys.stderr, flush=True)

    run_rollouts(tasks, MixedPolicy(), config, store=store, on_episode=progress, keep=False)
    wall = time.monotonic() - started
    time.sleep(2)
    after = snapshot(runtime)
    trajectories = store.read()
    ids = [t.episode_id for t in trajectories]
    errors = Counter(t.error.split(":")[0] for t in trajectories if t.error)
    for kind in errors:  # what each kind of harness error said, once
        first = next(t for t in trajectories if t.error and t.error.split(":")[0] == kind)
        print(f"error_example_{kind}={first.task_id}: {first.error[:500]!r}")
    kinds = Counter(behaviour(t.task_id, t.sample)[0] for t in trajectories)
    print(f"episodes={done[0]}")
    print(f"warmup_episodes={len(trajectories) - done[0]}")
    print(f"behaviours={dict(kinds)}")
    print(f"episodes_per_hour={round(done[0] / wall * 3600)}")
    print(f"harness_errors={sum(errors.values())}")
    print(f"errors_by_type={dict(errors)}")
    print(f"stored_once={int(len(ids) == len(set(ids)))}")
    for key in before:
        print(f"{key}_before={before[key]}")
        print(f"{key}_after={after[key]}")
    growth = after["rss_mb"] / before["rss_mb"] - 1
    print(f"rss_growth={growth:.3f}")
    counts_back = all(after[k] <= before[k] for k in COUNTS)
    ok = counts_back and growth < 0.10 and not errors and len(ids) == len(set(ids))
    print(f"pass={int(ok)}")
    for d in (store_dir, runtime, private_tmp):
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
