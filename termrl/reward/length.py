"""Length terms: they read ``length`` (this completion's token count) and ``group``
(``(length, correct)`` of every completion sampled for the same prompt) from the
scoring call; without them the value is None and nothing is added.

- ``overlong``: DAPO's soft overlong punishment (Yu et al. 2025, eq. 13) with
  ``max_length`` = L_max and ``cache`` = L_cache: 0 up to ``L_max - L_cache``, then a
  linear ramp down to -1 at ``L_max``, and -1 beyond.
- ``group_length``: Kimi k1.5's length reward (Kimi Team 2025, sec. 2.3.3):
  ``lambda = 0.5 - (len - min_len) / (max_len - min_len)`` over the group; a correct
  completion gets ``lambda``, an incorrect one ``min(0, lambda)``; 0 when all lengths
  are equal. Correctness is this evidence's ``passed``; only the group's lengths matter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from termrl.protocols import Evidence
from termrl.reward.context import Context
from termrl.reward.errors import FieldError


def dapo_overlong(length: int, max_length: int, cache: int) -> float:
    """DAPO's soft overlong punishment.

    >>> [dapo_overlong(n, max_length=100, cache=20) for n in (80, 90, 100, 101)]
    [0.0, -0.5, -1.0, -1.0]
    """
    soft_start = max_length - cache
    if length <= soft_start:
        return 0.0
    if length <= max_length:
        return (soft_start - length) / cache
    return -1.0


def kimi_length(length: int, correct: bool, lengths: list[int]) -> float:
    """Kimi k1.5's length reward of one completion among ``lengths``.

    >>> [kimi_length(n, True, [10, 20, 30]) for n in (10, 20, 30)]
    [0.5, 0.0, -0.5]
    >>> kimi_length(10, False, [10, 20, 30])
    0.0
    """
    shortest, longest = min(lengths), max(lengths)
    if longest == shortest:
        return 0.0
    lam = 0.5 - (length - shortest) / (longest - shortest)
    return lam if correct else min(0.0, lam)


def overlong(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """DAPO soft overlong punishment of ``ctx.length``; None without a length."""
    if ctx.length is None:
        return None
    return dapo_overlong(ctx.length, params["max_length"], params["cache"])


def group_length(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """Kimi length reward of ``ctx.length`` within ``ctx.group`` (min and max over the group and this
    completion, so it does not matter whether the group already lists it); None without both."""
    if ctx.length is None or not ctx.group:
        return None
    return kimi_length(ctx.length, evidence.passed, [n for n, _ in ctx.group] + [ctx.length])


def check_overlong(given: Mapping[str, Any]) -> None:
    if given["max_length"] <= 0:
        raise FieldError("max_length", f"must be a positive token count, got {given['max_length']}")
    if not 0 < given["cache"] <= given["max_length"]:
        raise FieldError("cache", f"must be in (0, max_length = {given['max_length']}], got {given['cache']}")
