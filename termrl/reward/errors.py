"""Errors of reward specs. Every message names the file, the field and what to write instead."""

from __future__ import annotations

from pathlib import Path


class SpecError(ValueError):
    """A reward spec that cannot be loaded: ``file``, ``field`` (dotted, or None) and the problem."""

    def __init__(self, file: Path | str, field: str | None, problem: str):
        self.file, self.field, self.problem = str(file), field, problem
        where = f"{self.file}: field '{field}'" if field else self.file
        super().__init__(f"{where}: {problem}")


class FieldError(ValueError):
    """A wrong value found below the spec level (a schedule, a parameter); ``key`` is relative.

    ``spec.load_spec`` turns it into a ``SpecError`` with the file and the full dotted field.
    """

    def __init__(self, key: str | None, problem: str):
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}" if key else problem)
