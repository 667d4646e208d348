"""Shared pieces of the seeded task families.

A family is a pure function of a seed and a difficulty level. Train and held-out
seeds come from disjoint ranges, so a model evaluated on held-out seeds has never
seen those variants during training.

Levels 1 (easiest) to 3 make a curriculum: each family documents what its levels
change (steps needed, input size, hidden edge cases, distractor files). Level 2 is
the family as it always was (same tasks, same ids); other levels draw the same
seed's scenario and make it easier or harder, and their task ids carry the level
(``py-function@1-1000003``; as a suite, ``py-function@1:heldout:0-99``).
"""

from __future__ import annotations

import random
from typing import ClassVar

from termrl.protocols import DIFFICULTIES, Limits, Task, TaskFile, TaskMeta

TRAIN_SEEDS = range(0, 1_000_000)
HELDOUT_SEEDS = range(1_000_000, 2_000_000)
LEVELS = (1, 2, 3)
DEFAULT_LEVEL = 2


def split_of(seed: int) -> str:
    """``train`` for seeds in TRAIN_SEEDS, ``heldout`` for HELDOUT_SEEDS."""
    if seed in TRAIN_SEEDS:
        return "train"
    if seed in HELDOUT_SEEDS:
        return "heldout"
    raise ValueError(f"seed {seed} is outside every family's seed ranges "
                     f"(train {TRAIN_SEEDS.start}-{TRAIN_SEEDS.stop - 1}, "
                     f"held-out {HELDOUT_SEEDS.start}-{HELDOUT_SEEDS.stop - 1})")


class Family:
    """Base for families: subclasses set the class attributes and implement ``build``."""

    name = ""
    category = "other"
    description = ""
    difficulty = "medium"
    train_seeds = TRAIN_SEEDS
    heldout_seeds = HELDOUT_SEEDS

    levels: ClassVar[dict[int, str]] = {}
    """What each level changes, in words (``termrl tasks list builtin`` shows it)."""

    def generate(self, seed: int, level: int | None = None) -> Task:
        level = DEFAULT_LEVEL if level is None else check_level(self.name, level)
        rng = random.Random(f"{self.name}:{seed}")
        parts = self.build(rng, seed, level)
        tags = tuple(parts.pop("tags", ()))
        if level != DEFAULT_LEVEL:
            tags += (f"level:{level}",)
        return Task(
            id=task_id(self.name, seed, level),
            meta=TaskMeta(family=self.name, difficulty=self.difficulty_at(level), category=self.category,
                          tags=tags, split=split_of(seed), source="family", seed=seed),
            limits=parts.pop("limits", Limits(agent_timeout_sec=300, max_steps=15)),
            **parts,
        )

    def difficulty_at(self, level: int) -> str:
        """The family's difficulty at level 2, one step easier at level 1, one harder at 3."""
        at = DIFFICULTIES.index(self.difficulty) + level - DEFAULT_LEVEL
        return DIFFICULTIES[min(max(at, 0), len(DIFFICULTIES) - 1)]

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        """Return the Task's fields: instruction, workspace, tests, solution, and optionally
        setup, workdir, tags, limits. ``level``: 1, 2 or 3 (see ``levels``)."""
        raise NotImplementedError


def check_level(family: str, level) -> int:
    """``level`` when it is one of ``LEVELS``; ValueError naming the family and the levels otherwise."""
    if type(level) is not int or level not in LEVELS:
        raise ValueError(f"family {family}: level {level!r} does not exist; use one of "
                         f"{', '.join(map(str, LEVELS))} (1 easiest, {DEFAULT_LEVEL} the default)")
    return level


def task_id(family: str, seed: int, level: int = DEFAULT_LEVEL) -> str:
    """``family-seed``, or ``family@level-seed`` away from the default level."""
    return f"{family}-{seed}" if level == DEFAULT_LEVEL else f"{family}@{level}-{seed}"


def files(mapping: dict[str, str], executable: tuple[str, ...] = ()) -> dict[str, TaskFile]:
    """Text files from a ``{path: text}`` dict."""
    return {path: TaskFile.text(text, path in executable) for path, text in mapping.items()}
