"""What a command prints: for ``--json`` one JSON document, alone on stdout; otherwise rich text on
a terminal and plain lines elsewhere (``CommandConsole``); nothing more once a reader closes the pipe."""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Iterator
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

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


def say_skipped(err: Console):
    """An ``on_skip(task_id, why)`` for ``termrl.evaluate`` and ``termrl.audit``: ``skipped ID: why``
    on ``err``, for a task that cannot be loaded (its file and field) or cannot run here."""
    from rich.markup import escape  # heavy: rich

    def said(task_id: str, why: str) -> None:
        err.print(f"[yellow]skipped[/] {escape(task_id)}: {escape(str(why))}", highlight=False, soft_wrap=True)

    return said


class CommandConsole(Console):
    """rich's ``Console`` for a command's output, plain where no terminal reads it: lines are not
    wrapped at 80 columns (``soft_wrap``) and a ``Table`` prints as its rows, one a line, cells
    separated by tabs, without title or header, so that ``| head``, ``| grep`` and ``> file`` see
    one row per line."""

    def print(self, *objects, **kwargs) -> None:
        if self.is_terminal:
            super().print(*objects, **kwargs)
            return
        kwargs.setdefault("soft_wrap", True)
        if not any(isinstance(o, Table) for o in objects):
            super().print(*objects, **kwargs)
            return
        for o in objects:  # rows straight to the file: rich would turn their tabs into spaces
            if isinstance(o, Table):
                self.file.write("".join(row + "\n" for row in self._rows(o)))
                self.file.flush()
            else:
                super().print(o, **kwargs)

    def _rows(self, table: Table) -> list[str]:
        columns = [list(column.cells) for column in table.columns]
        return ["\t".join(self._plain(cell) for cell in row) for row in zip(*columns)]

    def _plain(self, cell) -> str:
        if isinstance(cell, str):
            text = Text.from_markup(cell).plain if self._markup else cell
        elif isinstance(cell, Text):
            text = cell.plain
        else:
            with self.capture() as captured:
                super().print(cell, soft_wrap=True)
            text = captured.get().rstrip("\n")
        return " ".join(line.strip() for line in text.replace("\t", " ").splitlines() if line.strip())


@contextlib.contextmanager
def quiet_on_closed_pipe() -> Iterator[None]:
    """A reader that stops early (``termrl tasks list | head``) closes the pipe: end with status 0
    and nothing on stderr, as unix tools do, not with a traceback, nor with the status 1 that
    typer gives a broken pipe. stdout then points to /dev/null: Python flushes it at exit."""
    try:
        yield
    except BrokenPipeError:
        _drop_stdout()
        raise SystemExit(0) from None
    except SystemExit as e:
        if e.code == 1 and _reader_gone():  # typer caught the BrokenPipeError and exits 1
            _drop_stdout()
            raise SystemExit(0) from None
        raise


def _stdout_fds() -> list[int]:
    """fd 1 and, while ``json_only_stdout`` holds it on stderr, the real stdout's fd."""
    fds = [1]
    if _json_stream is not None and not _json_stream.closed:
        fds.append(_json_stream.fileno())
    return fds


def _reader_gone() -> bool:
    """Whether the reading end of a pipe on stdout is closed (poll says POLLERR for it)."""
    poll = select.poll()
    for fd in _stdout_fds():
        poll.register(fd, select.POLLOUT)
    try:
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except OSError:
        return False


def _drop_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in _stdout_fds():
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)
