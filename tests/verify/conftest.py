"""Planted workspaces for the verifier tests: tiny tasks whose "agent" files are written into a
real bwrap sandbox, then verified with ``termrl.verify.verify``.

Every helper opens one sandbox per call and always closes it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import pytest

from termrl.protocols import Evidence, Limits, Task, TaskFile, TestCase
from termrl.tasks.runtime import open_sandbox
from termrl.verify import verify

PY_HEADER = "import os\nimport sys\n\nsys.path.insert(0, os.getcwd())\nimport pytest\n\n"
"""The hidden tests run with ``python3 -P`` from the workdir: they put it on sys.path themselves,
as the built-in tasks' hidden tests do."""

FAST = Limits(verifier_timeout_sec=60, memory_mb=1024)

requires_sandbox = pytest.mark.sandbox  # tests/conftest.py fails the run when bubblewrap is missing
requires_gcc = pytest.mark.sandbox  # tests/conftest.py fails the run when gcc is missing


def files(texts: Mapping[str, str]) -> dict[str, TaskFile]:
    return {path: TaskFile.text(textwrap.dedent(text)) for path, text in texts.items()}


def make_task(task_id: str, tests: Mapping[str, str], workspace: Mapping[str, str] | None = None,
              limits: Limits = FAST, env: Mapping[str, str] | None = None, header: str = PY_HEADER) -> Task:
    """A pytest task: ``tests`` are hidden test files (``header`` prepended to each)."""
    hidden = {path: TaskFile.text(header + textwrap.dedent(text)) for path, text in tests.items()}
    return Task(id=task_id, instruction=f"planted workspace {task_id}", workspace=files(workspace or {}),
                tests=hidden, limits=limits, env=dict(env or {}))


def planted(task: Task, agent_files: Mapping[str, str] | None = None, **verify_kwargs) -> Evidence:
    """Open a sandbox for ``task``, write the agent's files into its workdir, verify, close."""
    box = open_sandbox(task)
    try:
        if agent_files:
            box.put_files(task.workdir, files(agent_files))
        return verify(task, box, **{"static": False, **verify_kwargs})
    finally:
        box.close()


def by_name(evidence: Evidence) -> dict[str, TestCase]:
    """Test function name (or, for a collection error, the file) -> its TestCase."""
    return {t.nodeid.rsplit("::", 1)[-1]: t for t in evidence.tests}


def describe(evidence: Evidence) -> str:
    """Enough of the evidence to debug a failed assertion."""
    tests = [(t.nodeid, t.outcome, t.exc_type, t.error_class, t.message[:80]) for t in evidence.tests]
    return (f"verified={evidence.verified} verify_error={evidence.verify_error!r} passed={evidence.passed} "
            f"classes={evidence.error_classes} build={evidence.stages.get('build')} tests={tests} "
            f"tail={evidence.stages['tests'].data.get('output_tail', '')[-800:] if 'tests' in evidence.stages else ''}")
