"""Seeded task families: unlimited task variants with disjoint train and held-out seeds."""

from __future__ import annotations

from .base import HELDOUT_SEEDS, TRAIN_SEEDS, Family
from .c_fix_bug import FAMILY as C_FIX_BUG
from .csv_aggregate import FAMILY as CSV_AGGREGATE
from .json_transform import FAMILY as JSON_TRANSFORM
from .logs_count import FAMILY as LOGS_COUNT
from .one_command import FAMILY as ONE_COMMAND
from .py_function import FAMILY as PY_FUNCTION
from .shell_files import FAMILY as SHELL_FILES

FAMILIES: dict[str, Family] = {f.name: f for f in (
    LOGS_COUNT,
    CSV_AGGREGATE,
    PY_FUNCTION,
    C_FIX_BUG,
    JSON_TRANSFORM,
    SHELL_FILES,
    ONE_COMMAND,
)}


def get_family(name: str) -> Family:
    """The registered family called ``name``; ``KeyError`` listing the known names otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; known families: "
                       f"{', '.join(sorted(FAMILIES))}") from None


__all__ = ["FAMILIES", "HELDOUT_SEEDS", "TRAIN_SEEDS", "Family", "get_family"]
