"""``check_task``: a task is valid when its reference solution passes its hidden tests
and a do-nothing agent fails them, each in a fresh sandbox.
"""

from __future__ import annotations

import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Callable, Iterable

from termrl.checks.strength import strength
from termrl.hacks.detectors.env.tampering import imported_by_tests
from termrl.protocols import Evidence, HarnessError, Task, TestsData
from termrl.tasks import envs
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.tasks.suites import Entry
from termrl.verify import verify


@dataclass
class Validation:
    id: str
    category: str
    valid: bool
    status: str
    """valid | invalid | unsupported | no_reference (no reference solution to run, but the task's
    environment builds and doing nothing fails its tests cleanly: it can be trained on, unchecked)"""
    reason: str
    reference_passed: bool | None = None
    nop_passed: bool | None = None
    seconds: float = 0.0
    substitutions: tuple[str, ...] = ()
    """What its environment ran instead of what its author's did (``Task.substitutions``)."""

    def to_dict(self) -> dict:
        return asdict(self)


def _attempt(task: Task, backend: str, with_solution: bool) -> tuple[Evidence, str]:
    """(evidence, why) of the reference solution (or of doing nothing) in a fresh sandbox."""
    box = open_sandbox(task, backend)
    try:
        if with_solution:
            res = run_solution(box, task)
            if not res.ok:
                tail = (res.stdout + res.stderr)[-1500:]
                return Evidence(task.id, passed=False), (
                    f"the reference solution itself failed ({res.stop.value}, exit {res.exit_code}):\n{tail}")
        evidence = verify(task, box, static=False)
        tests = TestsData.of(evidence)
        output = tests.output_tail if tests else ""
        return evidence, output
    finally:
        box.close()


def _unclean_failure(evidence: Evidence) -> str | None:
    """Why a failed run is not a clean failure of the task's tests (None when it is): the tests
    must have run to the end and failed, with no collection or usage error."""
    tests = TestsData.of(evidence)
    if tests is None:
        return "the tests did not run"
    if tests.stop != "exited":
        return f"the test run ended by {tests.stop}"
    if tests.kind == "pytest":
        if tests.exit_code in (2, 3, 4):  # interrupted by collection errors, internal or usage error
            return f"pytest exited {tests.exit_code} (collection or usage error, not failed tests)"
        if not tests.collected:
            return "pytest collected no test"
        if tests.exit_code != 1:
            return f"pytest exited {tests.exit_code} (collection or usage error, not failed tests)"
    return None


def _tail(text: str, n: int = 1200) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


_MODULE_FILE = re.compile(r"(?<![\w./-])([A-Za-z_]\w*)\.py\b")


def stdlib_named_modules(task: Task) -> list[str]:
    """Modules the task's workspace, instruction or reference solution names like a standard-library
    module that its tests import: the tests get the standard library's (``termrl.verify.harness.isolate``
    never lets a workspace file stand in for it), so such a task cannot pass as written.

    >>> from termrl.protocols import TaskFile
    >>> t = Task(id="t", instruction="Write calendar.py and main.py.", tests={"test_c.py": TaskFile.text(
    ...     "import calendar, main\\n")}, workspace={"main.py": TaskFile.text("")})
    >>> stdlib_named_modules(t)
    ['calendar']
    """
    texts = [task.instruction, task.solution or "", *(p for p in task.workspace if "/" not in p.strip("./"))]
    named = {m.group(1) for text in texts for m in _MODULE_FILE.finditer(text)}
    return sorted(named & imported_by_tests(task) & set(sys.stdlib_module_names))


