"""``termrl tasks list|show|prepare|overlap`` (``validate`` and ``strength``: ``termrl.cli.checks``)."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from termrl.cli.output import CommandConsole, emit_json
from termrl.tasks import envs, families
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.overlap import THRESHOLD, overlap
from termrl.tasks.suites import SuiteError, describe, find_task, listing, resolve

app = typer.Typer(help="List, inspect and validate tasks.", no_args_is_help=True)
console = CommandConsole()
err = CommandConsole(stderr=True)


def _entries(suite: str):
    try:
        return resolve(suite)
    except (SuiteError, TaskFormatError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)


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
    entries = _entries(suite)
    progress = Progress(TextColumn("building {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json)
    with progress:
        bar = progress.add_task(f"{suite}: environments", total=len(envs.wanted(entries)))
        report = envs.prepare_report(entries, lambda result: progress.advance(bar))
    rows, unsupported = report["environments"], report["unsupported"]
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
        emit_json(json.dumps(report))
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
    """List the tasks of a suite (default: the built-in suite); on a terminal, the task families too."""
    rows = listing(_entries(suite))
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
    if suite == "builtin" and console.is_terminal:  # piped or in a file: one task a line, nothing else
        fams = Table(title="task families (use FAMILY:SEEDS as a suite, FAMILY@LEVEL:SEEDS for a level)")
        for col in ("family", "category", "train seeds: templates", "held-out seeds: templates", "description",
                    "levels"):
            fams.add_column(col)
        for f in families.FAMILIES.values():
            levels = "\n".join(f"{n}: {text}" for n, text in sorted(f.levels.items()))
            held = ", ".join(f.heldout_templates) or "the train templates, new combinations of values"
            fams.add_row(f.name, f.category, f"{f.train_seeds.start}-{f.train_seeds.stop - 1}: "
                         + ", ".join(f.train_templates),
                         f"{f.heldout_seeds.start}-{f.heldout_seeds.stop - 1}: {held}", f.description, levels)
        console.print(fams)


@app.command("overlap")
def overlap_cmd(
    train: str = typer.Argument(..., help="The suite trained on, e.g. py-function:0-39"),
    heldout: str = typer.Argument(..., help="The suite evaluated on, e.g. py-function:heldout:0-199"),
    threshold: float = typer.Option(THRESHOLD, help="Jaccard index at or above which a pair is a near duplicate"),
    show: int = typer.Option(10, help="List this many shared HELDOUT tasks with their nearest TRAIN task"),
    as_json: bool = typer.Option(False, "--json", help="Print the figures and every HELDOUT task's nearest "
                                                       "TRAIN task: {exact, near, disjoint, matches: [...]}"),
) -> None:
    """Exact and near-duplicate specifications between TRAIN and HELDOUT: for each HELDOUT task, the
    closest TRAIN task, names masked and examples dropped, so a task that differs from a training
    task only in names and examples counts as the same work (method: termrl.tasks.overlap)."""
    if not 0 < threshold <= 1:
        err.print(f"[red]error:[/] --threshold {threshold}: give a Jaccard index in (0, 1], e.g. {THRESHOLD}")
        raise typer.Exit(2)
    entries = [_entries(suite) for suite in (train, heldout)]
    sides = [[e.task for e in part if e.task is not None] for part in entries]
    result = overlap(sides[1], sides[0], threshold=threshold, suite=heldout, against_name=train)
    result.skipped = [f"{e.id}: {(e.error or '').splitlines()[0][:200]}" for part in entries for e in part if e.task is None]
    if as_json:
        emit_json(json.dumps(result.to_dict()))
    else:
        console.print("\n".join(result.lines(show)), markup=False, highlight=False)


@app.command("show")
def show(task_id: str = typer.Argument(..., help="Task id, FAMILY-SEED, or a task directory"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one task: metadata, limits, instruction, files (hidden tests are listed, not shown)."""
    try:
        task = find_task(task_id)
    except (SuiteError, TaskFormatError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    info = describe(task)
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
