"""``termrl audit``: run the exploit library against a suite and a reward spec."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from termrl.cli.output import emit_json, runnable

console = Console()
err = Console(stderr=True)


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
    from termrl.checks.audit import audit
    from termrl.checks.exploits import EXPLOITS
    from termrl.reward import SpecError, load_spec
    from termrl.tasks import envs
    from termrl.tasks.formats import TaskFormatError
    from termrl.tasks.suites import SuiteError, resolve

    try:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        if not names:
            raise SpecError("--spec: name at least one preset or TOML file")
        specs = {n: load_spec(n) for n in dict.fromkeys(names)}
        reward_spec = specs if len(specs) > 1 else specs[names[0]]
        entries = envs.prepare(resolve(suite))
    except (SpecError, SuiteError, TaskFormatError) as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    chosen = EXPLOITS
    if exploits:
        names = [n.strip() for n in exploits.split(",") if n.strip()]
        unknown = [n for n in names if n not in EXPLOITS]
        if unknown:
            err.print(f"[red]error:[/] --exploits: unknown {', '.join(unknown)}; known: {', '.join(EXPLOITS)}")
            raise typer.Exit(2)
        chosen = {n: EXPLOITS[n] for n in names}
    try:
        points = [float(p) for p in progress_points.split(",") if p.strip()]
        if not points or any(not 0.0 <= p <= 1.0 for p in points):
            raise ValueError
    except ValueError:
        err.print(f"[red]error:[/] --progress {progress_points!r}: give numbers in [0, 1], comma-separated "
                  "(e.g. --progress 0,0.5,1)")
        raise typer.Exit(2)
    extra = {}
    if mutants is not None:
        from termrl.checks.survivors import SurvivorsError, load_survivors

        try:
            extra = load_survivors(mutants)
        except SurvivorsError as e:
            err.print(f"[red]error:[/] --mutants {e}")
            raise typer.Exit(2)
    tasks, skipped = runnable(entries, err)
    if not tasks:
        err.print(f"[red]error:[/] suite {suite}: no task can run ({len(skipped)} skipped, each said above); "
                  f"`termrl tasks validate {suite}` checks them")
        raise typer.Exit(2)
    settings = {"suite": suite, "spec": spec, "exploits": sorted(chosen), "progress": sorted(set(points))}
    if mutants is not None:  # a resumed audit must replay the same survivors
        import hashlib

        settings["mutants"] = hashlib.sha256(mutants.read_bytes()).hexdigest()
    try:
        done, journal = _journal(out, resume, settings)
    except ValueError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
    done = {tid: rows for tid, rows in done.items() if tid in {t.id for t in tasks}}
    progress = Progress(TextColumn("auditing {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=as_json)
    started = time.monotonic()
    with progress:
        bar = progress.add_task(suite, total=len(tasks), completed=len(done))
        try:
            report = audit(tasks, reward_spec, chosen, workers, on_task=lambda rows: progress.advance(bar),
                           points=points, done=done, journal=journal, ray=ray, extra=extra)
        except (ConnectionError, ImportError) as e:
            progress.stop()
            err.print(f"[red]error:[/] --ray: {e}")
            raise typer.Exit(2)
    report.update(suite=suite, spec=spec, skipped_tasks=skipped, wall_s=round(time.monotonic() - started, 3))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "audit.json").write_text(json.dumps(report, indent=1))
    if as_json:
        emit_json(json.dumps(report))
    else:
        for name, one in (report["specs"].items() if "specs" in report else [(spec, report)]):
            _print({**one, "suite": suite, "spec": name, "skipped_tasks": skipped})
    raise typer.Exit(1 if report["exploitable_tasks"] else 0)


JOURNAL = "audit-rows.jsonl"
"""One line per audited task, written as it finishes: {"task", "rows": {spec name: [row, ...]}}."""
RUN = "audit-run.json"
"""The settings of the audit in a directory: a resumed audit must have the same."""


def _journal(out: Optional[Path], resume: bool, settings: dict):
    """(rows of the tasks an earlier run of this audit finished, the journal callback) for
    ``--out``/``--resume``; ValueError with what to do when they do not fit together."""
    from termrl.checks.audit import Row

    if out is None:
        if resume:
            raise ValueError("--resume needs --out DIR, the directory of the audit to finish")
        return {}, None
    path, run = out / JOURNAL, out / RUN
    done: dict = {}
    if run.exists():
        if not resume:
            raise ValueError(f"{out} holds an audit already: pass --resume to finish it, or choose another --out")
        saved = json.loads(run.read_text())
        if saved != settings:
            differ = sorted(k for k in {**saved, **settings} if saved.get(k) != settings.get(k))
            raise ValueError(f"{run} was written by an audit with other settings (differs in: {', '.join(differ)}); "
                             "resume with the same suite, --spec, --exploits, --progress and --mutants")
        text = path.read_text() if path.exists() else ""
        complete = text[:text.rfind("\n") + 1]  # a line cut by a kill is dropped, and run again
        path.write_text(complete)
        for line in complete.splitlines():
            entry = json.loads(line)
            done[entry["task"]] = {name: [Row(**r) for r in rows] for name, rows in entry["rows"].items()}
    elif resume and out.exists() and any(out.iterdir()):
        raise ValueError(f"--resume: {out} holds no audit to finish ({RUN} is missing)")
    out.mkdir(parents=True, exist_ok=True)
    run.write_text(json.dumps(settings))

    def journal(task_id: str, rows_by_spec: dict) -> None:
        line = json.dumps({"task": task_id, "rows": {n: [asdict(r) for r in rows] for n, rows in rows_by_spec.items()}})
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    return done, journal


def _print(report: dict) -> None:
    table = Table(title=f"audit of {report['suite']} with spec {report['spec']}: exploits that gain or pass")
    for col in ("task", "exploit", "tests", "reward", "nop", "p", "caught by"):
        table.add_column(col, overflow="fold")

    def num(x) -> str:
        return "None" if x is None else f"{x + 0.0:+.3f}"

    from termrl.checks.survivors import is_survivor

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
    n_tasks = len({r["task"] for r in report["rows"]})
    console.print(f"{n_tasks} tasks x {len(report['exploits'])} exploits: "
                  f"{len(report['test_weak_tasks'])} test-weak, "
                  f"[bold]{len(report['exploitable_tasks'])} exploitable[/]"
                  + (f" ({', '.join(report['exploitable_tasks'])})" if report["exploitable_tasks"] else ""))
