"""Code-quality penalties, each in [-1, 0], read from the verifier's static-analysis stages.

Stage data they rely on (produced by ``termrl.verify.stages``):

- ``evidence.stages["quality"].data["complexity"]`` = ``{"max_cc": int, "mean_cc": float, "mi": float}``:
  the largest and mean cyclomatic complexity of the changed Python functions and
  the lowest maintainability index (radon).
- ``evidence.stages["quality"].data["ruff"]`` = ``{"count": int, "by_category": {prefix: int}, ...}``:
  ruff findings other than security ones.
- ``evidence.stages["safety"].data`` = ``{"count": int, "by_rule": {code: int}, ...}``: ruff's
  security (bandit ``S``) findings.

A stage that is missing or whose status is ``error`` gives None (not measured),
never 0. ``skipped`` (no Python file changed) carries zero counts and gives 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from termrl.protocols import Evidence
from termrl.reward.context import Context
from termrl.reward.errors import FieldError


def _data(evidence: Evidence, stage: str) -> dict | None:
    result = evidence.stages.get(stage)
    return None if result is None or result.status == "error" else result.data


def complexity_penalty(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """``-min(1, max(0, max_cc - threshold) / scale)``; None without complexity data.

    >>> from termrl.protocols import StageResult
    >>> ev = Evidence("t", stages={"quality": StageResult("quality", "ok", data={"complexity": {"max_cc": 15}})})
    >>> complexity_penalty(ev, {"threshold": 10.0, "scale": 10.0}, Context())
    -0.5
    """
    complexity = (_data(evidence, "quality") or {}).get("complexity")
    if complexity is None:
        return None
    excess = max(0.0, complexity["max_cc"] - params["threshold"])
    return -min(1.0, excess / params["scale"])


def lint_penalty(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """``-min(1, (ruff count + safety count) / scale)``; None when neither stage has counts.

    >>> from termrl.protocols import StageResult
    >>> ev = Evidence("t", stages={"quality": StageResult("quality", "ok", data={"ruff": {"count": 3}}),
    ...                            "safety": StageResult("safety", "failed", data={"count": 1})})
    >>> lint_penalty(ev, {"scale": 10.0}, Context())
    -0.4
    """
    ruff = (_data(evidence, "quality") or {}).get("ruff")
    safety = _data(evidence, "safety")
    counts = [d["count"] for d in (ruff, safety) if d is not None and "count" in d]
    if not counts:
        return None
    return -min(1.0, sum(counts) / params["scale"])


def bloat_penalty(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """Lines added beyond ``ratio`` times the reference solution's change:
    ``-min(1, max(0, added / reference - ratio) / ratio)``; None without ``reference_lines``
    (a reference of 0 lines counts as 1).

    >>> bloat_penalty(Evidence("t", lines_added=30, reference_lines=10), {"ratio": 2.0}, Context())
    -0.5
    """
    if evidence.reference_lines is None:
        return None
    ratio = params["ratio"]
    excess = max(0.0, evidence.lines_added / max(1, evidence.reference_lines) - ratio)
    return -min(1.0, excess / ratio)


def check_positive(key: str) -> Callable[[Mapping[str, Any]], None]:
    """A check that ``key``, when given, is greater than 0."""

    def check(given: Mapping[str, Any]) -> None:
        if key in given and given[key] <= 0:
            raise FieldError(key, f"must be greater than 0, got {given[key]}")

    return check
