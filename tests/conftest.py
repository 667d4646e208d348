"""The test suite needs the sandbox's tools: fail at once, loudly, instead of skipping tests."""

from __future__ import annotations

import shutil

import pytest

from termrl.sandbox.bwrap import bwrap_path


def pytest_sessionstart(session):
    missing = [name for name, found in (("bubblewrap", bwrap_path()), ("gcc", shutil.which("gcc")),
                                        ("make", shutil.which("make")), ("git", shutil.which("git")))
               if not found]
    if missing:
        raise pytest.UsageError(f"termrl's tests need {', '.join(missing)}: run scripts/setup.sh first")
