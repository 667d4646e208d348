"""``termrl audit``: run the exploit library against a suite and a reward spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from termrl.checks.audit_run import AuditError, audit_suite
from termrl.checks.survivors import is_survivor
from termrl.cli.output import CommandConsole, emit_json, say_skipped

console = CommandConsole()
err = CommandConsole(stderr=True)


def audit_cmd(
    suite: str = typer.Argument(..., help="builtin, humaneval, mbpp, FAMILY:SEEDS or a directory of tasks; "
                                          "a slice after a colon (humaneval:0-39, mbpp:test)"),
    spec: str = typer.Option("staged", "--spec", help="Preset (sparse, partial, coderl, rltf, staged) or TOML "
                                                      "file; several, comma-separated, are audited side by "
                                                      "side on the same episodes."),
    exploits: Optional[str] = typer.Option(None, "--exploits", help="Comma-separated subset of exploits."),
    workers: Optional[int] = typer.Option(None, help="Parallel sandboxes (default: four per core: audit episodes mostly wait)."),
    as_json: bool = typer.Option(False, "--json", help='Print {"rows", "test_weak_tasks", "exploitable_tasks"}.'),
    progress_points: str = typer.Option("0,0.5,1", "--progress",
                                        help="Training progresses to score at, comma-separated, each in [0, 1]: "
                                             "a spec's schedules move its weights over training."),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the report to DIR/audit.json "
                                                           "(a run directory for termrl report); each task's "
                                                           "rows go to DIR/audit-rows.jsonl as it finishes."),
    resume: bool = typer.Option(False, "--resume", help="Finish the audit stored in --out (after a stop or a "
                                                        "kill): tasks already audited are not run again."),
    mutants: Optional[Path] = typer.Option(None, "--mutants", metavar="STRENGTH.json",
                                           help="Also replay each surviving mutant of `termrl tasks strength SUITE "
                                                "--json` as an exploit on its task: reported apart as candidates "
                                                "(a survivor may be equivalent to the reference), never in the "
                                                "exit status."),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="[ADDRESS]",
                                      help="Audit on a Ray cluster, one Ray task per audited task: --ray HOST:PORT "
                                           "joins it; --ray alone starts one on this machine. --workers is then "
                                           "tasks in flight (default: one per cluster CPU)."),
) -> None:
    """Red-team a reward spec: does any exploit earn more than doing nothing? Exit 1 if so."""
    try:
        points = [float(p) for p in progress_points.split(",") if p.strip()]
    except ValueError:
        _fail(f"--progress {progress_points!r}: give numbers in [0, 1], comma-separated (e.g. --progress 0,0.5,1)")
    progress = Progress(TextColumn("auditing {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json)
    bar = progress.add_task(suite, start=False)

    def start(total: int, done: int) -> None:  # the bar shows once the first task starts
        progress.update(bar, total=total, completed=done)
        progress.start_task(bar)
        progress.start()

    try:
        try:
            report = audit_suite(suite, spec, exploits=[n.strip() for n in (exploits or "").split(",") if n.strip()],
                                 workers=workers, progress=points, out=out, resume=resume, mutants=mutants, ray=ray,
                                 on_start=start, on_task=lambda rows: progress.advance(bar),
                                 on_skip=say_skipped(err))
        finally:
            progress.stop()
    except AuditError as e:
        _fail(str(e))
    except (ConnectionError, ImportError) as e:
        _fail(f"--ray: {e}" if ray is not None else str(e))
    if as_json:
        emit_json(json.dumps(report))
    else:
        for name, one in (report["specs"].items() if "specs" in report else [(spec, report)]):
            _print({**one, "suite": suite, "spec": name, "skipped_tasks": report["skipped_tasks"]})
    raise typer.Exit(1 if report["exploitable_tasks"] else 0)


def _fail(message: str) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


def _print(report: dict) -> None:
    table = Table(title=f"audit of {report['suite']} with spec {report['spec']}: exploits that gain or pass")
    for col in ("task", "exploit", "tests", "reward", "nop", "p", "caught by"):
        table.add_column(col, overflow="fold")

    def num(x) -> str:
        return "None" if x is None else f"{x + 0.0:+.3f}"

    for r in report["rows"]:
        if r["exploit"] == "nop" or is_survivor(r["exploit"]) or not (r["tests_passed"] or r["reward"] is None or (r["advantage"] or 0) > 1e-9):
            continue
        table.add_row(r["task"], r["exploit"], "solved (the reference's workspace)" if r.get("as_reference") else
                      "[red]passed[/]" if r["tests_passed"] else "failed",
                      num(r["reward"]), num(r["nop_reward"]), f"{r['progress']:g}",
                      ", ".join(r["detected_by"]) or "[red]nothing[/]")
    if table.rows:
        console.print(table)
    replayed = report.get("candidate_exploits") or []
    if replayed:
        survivors = Table(title="surviving mutants replayed as exploits (candidates: read each diff; a survivor "
                                "may be equivalent to the reference)")
        for col in ("task", "mutant", "tests", "reward", "nop", "caught by"):
            survivors.add_column(col, overflow="fold")
        for r in replayed:
            survivors.add_row(r["task"], r["exploit"], "error" if r["error"] else
                              ("[red]passed[/]" if r["tests_passed"] else "failed"),
                              num(r["reward"]), num(r["nop_reward"]), ", ".join(r["detected_by"]) or "nothing")
        console.print(survivors)
        console.print(f"{len(replayed)} surviving mutants replayed: "
                      f"{len(report['candidate_exploitable_tasks'])} tasks where one out-earns doing nothing"
                      + (f" ({', '.join(report['candidate_exploitable_tasks'])})"
                         if report["candidate_exploitable_tasks"] else ""))
    few = report.get("few_inputs_tasks") or {}
    if few:
        console.print(f"{len(few)} tasks whose hidden tests give too few inputs (the strength report: one fixed "
                      f"example, or only the instruction's), counted test-weak: {', '.join(sorted(few))}")
    n_tasks = len({r["task"] for r in report["rows"]})
    console.print(f"{n_tasks} tasks x {len(report['exploits'])} exploits: "
                  f"{len(report['test_weak_tasks'])} test-weak, "
                  f"[bold]{len(report['exploitable_tasks'])} exploitable[/]"
                  + (f" ({', '.join(report['exploitable_tasks'])})" if report["exploitable_tasks"] else ""))
