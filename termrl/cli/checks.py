"""``termrl tasks validate|strength``: the task-quality checks of ``termrl.checks``, in the
``tasks`` group beside ``termrl.cli.tasks``' list, show and prepare."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from termrl.checks.strength import WEAK, strength, summary
from termrl.checks.validate import validate_suite
from termrl.cli.output import CommandConsole, emit_json
from termrl.cli.tasks import _entries
from termrl.sandbox import BACKENDS
from termrl.tasks import envs

console = CommandConsole()
err = CommandConsole(stderr=True)


def _prepared(entries, quiet: bool = False) -> list:
    """``entries`` with their environments built (``termrl.tasks.envs.prepare``), one line per
    environment on stderr."""
    def said(result) -> None:
        if quiet:
            return
        what = " ".join(result.contents)
        if result.error:
            err.print(f"[yellow]{result.kind} failed[/] ({result.tasks} tasks): {result.error}")
        else:
            how = "cached" if result.cached else f"built in {result.seconds:.0f} s"
            shared = f" (and {result.shared_bytes / 2**20:.0f} MiB shared)" if result.shared_bytes else ""
            err.print(f"{result.kind} {result.path.name}: {what}: {result.size_bytes / 2**20:.0f} MiB{shared}, "
                      f"{how}, {result.tasks} tasks")

    return envs.prepare(entries, said)


def validate_cmd(
    suite: str = typer.Argument(..., help="builtin, humaneval, mbpp, FAMILY:SEEDS or a directory of tasks; "
                                          "a slice after a colon (humaneval:0-39, mbpp:test)"),
    as_json: bool = typer.Option(False, "--json", help='Print {"tasks": [{"id", "category", "valid", "reason", ...}]}'),
    workers: Optional[int] = typer.Option(None, help="Parallel sandboxes (default: one per core)."),
    backend: str = typer.Option("bwrap", help=f"Sandbox backend: {', '.join(BACKENDS)}."),
    with_strength: bool = typer.Option(False, "--strength", help="Also measure each valid task's test strength "
                                                                 "(termrl tasks strength) and flag weak ones."),
) -> None:
    """Run every task's reference solution (must pass) and a do-nothing agent (must fail)."""
    if backend not in BACKENDS:
        err.print(f"[red]error:[/] --backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        raise typer.Exit(2)
    entries = _prepared(_entries(suite), quiet=as_json)
    progress = Progress(TextColumn("validating {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json, disable=False)
    with progress:
        bar = progress.add_task(suite, total=len(entries))
        result = validate_suite(entries, backend=backend, workers=workers, with_strength=with_strength,
                                on_done=lambda row: progress.advance(bar))
    rows, strong, weak, total = result.rows, result.strength or {}, result.weak, result.summary()
    if as_json:
        emit_json(json.dumps(result.to_dict(suite)))
    else:
        table = Table(title=f"{suite}: validation")
        for col in ("id", "category", "status", "seconds", *(("strength",) if with_strength else ()), "reason"):
            table.add_column(col, overflow="fold")
        shown = rows if len(rows) <= 60 else [*(r for status in ("invalid", "unsupported", "no_reference")
                                                for r in result.with_status(status)),
                                              *(r for r in rows if r.id in {w.id for w in weak})]
        for r in shown:
            color = {"valid": "green", "invalid": "red", "unsupported": "yellow", "no_reference": "cyan"}[r.status]
            st = strong.get(r.id)
            score = ("" if st is None or st.score is None
                     else f"[red]{st.score:.2f} weak[/]" if st.weak else f"{st.score:.2f}")
            if st is not None and st.line_coverage is not None:
                score += f" lines {st.line_coverage:.2f}"
            reason = r.reason if r.status != "valid" else (
                "surviving mutant:\n" + st.survivors[0]["diff"] if st is not None and st.weak and st.survivors
                else f"the hidden tests run {st.line_coverage:.0%} of the reference's lines"
                if st is not None and st.weak else "")
            if r.substitutions:
                reason = "\n".join(filter(None, [reason, "ran instead: " + "; ".join(r.substitutions)]))
            table.add_row(r.id, r.category, f"[{color}]{r.status}[/]", f"{r.seconds:.1f}",
                          *((score,) if with_strength else ()), reason)
        if shown:
            console.print(table)
        console.print(f"[bold]{total['valid']}/{len(rows)} valid[/], {total['invalid']} invalid, "
                      f"{total['unsupported']} unsupported, {total['no_reference']} without a reference solution "
                      "(their environment builds and doing nothing fails cleanly)")
        if with_strength:
            console.print(f"[bold]{len(weak)} weak[/] (their hidden tests kill fewer than 80% of the reference "
                          f"solution's mutants, or run fewer than 80% of its lines) of "
                          f"{sum(s.score is not None for s in strong.values())} measured")
    raise typer.Exit(1 if total["invalid"] else 0)


def strength_cmd(
    suite: str = typer.Argument(..., help="builtin, humaneval, mbpp, FAMILY:SEEDS or a directory of tasks; "
                                          "a slice after a colon (humaneval:0-39)"),
    mutants: int = typer.Option(30, "--mutants", min=1, help="Most mutants verified per task."),
    workers: int = typer.Option(2, "--workers", min=1, help="Warm verifier sandboxes."),
    backend: str = typer.Option("bwrap", help=f"Sandbox backend of the reference runs: {', '.join(BACKENDS)}."),
    as_json: bool = typer.Option(False, "--json", help='Print {"suite", "tasks": [...], "summary"}'),
) -> None:
    """Mutation score of every task's hidden tests: the share of small bugs in the reference
    solution they catch; surviving mutants are wrong solutions that earn the full reward."""
    if backend not in BACKENDS:
        err.print(f"[red]error:[/] --backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        raise typer.Exit(2)
    entries = _prepared(_entries(suite), quiet=as_json)
    tasks = [e.task for e in entries if e.task is not None]
    progress = Progress(TextColumn("mutating {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json)
    with progress:
        bar = progress.add_task(suite, total=len(tasks))
        rows = strength(tasks, workers=workers, max_mutants=mutants, backend=backend,
                        on_done=lambda row: progress.advance(bar))
    total = summary(rows)
    if as_json:
        emit_json(json.dumps({"suite": suite, "tasks": [r.to_dict() for r in rows], "summary": total}))
        return
    table = Table(title=f"{suite}: test strength (weak: mutation score or line coverage < {WEAK}, or too few inputs)")
    for col in ("id", "status", "score", "visible", "lines", "branches", "inputs", "killed", "mutants", "seconds",
                "first survivor / reason"):
        table.add_column(col, overflow="fold")
    for r in rows:
        first = r.survivors[0]["diff"] if r.survivors else r.reason
        score = "-" if r.score is None else (f"[red]{r.score:.2f}[/]" if r.score < WEAK else f"{r.score:.2f}")
        visible = "-" if r.visible_score is None else f"{r.visible_score:.2f}" + (
            "" if r.visible_line_coverage is None else f" ({r.visible_line_coverage:.2f} lines)")
        lines = "-" if r.line_coverage is None else (f"[red]{r.line_coverage:.2f}[/]" if r.line_coverage < WEAK
                                                      else f"{r.line_coverage:.2f}")
        branches = "-" if r.branch_coverage is None else f"{r.branch_coverage:.2f}"
        most = max([*r.inputs.get("functions", {}).values(), *r.inputs.get("commands", {}).values()], default=None)
        inputs = "-" if most is None else f"[red]{most} few[/]" if r.few_inputs else str(most)
        table.add_row(r.id, r.status, score, visible, lines, branches, inputs, str(r.killed), str(r.mutants),
                      f"{r.seconds:.1f}", first)
    console.print(table)
    console.print(f"[bold]{total['measured']}/{total['tasks']} measured[/], {total['weak']} weak "
                  f"({total['few_inputs']} with too few inputs), mean score "
                  f"{total['mean_score']}, {total['survivors']} surviving mutants of {total['mutants']}, "
                  f"mean line coverage {total['mean_line_coverage']} (branches {total['mean_branch_coverage']}), "
                  f"{total['seconds_per_task']} s per task")
