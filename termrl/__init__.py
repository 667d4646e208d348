"""termrl: train small open models into terminal and coding agents with RL on
execution-verified, hack-resistant rewards.

The public API, re-exported. Every noun lives in ``termrl.protocols``.
"""

from termrl.protocols import (ExecResult, Limits, Sandbox, StopReason, Task, TaskFamily, TaskFile,
                              TaskMeta, TestKind, TestSpec)
from termrl.sandbox import make_sandbox
from termrl.tasks.formats import TaskFormatError, load_task
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.tasks.suites import find_task, resolve
from termrl.tasks.validate import check_task, validate
from termrl.verify import verify

__version__ = "0.1.0"

__all__ = [
    "ExecResult", "Limits", "Sandbox", "StopReason", "Task", "TaskFamily", "TaskFile", "TaskMeta",
    "TestKind", "TestSpec", "TaskFormatError", "check_task", "find_task", "load_task", "make_sandbox",
    "open_sandbox", "resolve", "run_solution", "validate", "verify",
]
