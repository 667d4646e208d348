"""Task formats: native, Terminal-Bench v1, Harbor (Terminal-Bench 2), code generation data sets."""

from __future__ import annotations

from pathlib import Path

from termrl.protocols import Task
from termrl.tasks.formats.common import TaskFormatError
from termrl.tasks.formats.harbor import is_harbor, load_harbor
from termrl.tasks.formats.native import is_native, load_native
from termrl.tasks.formats.terminal_bench import is_terminal_bench, load_terminal_bench


def looks_like_task(path: Path) -> bool:
    return is_terminal_bench(path) or (path / "task.toml").is_file()


def load_task(path: Path | str) -> Task:
    """Load a task directory in any supported format."""
    path = Path(path)
    if not path.is_dir():
        raise TaskFormatError(path, None, "is not a directory: expected a task directory")
    if is_terminal_bench(path):
        return load_terminal_bench(path)
    if is_harbor(path):
        return load_harbor(path)
    if is_native(path):
        return load_native(path)
    if (path / "task.toml").is_file():
        raise TaskFormatError(path / "instruction.md", None, "is missing: expected the instruction "
                                                             "given to the agent")
    raise TaskFormatError(path, None, "is not a task directory: expected task.toml + instruction.md "
                                      "(native or Harbor) or task.yaml (Terminal-Bench)")


__all__ = ["TaskFormatError", "load_task", "looks_like_task"]
