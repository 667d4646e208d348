"""termrl: train small open models into terminal and coding agents with RL on
execution-verified, hack-resistant rewards.

The public API, re-exported. Every noun lives in ``termrl.protocols``; the verbs a user calls
are here: ``resolve`` a suite, open a ``TerminalEnv``, ``run_rollouts`` of a policy, score with a
``RewardSpec``, ``evaluate`` and ``audit`` a suite, ``train`` from a config (what the ``termrl``
command runs). Importing termrl is cheap: torch and transformers load only when a model does.
"""

from termrl.checks.audit_run import audit_suite as audit
from termrl.checks.validate import check_task, validate
from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import finish_episode, harness_failure, initial_messages, score
from termrl.eval.run import EvalConfig, evaluate
from termrl.policies import make_policy
from termrl.protocols import (
                              Ending,
                              ExecResult,
                              HarnessError,
                              Limits,
                              Outcome,
                              Policy,
                              Reply,
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
                              Trajectory,
                              Turn,
)
from termrl.reward import RewardSpec, load_spec
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.sandbox import make_sandbox
from termrl.tasks.formats import TaskFormatError, load_task
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.tasks.suites import find_task, resolve
from termrl.training import train
from termrl.verify import verify

__version__ = "0.1.0"

__all__ = [
    "Ending", "EnvConfig", "EvalConfig", "ExecResult", "HarnessError", "Limits", "Outcome", "Policy", "Reply",
    "RewardSpec", "RolloutConfig", "Sandbox", "SandboxError", "SetupError", "StopReason", "Task", "TaskFamily",
    "TaskFile", "TaskFormatError", "TaskMeta", "TerminalEnv", "TestKind", "TestSpec", "Trajectory", "Turn",
    "audit", "check_task", "evaluate", "find_task", "finish_episode", "harness_failure", "initial_messages",
    "load_spec", "load_task", "make_policy", "make_sandbox", "open_sandbox", "resolve", "run_rollouts",
    "run_solution", "score", "train", "validate", "verify",
]