def check_task(task: Task, backend: str = "bwrap") -> Validation:
    t0 = time.monotonic()
    row = Validation(task.id, task.meta.category, False, "invalid", "", substitutions=tuple(task.substitutions))
    try:
        if envs.needs(task) and not task.unsupported:  # built here if not before
            [entry] = envs.prepare([Entry(task.id, task=task)], limit_cache=False)
            task = entry.task
        if task.unsupported:
            row.status, row.reason = "unsupported", task.unsupported
            return row
        if task.solution is None:
            nop, output = _attempt(task, backend, with_solution=False)
            row.nop_passed = nop.passed
            unclean = nop.verify_error or ("a do-nothing agent passes the hidden tests" if nop.passed
                                           else _unclean_failure(nop))
            if unclean:
                row.reason = f"no reference solution (solution/solve.sh), and doing nothing: {unclean} {_tail(output, 600)}"
                return row
            row.status = "no_reference"
            row.reason = ("no reference solution (solution/solve.sh); the environment builds and doing nothing "
                          "fails the tests cleanly")
            return row
        ref, output = _attempt(task, backend, with_solution=True)
        row.reference_passed = ref.passed
        if ref.verify_error:
            row.reason = f"verification failed: {ref.verify_error}"
            return row
        if not ref.passed:
            row.reason = "reference solution fails the hidden tests: " + _tail(output)
            shadowed = stdlib_named_modules(task)
            if shadowed:
                row.reason += (f"\nhint: the tests import {', '.join(f'`{m}`' for m in shadowed)}, which the task "
                               "names like a standard-library module; the tests always get the standard "
                               "library's. Rename the module in the task.")
            return row
        nop, _ = _attempt(task, backend, with_solution=False)
        row.nop_passed = nop.passed
        if nop.verify_error:
            row.reason = f"verification failed: {nop.verify_error}"
            return row
        if nop.passed:
            row.reason = "a do-nothing agent passes the hidden tests: they check nothing the agent must do"
            return row
        row.valid, row.status, row.reason = True, "valid", "reference passes, do-nothing fails"
        return row
    except HarnessError as e:
        row.reason = str(e)
        return row
    finally:
        row.seconds = round(time.monotonic() - t0, 3)


def validate(entries: Iterable[Entry], backend: str = "bwrap", workers: int | None = None,
             on_done: Callable[[Validation], None] | None = None) -> list[Validation]:
    """Validate every entry in parallel; rows come back in the entries' order."""
    entries = list(entries)
    workers = workers or os.cpu_count() or 2

    def one(entry: Entry) -> Validation:
        if entry.task is None:
            row = Validation(entry.id, "?", False, "invalid", entry.error or "could not be loaded")
        else:
            row = check_task(entry.task, backend)
        if on_done:
            on_done(row)
        return row

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, entries))


@dataclass
class SuiteValidation:
    """A suite's validation (``validate_suite``): one row per task and, where measured, the test
    strength of its valid tasks."""

    rows: list[Validation]
    strength: dict | None = None
    """Task id -> ``termrl.checks.strength.Strength`` of each valid task; None: not measured."""

    def with_status(self, status: str) -> list[Validation]:
        return [r for r in self.rows if r.status == status]

    @property
    def weak(self) -> list:
        """The measured tasks whose hidden tests are weak, in the rows' order."""
        strong = self.strength or {}
        return [strong[r.id] for r in self.rows if r.id in strong and strong[r.id].weak]

    def summary(self) -> dict:
        counts = {status: len(self.with_status(status)) for status in ("invalid", "unsupported", "no_reference")}
        return {"total": len(self.rows), "valid": len(self.rows) - sum(counts.values()), **counts,
                **({"weak": len(self.weak)} if self.strength is not None else {})}

    def to_dict(self, suite: str) -> dict:
        """What ``termrl tasks validate SUITE --json`` prints."""
        strong = self.strength or {}
        return {"suite": suite,
                "tasks": [{**r.to_dict(), **({"strength": strong[r.id].to_dict()} if r.id in strong else {})}
                          for r in self.rows],
                "summary": self.summary()}


def validate_suite(entries: Iterable[Entry], backend: str = "bwrap", workers: int | None = None,
                   with_strength: bool = False, on_done: Callable[[Validation], None] | None = None
                   ) -> SuiteValidation:
    """``validate`` every entry and, ``with_strength``, measure the test strength of the valid
    tasks (``termrl.checks.strength``), their mutants verified on ``workers`` warm sandboxes."""
    entries = list(entries)
    rows = validate(entries, backend=backend, workers=workers, on_done=on_done)
    if not with_strength:
        return SuiteValidation(rows)

    by_id = {e.task.id: e.task for e in entries if e.task is not None}
    measured = strength([by_id[r.id] for r in rows if r.status == "valid" and r.id in by_id],
                        workers=workers or 2, backend=backend)
    return SuiteValidation(rows, {s.id: s for s in measured})
