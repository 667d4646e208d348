"""What a reward component sees besides the evidence and its own parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from termrl.protocols import Evidence, Finding


@dataclass(frozen=True)
class Context:
    """Everything of one scoring call that is not in the ``Evidence``."""

    findings: tuple[Finding, ...] = ()
    """Suspected reward hacks from the hack detectors (``hack`` component)."""
    progress: float = 0.0
    """Fraction of training done, in [0, 1]."""
    length: int | None = None
    """Length of this completion in tokens (length terms); None when unknown."""
    group: tuple[tuple[int, bool], ...] | None = None
    """(length, correct) of every completion sampled for the same prompt, this one included."""


ComponentFn = Callable[[Evidence, Mapping[str, Any], Context], "float | None"]
"""A component type: (evidence, params, ctx) -> value, or None when it cannot be computed."""

StepFn = Callable[[Evidence], "list[float] | None"]
"""A process term's per-step rewards, or None without a trace."""
