"""Shared pieces of the seeded task families.

A family is a pure function of a seed. Train and held-out seeds come from
disjoint ranges, so a model evaluated on held-out seeds has never seen those
variants during training.
"""

from __future__ import annotations

import random
from termrl.protocols import Limits, Task, TaskFile, TaskMeta

TRAIN_SEEDS = range(0, 1_000_000)
HELDOUT_SEEDS = range(1_000_000, 2_000_000)


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

    def generate(self, seed: int) -> Task:
        rng = random.Random(f"{self.name}:{seed}")
        parts = self.build(rng, seed)
        return Task(
            id=f"{self.name}-{seed}",
            meta=TaskMeta(family=self.name, difficulty=self.difficulty, category=self.category,
                          tags=tuple(parts.pop("tags", ())), split=split_of(seed),
                          source="family", seed=seed),
            limits=parts.pop("limits", Limits(agent_timeout_sec=300, max_steps=15)),
            **parts,
        )

    def build(self, rng: random.Random, seed: int) -> dict:
        """Return the Task's fields: instruction, workspace, tests, solution, and optionally
        setup, workdir, tags, limits."""
        raise NotImplementedError


def files(mapping: dict[str, str], executable: tuple[str, ...] = ()) -> dict[str, TaskFile]:
    """Text files from a ``{path: text}`` dict."""
    return {path: TaskFile.text(text, path in executable) for path, text in mapping.items()}
