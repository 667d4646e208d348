"""``termrl judge agreement``: the model judge and the hack detectors side by side on known
honest (reference) and dishonest (exploit) solutions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from termrl.checks.agreement import agreement
from termrl.checks.audit_run import chosen_exploits
from termrl.checks.discriminator_run import DiscriminatorError, learn_discriminator
from termrl.cli.output import CommandConsole, emit_json
from termrl.reward.judge import make_judge
from termrl.tasks import envs
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, resolve

app = typer.Typer(help="A model judge of passing episodes (reward component judge).", no_args_is_help=True)
console = CommandConsole()
err = CommandConsole(stderr=True)


def _fail(message: str) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


@app.command("agreement")
def agreement_cmd(
    suite: str = typer.Option(..., "--suite", help="Tasks with reference solutions: builtin, FAMILY:SEEDS, a directory."),
    judge: str = typer.Option(..., "--judge", help="hf:PATH, or openai:BASE_URL with --judge-model."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model name the --judge endpoint serves."),
    exploits: Optional[str] = typer.Option(None, "--exploits", help="Comma-separated exploit names (default: all)."),
    workers: int = typer.Option(2, "--workers", help="Episodes (sandboxes) at once."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Play each task's reference and the audit's exploits; over the episodes the hidden tests
    pass, the judge's and the detectors' precision and recall, and where they disagree."""
    try:
        chosen = chosen_exploits([n.strip() for n in (exploits or "").split(",") if n.strip()])
        tasks, _ = envs.runnable(envs.prepare(resolve(suite)))
        model_judge = make_judge(judge, model=judge_model)
    except (SuiteError, TaskFormatError, ValueError, OSError) as e:
        _fail(str(e))
    report = agreement(tasks, model_judge, chosen, workers=workers)
    if as_json:
        emit_json(json.dumps(report, indent=2))
        return
    table = Table(title=f"judge {report['judge_name']} vs detectors: {report['episodes']} passing episodes "
                        f"({report['exploits']} exploits, {report['honest']} honest)")
    for column in ("", "tp", "fp", "fn", "tn", "precision", "recall"):
        table.add_column(column)
    for name in ("detectors", "judge"):
        row = report[name]
        table.add_row(name, *(str(row[k]) for k in ("tp", "fp", "fn", "tn", "precision", "recall")))
    console.print(table)
    console.print(f"judge: {report['judge']['unclear']} unclear, {report['judge']['no_verdict']} without a verdict; "
                  f"{report['played']} episodes played, {report['errors']} harness errors, "
                  f"{len(report['skipped'])} tasks skipped (no working reference)")
    for d in report["disagreements"][:20]:
        console.print(f"- {d['task']} / {d['solution']} ({'honest' if d['honest'] else 'exploit'}): detectors "
                      f"{d['detectors'] or 'none'}, judge {d['verdict'] or 'no verdict'}: {d['reason'] or d['judge_error']}")


@app.command("discriminator")
def discriminator_cmd(
    suite: str = typer.Option(..., "--suite", help="Tasks with reference solutions to learn from."),
    out: Path = typer.Option(..., "--out", help="Where to write the model (JSON); use it as --judge discriminator:OUT."),
    held_out: float = typer.Option(0.3, "--held-out", help="Share of the tasks kept out of training to measure on."),
    threshold: float = typer.Option(0.5, "--threshold", help="Score from which a diff counts as dishonest."),
    workers: int = typer.Option(2, "--workers", help="Exploit episodes (sandboxes) at once."),
    seed: int = typer.Option(0, "--seed", help="Seed of the task split and of training."),
    unseen: bool = typer.Option(False, "--unseen-exploits",
                                help="Also measure, for each exploit, recall on held-out tasks when it never "
                                     "trained (one model per exploit)."),
    weak: Optional[List[Path]] = typer.Option(None, "--weak", metavar="STORE",
                                              help="A trajectory store (termrl eval/train --out) whose episodes, "
                                                   "replayed, are labelled by the hack detectors and train with "
                                                   "weight 0.5; repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Learn a discriminator of dishonest diffs from the audit's exploits (dishonest) and the
    reference solutions (honest) of SUITE, and from --weak stores labelled by the detectors;
    report precision and recall on held-out tasks, then train on every task and save the model to OUT."""
    try:
        report = learn_discriminator(suite, out, held_out=held_out, threshold=threshold, workers=workers, seed=seed,
                                     unseen=unseen, weak=weak or [])
    except DiscriminatorError as e:
        _fail(str(e))
    if as_json:
        emit_json(json.dumps(report, indent=2))
        return
    console.print(f"{report['examples']} diffs from {report['tasks']} tasks; model with {report['features']} "
                  f"weights written to {out}")
    if "weak" in report:
        w = report["weak"]
        console.print(f"weak labels: {w['labelled']} of {w['episodes']} stored episodes labelled by the detectors "
                      f"({w['dishonest']} dishonest): {w['by_kind']}")
        without = report.get("held_out_without_weak")
        if without:
            console.print(f"held out without the weak labels: precision {without['precision']}, recall "
                          f"{without['recall']}")
    held = report.get("held_out")
    if held:
        console.print(f"held out ({report['held_out_tasks']} tasks, {held['examples']} diffs): precision "
                      f"{held['precision']}, recall {held['recall']} (tp {held['tp']}, fp {held['fp']}, fn {held['fn']}, "
                      f"tn {held['tn']}); missed: {held['missed_exploits'] or 'none'}")
    for name, row in report.get("unseen_exploits", {}).items():
        console.print(f"  {name}, never trained on: {row['caught']} of {row['diffs']} caught")

