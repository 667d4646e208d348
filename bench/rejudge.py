"""Re-judge stored episodes with the verifier as it is now: does a verifier change alter outcomes?

Replays every episode's recorded replies through ``termrl eval`` (a scripted policy: the same
actions, parsed by the same harness, in fresh sandboxes) and compares each episode's pass/fail and
ending with the stored one. Run it after any change to verification, on a store of real-model
episodes (honest, wrong and odd solutions alike).

Prints:
  episodes=, agree=, passed_before=, passed_now=, endings_agree=
  and one JSON line per episode whose outcome changed.

Usage: python bench/rejudge.py STORE --suite SUITE [--max-steps N] [--action-format F]
                                     [--workers N] [--out DIR]
(``--suite``, ``--max-steps`` and ``--action-format``: what the stored run used.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from termrl.rollout.store import TrajectoryStore


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--suite", required=True)
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--action-format", default="tool_call")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="keep the new run here (default: a temp dir)")
    args = parser.parse_args()

    stored = TrajectoryStore(args.store).read()
    if not stored:
        print(f"{args.store}: no episodes stored", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="termrl-rejudge-") as tmp:
        script = Path(tmp) / "replies.json"
        script.write_text(json.dumps({t.task_id: [s.reply for s in t.steps] for t in stored}))
        out = args.out or Path(tmp) / "run"
        command = [sys.executable, "-m", "termrl", "eval", "--policy", f"script:{script}", "--suite", args.suite,
                   "--action-format", args.action_format, "--workers", str(args.workers), "--out", str(out),
                   "--json"]
        if args.max_steps:
            command += ["--max-steps", str(args.max_steps)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        now = {t.task_id: t for t in TrajectoryStore(out).read()}
    before = {t.task_id: t for t in stored}
    common = [tid for tid in before if tid in now]
    agree = sum(before[t].passed == now[t].passed for t in common)
    endings = sum(before[t].ending == now[t].ending for t in common)
    print(f"episodes={len(common)}")
    print(f"agree={agree}")
    print(f"passed_before={sum(before[t].passed for t in common)}")
    print(f"passed_now={sum(now[t].passed for t in common)}")
    print(f"endings_agree={endings}")
    for tid in common:
        if before[tid].passed != now[tid].passed:
            print(json.dumps({"task": tid, "passed_before": before[tid].passed, "passed_now": now[tid].passed,
                              "classes_now": (now[tid].evidence or {}).get("error_classes")}))
    return 0 if agree == len(common) else 1


if __name__ == "__main__":
    sys.exit(main())
