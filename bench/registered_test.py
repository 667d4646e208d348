"""The registered test's analysis (results/registered/REGISTRATION.md): the four goals, each with
the statistic and threshold the registration fixed before any episode was played.

Reads the stores scripts/registered_test.sh writes under RESULTS (MODEL/SET for MODEL in base-0.5b,
sft-0.5b, rl-0.5b, base-1.5b and SET in T, X1, X3), pairs episodes by id (the same tasks; greedy,
one episode per task), and writes RESULTS/results.json and prints one line per goal:

1. rl-0.5b > base-0.5b on T: exact one-sided McNemar (binomial tail of gained among gained + lost),
   met when p < 0.05;
2. rl-0.5b > sft-0.5b on T: the same;
3. rl-0.5b at or above base-1.5b on T: met when rl-0.5b passes at least as many; the two-sided
   McNemar p is reported;
4. no loss on X1 (HumanEval, one reply): met when rl-0.5b passes at least as many as base-0.5b;
   two-sided McNemar p reported.

A model or set not played yet is reported as missing, and its goals as not yet decided. Harness
failures leave a pair out (``termrl.eval.metrics.paired``) and are counted.

Usage: python bench/registered_test.py RESULTS [--json]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from termrl.eval.metrics import is_harness_failure, paired
from termrl.rollout.store import TrajectoryStore

MODELS = ("base-0.5b", "sft-0.5b", "rl-0.5b", "base-1.5b")
SETS = ("T", "X1", "X3")
ALPHA = 0.05


def one_sided(gained: int, lost: int) -> float:
    """P(at least ``gained`` of ``gained + lost`` discordant pairs go the better way | no difference)."""
    n = gained + lost
    return sum(math.comb(n, k) for k in range(gained, n + 1)) / 2 ** n if n else 1.0


def load(results: Path) -> dict:
    stores = {}
    for model in MODELS:
        for name in SETS:
            where = results / model / name
            if where.is_dir():
                stores[model, name] = TrajectoryStore(where).read()
    return stores


def counts(trajectories: list) -> dict:
    scored = [t for t in trajectories if not is_harness_failure(t)]
    return {"episodes": len(trajectories), "scored": len(scored), "passed": sum(bool(t.passed) for t in scored),
            "harness_failures": len(trajectories) - len(scored)}


def compare(stores: dict, a: str, b: str, name: str, kind: str) -> dict:
    """Goal: ``a`` against ``b`` on set ``name``; ``kind`` "greater" (one-sided McNemar < ALPHA) or
    "at_least" (a passes at least as many on the shared episodes)."""
    goal = {"a": a, "b": b, "set": name, "kind": kind}
    if (a, name) not in stores or (b, name) not in stores:
        return {**goal, "met": None, "why": "not played yet: " + ", ".join(
            f"{m}/{name}" for m in (a, b) if (m, name) not in stores)}
    pair = paired(stores[b, name], stores[a, name])  # before = b, after = a
    if pair is None:
        return {**goal, "met": None, "why": "no episode in both stores"}
    gained, lost = pair["gained"], pair["lost"]
    scored = [{t.episode_id: bool(t.passed) for t in stores[m, name] if not is_harness_failure(t)} for m in (a, b)]
    ids = scored[0].keys() & scored[1].keys()  # the pairs ``paired`` counts: scored on both sides
    passed_a, passed_b = (sum(side[i] for i in ids) for side in scored)
    p_one = one_sided(gained, lost)
    met = p_one < ALPHA if kind == "greater" else passed_a >= passed_b
    return {**goal, "episodes": pair["episodes"], "passed_a": passed_a, "passed_b": passed_b, "gained": gained,
            "lost": lost, "p_one_sided": p_one, "p_two_sided": pair["mcnemar_p"], "met": met}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    stores = load(args.results)
    out = {"counts": {f"{m}/{s}": counts(stores[m, s]) for m, s in stores},
           "goals": [compare(stores, "rl-0.5b", "base-0.5b", "T", "greater"),
                     compare(stores, "rl-0.5b", "sft-0.5b", "T", "greater"),
                     compare(stores, "rl-0.5b", "base-1.5b", "T", "at_least"),
                     compare(stores, "rl-0.5b", "base-0.5b", "X1", "at_least")],
           "also": [compare(stores, "sft-0.5b", "base-0.5b", name, "greater") for name in SETS]
           + [compare(stores, "rl-0.5b", "base-0.5b", "X3", "at_least")]}
    (args.results / "results.json").write_text(json.dumps(out, indent=1))
    if args.json:
        print(json.dumps(out))
        return
    for key, c in out["counts"].items():
        print(f"{key}: {c['passed']} of {c['scored']} scored ({c['episodes']} episodes, "
              f"{c['harness_failures']} harness failures)")
    for i, g in enumerate(out["goals"] + out["also"], 1):
        label = f"goal {i}" if i <= len(out["goals"]) else "also"
        if g["met"] is None:
            print(f"{label}: {g['a']} vs {g['b']} on {g['set']}: {g['why']}")
            continue
        print(f"{label}: {g['a']} {g['passed_a']} vs {g['b']} {g['passed_b']} of {g['episodes']} on {g['set']} "
              f"(gained {g['gained']}, lost {g['lost']}; McNemar one-sided p = {g['p_one_sided']:.4g}, "
              f"two-sided {g['p_two_sided']:.4g}): {'met' if g['met'] else 'not met'}")


if __name__ == "__main__":
    main()
