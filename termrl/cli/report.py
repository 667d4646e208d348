"""``termrl report RUN_DIR... [-o report.html] [--open]``."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import List, Optional

import typer

from termrl.cli.output import CommandConsole
from termrl.eval.tokenizers import TokenizerError
from termrl.report import RunError, write_report

err = CommandConsole(stderr=True)


def report_cmd(
    run_dirs: List[Path] = typer.Argument(..., help="Run directories: termrl eval --out, termrl train's output_dir "
                                                    "(termrl quickstart --out is one), termrl audit --out; two or "
                                                    "more side by side (the first is the baseline)."),
    out: Path = typer.Option(Path("report.html"), "-o", "--out", help="The HTML file to write."),
    open_it: bool = typer.Option(False, "--open", help="Open it in the default browser."),
    names: Optional[str] = typer.Option(None, help="Comma-separated run names (default: the folders' names)."),
    tokenizer: Optional[List[str]] = typer.Option(
        None, "--tokenizer", help="One more tokenizer for the Tokens section (a directory, a tokenizer.json, or "
                                  "'quickstart'); the runs' own tokenizers are always there."),
) -> None:
    """One self-contained HTML report (no network at view time) of one or more runs."""
    labels = [n.strip() for n in names.split(",")] if names else None
    if labels is not None and len(labels) != len(run_dirs):
        err.print(f"[red]error:[/] --names gives {len(labels)} names for {len(run_dirs)} run directories")
        raise typer.Exit(2)
    try:
        path = write_report(run_dirs, out, labels, tokenizer or ())
    except (RunError, TokenizerError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    size = path.stat().st_size
    typer.echo(f"{path} ({size / 2**20:.1f} MiB)")
    if open_it:
        webbrowser.open(path.resolve().as_uri())
