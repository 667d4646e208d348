"""Two stores of the same episodes (same tasks and seeds), before and after training, paired.

The two-proportion test in a training run's ``results.json`` treats the halves as independent
samples. They are not: each held-out task ran once before and once after, so the paired test
(McNemar's, exact) asks the sharper question: of the tasks whose outcome changed, did more
change to passed than to failed?

Prints:
  episodes=, passed_before=, passed_after=, gained=, lost=, mcnemar_p= (exact, two-sided),
  z=, p_value= (the two-proportion test of ``termrl train``'s results.json, on the shared episodes
  the harness did not fail on that side)
  endings_before=, endings_after= (episode endings), mean_steps_before=, mean_steps_after=
  and, with --examples N, N gained and N lost episodes: every reply of both, side by side.
  With --replay-suite SUITE (the suite the stores ran): gained_first_write_passes=, how many gained
  episodes the base model would have passed by its own first written file (replayed alone in a
  fresh sandbox, then submitted): gains from stopping in time, not from better code.
  With --shared-with TRAIN_SUITE --suite SUITE: the same figures twice more, for the episodes whose
  task is an exact duplicate of a TRAIN_SUITE task (``termrl tasks overlap``: the same specification
  and reference, names and examples aside) and for the rest (shared.*, unshared.*), so a gain on
  content the model trained on is told apart from a gain on content it never saw. Add --near to
  count near duplicates as shared too (similar specifications: the same template, another
  parameter).

Usage: python bench/before_after.py BEFORE_STORE AFTER_STORE [--examples N] [--json]
           [--replay-suite SUITE [--max-steps N] [--action-format F]]
           [--shared-with TRAIN_SUITE --suite SUITE [--near]]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from termrl.eval import metrics
from termrl.rollout.store import TrajectoryStore


def paired(before: list, after: list) -> dict:
    b = {t.episode_id: t for t in before}
    a = {t.episode_id: t for t in after}
    common = [k for k in b if k in a]
    pairs = metrics.paired(before, after) or {"gained_ids": [], "lost_ids": [], "mcnemar_p": 1.0}
    passed_b, passed_a = sum(bool(b[k].passed) for k in common), sum(bool(a[k].passed) for k in common)
    # the unpaired test as termrl train computes it: each side's passed / episodes the harness did not fail
    (pb, nb), (pa, na) = (metrics.passed_fraction(side[k] for k in common) for side in (b, a))
    z, p_value = metrics.two_proportion_z(pb / nb, pa / na, nb, na) if nb and na else (0.0, 1.0)
    return {
        "episodes": len(common),
        "passed_before": passed_b, "passed_after": passed_a,
        "gained": len(pairs["gained_ids"]), "lost": len(pairs["lost_ids"]),
        "mcnemar_p": pairs["mcnemar_p"], "z": z, "p_value": p_value,
        "endings_before": dict(Counter(b[k].ending for k in common)),
        "endings_after": dict(Counter(a[k].ending for k in common)),
        "mean_steps_before": sum(len(b[k].steps) for k in common) / len(common) if common else 0.0,
        "mean_steps_after": sum(len(a[k].steps) for k in common) / len(common) if common else 0.0,
        "gained_ids": pairs["gained_ids"], "lost_ids": pairs["lost_ids"],
    }


def duplicates(train_suite: str, suite: str, near: bool = False) -> set[str]:
    """Task ids of ``suite`` with an exact (or, ``near``, a near) duplicate in ``train_suite``
    (``termrl.tasks.overlap``)."""
    from termrl.tasks.overlap import overlap
    from termrl.tasks.suites import resolve

    tasks = [[e.task for e in resolve(name) if e.task is not None] for name in (suite, train_suite)]
    result = overlap(*tasks)
    return set(result.shared_ids()) if near else {m.id for m in result.matches if m.exact}


def first_write_passes(before: list, ids: list[str], suite: str, max_steps: int | None, action_format: str) -> int:
    """How many of the episodes ``ids`` of ``before`` pass with only their first file write, then a submit."""
    from termrl.env import EnvConfig
    from termrl.policies.scripted import SUBMIT
    from termrl.protocols import Reply
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig, run_episode
    from termrl.tasks.suites import resolve

    by_id = {t.episode_id: t for t in before}
    tasks = {e.task.id: e.task for e in resolve(suite) if e.task is not None}
    config = RolloutConfig(env=EnvConfig(max_steps=(max_steps or 3) + 1, action_format=action_format))
    passed = 0
    for eid in ids:
        t = by_id[eid]
        replies = [s.reply for s in t.steps if s.action and s.action["kind"] == "write"][:1] + [SUBMIT]
        episode = run_episode(tasks[t.task_id], t.sample, "replay", lambda turn, replies=replies: Reply(replies[turn.step]),
                              config, config.spec, Accountant())
        passed += bool(episode.passed)
    return passed


def show(title: str, traj) -> None:
    print(f"--- {title}: {traj.episode_id} passed={traj.passed} ending={traj.ending} reward={traj.reward}")
    for s in traj.steps:
        print(f"  [reply {s.index}] {s.reply[:700]}")
        if s.observation:
            print(f"  [observation] {s.observation[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--examples", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--replay-suite")
    parser.add_argument("--max-steps", type=int)
    parser.add_argument("--action-format", default="tool_call")
    parser.add_argument("--shared-with", metavar="TRAIN_SUITE")
    parser.add_argument("--suite", help="the suite the stores ran (with --shared-with)")
    parser.add_argument("--near", action="store_true", help="with --shared-with: near duplicates are shared too")
    args = parser.parse_args()
    if bool(args.shared_with) != bool(args.suite):
        parser.error("--shared-with TRAIN_SUITE and --suite SUITE go together")
    before, after = TrajectoryStore(args.before).read(), TrajectoryStore(args.after).read()
    result = paired(before, after)
    if args.shared_with:
        shared = duplicates(args.shared_with, args.suite, args.near)
        for name, keep in (("shared", lambda t: t.task_id in shared), ("unshared", lambda t: t.task_id not in shared)):
            part = paired([t for t in before if keep(t)], [t for t in after if keep(t)])
            result.update({f"{name}.{k}": v for k, v in part.items()
                           if k in ("episodes", "passed_before", "passed_after", "gained", "lost", "mcnemar_p",
                                    "z", "p_value")})
    if args.replay_suite:
        result["gained_first_write_passes"] = first_write_passes(before, result["gained_ids"], args.replay_suite,
                                                                 args.max_steps, args.action_format)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if not k.endswith("_ids")}))
    else:
        for k, v in result.items():
            if not k.endswith("_ids"):
                print(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}")
    by_id_b = {t.episode_id: t for t in before}
    by_id_a = {t.episode_id: t for t in after}
    for kind in ("gained", "lost"):
        for k in result[f"{kind}_ids"][:args.examples]:
            print(f"\n===== {kind}: {k}")
            show("before", by_id_b[k])
            show("after", by_id_a[k])


if __name__ == "__main__":
    main()
