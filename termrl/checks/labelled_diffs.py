"""Labelled diffs for the learned discriminator (``termrl.reward.discriminator``), made by
playing episodes: ``collect`` plays each task's reference (honest, label 0) and each exploit of the
audit's library (dishonest, label 1); ``weak_examples`` replays stored episodes and labels them by
the hack detectors' findings (a weaker label, ``WEAK_WEIGHT``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from termrl.checks.audit import with_references
from termrl.checks.exploits import EXPLOITS
from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import SandboxVerifier
from termrl.protocols import Evidence, HarnessError, Task
from termrl.reward.discriminator import WEAK_SEVERITIES, WEAK_WEIGHT, Example
from termrl.sandbox import workspace
from termrl.sandbox.workspace import diff_text
from termrl.tasks.runtime import open_sandbox


class _Recording:
    """A verifier that keeps the workspace it is given (before the tests run), then verifies as usual."""

    def __init__(self, inner):
        self.inner, self.before, self.after = inner, None, None

    def __call__(self, task: Task, box, before: Mapping[str, bytes], after, trace: list[dict]) -> Evidence:
        self.before, self.after = before, after if after is not None else workspace.snapshot(box)
        return self.inner(task, box, before, after, trace)


def weak_example(trajectory, task: Task) -> Example | None:
    """One stored episode (a ``Trajectory``) replayed on ``task`` and labelled by its findings
    (see the module's docstring); None when it gives no label or no diff, or the harness failed."""
    if not trajectory.steps:
        return None
    recording = _Recording(SandboxVerifier())
    env = TerminalEnv(EnvConfig(max_steps=len(trajectory.steps)), verifier=recording)
    try:
        env.reset(task)
        for step in trajectory.steps:
            *_, terminated, truncated, _ = env.step(step.reply)
            if terminated or truncated:
                break
    except HarnessError:
        return None
    finally:
        env.close()
    outcome = env.outcome
    if outcome is None or not outcome.evidence.verified or recording.after is None:
        return None
    kinds = sorted({f.kind for f in outcome.findings if f.severity in WEAK_SEVERITIES})
    if not kinds and not outcome.evidence.passed:
        return None
    diff = diff_text(recording.before, recording.after)
    if not diff:
        return None
    return Example(task.id, f"weak:{','.join(kinds) or 'clean'}", int(bool(kinds)), diff, WEAK_WEIGHT)


def weak_examples(trajectories: Sequence, tasks: Mapping[str, Task], workers: int = 2,
                  on_example: Callable[[Example | None], None] | None = None) -> list[Example]:
    """``weak_example`` of every trajectory whose task is in ``tasks`` (task id -> Task), ``workers`` at once."""
    def play(trajectory) -> Example | None:
        task = tasks.get(trajectory.task_id)
        example = weak_example(trajectory, task) if task is not None else None
        if on_example is not None:
            on_example(example)
        return example

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return [e for e in pool.map(play, trajectories) if e is not None]


def collect(tasks: Sequence[Task], exploits: Mapping[str, Callable] | None = None, workers: int = 2,
            on_example: Callable[[Example | None], None] | None = None) -> list[Example]:
    """Labelled diffs: each task's reference (0) and each exploit's workspace change (1)."""
    exploits = EXPLOITS if exploits is None else exploits
    examples, jobs = [], []
    for task, base, ctx in with_references(tasks)[0]:
        start = {p: f.data for p, f in task.workspace.items()}
        examples.append(Example(task.id, "reference", 0, diff_text(start, base.files)))
        jobs += [(task, name, fn, ctx) for name, fn in exploits.items()]

    def play(job) -> Example | None:
        task, name, fn, ctx = job
        try:
            box = open_sandbox(task)
            try:
                before = workspace.snapshot(box)
                fn(task, box, ctx)
                after = workspace.snapshot(box)
            finally:
                box.close()
        except (HarnessError, OSError):
            example = None
        else:
            diff = diff_text(before, after)
            example = Example(task.id, name, 1, diff) if diff else None
        if on_example is not None:
            on_example(example)
        return example

    with ThreadPoolExecutor(max(1, workers)) as pool:
        examples += [e for e in pool.map(play, jobs) if e is not None]
    return examples


__all__ = ["collect", "weak_example", "weak_examples"]
