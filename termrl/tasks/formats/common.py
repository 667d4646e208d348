"""Helpers shared by the task-format loaders: file trees and clear format errors."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from termrl.protocols import TaskFile

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SKIP_NAMES = {"__pycache__", ".pytest_cache", ".DS_Store"}


class TaskFormatError(ValueError):
    """A task directory that cannot be loaded. Names the file, the field and what was expected."""

    def __init__(self, file: Path | str, field: str | None, problem: str):
        self.file, self.field, self.problem = str(file), field, problem
        where = f"{self.file}: field '{field}'" if field else self.file
        super().__init__(f"{where}: {problem}")


def read_tree(root: Path) -> dict[str, TaskFile]:
    """All regular files under ``root`` (symlinks kept as files they point to inside root)."""
    files: dict[str, TaskFile] = {}
    if not root.is_dir():
        return files
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_NAMES)
        for name in sorted(filenames):
            if name in SKIP_NAMES or name.endswith(".pyc"):
                continue
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            files[rel] = TaskFile(path.read_bytes(), mode)
    return files


def load_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(path, None, f"is not valid TOML ({e})") from None
    except UnicodeDecodeError:
        raise TaskFormatError(path, None, "is not UTF-8 text") from None


def read_text(path: Path, what: str) -> str:
    if not path.is_file():
        raise TaskFormatError(path, None, f"is missing: expected {what}")
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise TaskFormatError(path, None, "is not UTF-8 text") from None


def get(table: dict, key: str, kind: type | tuple[type, ...], file: Path, default: Any = ...,
        prefix: str = "", choices: tuple | None = None) -> Any:
    """``table[key]`` checked against ``kind`` (and ``choices``), with a clear error."""
    name = f"{prefix}{key}"
    if key not in table:
        if default is ...:
            raise TaskFormatError(file, name, "is required")
        return default
    value = table[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise TaskFormatError(file, name, f"expected {expected}, got {type(value).__name__} {value!r}")
    if choices is not None and value not in choices:
        raise TaskFormatError(file, name, f"expected one of {', '.join(map(str, choices))}, got {value!r}")
    return value


def str_list(table: dict, key: str, file: Path, prefix: str = "") -> tuple[str, ...]:
    value = get(table, key, list, file, default=[], prefix=prefix)
    if not all(isinstance(v, str) for v in value):
        raise TaskFormatError(file, f"{prefix}{key}", "expected a list of strings")
    return tuple(value)


def check_id(task_id: str, file: Path, field: str = "id") -> str:
    if not ID_RE.match(task_id):
        raise TaskFormatError(file, field, f"expected letters, digits, '.', '_' or '-' "
                                           f"starting with a letter or digit, got {task_id!r}")
    return task_id
