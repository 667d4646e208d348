"""``termrl train`` (GRPO, RFT or DPO from one config) and ``termrl quickstart``."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer

from termrl.cli.output import CommandConsole, emit_json
from termrl.distributed import current, end, leave
from termrl.training import train
from termrl.training.config import ConfigError, from_overrides
from termrl.training.quickstart import QuickstartConfig, check_family, run_quickstart
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
                                             help="Override a QuickstartConfig field: --set grpo_steps=100"),
    as_json: bool = typer.Option(False, "--json", help="Print the report (quickstart.json) as JSON."),
) -> None:
    """Build a small model locally, warm-start it by SFT, train it by GRPO; held-out pass@1 of each.

    The SFT is on reference solutions, the GRPO on sandboxed rewards; about 10 minutes on 2 cores."""
    try:
        config = from_overrides(QuickstartConfig, set_ or [])
        check_family(config)
    except (ConfigError, ValueError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    out = out or Path("runs") / f"quickstart-{time.strftime('%Y%m%d-%H%M%S')}"
    if (out / "quickstart.json").exists():
        err.print(f"[red]error:[/] {out} already holds a quickstart run (quickstart.json); "
                  f"choose another --out or remove it")
        raise typer.Exit(2)
    started = time.perf_counter()

    def say(message: str) -> None:
        err.print(f"[dim]{time.perf_counter() - started:6.0f}s quickstart:[/] {message}")

    with contextlib.redirect_stdout(sys.stderr):  # the trainers print their logs on stdout
        report = run_quickstart(out, config, progress=say)
    if as_json:
        emit_json(json.dumps(report))
        return
    console.print(f"held-out pass@1 over {report['heldout_episodes']} episodes each:\n"
                  f"  after SFT: {report['sft_heldout_pass_rate']:.3f}\n"
                  f"  after RL:  {report['rl_heldout_pass_rate']:.3f}  "
                  f"({report['improvement']:+.3f}, z={report['z']:.2f}, p={report['p_value']:.2g})\n"
                  f"held-out mean reward ({report['reward_scale']}):\n"
                  f"  after SFT: {_reward(report['heldout_mean_reward']['sft'])}\n"
                  f"  after RL:  {_reward(report['heldout_mean_reward']['rl'])}\n"
                  f"{report['timings']['total_s']:.0f} s in all; report in {out / 'quickstart.json'}, "
                  f"to read: {out / 'report.html'}")


def _reward(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
