"""Verification: a finished workspace -> ``Evidence``.

After the episode the hidden tests are copied in fresh from the task (never
trusted from the workspace), and ordered stages run: build -> tests -> quality
-> safety (-> trace, when the environment recorded one). Each adds structured
evidence (``termrl.verify.stages`` documents the shapes). Error classes come
from ``termrl.verify.taxonomy``.

A stage that cannot run for a reason that is not the agent's makes the evidence
*failed-to-verify* (``verified=False``), which rewards turn into None, never 0.
A timeout or memory blow-up caused by the agent's code is the agent's failure.
"""

from __future__ import annotations

from pathlib import Path

from termrl.protocols import Evidence, HarnessError, Sandbox, StageResult, StageStatus, Task, TestsData
from termrl.sandbox import workspace
from termrl.tasks.formats.common import read_tree
from termrl.tasks.runtime import open_sandbox
from termrl.verify import stages

DEFAULT_PER_TEST_TIMEOUT = 30.0


def per_test_default(task: Task) -> float:
    """Per-test alarm: at most half the run's budget, so one endless test never costs the
    outcomes of the others."""
    return min(DEFAULT_PER_TEST_TIMEOUT, task.limits.verifier_timeout_sec / 2)


def verify(task: Task, box: Sandbox, before: dict[str, bytes] | None = None,
           trace: list[dict] | None = None, per_test_timeout: float | None = None,
           static: bool = True, reference_lines: int | None = None,
           build_timeout: float | None = None) -> Evidence:
    """Verify the workspace of ``box`` against ``task``.

    ``before``: the workspace snapshot taken before the agent started (after setup);
    without it, the task's initial workspace files stand in. ``trace``: the steps
    the agent ran. ``static``: run the quality and safety stages. ``reference_lines``:
    lines the reference solution added, the yardstick of bloat penalties. ``build_timeout``:
    seconds the C build may take (default: the task's verifier time limit).

    Never raises for a harness failure: a ``HarnessError`` of the sandbox becomes
    evidence with ``verified=False`` (see ``unverified``).
    """
    try:
        after = workspace.snapshot(box)
        workspace.drop_bytecode(box)  # no planted .pyc runs in place of the source the detectors read
    except HarnessError as e:
        return unverified(task.id, e)
    build = StageResult("build", StageStatus.SKIPPED)
    found: list = []
    try:
        build = stages.timed("build", stages.build, task, box, after, build_timeout)
        per_test = per_test_timeout or per_test_default(task)

        def run() -> StageResult:
            result, tests = stages.run_tests(task, box, per_test)
            found.extend(tests)
            return result

        tests = stages.timed("tests", run)
    except HarnessError as e:
        if not disk_full(e):
            return unverified(task.id, e)
        # only the agent writes to its sandbox's disk: a full one fails the agent, not the harness
        # (as a harness error the episode would be dropped instead of paying for the failure)
        tests = StageResult("tests", StageStatus.FAILED, error_classes=["disk_full"],
                            message=f"the sandbox's disk was full when the tests had to run: {e}")
    return assemble(task, before, after, build, tests, found, trace, static, reference_lines)


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` says the sandbox ran out of space (ENOSPC) or of inodes.

    >>> disk_full(HarnessError("could not run 'python3': OSError: [Errno 28] No space left on device"))
    True
    """
    text = str(error)
    return "[Errno 28]" in text or "No space left on device" in text


def assemble(task: Task, before: dict[str, bytes] | None, after: dict[str, bytes], build: StageResult,
             tests: StageResult, test_cases: list, trace: list[dict] | None, static: bool,
             reference_lines: int | None = None) -> Evidence:
    """Evidence from the build and tests stages, adding the diff, static analysis and trace."""
    if before is None:
        before = {p: f.data for p, f in task.workspace.items()}
    changed = workspace.changed(before, after)
    added, removed = workspace.line_counts(before, after)
    found = {"build": build, "tests": tests}
    if static:
        quality, safety = stages.static_analysis(after, changed)
        quality.data.update(lines_added=added, lines_removed=removed)
        found.update(quality=quality, safety=safety)
    if trace is not None:
        found["trace"] = stages.trace(trace)
    failed = [s for s in found.values() if s.status is StageStatus.ERROR]
    verified = not failed
    return Evidence(
        task_id=task.id, verified=verified,
        verify_error=f"stage {failed[0].name} could not run: {failed[0].message}" if failed else None,
        passed=verified and tests.status is StageStatus.OK, stages=found, tests=test_cases,
        error_classes=list(dict.fromkeys(c for s in (build, tests) for c in s.error_classes)),
        changed_files=changed + [f"-{p}" for p in workspace.deleted(before, after)],
        lines_added=added, lines_removed=removed, reference_lines=reference_lines,
        reward_file=TestsData.from_dict(tests.data).reward_file)


def unverified(task_id: str, error: BaseException, during: str = "") -> Evidence:
    """The evidence of an episode the harness could not verify: ``verified`` False, the error named
    (its type first: bad-case views group by it), and what was being done when it failed.

    >>> unverified("t", TimeoutError("no answer"), "reset").verify_error
    'TimeoutError: no answer (during reset)'
    """
    where = f" (during {during})" if during else ""
    return Evidence(task_id, verified=False, verify_error=f"{type(error).__name__}: {error}{where}")


def verify_directory(task: Task, directory: Path, backend: str = "bwrap", static: bool = True) -> Evidence:
    """Verify a finished workspace kept on the host: ``directory`` holds the task's working
    directory as the agent left it (files it lacks count as deleted)."""
    try:
        box = open_sandbox(task, backend)
    except HarnessError as e:
        return unverified(task.id, e)
    try:
        before = workspace.snapshot(box)
        clear = box.run(["find", task.workdir, "-mindepth", "1", "-delete"], timeout=60)
        if not clear.ok:
            return Evidence(task.id, verified=False, verify_error=f"could not clear the workdir: {clear.stderr}")
        box.put_files(task.workdir, read_tree(Path(directory)))
        return verify(task, box, before=before, static=static)
    finally:
        box.close()


__all__ = ["assemble", "unverified", "verify", "verify_directory"]
