"""``termrl train`` and ``termrl quickstart``."""

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


def quickstart_cmd(
    out: Path = typer.Option(Path("runs/quickstart"), "--out", help="Where the models, episodes and report go."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Build a tiny model locally, warm-start it with SFT, train it with GRPO, evaluate on held-out seeds."""
    import contextlib
    import sys

    from termrl.train.quickstart import run_quickstart

    say = (lambda message: err.print(f"[dim]quickstart:[/] {message}"))
    with contextlib.redirect_stdout(sys.stderr):  # the trainers print their logs on stdout
        report = run_quickstart(out, progress=say)
    if as_json:
        typer.echo(json.dumps(report))
        return
    console.print(f"held-out pass@1 over {report['heldout_episodes']} episodes: "
                  f"SFT {report['sft_heldout_pass_rate']:.3f} -> RL {report['rl_heldout_pass_rate']:.3f} "
                  f"(z={report['z']}, p={report['p_value']:.2g}); {report['timings']['total_s']:.0f} s; "
                  f"report in {out / 'quickstart.json'}")
