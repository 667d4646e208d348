"""Helpers shared by the task-format loaders: file trees and clear format errors."""

from __future__ import annotations

import os
import re
import stat
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


MAX_FILE_MB = 512
"""Largest file a task directory may hold (bigger data belongs in the task's setup, which can
generate or fetch it)."""


def read_tree(root: Path) -> dict[str, TaskFile]:
    """All regular files under ``root``. A symbolic link is read as the file it points to when
    that file is inside ``root``; one that leads out of it (``/etc/shadow``, ``~/.ssh``), a
    pipe, socket or device, a file over ``MAX_FILE_MB`` or one that cannot be read is a
    ``TaskFormatError`` naming it: a task directory from elsewhere must not read the host's
    files into a sandbox, or hang the harness on a pipe.

    Raises:
        TaskFormatError: the file, and what to do instead.
    """
    files: dict[str, TaskFile] = {}
    if root.is_symlink():
        raise TaskFormatError(root, None, f"is a symbolic link (to {os.readlink(root)}): a task's folders must "
                              "hold their files; copy them in")
    if not root.is_dir():
        return files
    base = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):  # does not descend into linked folders
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_NAMES)
        for name in sorted(filenames):
            if name in SKIP_NAMES or name.endswith(".pyc"):
                continue
            path = Path(dirpath) / name
            real = os.path.realpath(path)
            if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
                raise TaskFormatError(path, None, f"is a symbolic link to {real}, outside {root}: copy the file "
                                      "into the task directory instead")
            try:
                info = os.stat(real)
            except OSError as e:
                raise TaskFormatError(path, None, f"cannot be read ({e.strerror}): a broken link, or "
                                      "permissions to fix") from None
            if not stat.S_ISREG(info.st_mode):
                raise TaskFormatError(path, None, "is not a regular file (a pipe, socket or device): a task "
                                      "directory holds files; create such things in the task's setup")
            if info.st_size > MAX_FILE_MB << 20:
                raise TaskFormatError(path, None, f"is {info.st_size >> 20} MB, over the {MAX_FILE_MB} MB a task "
                                      "file may be: generate or fetch big data in the task's setup")
            try:
                data = path.read_bytes()
            except OSError as e:
                raise TaskFormatError(path, None, f"cannot be read ({e.strerror}): fix its permissions") from None
            rel = path.relative_to(root).as_posix()
            files[rel] = TaskFile(data, 0o755 if os.access(path, os.X_OK) else 0o644)
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
