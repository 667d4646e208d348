"""``termrl tasks list|show|validate``."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from termrl.cli.output import emit_json
from termrl.sandbox import BACKENDS
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, find_task, resolve

app = typer.Typer(help="List, inspect and validate tasks.", no_args_is_help=True)
console = Console()
err = Console(stderr=True)


def _entries(suite: str):
    try:
        return resolve(suite)
    except (SuiteError, TaskFormatError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)


def _prepared(entries, quiet: bool = False) -> list:
    """``entries`` with their environments built (``termrl.tasks.envs.prepare``), one line per
    environment on stderr."""
    from termrl.tasks import envs

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


@app.command("prepare")
def prepare_cmd(
    suite: str = typer.Argument(..., help="builtin, humaneval, mbpp, FAMILY:SEEDS or a directory of tasks"),
    as_json: bool = typer.Option(False, "--json", help='Print {"environments": [...], "tasks": N, "failed": N, '
                                                       '"unsupported": [{"id", "reason"}]}'),
) -> None:
    """Build every environment SUITE's tasks need, ahead of time: what their Dockerfiles and test
    scripts install (Python environments, system layers with Debian's packages and global npm
    packages, a project's npm install), each toolchain download mapped to the Debian packages that
    stand in for it. Exits 1 when an environment fails or a task cannot run here, naming each.

    Episodes never download: eval, audit, validate and train build what is missing before their
    first episode. Cache: TERMRL_CACHE (default ~/.cache/termrl; /var/cache/termrl for root)."""
    from dataclasses import asdict

    from termrl.tasks import envs

    entries = _entries(suite)
    rows: list[dict] = []
    progress = Progress(TextColumn("building {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json)

    def done(result) -> None:
        rows.append({**asdict(result), "contents": list(result.contents), "task_ids": list(result.task_ids),
                     "path": str(result.path) if result.path else None, "seconds": round(result.seconds, 1)})
        progress.advance(bar)

    with progress:
        bar = progress.add_task(f"{suite}: environments", total=len(envs.wanted(entries)))
        envs.prepare(entries, done)
    unsupported = [{"id": e.task.id, "reason": e.task.unsupported} for e in entries
                   if e.task is not None and e.task.unsupported]
    for u in unsupported:
        err.print(f"[yellow]unsupported[/] {escape(u['id'])}: {escape(u['reason'].splitlines()[0][:300])}",
                  highlight=False)
    failed = [r for r in rows if r["error"]]
    for r in failed:  # one line each: which tasks, what, why
        tasks = ", ".join(r["task_ids"][:5]) + (f" and {len(r['task_ids']) - 5} more" if len(r["task_ids"]) > 5 else "")
        what = f"{tasks}: {r['kind']} {' '.join(r['contents'])[:120]}: {r['error'].splitlines()[0][:300]}"
        err.print(f"[red]prepare failed[/] for {escape(what)}", highlight=False)
    if failed:
        err.print(f"{len(failed)} of {len(rows)} environments failed; "
                  f"{sum(len(r['task_ids']) for r in failed)} tasks are unsupported until they build")
    if as_json:
        emit_json(json.dumps({"environments": rows, "tasks": len(entries), "failed": len(failed),
                              "unsupported": unsupported}))
    else:
        table = Table(title=f"{suite}: {len(rows)} environments for {len(entries)} tasks")
        for col in ("kind", "contents", "tasks", "size", "time"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(r["kind"], " ".join(r["contents"]), str(r["tasks"]),
                          f"[red]{r['error'][:200]}[/]" if r["error"] else f"{r['size_bytes'] / 2**20:.0f} MiB"
                          + (f" (+{r['shared_bytes'] / 2**20:.0f} shared)" if r["shared_bytes"] else ""),
                          "" if r["error"] else "cached" if r["cached"] else f"{r['seconds']:.0f} s")
        console.print(table)
    raise typer.Exit(1 if failed or unsupported else 0)


@app.command("list")
def list_tasks(suite: str = typer.Argument("builtin", help="builtin, humaneval, mbpp, FAMILY:SEEDS or a directory"),
               as_json: bool = typer.Option(False, "--json")) -> None:
    """List the tasks of a suite (default: the built-in suite)."""
    from termrl.tasks import families

    entries = _entries(suite)
    rows = [{"id": e.id, "category": e.category,
             "difficulty": e.task.meta.difficulty if e.task else "?",
             "source": e.task.meta.source if e.task else "?",
             "tags": list(e.task.meta.tags) if e.task else [],
             "error": e.error} for e in entries]
    if as_json:
        emit_json(json.dumps({"tasks": rows}))
        return
    table = Table(title=f"{suite}: {len(rows)} tasks")
    for col in ("id", "category", "difficulty", "tags"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["id"], r["category"], r["difficulty"],
                      ", ".join(r["tags"]) if not r["error"] else f"[red]{r['error']}[/]")
    console.print(table)
    if suite == "builtin":
        fams = Table(title="task families (use FAMILY:SEEDS as a suite, FAMILY@LEVEL:SEEDS for a level)")
        for col in ("family", "category", "train seeds", "held-out seeds", "description", "levels"):
            fams.add_column(col)
        for f in families.FAMILIES.values():
            levels = "\n".join(f"{n}: {text}" for n, text in sorted(f.levels.items()))
            fams.add_row(f.name, f.category, f"{f.train_seeds.start}-{f.train_seeds.stop - 1}",
                         f"{f.heldout_seeds.start}-{f.heldout_seeds.stop - 1}", f.description, levels)
        console.print(fams)


@app.command("show")
def show(task_id: str = typer.Argument(..., help="Task id, FAMILY-SEED, or a task directory"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one task: metadata, limits, instruction, files (hidden tests are listed, not shown)."""
    try:
        task = find_task(task_id)
    except (SuiteError, TaskFormatError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    info = {
        "id": task.id, "source": task.meta.source, "category": task.meta.category,
        "difficulty": task.meta.difficulty, "family": task.meta.family, "split": task.meta.split,
        "tags": list(task.meta.tags), "workdir": task.workdir,
        "limits": vars(task.limits), "setup": list(task.setup),
        "workspace": sorted(task.workspace), "extra_dirs": sorted(task.extra_files),
        "hidden_tests": sorted(task.tests), "holdout_tests": sorted(task.holdout_tests),
        "test_kind": task.test_spec.kind.value, "has_solution": task.solution is not None,
        "unsupported": task.unsupported, "instruction": task.instruction,
    }
    if as_json:
        emit_json(json.dumps(info))
        return
    table = Table(show_header=False, title=task.id)
    for key, value in info.items():
        if key != "instruction":
            table.add_row(key, str(value))
    console.print(table)
    console.rule("instruction")
    console.print(task.instruction, markup=False, highlight=False)


@app.command("validate")
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
    from termrl.checks.validate import validate

    if backend not in BACKENDS:
        err.print(f"[red]error:[/] --backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        raise typer.Exit(2)
    entries = _prepared(_entries(suite), quiet=as_json)
    progress = Progress(TextColumn("validating {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json, disable=False)
    with progress:
        bar = progress.add_task(suite, total=len(entries))
        rows = validate(entries, backend=backend, workers=workers,
                        on_done=lambda row: progress.advance(bar))
    invalid = [r for r in rows if r.status == "invalid"]
    unsupported = [r for r in rows if r.status == "unsupported"]
    unreferenced = [r for r in rows if r.status == "no_reference"]
    valid = len(rows) - len(invalid) - len(unsupported) - len(unreferenced)
    strong = {}
    if with_strength:
        from termrl.checks.strength import strength

        by_id = {e.task.id: e.task for e in entries if e.task is not None}
        strong = {s.id: s for s in strength([by_id[r.id] for r in rows if r.status == "valid" and r.id in by_id],
                                            workers=workers or 2, backend=backend)}
    weak = [strong[r.id] for r in rows if r.id in strong and strong[r.id].weak]
    if as_json:
        emit_json(json.dumps({"suite": suite,
                              "tasks": [{**r.to_dict(), **({"strength": strong[r.id].to_dict()} if r.id in strong
                                                            else {})} for r in rows],
                              "summary": {"total": len(rows), "valid": valid, "invalid": len(invalid),
                                          "unsupported": len(unsupported), "no_reference": len(unreferenced),
                                          **({"weak": len(weak)} if with_strength else {})}}))
    else:
        table = Table(title=f"{suite}: validation")
        for col in ("id", "category", "status", "seconds", *(("strength",) if with_strength else ()), "reason"):
            table.add_column(col, overflow="fold")
        shown = rows if len(rows) <= 60 else invalid + unsupported + unreferenced + [r for r in rows if r.id in
                                                                                    {w.id for w in weak}]
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
        console.print(f"[bold]{valid}/{len(rows)} valid[/], {len(invalid)} invalid, {len(unsupported)} unsupported, "
                      f"{len(unreferenced)} without a reference solution (their environment builds and doing "
                      "nothing fails cleanly)")
        if with_strength:
            console.print(f"[bold]{len(weak)} weak[/] (their hidden tests kill fewer than 80% of the reference "
                          f"solution's mutants, or run fewer than 80% of its lines) of "
                          f"{sum(s.score is not None for s in strong.values())} measured")
    raise typer.Exit(1 if invalid else 0)


@app.command("strength")
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
    from termrl.checks.strength import WEAK, strength, summary

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
    table = Table(title=f"{suite}: test strength (weak: mutation score or line coverage < {WEAK})")
    for col in ("id", "status", "score", "visible", "lines", "branches", "killed", "mutants", "seconds",
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
        table.add_row(r.id, r.status, score, visible, lines, branches, str(r.killed), str(r.mutants),
                      f"{r.seconds:.1f}", first)
    console.print(table)
    console.print(f"[bold]{total['measured']}/{total['tasks']} measured[/], {total['weak']} weak, mean score "
                  f"{total['mean_score']}, {total['survivors']} surviving mutants of {total['mutants']}, "
                  f"mean line coverage {total['mean_line_coverage']} (branches {total['mean_branch_coverage']}), "
                  f"{total['seconds_per_task']} s per task")
