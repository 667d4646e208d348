"""The audit over several suites under every reward preset, with its wall time.

For each suite: every exploit against every task, each episode scored by all five presets
(sparse, partial, coderl, rltf, staged) at training progress 0, 0.5 and 1 (the episodes run
once; ``termrl audit --spec a,b,...``). Prints one line per suite:

  suite=, tasks=, episodes=, seconds=, test_weak=, exploitable_<preset>=
and at the end, every (preset, task, exploit) that out-earned doing nothing, as JSON lines.

Usage: python bench/audit_matrix.py [SUITE ...] [--workers N] [--out FILE.json]
(default suites: builtin, humaneval:0-19, mbpp:0-19, one seed of each family, and the
Harbor and Terminal-Bench fixture directories)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from termrl.checks.audit import audit
from termrl.reward import load_spec
from termrl.tasks.families import FAMILIES
from termrl.tasks.suites import resolve

PRESETS = ("sparse", "partial", "coderl", "rltf", "staged")
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def default_suites() -> list[str]:
    return (["builtin", "humaneval:0-19", "mbpp:0-19"] + [f"{name}:heldout:0-0" for name in sorted(FAMILIES)]
            + [str(FIXTURES / "harbor"), str(FIXTURES / "terminal_bench")])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="*")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write every suite's full report here")
    args = parser.parse_args()

    specs = {name: load_spec(name) for name in PRESETS}
    found, reports = [], {}
    for suite in args.suites or default_suites():
        tasks = [e.task for e in resolve(suite) if e.task is not None and not e.task.unsupported]
        t0 = time.perf_counter()
        report = audit(tasks, specs, workers=args.workers)
        seconds = time.perf_counter() - t0
        reports[suite] = report
        rows = next(iter(report["specs"].values()))["rows"]
        exploitable = {n: len(r["exploitable_tasks"]) for n, r in report["specs"].items()}
        print(f"suite={suite} tasks={len(tasks)} episodes={len(rows)} seconds={seconds:.0f} "
              f"test_weak={len(report['test_weak_tasks'])} "
              + " ".join(f"exploitable_{n}={k}" for n, k in exploitable.items()), flush=True)
        for name, one in report["specs"].items():
            for r in one["rows"]:
                if r["exploit"] != "nop" and r["error"] is None and not r.get("as_reference") \
                        and (r["reward"] is None or (r["advantage"] or 0) > 1e-9):
                    found.append({"suite": suite, "spec": name, "task": r["task"], "exploit": r["exploit"],
                                  "reward": r["reward"], "nop": r["nop_reward"], "progress": r["progress"],
                                  "tests_passed": r["tests_passed"], "detected_by": r["detected_by"]})
    for line in found:
        print(json.dumps(line))
    if args.out:
        args.out.write_text(json.dumps(reports))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
