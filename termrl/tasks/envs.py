"""Building what a suite's tasks need before any episode: their Python environments
(``termrl.tasks.pyenv``) and system layers (``termrl.tasks.sysenv``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from termrl.tasks import npmenv, pyenv, sysenv


@dataclass(frozen=True)
class Result:
    kind: str
    """``pyenv``, ``sysenv`` or ``npmenv``."""
    contents: tuple[str, ...]
    """The requirement set, or the Debian packages and the system files copied in."""
    tasks: int
    """How many tasks of the suite share it."""
    path: Path | None = None
    size_bytes: int = 0
    seconds: float = 0.0
    cached: bool = False
    error: str | None = None
    missing: str | None = None
    """The requirement or package that could not be installed, when known."""
    shared_bytes: int = 0
    """Bytes it shares with other environments (hard links, no space)."""
    task_ids: tuple[str, ...] = ()
    """The tasks that need it."""


def _needs(task) -> list[tuple]:
    """(kind, contents, files) of each environment ``task`` needs."""
    out = []
    if task.python_requirements:
        out.append(("pyenv", pyenv.normalize(task.python_requirements), ()))
    if task.system_packages or task.system_files:
        out.append(("sysenv", sysenv.normalize(task.system_packages), sysenv.files_of(task.system_files)))
    if task.node_project:
        project = npmenv.install_view(npmenv.files_of(task.node_project))  # one need per distinct install
        out.append(("npmenv", tuple(name for name, _ in project), project))
    return out


def needs(task) -> bool:
    """Whether ``task`` has an environment to build before its first sandbox."""
    return bool(_needs(task))


def wanted(entries: Sequence) -> set[tuple]:
    """The distinct environments ``entries`` need."""
    return {need for e in entries if e.task is not None and not e.task.unsupported for need in _needs(e.task)}


def prepare(entries: Sequence, on_built: Callable[[Result], None] | None = None, limit_cache: bool = True) -> list:
    """``entries`` (``termrl.tasks.suites.Entry``) with every environment they need built: one
    build per distinct requirement or package set, in order of first use. A task whose
    environment cannot be built comes back unsupported, saying what could not be installed.
    ``on_built``: called after each environment. ``limit_cache``: then prune the cache to its
    size limit, keeping these (a run prepares its whole suite once, before any sandbox; a caller
    preparing one task of a run under way must not, or it could delete what another task has
    mounted)."""
    needs: dict[tuple, list[int]] = {}
    for i, entry in enumerate(entries):
        if entry.task is not None and not entry.task.unsupported:
            for need in _needs(entry.task):
                needs.setdefault(need, []).append(i)
    out = list(entries)
    ready: list[Path] = []
    for (kind, wants, files), users in needs.items():
        contents = (*wants, *(path for path, *_ in files)) if kind != "npmenv" else wants  # what a person reads
        ids = tuple(out[i].task.id for i in users)
        try:
            built = (pyenv.build(wants) if kind == "pyenv" else sysenv.build(wants, files) if kind == "sysenv"
                     else npmenv.build(files))
            ready.append(built.path)
            result = Result(kind, contents, len(users), built.path, built.size_bytes, built.seconds, built.cached,
                            shared_bytes=built.shared_bytes, task_ids=ids)
        except pyenv.BuildError as e:
            result = Result(kind, contents, len(users), error=str(e), missing=e.requirement, task_ids=ids)
            what = {"pyenv": "Python package", "sysenv": "Debian package", "npmenv": "npm package"}[kind]
            if kind == "sysenv" and e.requirement and e.requirement.startswith(sysenv.NPM):
                what = "npm package"
            why = f"needs {what} {e.requirement}, which cannot be installed" if e.requirement else "cannot be built"
            for i in users:
                if out[i].task.unsupported:
                    continue
                task = dataclasses.replace(out[i].task, unsupported=f"environment: {why} ({e})"[:800])
                out[i] = dataclasses.replace(out[i], task=task)
        if on_built:
            on_built(result)
    if needs and limit_cache:
        pyenv.prune(keep=ready)  # the cache's size limit, never at the cost of what this run needs
    return out


def runnable(entries: Sequence, on_skip: Callable[[str, str], None] | None = None
             ) -> tuple[list, list[tuple[str, str]]]:
    """The tasks of ``entries`` that can run here, and (id, why) of each other one, each also given
    to ``on_skip``: a task that cannot be loaded (its file and field), or one this machine cannot
    run (``Task.unsupported``)."""
    tasks, skipped = [], []
    for entry in entries:
        if entry.task is not None and not entry.task.unsupported:
            tasks.append(entry.task)
        else:
            skipped.append((entry.id, entry.error if entry.task is None else f"unsupported: {entry.task.unsupported}"))
            if on_skip is not None:
                on_skip(*skipped[-1])
    return tasks, skipped


def none_runnable(suite: str, skipped: Sequence) -> str:
    """What to say when no task of ``suite`` can run."""
    return (f"suite {suite}: no task can run ({len(skipped)} skipped, each said above); "
            f"`termrl tasks validate {suite}` checks them")


def prepare_report(entries: Sequence, on_built: Callable[[Result], None] | None = None) -> dict:
    """``prepare`` ``entries`` and say what was built (``termrl tasks prepare --json``):
    ``{"environments": [one row per environment], "tasks", "failed": environments that failed,
    "unsupported": [{"id", "reason"}] of the tasks this machine cannot run whatever is built}``."""
    rows: list[dict] = []

    def built(result: Result) -> None:
        rows.append({**dataclasses.asdict(result), "contents": list(result.contents),
                     "task_ids": list(result.task_ids), "path": str(result.path) if result.path else None,
                     "seconds": round(result.seconds, 1)})
        if on_built:
            on_built(result)

    prepare(entries, built)
    unsupported = [{"id": e.task.id, "reason": e.task.unsupported} for e in entries
                   if e.task is not None and e.task.unsupported]
    return {"environments": rows, "tasks": len(entries), "failed": sum(bool(r["error"]) for r in rows),
            "unsupported": unsupported}
