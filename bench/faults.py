"""kill -9 at random points, then --resume: nothing lost, nothing twice, nothing left behind.

For each of ``termrl eval``, ``termrl audit`` and ``termrl train`` (GRPO on the tiny model): start
the run, SIGKILL the termrl process itself (not its group: what an OOM killer or a preempted
node does) after a random delay, start it again with ``--resume``, and so on ``--points`` times;
then let the last one finish. A kill can land anywhere: while a policy generates, in a
command, in verification, while a Parquet part, a journal line or a checkpoint is written.

Checked after every kill (3 s later): no process of the killed run is alive (each carries a
marker in its environment; sandboxes, started with a clean environment, are found by their
folders' owner pid and their cgroups). Checked at the end: every episode / audit row / GRPO
rollout is stored exactly once and all of them are there; no sandbox folder, tmpfs mount or
cgroup of a killed run is left (the startup sweep of the next run reaps them).

Prints ``name=value`` lines per command: kills, kills_landed (the run had not finished yet),
lost, duplicated, orphans_after_kill, leftovers_at_end, wall_s; and ``pass=1`` when every
count is 0 and every kill landed.

Usage: python bench/faults.py [--points 10] [--seed 0] [--only eval,audit,train]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
SUITE = "logs-count:0-23+csv-aggregate:0-7"
AUDIT_SUITE = "logs-count:0-15"
AUDIT_EXPLOITS = "delete_tests,hard_code_examples,spam_commands,write_expected_output"
TRAIN_CONFIG = """
algorithm = "grpo"
output_dir = "{out}"
[model]
tiny = true
tiny_hidden_size = 32
[tasks]
train = "logs-count:0-3"
heldout = "logs-count:heldout:0-1"
[env]
max_steps = 2
[grpo]
steps = {steps}
num_generations = 2
batch_size = 2
max_completion_length = 24
learning_rate = 1e-3
[eval]
max_new_tokens = 12
before = false
[logging]
save_steps = 1
"""


def marked(mark: str) -> list[int]:
    needle = f"TERMRL_FAULTS_MARK={mark}".encode()
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if needle in (p / "environ").read_bytes():
                    found.append(int(p.name))
            except OSError:
                pass
    return found


def sandbox_leftovers(runtime: Path, dead: set[int]) -> list[str]:
    """Sandbox folders, mounts and cgroups that belong to killed runs (owner pid in ``dead``)."""
    left = []
    names = set()
    for d in runtime.iterdir() if runtime.is_dir() else []:
        try:
            owner = int((d / "owner.pid").read_text())
        except (OSError, ValueError):
            owner = -1
        if owner in dead:
            left.append(f"folder {d.name}")
            names.add(d.name)
    mounts = Path("/proc/self/mountinfo").read_text()
    left += [f"mount {line.split()[4]}" for line in mounts.splitlines() if line.split()[4].startswith(str(runtime))
             and Path(line.split()[4]).parent.name in names]
    for c in ("memory", "pids"):
        for g in (Path("/sys/fs/cgroup") / c / "termrl").glob("sbx-*"):
            if g.name in names:
                left.append(f"cgroup {c}/{g.name}")
    return left


def run_with_kills(name: str, argv: list[str], resume_flag: list[str], points: int, rng: random.Random,
                   delay: tuple[float, float], env: dict, runtime: Path) -> dict:
    """Start ``argv``, kill it ``points`` times at random delays (restarting with ``resume_flag``),
    then run it to the end. Returns the counts and the last run's output."""
    kills = landed = orphans = 0
    dead: set[int] = set()
    started = time.monotonic()
    first = True
    for k in range(points):
        mark = f"{name}-{k}-{rng.randrange(1 << 30)}"
        cmd = argv + ([] if first else resume_flag)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                                env={**env, "TERMRL_FAULTS_MARK": mark})
        first = False
        wait = rng.uniform(*delay)
        hit = False
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            hit = True
            landed += 1
            dead.add(proc.pid)
        kills += 1
        time.sleep(3)
        alive = marked(mark)
        if alive:
            orphans += len(alive)
            for pid in alive:  # do not let them disturb what follows
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        print(f"{name}: kill {k + 1}/{points} after {wait:.1f}s ({'landed' if hit else 'the run had ended'}), "
              f"orphans {len(alive)}", file=sys.stderr, flush=True)
    final = subprocess.run(argv + resume_flag, capture_output=True, text=True, cwd=ROOT, env=env, timeout=3600)
    if final.returncode not in (0, 1):
        print(final.stderr[-3000:], file=sys.stderr)
    leftovers = sandbox_leftovers(runtime, dead)
    return {"kills": kills, "kills_landed": landed, "orphans_after_kill": orphans, "leftovers_at_end": len(leftovers),
            "leftover_list": leftovers, "final_rc": final.returncode, "stdout": final.stdout,
            "wall_s": round(time.monotonic() - started, 1)}


