"""A snapshot of what termrl pays: every oracle and do-nothing episode of some suites, as JSON.

For refactors of the road from an episode to its reward: take a snapshot before, one after, and
compare them (``--compare``). Each episode is keyed ``policy:episode_id`` and holds its ending,
whether it passed, its reward, each component's contribution, its findings (kind, severity) and
its error.

Usage:
  python scripts/reward_snapshot.py OUT.json [SUITE ...]     # default: the suites below
  python scripts/reward_snapshot.py --compare BEFORE.json AFTER.json

Run from the repository root (the fixture suites are relative paths). HumanEval needs the shared
data sets (``TERMRL_DATASETS``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SUITES = ["builtin", "tests/fixtures/harbor", "tests/fixtures/terminal_bench", "tests/fixtures/flawed",
          "logs-count:heldout-v1:0-2", "py-function:heldout-v1:0-2", "csv-aggregate:heldout-v1:0-2",
          "json-transform:heldout-v1:0-2", "shell-files:heldout-v1:0-2", "c-fix-bug:heldout-v1:0-2",
          "one-command:heldout-v1:0-2", "humaneval:0-3"]


def snapshot(suites: list[str], spec: str) -> dict:
    from termrl.policies import make_policy
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.tasks.suites import resolve

    out = {}
    for suite in suites:
        tasks = [e.task for e in resolve(suite) if e.task is not None and not e.task.unsupported]
        for policy in ("oracle", "nop"):
            for t in run_rollouts(tasks, make_policy(policy), RolloutConfig(workers=2, spec=spec)):
                out[f"{policy}:{t.episode_id}"] = {
                    "ending": t.ending, "passed": t.passed, "reward": t.reward,
                    "components": {k: v.get("contribution") for k, v in t.components.items()},
                    "findings": sorted([f["kind"], f["severity"]] for f in t.findings), "error": t.error}
        print(f"{suite}: {len(tasks)} tasks", file=sys.stderr, flush=True)
    return out


def compare(before: dict, after: dict) -> int:
    """Print every episode whose record moved; the number of them."""
    moved = 0
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key), after.get(key)
        if a != b:
            moved += 1
            print(f"{key}: {a} -> {b}")
    print(f"episodes={len(before)} / {len(after)} moved={moved}")
    return moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="OUT.json [SUITE ...], or BEFORE.json AFTER.json with --compare")
    parser.add_argument("--compare", action="store_true", help="compare two snapshots; exit 1 if any moved")
    parser.add_argument("--spec", default="staged", help="reward spec (default: staged)")
    args = parser.parse_args()
    if args.compare:
        if len(args.paths) != 2:
            parser.error("--compare takes BEFORE.json AFTER.json")
        before, after = (json.loads(Path(p).read_text()) for p in args.paths)
        sys.exit(1 if compare(before, after) else 0)
    out, *suites = args.paths
    Path(out).write_text(json.dumps(snapshot(suites or SUITES, args.spec), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
