"""Weights that move with training progress.

Any weight in a reward spec is a number or a schedule table over the training
progress ``p`` in [0, 1] (the fraction of training done):

| kind | keys | weight at ``p`` |
|---|---|---|
| ``constant`` | ``value`` | ``value`` |
| ``linear`` | ``start``, ``end``, optional ``from`` = 0, ``to`` = 1 | ``start`` until ``from``, ``end`` from ``to``, linear in between |
| ``piecewise`` | ``points = [[p0, w0], [p1, w1], ...]`` | linear between points (``p`` strictly increasing, in [0, 1]); clamped to the first and last weight |
| ``step`` | ``before``, ``after``, ``at`` | ``before`` while ``p < at``, ``after`` from ``p >= at`` |

Each schedule is a frozen dataclass called with ``p``:

>>> Linear(start=0.5, end=0.05)(1.0)
0.05
>>> Piecewise(((0.0, 0.2), (0.5, 1.0)))(0.25)
0.6
>>> Step(before=0.0, after=0.2, at=0.6)(0.6)
0.2
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from termrl.reward.errors import FieldError

Schedule = Callable[[float], float]
"""Training progress in [0, 1] -> weight."""


@dataclass(frozen=True)
class Constant:
    value: float

    def __call__(self, p: float) -> float:
        return self.value


@dataclass(frozen=True)
class Linear:
    start: float
    end: float
    from_: float = 0.0
    """Progress where the ramp begins (``from`` in TOML); ``start`` before it."""
    to: float = 1.0
    """Progress where the ramp ends; ``end`` after it."""

    def __call__(self, p: float) -> float:
        t = min(1.0, max(0.0, (p - self.from_) / (self.to - self.from_)))
        return (1.0 - t) * self.start + t * self.end


@dataclass(frozen=True)
class Piecewise:
    points: tuple[tuple[float, float], ...]
    """(progress, weight) pairs, progress strictly increasing."""

    def __call__(self, p: float) -> float:
        if p <= self.points[0][0]:
            return self.points[0][1]
        for (p0, w0), (p1, w1) in pairwise(self.points):
            if p <= p1:
                t = (p - p0) / (p1 - p0)
                return (1.0 - t) * w0 + t * w1
        return self.points[-1][1]


@dataclass(frozen=True)
class Step:
    before: float
    after: float
    at: float

    def __call__(self, p: float) -> float:
        return self.before if p < self.at else self.after


KEYS = {
    "constant": ({"value"}, set()),
    "linear": ({"start", "end"}, {"from", "to"}),
    "piecewise": ({"points"}, set()),
    "step": ({"before", "after", "at"}, set()),
}
"""kind -> (required keys, optional keys), besides ``kind`` itself."""


def parse_weight(raw: object) -> Schedule:
    """A weight as written in TOML (a number or a schedule table) -> a ``Schedule``.

    Raises ``FieldError`` with the key relative to the weight (``points``, ``from``...).
    """
    if not isinstance(raw, dict):
        return Constant(number(raw, None, "a number or a schedule table such as {kind = \"linear\", "
                                           "start = 1.0, end = 0.1}"))
    kind = raw.get("kind")
    if not isinstance(kind, str) or kind not in KEYS:
        raise FieldError("kind", f"unknown schedule kind {kind!r}; use one of: {', '.join(KEYS)}")
    required, optional = KEYS[kind]
    for key in raw:
        if key != "kind" and key not in required | optional:
            allowed = ", ".join(sorted(required | optional))
            raise FieldError(key, f"unknown key for a {kind} schedule; its keys are: {allowed}")
    missing = sorted(required - raw.keys())
    if missing:
        raise FieldError(missing[0], f"missing: a {kind} schedule needs {', '.join(sorted(required))}")
    if kind == "constant":
        return Constant(number(raw["value"], "value"))
    if kind == "linear":
        lo, hi = progress(raw.get("from", 0.0), "from"), progress(raw.get("to", 1.0), "to")
        if lo >= hi:
            raise FieldError("to", f"'to' ({hi}) must be greater than 'from' ({lo})")
        return Linear(number(raw["start"], "start"), number(raw["end"], "end"), lo, hi)
    if kind == "step":
        return Step(number(raw["before"], "before"), number(raw["after"], "after"), progress(raw["at"], "at"))
    return Piecewise(_points(raw["points"]))


def _points(raw: object) -> tuple[tuple[float, float], ...]:
    shape = "a list of [progress, weight] pairs, e.g. [[0.0, 0.2], [0.5, 1.0]]"
    if not isinstance(raw, list) or not raw:
        raise FieldError("points", f"must be {shape}")
    points = []
    for i, pair in enumerate(raw):
        if not isinstance(pair, list) or len(pair) != 2:
            raise FieldError(f"points[{i}]", f"must be a [progress, weight] pair; points is {shape}")
        points.append((progress(pair[0], f"points[{i}]"), number(pair[1], f"points[{i}]")))
    for i in range(1, len(points)):
        if points[i][0] <= points[i - 1][0]:
            raise FieldError(f"points[{i}]", f"progress {points[i][0]} does not come after "
                                             f"{points[i - 1][0]}; sort the points by strictly increasing progress")
    return tuple(points)


def number(raw: object, key: str | None, what: str = "a number") -> float:
    """A finite int or float (not a bool) -> float, else ``FieldError``."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise FieldError(key, f"must be {what}, got {raw!r}")
    return float(raw)


def progress(raw: object, key: str) -> float:
    value = number(raw, key, "a training progress between 0 and 1")
    if not 0.0 <= value <= 1.0:
        raise FieldError(key, f"progress {value} is outside [0, 1]; progress is the fraction of training done")
    return value