def stored_ids(directory: Path) -> list[str]:
    return [i for part in sorted(directory.glob("*.parquet"))
            for i in pq.read_table(part, columns=["episode_id"]).column("episode_id").to_pylist()]


def bench_eval(work: Path, points: int, rng: random.Random, env: dict, runtime: Path) -> dict:
    out = work / "eval"
    argv = [sys.executable, "-m", "termrl", "eval", "--policy", "oracle", "--suite", SUITE, "--workers", "2",
            "--out", str(out), "--json"]
    r = run_with_kills("eval", argv, ["--resume"], points, rng, (0.5, 8.0), env, runtime)
    ids = stored_ids(out)
    expected = 32
    r.update(lost=expected - len(set(ids)), duplicated=len(ids) - len(set(ids)))
    return r


def bench_audit(work: Path, points: int, rng: random.Random, env: dict, runtime: Path) -> dict:
    out = work / "audit"
    argv = [sys.executable, "-m", "termrl", "audit", AUDIT_SUITE, "--exploits", AUDIT_EXPLOITS, "--workers", "2",
            "--out", str(out), "--json"]
    r = run_with_kills("audit", argv, ["--resume"], points, rng, (0.5, 6.0), env, runtime)
    rows = json.loads(r["stdout"])["rows"] if r["final_rc"] in (0, 1) else []
    pairs = [(row["task"], row["exploit"]) for row in rows]
    expected = 16 * (len(AUDIT_EXPLOITS.split(",")) + 1)
    lines = (out / "audit-rows.jsonl").read_text().splitlines()
    tasks = [json.loads(line)["task"] for line in lines]
    r.update(lost=expected - len(set(pairs)), duplicated=(len(pairs) - len(set(pairs))) + (len(tasks) - len(set(tasks))))
    return r


def bench_train(work: Path, points: int, rng: random.Random, env: dict, runtime: Path) -> dict:
    out = work / "train"
    steps = 8
    config = work / "grpo.toml"
    config.write_text(TRAIN_CONFIG.format(out=out, steps=steps))
    argv = [sys.executable, "-m", "termrl", "train", str(config), "--json"]
    r = run_with_kills("train", argv, ["--resume"], points, rng, (3.0, 25.0), env, runtime)
    ids = stored_ids(out / "rollouts")
    expected = steps * 2
    r.update(lost=expected - len(set(ids)), duplicated=len(ids) - len(set(ids)))
    return r


BENCHES = {"eval": bench_eval, "audit": bench_audit, "train": bench_train}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=",".join(BENCHES))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="termrl-faults-"))
    runtime = Path(tempfile.mkdtemp(prefix="termrl-faults-sandboxes-"))  # this bench's sandboxes only
    runtime.chmod(0o711)
    env = {**os.environ, "TERMRL_SANDBOX_DIR": str(runtime)}
    ok = True
    try:
        for name in args.only.split(","):
            r = BENCHES[name](work, args.points, rng, env, runtime)
            for key in ("kills", "kills_landed", "lost", "duplicated", "orphans_after_kill", "leftovers_at_end",
                        "final_rc", "wall_s"):
                print(f"{name}_{key}={r[key]}")
            if r["leftover_list"]:
                print(f"{name}_leftovers={','.join(r['leftover_list'])}")
            ok &= (r["lost"] == r["duplicated"] == r["orphans_after_kill"] == r["leftovers_at_end"] == 0
                   and r["final_rc"] in (0, 1))
        print(f"pass={int(ok)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    main()
