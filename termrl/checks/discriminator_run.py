"""``learn_discriminator``: train the learned judge of dishonest diffs
(``termrl.reward.discriminator``) on a suite's labelled diffs, measure it on held-out tasks and
save it; what ``termrl judge discriminator`` runs."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from termrl.checks.labelled_diffs import collect, weak_examples
from termrl.reward.discriminator import evaluate, fit_examples, split_by_task, unseen_exploit_recall
from termrl.rollout.store import TrajectoryStore
from termrl.tasks import envs
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, find_task, resolve


class DiscriminatorError(ValueError):
    """Settings or stores that cannot train a discriminator: says what to do instead."""


def learn_discriminator(suite: str, out: str | os.PathLike, *, held_out: float = 0.3, threshold: float = 0.5,
                        workers: int = 2, seed: int = 0, unseen: bool = False,
                        weak: Sequence[str | os.PathLike] = ()) -> dict:
    """Learn from the audit's exploits (dishonest) and the reference solutions (honest) of
    ``suite``, and from the ``weak`` trajectory stores labelled by the hack detectors; report
    precision and recall on the ``held_out`` share of the tasks (``unseen``: also each exploit's
    recall when it never trained), then train on every task and save the model to ``out``.
    Returns the report ``termrl judge discriminator --json`` prints."""
    if not 0 <= held_out < 1:
        raise DiscriminatorError(f"--held-out {held_out}: give a share in [0, 1), e.g. 0.3")
    try:
        entries = envs.prepare(resolve(suite))
    except (SuiteError, TaskFormatError, ValueError, OSError) as e:
        raise DiscriminatorError(str(e)) from None
    stored = weak_episodes([Path(w) for w in weak])
    tasks, _ = envs.runnable(entries)
    examples = collect(tasks, workers=workers)
    if len({e.label for e in examples}) < 2:
        raise DiscriminatorError(f"{suite}: no honest and dishonest diffs to learn from (tasks need reference "
                                 "solutions)")
    report = {"suite": suite, "examples": len(examples), "tasks": len({e.task for e in examples})}
    if stored:
        trajectories, by_id = stored
        weak_ones = weak_examples(trajectories, by_id, workers=workers)
        report["weak"] = {"episodes": len(trajectories), "labelled": len(weak_ones),
                          "dishonest": sum(e.label for e in weak_ones),
                          "by_kind": dict(sorted(Counter(e.solution for e in weak_ones).items()))}
        if held_out:  # the same held-out tasks, trained without the weak labels: what they add
            train, test = split_by_task(examples, held_out, seed)
            if test and len({e.label for e in train}) == 2:
                report["held_out_without_weak"] = evaluate(fit_examples(train, seed), test, threshold)
        examples += weak_ones
    train, test = split_by_task(examples, held_out, seed) if held_out else (examples, [])
    report.update(train_examples=len(train), held_out_tasks=len({e.task for e in test}))
    if test and len({e.label for e in train}) == 2:
        report["held_out"] = evaluate(fit_examples(train, seed), test, threshold)
    if unseen and held_out:
        report["unseen_exploits"] = unseen_exploit_recall(examples, held_out, seed, threshold)
    model = fit_examples(examples, seed)
    try:
        model.save(out)
    except OSError as e:
        raise DiscriminatorError(f"--out {out}: {e}") from None
    report["model"], report["features"] = str(out), len(model.weights)
    return report


def weak_episodes(stores: Sequence[Path]) -> tuple[list, dict] | None:
    """(trajectories, task id -> Task) of the trajectory ``stores``, or None without any;
    DiscriminatorError naming the store when one is empty or names a task termrl cannot find."""
    if not stores:
        return None

    trajectories, by_id = [], {}
    for store in stores:
        if not store.is_dir():
            raise DiscriminatorError(f"--weak {store}: no such directory: give a trajectory store (the --out of "
                                     "termrl eval or train)")
        found = TrajectoryStore(store).read()
        if not found:
            raise DiscriminatorError(f"--weak {store}: no episodes stored there: give the --out of a termrl eval "
                                     "or train run")
        for t in found:
            if t.task_id not in by_id:
                try:
                    by_id[t.task_id] = find_task(t.task_id)
                except (SuiteError, TaskFormatError, KeyError, ValueError) as e:
                    raise DiscriminatorError(f"--weak {store}: episode {t.episode_id}: its task {t.task_id!r} "
                                             f"cannot be found ({e})") from None
        trajectories += found
    return trajectories, by_id
