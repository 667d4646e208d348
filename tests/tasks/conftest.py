"""Shared helpers of the task-format tests: fixture locations, copies, a guard that nothing runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from termrl.checks import validate
from termrl.tasks import runtime
from termrl.tasks.formats import TaskFormatError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TB_DIR = FIXTURES / "terminal_bench"
HARBOR_DIR = FIXTURES / "harbor"


def copy_fixture(src: Path, tmp_path: Path) -> Path:
    """A private copy of a fixture task directory (same directory name, so the same task id)."""
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def assert_names(err: TaskFormatError, file_name: str, field: str | None) -> None:
    """The error names ``file_name`` (last path component(s)) and ``field``, in its attributes and text."""
    text = str(err)
    assert err.file.endswith(file_name), (err.file, file_name)
    assert file_name in text, text
    if field is None:
        assert err.field is None, err.field
    else:
        assert err.field == field, (err.field, field)
        assert f"'{field}'" in text, text


@pytest.fixture
def never_run(monkeypatch):
    """Fail the test if anything tries to open a sandbox or run a task."""

    def boom(*args, **kwargs):
        raise AssertionError("an unsupported task must never be run")

    monkeypatch.setattr(validate, "open_sandbox", boom)
    monkeypatch.setattr(validate, "_attempt", boom)
    monkeypatch.setattr(runtime, "make_sandbox", boom)
    return boom
