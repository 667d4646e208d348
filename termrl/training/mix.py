"""A weighted mix of training suites: which tasks training draws, in what order.

``tasks.train`` joins suites with ``+`` (families at any level, ``builtin``, task directories,
``humaneval``/``mbpp`` slices). ``tasks.weights`` gives each part a relative weight; the mix is
an ordered list of tasks in which each part's share of any prefix is close to its share of the
weights (smooth weighted round-robin), and each part's tasks come in a fixed shuffled order, every
one of them before any repeats. Training reads the mix from the front: GRPO takes as many
tasks as its steps use, RFT the next ``rft.tasks_per_round`` each round, so a run sees many
distinct tasks rather than a few tasks many times. The order is a function of the seed alone, so
``--resume`` draws the same tasks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from termrl.protocols import Task


def split_parts(suite: str) -> list[str]:
    """The parts of a ``+``-joined suite, as written (surrounding spaces dropped)."""
    return [part.strip() for part in suite.split("+")]


def check_weights(train: str, weights: dict[str, float]) -> str | None:
    """What is wrong with ``weights`` for ``train`` (a key that is not one of its parts, a weight
    that is not positive), or None."""
    parts = split_parts(train)
    for part, weight in weights.items():
        if part.strip() not in parts:
            return f"{part!r} is not one of tasks.train's parts ({', '.join(parts)}); name a part as written there"
        if not weight > 0:
            return f"{part!r}: weight {weight} must be above 0 (leave a part out of tasks.train to drop it)"
    return None


def mix(parts: Sequence[tuple[str, float, Sequence[Task]]], n: int, seed: int = 0) -> list[Task]:
    """``n`` tasks drawn from ``parts`` (``(name, weight, tasks)``) in proportion to the weights.

    Each part's tasks are shuffled once (by ``seed`` and the part's name) and taken in that order,
    starting over when a part runs out. Which part gives the next task is smooth weighted
    round-robin: the part furthest behind its share goes next, so every prefix of the mix is
    within one task of each part's share.

    >>> a = [Task(id=f"a{i}", instruction="") for i in range(3)]
    >>> b = [Task(id=f"b{i}", instruction="") for i in range(100)]
    >>> drawn = mix([("a", 1, a), ("b", 3, b)], 8)
    >>> [t.id[0] for t in drawn]
    ['b', 'a', 'b', 'b', 'b', 'a', 'b', 'b']
    >>> len({t.id for t in drawn if t.id[0] == "b"})
    6
    """
    live = [(name, float(weight), list(tasks)) for name, weight, tasks in parts if tasks]
    if not live:
        raise ValueError("no tasks to mix: every part of tasks.train is empty")
    orders = []
    for name, _, tasks in live:
        order = list(tasks)
        random.Random(f"{seed}:{name}").shuffle(order)
        orders.append(order)
    total = sum(weight for _, weight, _ in live)
    credit = [0.0] * len(live)
    taken = [0] * len(live)
    drawn = []
    for _ in range(n):
        for i, (_, weight, _) in enumerate(live):
            credit[i] += weight
        i = max(range(len(live)), key=lambda k: (credit[k], -k))
        credit[i] -= total
        drawn.append(orders[i][taken[i] % len(orders[i])])
        taken[i] += 1
    return drawn


def train_mix(train: str, weights: dict[str, float], n: int, seed: int,
              load: Callable[[str], list[Task]]) -> list[Task]:
    """``n`` tasks of ``train`` by ``weights`` (parts not named weigh 1), each part loaded by ``load``."""
    return mix([(part, weights.get(part, 1.0), load(part)) for part in split_parts(train)], n, seed)


__all__ = ["check_weights", "mix", "split_parts", "train_mix"]
