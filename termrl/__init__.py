"""termrl: train small open models into terminal and coding agents with RL on
execution-verified, hack-resistant rewards.

The public API, re-exported. Every noun lives in ``termrl.protocols``.
"""

from termrl.checks.validate import check_task, validate
from termrl.episode import finish_episode, harness_failure, initial_messages, score
from termrl.protocols import (
                              Ending,
                              ExecResult,
                              HarnessError,
                              Limits,
                              Outcome,
                              Sandbox,
                              SandboxError,
                              SetupError,
                              StopReason,
                              Task,
                              TaskFamily,
                              TaskFile,
                              TaskMeta,
                              TestKind,
                              TestSpec,
)
from termrl.sandbox import make_sandbox
from termrl.tasks.formats import TaskFormatError, load_task
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.tasks.suites import find_task, resolve
from termrl.verify import verify

__version__ = "0.1.0"

__all__ = [
    "Ending", "ExecResult", "HarnessError", "Limits", "Outcome", "Sandbox", "SandboxError", "SetupError",
    "StopReason", "Task", "TaskFamily", "TaskFile", "TaskMeta", "TestKind", "TestSpec", "TaskFormatError",
    "check_task", "find_task", "finish_episode", "harness_failure", "initial_messages", "load_task",
    "make_sandbox", "open_sandbox", "resolve", "run_solution", "score", "validate", "verify",
]
