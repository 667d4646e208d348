"""``audit_suite``: the audit of a suite against one or more reward specs, resumable in a
directory; what ``termrl audit`` runs (``termrl.checks.audit.audit`` plays the episodes).

A directory (``out``) holds ``audit-run.json`` (the settings: a resumed audit must have the
same), ``audit-rows.jsonl`` (one line per audited task, written as it finishes, so an audit
killed midway resumes where it stopped) and ``audit.json`` (the report).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from termrl.checks.audit import PROGRESS_POINTS, Row, _points, audit
from termrl.checks.exploits import EXPLOITS
from termrl.checks.survivors import SurvivorsError, few_inputs, load_survivors
from termrl.reward import SpecError, load_spec
from termrl.tasks import envs
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, resolve

log = logging.getLogger(__name__)

JOURNAL = "audit-rows.jsonl"
"""One line per audited task, written as it finishes: {"task", "rows": {spec name: [row, ...]}}."""
RUN = "audit-run.json"
"""The settings of the audit in a directory: a resumed audit must have the same."""


class AuditError(ValueError):
    """Settings that cannot run, or a directory that does not fit them: says what to do instead."""


def audit_suite(suite: str, spec: str = "staged", *, exploits: Sequence[str] | None = None,
                workers: int | None = None, progress: Sequence[float] = PROGRESS_POINTS,
                out: str | os.PathLike | None = None, resume: bool = False, mutants: str | os.PathLike | None = None,
                ray: str | None = None, on_start: Callable[[int, int], None] | None = None,
                on_task: Callable[[list[Row]], None] | None = None,
                on_skip: Callable[[str, str], None] | None = None) -> dict:
    """Play the exploit library on the tasks of ``suite`` and score every episode with ``spec``
    (a preset or TOML file; several, comma-separated, side by side on the same episodes) at each
    training ``progress``. Returns the report ``termrl audit --json`` prints: ``{"rows",
    "test_weak_tasks", "exploitable_tasks", ...}`` (``termrl.checks.audit.audit``) with ``suite``,
    ``spec``, ``skipped_tasks`` and ``wall_s``.

    ``exploits``: a subset of ``EXPLOITS`` by name. ``out``: also write the report to
    ``out/audit.json`` and each task's rows to ``out/audit-rows.jsonl`` as it finishes;
    ``resume``: finish the audit stored there. ``mutants``: a ``termrl tasks strength --json``
    report whose surviving mutants are replayed as candidate exploits, and whose tasks tested with
    too few inputs (``few_inputs``) are reported as ``few_inputs_tasks`` and count as test-weak.
    ``ray``: audit on the Ray cluster at this address. ``on_start(total, done)``, ``on_task(rows)``: progress;
    ``on_skip(task_id, why)``: a task that cannot be loaded or run here (logged by default).

    Raises ``AuditError`` for settings that cannot run, ``ConnectionError`` when ``ray`` cannot
    be reached."""
    on_skip = on_skip or (lambda task_id, why: log.warning("skipped %s: %s", task_id, why))
    try:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        if not names:
            raise SpecError("--spec: name at least one preset or TOML file")
        specs = {n: load_spec(n) for n in dict.fromkeys(names)}
        entries = envs.prepare(resolve(suite))
    except (SpecError, SuiteError, TaskFormatError) as e:
        raise AuditError(str(e)) from None
    chosen = chosen_exploits(exploits)
    try:
        points = _points(progress)
    except ValueError:
        raise AuditError(f"--progress {','.join(f'{p:g}' for p in progress)}: give numbers in [0, 1], "
                         "comma-separated (e.g. --progress 0,0.5,1)") from None
    extra = _survivors(mutants)
    tasks, skipped = envs.runnable(entries, on_skip)
    if not tasks:
        raise AuditError(envs.none_runnable(suite, skipped))
    settings = {"suite": suite, "spec": spec, "exploits": sorted(chosen), "progress": list(points)}
    if mutants is not None:  # a resumed audit must replay the same survivors
        settings["mutants"] = hashlib.sha256(Path(mutants).read_bytes()).hexdigest()
    out = Path(out) if out is not None else None
    done, journal = _journal(out, resume, settings)
    done = {tid: rows for tid, rows in done.items() if tid in {t.id for t in tasks}}
    if on_start:
        on_start(len(tasks), len(done))
    started = time.monotonic()
    report = audit(tasks, specs if len(specs) > 1 else specs[names[0]], chosen, workers, on_task=on_task,
                   points=points, done=done, journal=journal, ray=ray, extra=extra)
    report.update(suite=suite, spec=spec, skipped_tasks=[task_id for task_id, _ in skipped],
                  wall_s=round(time.monotonic() - started, 3))
    if mutants is not None:
        audited = {t.id for t in tasks}
        few = {tid: why for tid, why in few_inputs(Path(mutants)).items() if tid in audited}
        report["few_inputs_tasks"] = few
        report["test_weak_tasks"] = sorted({*report["test_weak_tasks"], *few})
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "audit.json").write_text(json.dumps(report, indent=1))
    return report


def chosen_exploits(names: Sequence[str] | None) -> dict:
    """The exploits of the library (``EXPLOITS``) called ``names``; all of them for none."""
    if not names:
        return EXPLOITS
    unknown = [n for n in names if n not in EXPLOITS]
    if unknown:
        raise AuditError(f"--exploits: unknown {', '.join(unknown)}; known: {', '.join(EXPLOITS)}")
    return {n: EXPLOITS[n] for n in names}


def _survivors(mutants: str | os.PathLike | None) -> dict:
    """Task id -> {name: exploit} of the surviving mutants in the strength report ``mutants``."""
    if mutants is None:
        return {}

    try:
        return load_survivors(Path(mutants))
    except SurvivorsError as e:
        raise AuditError(f"--mutants {e}") from None


def _journal(out: Path | None, resume: bool, settings: dict):
    """(rows of the tasks an earlier run of this audit finished, the journal callback) for
    ``out``/``resume``; AuditError with what to do when they do not fit together."""
    if out is None:
        if resume:
            raise AuditError("--resume needs --out DIR, the directory of the audit to finish")
        return {}, None
    path, run = out / JOURNAL, out / RUN
    done: dict = {}
    if run.exists():
        if not resume:
            raise AuditError(f"{out} holds an audit already: pass --resume to finish it, or choose another --out")
        saved = json.loads(run.read_text())
        if saved != settings:
            differ = sorted(k for k in {**saved, **settings} if saved.get(k) != settings.get(k))
            raise AuditError(f"{run} was written by an audit with other settings (differs in: {', '.join(differ)}); "
                             "resume with the same suite, --spec, --exploits, --progress and --mutants")
        text = path.read_text() if path.exists() else ""
        complete = text[:text.rfind("\n") + 1]  # a line cut by a kill is dropped, and run again
        path.write_text(complete)
        for line in complete.splitlines():
            entry = json.loads(line)
            done[entry["task"]] = {name: [Row(**r) for r in rows] for name, rows in entry["rows"].items()}
    elif resume and out.exists() and any(out.iterdir()):
        raise AuditError(f"--resume: {out} holds no audit to finish ({RUN} is missing)")
    out.mkdir(parents=True, exist_ok=True)
    run.write_text(json.dumps(settings))

    def journal(task_id: str, rows_by_spec: dict) -> None:
        line = json.dumps({"task": task_id, "rows": {n: [asdict(r) for r in rows] for n, rows in rows_by_spec.items()}})
        with open(path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    return done, journal
