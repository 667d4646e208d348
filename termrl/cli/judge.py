"""``termrl judge agreement``: the model judge and the hack detectors side by side on known
honest (reference) and dishonest (exploit) solutions."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(help="A model judge of passing episodes (reward component judge).", no_args_is_help=True)
console = Console()
err = Console(stderr=True)


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
    from termrl.hacks.agreement import agreement
    from termrl.hacks.exploits import EXPLOITS
    from termrl.reward.judge import make_judge
    from termrl.tasks import envs
    from termrl.tasks.formats import TaskFormatError
    from termrl.tasks.suites import SuiteError, resolve

    chosen = None
    if exploits:
        names = [n.strip() for n in exploits.split(",") if n.strip()]
        unknown = [n for n in names if n not in EXPLOITS]
        if unknown:
            _fail(f"--exploits: no exploit named {', '.join(unknown)}; choose from {', '.join(EXPLOITS)}")
        chosen = {n: EXPLOITS[n] for n in names}
    try:
        entries = envs.prepare(resolve(suite))
        model_judge = make_judge(judge, model=judge_model)
    except (SuiteError, TaskFormatError, ValueError, OSError) as e:
        _fail(str(e))
    tasks = [e.task for e in entries if e.task is not None and not e.task.unsupported]
    report = agreement(tasks, model_judge, chosen, workers=workers)
    if as_json:
        print(json.dumps(report, indent=2))
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
