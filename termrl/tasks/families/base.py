"""Shared pieces of the seeded task families.

A family is a pure function of a seed and a difficulty level. Seeds come in three disjoint
ranges, each a split:

- ``train`` (0-999,999) draws from the family's *train templates*;
- ``heldout`` (2,000,000-2,999,999) draws only from its *held-out templates*, which no train
  seed ever uses: a model evaluated there meets specifications it never trained on, not only
  new names and numbers (``termrl tasks overlap`` measures what two suites share);
- ``heldout-v1`` (1,000,000-1,999,999) is the held-out range as it was until 2026-12-07:
  unseen seeds of the *train* templates. Its tasks are generated exactly as before, so stored
  runs still regenerate them, but it is not content-disjoint and no claim of generalisation
  should rest on it.

A template is the part of a family's generator that fixes the kind of work (a function
specification, a program, a rule, an aggregate); ``Task.meta.template`` names the one a task was
drawn from. A family with no held-out templates (``heldout_templates == ()``) holds out
combinations of values instead, and says so.

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

TRAIN_SEEDS = range(1_000_000)
HELDOUT_V1_SEEDS = range(1_000_000, 2_000_000)
HELDOUT_SEEDS = range(2_000_000, 3_000_000)
LEVELS = (1, 2, 3)
DEFAULT_LEVEL = 2


SPLIT_SEEDS = {"train": TRAIN_SEEDS, "heldout-v1": HELDOUT_V1_SEEDS, "heldout": HELDOUT_SEEDS}
"""Each split's seed range (see the module's docstring)."""


def split_of(seed: int) -> str:
    """``train``, ``heldout-v1`` or ``heldout``: the split whose range holds ``seed``."""
    for split, seeds in SPLIT_SEEDS.items():
        if seed in seeds:
            return split
    raise ValueError(f"seed {seed} is outside every family's seed ranges ("
                     + ", ".join(f"{split} {r.start}-{r.stop - 1}" for split, r in SPLIT_SEEDS.items()) + ")")


def split_index(seed: int) -> int:
    """``seed``'s position in its split's range (0 for the first seed of each split)."""
    return seed - SPLIT_SEEDS[split_of(seed)].start


def template_pool(seed: int, train: list, heldout: list) -> list:
    """The templates ``seed`` may draw from: ``heldout`` for a seed of the ``heldout`` split,
    ``train`` for ``train`` and ``heldout-v1`` seeds (which draw exactly as they always did)."""
    return heldout if split_of(seed) == "heldout" else train


class Family:
    """Base for families: subclasses set the class attributes and implement ``build``."""

    name = ""
    category = "other"
    description = ""
    difficulty = "medium"
    train_seeds = TRAIN_SEEDS
    heldout_seeds = HELDOUT_SEEDS
    heldout_v1_seeds = HELDOUT_V1_SEEDS

    train_templates: ClassVar[tuple[str, ...]] = ()
    """The names of the templates train (and ``heldout-v1``) seeds draw from."""
    heldout_templates: ClassVar[tuple[str, ...]] = ()
    """The names of the templates ``heldout`` seeds draw from; none of them is a train template.
    Empty: the family holds out combinations of values instead (its docstring says which)."""

    levels: ClassVar[dict[int, str]] = {}
    """What each level changes, in words (``termrl tasks list builtin`` shows it)."""

    def generate(self, seed: int, level: int | None = None) -> Task:
        level = DEFAULT_LEVEL if level is None else check_level(self.name, level)
        rng = random.Random(f"{self.name}:{seed}")
        parts = self.build(rng, seed, level)
        tags = tuple(parts.pop("tags", ()))
        template = parts.pop("template", "")
        if level != DEFAULT_LEVEL:
            tags += (f"level:{level}",)
        return Task(
            id=task_id(self.name, seed, level),
            meta=TaskMeta(family=self.name, difficulty=self.difficulty_at(level), category=self.category,
                          tags=tags, split=split_of(seed), source="family", seed=seed,
                          template=template),
            limits=parts.pop("limits", Limits(agent_timeout_sec=300, max_steps=15)),
            **parts,
        )

    def difficulty_at(self, level: int) -> str:
        """The family's difficulty at level 2, one step easier at level 1, one harder at 3."""
        at = DIFFICULTIES.index(self.difficulty) + level - DEFAULT_LEVEL
        return DIFFICULTIES[min(max(at, 0), len(DIFFICULTIES) - 1)]

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        """Return the Task's fields: instruction, workspace, tests, solution, and optionally
        setup, workdir, tags, limits, and ``template`` (the name of the template drawn, one of
        ``train_templates`` or ``heldout_templates``). ``level``: 1, 2 or 3 (see ``levels``)."""
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
