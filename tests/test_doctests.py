"""Every doctest in the package runs: each module whose docstrings hold examples is tested.

The modules are found by reading the sources, so a new module with examples is covered
without being listed here (task workspaces under ``tasks/builtin`` are task data, not
package modules)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import termrl

ROOT = Path(termrl.__file__).parent


def modules_with_examples() -> list[str]:
    names = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        if "builtin" in rel.parts or ">>>" not in path.read_text():
            continue
        parts = rel.with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if any(t.examples for t in doctest.DocTestFinder().find(importlib.import_module(name))):
            names.append(name)  # (">>>" in a task's text is not an example)
    return names


MODULES = modules_with_examples()


def test_modules_are_found():
    assert {"termrl.reward.components", "termrl.hacks.detectors.env.tampering"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, name
