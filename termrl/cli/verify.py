"""``termrl verify`` and ``termrl reward explain``: evidence and reward of a finished workspace."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from termrl.cli.output import CommandConsole, emit_json
from termrl.protocols import Evidence, Task
from termrl.reward import SpecError, load_spec
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, find_task
from termrl.verify import verify_directory

console = CommandConsole()
err = CommandConsole(stderr=True)
reward_app = typer.Typer(help="Reward specs: explain a reward component by component.", no_args_is_help=True)

TASK = typer.Option(..., "--task", help="Task id (builtin, humaneval-N, mbpp-N, FAMILY-SEED) or task directory.")
WORKSPACE = typer.Option(..., "--workspace", help="The task's working directory as the agent left it.")


def _evidence(task_ref: str, workspace: Path) -> tuple[Task, Evidence]:
    if not workspace.is_dir():
        err.print(f"[red]error:[/] --workspace {workspace}: not a directory")
        raise typer.Exit(2)
    try:
        task = find_task(task_ref)
    except (SuiteError, TaskFormatError) as e:
        err.print(f"[red]error:[/] --task: {e}")
        raise typer.Exit(2)
    if task.unsupported:
        err.print(f"[red]error:[/] task {task.id} is unsupported here: {task.unsupported}")
        raise typer.Exit(2)
    return task, verify_directory(task, workspace)


def _evidence_tables(ev: Evidence) -> None:
    stages = Table(title=f"{ev.task_id}: evidence")
    for col in ("stage", "status", "seconds", "error classes", "detail"):
        stages.add_column(col, overflow="fold")
    for s in ev.stages.values():
        color = {"ok": "green", "failed": "red", "error": "magenta"}.get(s.status, "dim")
        stages.add_row(s.name, f"[{color}]{s.status}[/]", f"{s.duration_s:.2f}", ", ".join(s.error_classes),
                       s.message[:200])
    console.print(stages)
    if ev.tests:
        tests = Table(title="tests")
        for col in ("test", "outcome", "tags", "class", "message"):
            tests.add_column(col, overflow="fold")
        for t in ev.tests:
            color = "green" if t.outcome == "passed" else "red"
            tests.add_row(t.nodeid, f"[{color}]{t.outcome}[/]", ", ".join(t.tags), t.error_class or "",
                          t.message[:160])
        console.print(tests)
    verdict = ("[magenta]FAILED TO VERIFY[/]: " + (ev.verify_error or "") if not ev.verified
               else "[green]PASSED[/]" if ev.passed else "[red]FAILED[/]")
    console.print(f"{verdict}  changed: {len(ev.changed_files)} files, +{ev.lines_added} -{ev.lines_removed}"
                  f"  error classes: {', '.join(ev.error_classes) or 'none'}")


def _exit_code(ev: Evidence) -> int:
    return 0 if ev.passed else 1 if ev.verified else 3


def verify_cmd(task: str = TASK, workspace: Path = WORKSPACE,
               as_json: bool = typer.Option(False, "--json", help="Print the evidence as JSON.")) -> None:
    """Verify a finished workspace: build, hidden tests, quality and safety, with error classes.

    Exit status: 0 passed, 1 failed, 3 could not be verified (not the agent's fault)."""
    _, ev = _evidence(task, workspace)
    if as_json:
        emit_json(json.dumps(ev.to_dict()))
    else:
        _evidence_tables(ev)
    raise typer.Exit(_exit_code(ev))


@reward_app.command("explain")
def explain(task: str = TASK, workspace: Path = WORKSPACE,
            spec: str = typer.Option("staged", "--spec", help="Preset (sparse, coderl, rltf, staged) or TOML file."),
            progress: float = typer.Option(0.0, "--progress", min=0.0, max=1.0, help="Training progress in [0, 1]."),
            as_json: bool = typer.Option(False, "--json", help='Print {"total", "components", "evidence"}.')) -> None:
    """Explain the reward of a finished workspace, component by component."""
    try:
        reward_spec = load_spec(spec)
    except SpecError as e:
        err.print(f"[red]error:[/] --spec: {e}")
        raise typer.Exit(2)
    _, ev = _evidence(task, workspace)
    reward = reward_spec.score(ev, progress=progress)
    if as_json:
        emit_json(json.dumps({"total": reward.total, "components": reward.component_dicts(), "steps": reward.steps,
                               "spec": spec, "progress": progress, "evidence": ev.to_dict()}))
        return
    _evidence_tables(ev)
    table = Table(title=f"reward: spec {spec}, progress {progress:g}")
    table.add_column("component", no_wrap=True)
    for col in ("weight", "value", "contribution"):
        table.add_column(col, justify="right")

    def num(x) -> str:
        return "None" if x is None else f"{x + 0.0:+.3f}"  # no "-0.000"

    for name, c in reward.components.items():
        table.add_row(name, num(c.weight), num(c.value), num(c.contribution))
    table.add_row("[bold]total[/]", "", "", f"[bold]{num(reward.total)}[/]")
    console.print(table)
