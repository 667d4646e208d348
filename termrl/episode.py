"""The one road from a finished episode to its reward, and the opening of every episode.

Every caller that ends an episode - ``TerminalEnv`` (evaluation, rollouts, GRPO's
environment adapter, one-turn episodes included) and the exploit audit -
finishes it here, so they cannot drift apart:

1. ``finish_episode`` snapshots the agent's final workspace and HOME (before the hidden
   tests may write into them), verifies the workspace, runs the hack detectors on a
   verified episode and scores it with the spec: an ``Outcome``.
2. ``harness_failure`` is the one place a ``HarnessError`` becomes an outcome:
   ``Ending.ERROR``, unverified evidence saying what failed, no findings, reward None.
3. ``score`` is the one place an outcome becomes a ``Reward`` (``score_batch`` for a
   batch whose group terms compare its episodes), used at the end of an episode and by
   the trainers that score a batch at the training progress of that moment.

Callers differ only in how they batch and cache: what verifies (``SandboxVerifier``
runs the hidden tests in the episode's own sandbox; ``PoolVerifier`` in a warm
``VerifierPool``) and when they score.

``initial_messages`` is the conversation every episode opens with (system prompt, then
the instruction and a listing of the workspace); training data built without a sandbox
(the SFT warm start's prompts) comes from the same function.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from termrl.hacks.detectors import run_detectors
from termrl.protocols import (
    Ending,
    Evidence,
    HackInput,
    HarnessError,
    Judge,
    Outcome,
    Reward,
    Sandbox,
    StageResult,
    Task,
)
from termrl.sandbox import workspace
from termrl.verify import unverified, verify
from termrl.verify.pool import fits_fast_path

if TYPE_CHECKING:
    from termrl.reward.spec import RewardSpec

Phase = Callable[[str], contextlib.AbstractContextManager]
"""``(name) -> context manager`` timing a phase (``Accountant.phase``): ``verification``,
``detection`` and ``reward`` here."""

# --------------------------------------------------------------------------- the opening


def starts_empty(task: Task) -> bool:
    """Whether the workdir of ``task`` is empty when the agent starts (no workspace files, no setup,
    no files elsewhere): its listing is then known without asking a sandbox."""
    return not (task.workspace or task.setup or task.extra_files)


def workspace_listing(workdir: str, entries: Sequence[str], limit: int = 50) -> str:
    """The first observation's description of the workspace: its first ``limit`` entries.

    >>> workspace_listing("/app", [])
    'The directory /app is empty.'
    >>> workspace_listing("/app", ["./a.txt", "./b"], limit=1)
    'Files in /app:\\n./a.txt\\n...'
    """
    if not entries:
        return f"The directory {workdir} is empty."
    more = "\n..." if len(entries) > limit else ""
    return f"Files in {workdir}:\n" + "\n".join(entries[:limit]) + more


def first_observation(task: Task, listing: str) -> str:
    """What the agent reads first: the instruction, then the workspace listing."""
    return f"{task.instruction.strip()}\n\n{listing}"


def system_message(task: Task, system_prompt: str) -> dict:
    """The system message of an episode of ``task``: ``system_prompt`` formatted with its workdir."""
    return {"role": "system", "content": system_prompt.format(workdir=task.workdir)}


def initial_messages(task: Task, system_prompt: str, listing: str, example: Sequence[dict] = ()) -> list[dict]:
    """The conversation an episode of ``task`` opens with: the system message, the ``example``
    turns if any (a worked episode, formatted with the task's workdir), then the first
    observation as the user's message. ``listing``: ``workspace_listing`` of the workspace."""
    shown = [{"role": m["role"], "content": m["content"].format(workdir=task.workdir)} for m in example]
    return [system_message(task, system_prompt), *shown,
            {"role": "user", "content": first_observation(task, listing)}]


# --------------------------------------------------------------------------- verifiers


class Verifier(Protocol):
    """Turns the finished workspace of ``box`` into ``Evidence``.

    ``before``: the workspace before the agent's first step; ``after``: the agent's final
    workspace as ``finish_episode`` snapshotted it (None when it took none); ``trace``:
    the agent's steps (``StepRecord.trace()``). Harness failures either raise a
    ``HarnessError`` or come back as unverified evidence."""

    def __call__(self, task: Task, box: Sandbox, before: Mapping[str, bytes],
                 after: Mapping[str, bytes] | None, trace: list[dict]) -> Evidence: ...


@dataclass(frozen=True)
class SandboxVerifier:
    """The hidden tests run in the episode's own sandbox (``termrl.verify.verify``)."""

    per_test_timeout: float | None = None
    """Seconds per hidden test; None: the verifier's per-task default."""
    static: bool = True
    """Run the quality and safety stages (ruff, radon)."""
    reference_lines: int | None = None
    """Lines the reference solution added: the yardstick of bloat penalties."""

    def __call__(self, task: Task, box: Sandbox, before: Mapping[str, bytes],
                 after: Mapping[str, bytes] | None, trace: list[dict]) -> Evidence:
        return verify(task, box, before=dict(before), trace=trace, per_test_timeout=self.per_test_timeout,
                      static=self.static, reference_lines=self.reference_lines)


@dataclass(frozen=True)
class PoolVerifier:
    """The hidden tests run on a warm ``VerifierPool`` (or ``RayVerifierPool``) over a copy of
    the agent's workspace: fast, no sandbox start-up, no pytest import, and on a cluster
    somewhere else than the episode. Only where that copy is the whole of what the tests see:
    a task the pool's fast path fits (``fits_fast_path``: pytest tests, no set-up, nothing
    outside the workdir) and a workspace that is files and their permission bits
    (``workspace.exact_files``: files, folders, their permission bits). Any other episode is verified in its own sandbox, as
    ``SandboxVerifier`` does, so the evidence never depends on which verifier ran."""

    pool: object
    """A ``termrl.verify.pool.VerifierPool`` (or anything with its ``verify_files`` and ``workdir``)."""
    fallback: SandboxVerifier = SandboxVerifier()
    """What verifies the episodes the pool cannot."""

    def __call__(self, task: Task, box: Sandbox, before: Mapping[str, bytes],
                 after: Mapping[str, bytes] | None, trace: list[dict]) -> Evidence:
        exact = workspace.exact_files(box) if fits_fast_path(task, getattr(self.pool, "workdir", "/workspace")) \
            else None
        if exact is None:
            return self.fallback(task, box, before, after, trace)
        files, modes, folders = exact
        return self.pool.verify_files(task, files, trace=trace, modes=modes, folders=folders)


# --------------------------------------------------------------------------- the end


@dataclass(frozen=True)
class Reference:
    """What the task's reference solution did, when known: baselines some detectors compare with."""

    files: Mapping[str, bytes] | None = None
    """The workspace after the reference solution."""
    tests: int | None = None
    """How many hidden tests were collected on it."""


def harness_failure(task_id: str, error: BaseException, during: str = "") -> Outcome:
    """The outcome of an episode the harness failed: unverified evidence naming the error, no
    findings, reward None (never 0: it must not train the policy). ``during``: what was being
    done (``reset``, ``step``, ``finishing``).

    >>> o = harness_failure("t", HarnessError("the shell died"), "step")
    >>> o.ending.value, o.total, o.error
    ('error', None, 'HarnessError: the shell died (during step)')
    """
    return Outcome(Ending.ERROR, unverified(task_id, error, during))


def finish_episode(task: Task, box: Sandbox, ending: Ending, *, before: Mapping[str, bytes],
                   trace: list[dict], verifier: Verifier | None = None, detect: bool = True,
                   spec: RewardSpec | None = None, progress: float = 1.0, reference: Reference | None = None,
                   phase: Phase | None = None, judge: Judge | None = None) -> Outcome:
    """Finish one episode of ``task`` whose agent phase ended with ``ending``: snapshots, verification,
    detection, scoring. The sandbox stays open (its owner closes it).

    - With ``detect``, the agent's final workspace and HOME are snapshotted first (the hidden
      tests may write into them), and the hack detectors read the verified episode.
    - ``verifier`` (default ``SandboxVerifier()``) turns the workspace into evidence.
    - ``spec`` (a ``RewardSpec``) scores it at ``progress``; without one ``Outcome.reward`` is
      None and ``Outcome.total`` is 1.0 / 0.0 for passed / failed.
    - ``judge`` (a ``Judge``) reads a passed episode (instruction,
      diff, test results): its verdict is the evidence's ``judge`` stage, its time the reward
      phase's. A failed episode is not judged.

    A ``HarnessError`` on the way is ``harness_failure``: ``Ending.ERROR``, reward None.
    """
    timed = phase or (lambda name: contextlib.nullcontext())
    try:
        after = home = None
        if detect:
            with timed("detection"):
                after, home = workspace.snapshot(box), workspace.home_snapshot(box)
        with timed("verification"):
            evidence = (verifier or SandboxVerifier())(task, box, before, after, trace)
    except HarnessError as e:
        return harness_failure(task.id, e, "finishing")
    findings: tuple = ()
    if detect and evidence.verified:
        ref = reference or Reference()
        with timed("detection"):
            findings = tuple(run_detectors(HackInput(task=task, evidence=evidence, before=before, after=after,
                                                     home=home, trace=trace, reference=ref.files,
                                                     reference_tests=ref.tests)))
    if judge is not None and evidence.passed:
        with timed("reward"):
            evidence = replace(evidence, stages={**evidence.stages,
                                                 "judge": _judged(judge, task, box, before, after, evidence)})
    outcome = Outcome(ending, evidence, findings)
    if spec is None:
        return outcome
    with timed("reward"):
        return replace(outcome, reward=score(outcome, spec, progress))


def _judged(judge: Judge, task: Task, box: Sandbox, before: Mapping[str, bytes], after: Mapping[str, bytes] | None,
            evidence: Evidence) -> StageResult:
    """The ``judge`` stage; the workspace is read now where detection did not snapshot it."""
    try:
        final = after if after is not None else workspace.snapshot(box)
    except HarnessError as e:
        return StageResult("judge", "error", message=f"the workspace could not be read for the judge: {e}")
    return judge(task, before, final, evidence)


# --------------------------------------------------------------------------- scoring


def score(outcome: Outcome, spec: RewardSpec, progress: float = 1.0, length: int | None = None,
          group: Sequence[tuple[int, bool]] | None = None) -> Reward:
    """The reward of ``outcome`` under ``spec`` (a ``RewardSpec``) at training ``progress``.

    ``length``: the completion's tokens, for length terms; ``group``: ``(length, passed)`` of
    the verified episodes it is compared with. Unverified: every component None, total None."""
    return spec.score(outcome.evidence, findings=outcome.findings, progress=progress, length=length,
                      group=group)


def score_batch(spec: RewardSpec, outcomes: Sequence[Outcome], groups: Sequence[object], progress: float,
                lengths: Sequence[int | None] | None = None) -> list[Reward]:
    """Rewards of a batch: each outcome scored at ``progress``, its group terms over the verified
    outcomes with the same key in ``groups`` (one key per outcome: GRPO's group of a prompt).

    >>> from termrl.reward.spec import load_spec
    >>> ok = Outcome(Ending.SUBMITTED, Evidence("t", passed=True))
    >>> [r.total for r in score_batch(load_spec("sparse"), [ok, harness_failure("t", HarnessError("x"))],
    ...                               ["a", "a"], 1.0)]
    [1.0, None]
    """
    n = len(outcomes)
    lengths = list(lengths) if lengths is not None else [None] * n
    if len(groups) != n or len(lengths) != n:
        raise ValueError(f"score_batch: {n} outcomes, {len(groups)} group keys, {len(lengths)} lengths")
    members: dict[object, list[tuple[int, bool]]] = {}
    for outcome, key, length in zip(outcomes, groups, lengths):
        if outcome.verified and length is not None:
            members.setdefault(key, []).append((length, bool(outcome.evidence.passed)))
    return [score(outcome, spec, progress, length, tuple(members[key]) if key in members else None)
            for outcome, key, length in zip(outcomes, groups, lengths)]


def group_keys(keys: Sequence[object], num_generations: int | None) -> list[object]:
    """Which group each rollout of a batch belongs to: consecutive runs of ``num_generations``
    (TRL's order on one process), or equal ``keys`` when the batch does not divide.

    >>> group_keys(["x", "y", "x", "y"], 2)
    [0, 0, 1, 1]
    >>> group_keys(["x", "y", "x"], 2)
    ['x', 'y', 'x']
    """
    n = len(keys)
    if num_generations and n % num_generations == 0:
        return [i // num_generations for i in range(n)]
    return list(keys)


def zero_variance(totals: Sequence[float | None], groups: Sequence[object]) -> tuple[int, int]:
    """(groups, groups with no learning signal): fewer than two verified totals, or all equal.

    >>> zero_variance([1.0, 1.0, 0.0, None], [0, 0, 1, 1])
    (2, 2)
    """
    by_group: dict[object, list[float]] = {}
    for total, key in zip(totals, groups, strict=True):
        values = by_group.setdefault(key, [])
        if total is not None and not math.isnan(total):
            values.append(total)
    zero = sum(len(v) < 2 or max(v) - min(v) <= 1e-9 for v in by_group.values())
    return len(by_group), zero


__all__ = ["PoolVerifier", "Reference", "SandboxVerifier", "Verifier", "finish_episode", "first_observation",
           "group_keys", "harness_failure", "initial_messages", "score", "score_batch", "starts_empty",
           "system_message",
           "workspace_listing", "zero_variance"]
