"""``termrl train``: GRPO, RFT or DPO from one config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

console = Console()
err = Console(stderr=True)


def train_cmd(
    config: Path = typer.Argument(..., help="The run's TOML config (see termrl/train/config.py)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a field: --set grpo.learning_rate=1e-5"),
    resume: bool = typer.Option(False, "--resume", help="Finish the run in output_dir from its last checkpoint."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json."),
) -> None:
    """Train with GRPO, RFT or DPO as CONFIG says; evaluate on held-out tasks at the end."""
    from termrl.train.config import ConfigError, load_config
    from termrl.train.run import ResumeError, run_training

    import contextlib
    import sys

    try:
        cfg = load_config(config, set_ or [])
        # the trainers print their logs on stdout: keep it for the JSON
        with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():
            results = run_training(cfg, resume=resume)
    except (ConfigError, ResumeError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps(results, default=str))
        return
    heldout = results["heldout"] or {}
    console.print(f"{cfg.algorithm} run in {results['output_dir']}: held-out pass@1 "
                  f"{heldout.get('pass@1')} over {heldout.get('episodes')} episodes")
    phases = results["compute"]["phases"]
    for name, row in phases.items():
        share = 100 * row["wall_s"] / max(results["compute"]["wall_s"], 1e-9)
        console.print(f"  {name:<13} {row['wall_s']:8.1f} s  {share:5.1f}%")

