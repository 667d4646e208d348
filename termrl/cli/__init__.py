"""The ``termrl`` command: one module per command group."""

from __future__ import annotations

import typer

from termrl.cli import sandbox, tasks

app = typer.Typer(help="termrl: RL for terminal and coding agents on execution-verified rewards.",
                  no_args_is_help=True, add_completion=False)
app.add_typer(tasks.app, name="tasks")
app.add_typer(sandbox.app, name="sandbox")


def main() -> None:
    app()
