"""``termrl tokenizers report``: what an episode costs in tokens, by content class, per tokenizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from termrl.cli.output import CommandConsole, emit_json
from termrl.eval.tokenizers import TokenizerError, report

app = typer.Typer(help="Tokenizer efficiency on termrl's corpus, tasks and episodes.", no_args_is_help=True)
console = CommandConsole()
err = CommandConsole(stderr=True)

DEFAULT_QWEN = Path("~/.cache/termrl/models/qwen2.5-coder-0.5b-instruct")
"""Where ../shared/tools/qwen2.5-coder-0.5b.sh builds the model: reported by default when it is there."""


@app.command("report")
def report_cmd(
    tokenizer: Optional[list[str]] = typer.Option(
        None, "--tokenizer", help="A tokenizer directory, a tokenizer.json, or 'quickstart' (repeatable). Default: "
                                  "quickstart, and Qwen2.5-Coder-0.5B where the shared tools script built it."),
    trajectories: Optional[Path] = typer.Option(
        None, "--trajectories", help="A run's trajectory store: its episodes instead of the shipped ones."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per tokenizer, in a list."),
) -> None:
    """Tokens per byte and per character by content class, the longest whitespace runs that are one
    token, and the tokens of an average episode, for each tokenizer."""
    specs = list(tokenizer or ["quickstart"] + ([str(DEFAULT_QWEN)] if DEFAULT_QWEN.expanduser().is_dir() else []))
    if trajectories is not None and not trajectories.is_dir():
        err.print(f"[red]error:[/] --trajectories {trajectories}: no such directory; give a run's trajectory "
                  "store (the folder of its Parquet parts), or leave it out for the shipped episodes")
        raise typer.Exit(2)
    try:
        reports = report(specs, trajectories)
    except TokenizerError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    if as_json:
        emit_json(json.dumps([r.to_dict() for r in reports]))
        return
    table = Table(title="tokens per byte (tokens per character) by content class")
    table.add_column("class")
    for r in reports:
        table.add_column(f"{Path(r.tokenizer).name} ({r.vocab_size:,})", justify="right")
    for cls in reports[0].classes:
        table.add_row(cls, *(f"{r.classes[cls]['tokens_per_byte']:.3f} ({r.classes[cls]['tokens_per_char']:.3f})"
                             if r.classes[cls]["tokens_per_byte"] is not None else "-" for r in reports))
    for kind in ("spaces", "tabs", "newlines"):
        table.add_row(f"longest one-token run of {kind}", *(str(r.longest_one_token_run[kind]) for r in reports))
    table.add_row("tokens per episode (mean)",
                  *(f"{r.episode_tokens_mean:,.0f} over {r.episodes}" if r.episode_tokens_mean else "-"
                    for r in reports))
    console.print(table)
