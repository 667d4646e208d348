"""What a command prints for ``--json``: one JSON document, alone on stdout."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TextIO

_json_stream: TextIO | None = None
"""The real stdout while ``json_only_stdout`` holds fd 1 on stderr; None: ``sys.stdout``."""


@contextlib.contextmanager
def json_only_stdout() -> Iterator[None]:
    """While open, fd 1 (and so ``sys.stdout``, C code and child processes) writes to stderr,
    and ``emit_json`` to the real stdout: a line that Ray's driver thread prints when a node
    dies, a library's ``print`` or a child's output cannot land after the JSON a caller parses.
    fd 1 stays on stderr after it closes: daemon threads may print until the interpreter exits."""
    global _json_stream
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no fd 1 or 2 to move (a closed stream): print as it is
        yield
        return
    _json_stream = open(saved, "w", encoding="utf-8", closefd=True)  # noqa: SIM115 - lives as long as the process
    try:
        yield
    finally:
        _json_stream.flush()


def emit_json(text: str) -> None:
    """``text`` (one JSON document) and a newline on the command's stdout."""
    stream = _json_stream or sys.stdout
    stream.write(text + "\n")
    stream.flush()


def runnable(entries, err) -> tuple[list, list[str]]:
    """The tasks of a suite's ``entries`` that can run, and the ids of the others, each said on
    ``err`` with why: a task that cannot be loaded (its file and field), or one this machine
    cannot run (``Task.unsupported``)."""
    from rich.markup import escape

    tasks, skipped = [], []
    for entry in entries:
        if entry.task is not None and not entry.task.unsupported:
            tasks.append(entry.task)
            continue
        skipped.append(entry.id)
        why = entry.error if entry.task is None else f"unsupported: {entry.task.unsupported}"
        err.print(f"[yellow]skipped[/] {escape(entry.id)}: {escape(str(why))}", highlight=False, soft_wrap=True)
    return tasks, skipped
