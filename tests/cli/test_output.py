"""A command's console: rich on a terminal, plain lines in a pipe or a file."""

from __future__ import annotations

import io

from rich.table import Table

from termrl.cli.output import CommandConsole


def _table() -> Table:
    table = Table(title="2 tasks")
    for col in ("id", "tags", "levels"):
        table.add_column(col)
    table.add_row("shell-count-errors", "[red]shell, grep[/]", "1: easy\n2: hard")
    table.add_row("logs-count", "logs", "")
    return table


def test_a_table_in_a_pipe_is_its_rows_one_a_line_tab_separated():
    out = io.StringIO()
    CommandConsole(file=out).print(_table())
    assert out.getvalue() == "shell-count-errors\tshell, grep\t1: easy 2: hard\nlogs-count\tlogs\t\n"


def test_a_long_line_in_a_pipe_is_not_wrapped_and_a_terminal_still_gets_rich():
    out = io.StringIO()
    line = "held-out pass@1 over 500 episodes each: " + "x" * 150
    CommandConsole(file=out).print(line)
    assert out.getvalue() == line + "\n"
    out = io.StringIO()
    CommandConsole(file=out, force_terminal=True, width=100).print(_table())
    assert "2 tasks" in out.getvalue() and "┃" in out.getvalue()  # title and box
