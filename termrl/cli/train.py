"""``termrl train`` (GRPO, RFT or DPO from one config) and ``termrl quickstart``."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, Optional

import typer

from termrl.cli.output import CommandConsole, emit_json
from termrl.distributed import current, end, leave
from termrl.report import write_report
from termrl.reward.spec import load_spec
from termrl.training import QUICKSTART, train
from termrl.training.config import ConfigError
from termrl.training.run import ResumeError

console = CommandConsole()
err = CommandConsole(stderr=True)


def train_cmd(
    config: Path = typer.Argument(..., help="The run's TOML config (see termrl/training/config.py)."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help="Override a field: --set grpo.learning_rate=1e-5"),
    resume: bool = typer.Option(False, "--resume", help="Finish the run in output_dir from its last checkpoint."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json."),
) -> None:
    """Train with GRPO, RFT or DPO as CONFIG says; evaluate on held-out tasks at the end."""
    try:
        results = train(config, resume=resume, overrides=set_ or [])  # with --json, the trainers' logs go to stderr
    except (ConfigError, ResumeError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)

    main = current().main
    leave()  # every rank has finished: close the process group before any exits
    if main:  # under a launcher rank 0 reports for every rank
        _report(results, as_json)
    end()  # under a launcher: exit now, past a teardown gloo's threads can abort


def _report(results: dict, as_json: bool) -> None:
    """results.json on stdout (``--json``), or a summary of it."""
    if as_json:
        emit_json(json.dumps(results, default=str))
        return
    heldout = results["heldout"] or {}
    console.print(f"{results['algorithm']} run in {results['output_dir']}: held-out pass@1 "
                  f"{heldout.get('pass@1')} over {heldout.get('episodes')} episodes")
    for name in ("heldout", "transfer"):
        if f"{name}_p_value" in results:
            before, after = results[f"{name}_pass_rate_before"], results[f"{name}_pass_rate_after"]
            console.print(f"  {name}: pass rate {before:.3f} before, {after:.3f} after over "
                          f"{results[f'{name}_episodes']} episodes "
                          f"(z={results[f'{name}_z']:.2f}, p={results[f'{name}_p_value']:.2g})")
    phases = results["compute"]["phases"]
    for name, row in phases.items():
        share = 100 * row["wall_s"] / max(results["compute"]["wall_s"], 1e-9)
        console.print(f"  {name:<13} {row['wall_s']:8.1f} s  {share:5.1f}%")


def quickstart_cmd(
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default runs/quickstart-TIME)."),
    set_: Optional[List[str]] = typer.Option(None, "--set",
                                             help="Override a field of configs/quickstart.toml: --set grpo.steps=100"),
    resume: bool = typer.Option(False, "--resume", help="Finish the run in --out from its last checkpoint."),
    as_json: bool = typer.Option(False, "--json", help="Print results.json."),
) -> None:
    """termrl train configs/quickstart.toml: build a small model locally, warm-start it by SFT,
    train it by GRPO; held-out pass@1 after each. About 15 minutes on 2 cores."""
    if not QUICKSTART.is_file():
        err.print(f"[red]error:[/] {QUICKSTART} is missing: termrl quickstart runs from a clone of termrl "
                  "(pip install -e .); elsewhere, run termrl train on a copy of configs/quickstart.toml")
        raise typer.Exit(2)
    out = out or Path("runs") / f"quickstart-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        results = train(QUICKSTART, resume=resume, overrides=[*(set_ or []), f"output_dir={json.dumps(str(out))}"])
    except (ConfigError, ResumeError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    report = write_report([out], out / "report.html")
    if as_json:
        emit_json(json.dumps(results, default=str))
        return
    before, after = results.get("heldout_before") or {}, results.get("heldout") or {}
    if "heldout_p_value" not in results:
        console.print(f"held-out pass@1 {after.get('pass@1')} over {after.get('episodes')} episodes; report: {report}")
        return
    scale = load_spec(results["config"]["spec"]).scale()
    console.print(f"held-out pass@1 over {results['heldout_episodes']} episodes each:\n"
                  f"  after SFT: {results['heldout_pass_rate_before']:.3f}\n"
                  f"  after RL:  {results['heldout_pass_rate_after']:.3f}  "
                  f"({results['heldout_pass_rate_after'] - results['heldout_pass_rate_before']:+.3f}, "
                  f"z={results['heldout_z']:.2f}, p={results['heldout_p_value']:.2g})\n"
                  f"held-out mean reward ({scale}):\n"
                  f"  after SFT: {_reward(before.get('mean_reward'))}\n"
                  f"  after RL:  {_reward(after.get('mean_reward'))}\n"
                  f"{results['compute']['wall_s']:.0f} s in all; results in {out / 'results.json'}, "
                  f"to read: {report}")


def _reward(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
