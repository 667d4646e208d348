"""TerminalEnv: one multi-turn episode of a task in a sandbox, Gymnasium style.

``reset(task)`` (or ``reset(family=..., seed=...)``) opens a sandbox holding the
task's workspace and returns the first observation: the instruction and a listing
of the workspace. ``step(reply)`` parses the reply (``termrl.actions``), runs the
action in the sandbox's persistent shell and returns ``(observation, reward,
terminated, truncated, info)``:

- ``terminated`` when the agent submits (or replies with no action);
- ``truncated`` when a limit of ``EnvConfig`` is reached (steps, time, tokens) or
  after ``max_format_errors`` consecutive unparseable replies.

When the episode ends the workspace is verified (``termrl.verify``), the hack
detectors read it, and the reward spec scores it: ``reward`` is that total (None
when verification failed: never 0), and ``info`` holds the evidence, the findings,
the reward breakdown and the typed ``Ending``. Steps before the last earn 0.0;
the spec's per-step process rewards are in ``info["step_rewards"]`` at the end.

Time: the episode's clock counts the sandbox's time and the generation time each
reply reports (``Reply.gen_s``), not time spent waiting for other episodes of a
batch. A command may run for ``command_timeout_s`` at most, and never past the
episode's time limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Self

from termrl.actions import TOOLS_PROMPT, FormatError, parse
from termrl.protocols import Action, ActionKind, Ending, Evidence, HackInput, Reply, Sandbox, StepRecord, Task

TRUNCATION_MARKER = "\n[... {n} characters truncated ...]\n"


@dataclass
class EnvConfig:
    """Limits and presentation of an episode. ``None`` limits come from the task's ``Limits``."""

    max_steps: int | None = None
    """Replies the agent may give (format errors count); default: the task's ``max_steps``."""
    time_limit_s: float | None = None
    """Seconds of sandbox and generation time; default: the task's ``agent_timeout_sec``."""
    max_tokens: int | None = None
    """Generated tokens over the whole episode (when the policy reports tokens); None: no limit."""
    command_timeout_s: float = 120.0
    """The longest one command may run."""
    observation_chars: int = 4000
    """Observation budget: longer output keeps its head and tail around a truncation marker."""
    max_format_errors: int = 3
    """Consecutive unparseable replies that end the episode."""
    backend: str = "bwrap"
    """Sandbox backend: bwrap, docker or local."""
    system_prompt: str = TOOLS_PROMPT
    """Formatted with ``workdir``."""
    listing_entries: int = 50
    """Workspace entries shown in the first observation."""
    detect: bool = True
    """Run the hack detectors at the end."""
    static: bool = True
    """Run the verifier's quality and safety stages (ruff, radon)."""
    per_test_timeout: float | None = None
    """Seconds per hidden test; default: the verifier's own per-task default."""


def truncate(text: str, budget: int) -> str:
    """``text`` within ``budget`` characters: head and tail kept around a marker."""
    if len(text) <= budget:
        return text
    keep = max(budget - len(TRUNCATION_MARKER.format(n=len(text))), 0)
    head = keep // 2
    tail = keep - head
    return text[:head] + TRUNCATION_MARKER.format(n=len(text) - keep) + (text[-tail:] if tail else "")


def apply_action(box: Sandbox, task: Task, action: Action, record: StepRecord, *, timeout: float,
                 observation_chars: int) -> str:
    """Run a command or write a file in ``box``; fill ``record``'s outcome and return the observation.

    The one place an action touches a sandbox: ``TerminalEnv.step`` and the quickstart's
    single-action evaluator both call it, so their trace steps (``StepRecord.trace``)
    have the same fields and the same text. A relative write path is taken from the
    task's workdir; a write that fails is exit code 1 with the error as observation.
    ``action`` must not be a submission.
    """
    if action.kind is ActionKind.SUBMIT:
        raise ValueError("apply_action runs commands and writes; a submission ends the episode instead")
    if action.kind is ActionKind.WRITE:
        path = action.path if action.path.startswith("/") else f"{task.workdir.rstrip('/')}/{action.path}"
        try:
            box.write_file(path, action.content.encode())
        except (OSError, ValueError) as e:
            record.exit_code = 1
            return f"write_file failed: {e}"
        record.exit_code = 0
        return f"wrote {len(action.content.encode())} bytes to {path}"
    res = box.exec(action.command, timeout=timeout)
    output = res.stdout + res.stderr
    record.exit_code, record.timed_out, record.stop = res.exit_code, res.timed_out, res.stop.value
    record.output_bytes = len(output.encode())
    status = f"exit code {res.exit_code}" + ("" if res.stop.value == "exited" else f" ({res.stop.value})")
    return f"{status}\n{truncate(output, observation_chars)}"


@dataclass
class Outcome:
    """What the end of an episode produced."""

    ending: Ending
    evidence: Evidence | None = None
    findings: list = field(default_factory=list)
    reward: Any = None
    """``termrl.protocols.Reward`` (None without a spec)."""


class TerminalEnv:
    """One episode at a time; ``close()`` (idempotent) releases the sandbox.

    ``spec``: a ``RewardSpec`` (or preset name) scoring the episode at ``progress``;
    without one the final reward is 1.0/0.0 for passed/failed (None when unverified).
    ``phase``: an optional ``(name) -> context manager`` the rollout runner passes to
    account environment, verification, reward and detection time.
    """

    def __init__(self, config: EnvConfig | None = None, spec=None, progress: float = 1.0, phase=None):
        from termrl.reward.spec import load_spec

        self.config = config or EnvConfig()
        self.spec = load_spec(spec) if isinstance(spec, str) else spec
        self.progress = progress
        self._phase = phase
        self.box = None
        self.task: Task | None = None
        self.steps: list[StepRecord] = []
        self.messages: list[dict] = []
        self.outcome: Outcome | None = None

    # ------------------------------------------------------------------ lifecycle

    def reset(self, task: Task | None = None, *, family=None, seed: int | None = None) -> tuple[str, dict]:
        """Start an episode of ``task``, or of ``family`` (a ``TaskFamily`` or its name) at ``seed``."""
        from termrl.tasks.runtime import open_sandbox
        from termrl.verify import workspace

        if task is None:
            if family is None or seed is None:
                raise ValueError("reset needs a task, or a family and a seed")
            if isinstance(family, str):
                from termrl.tasks.families import get_family
                family = get_family(family)
            task = family.generate(seed)
        self.close()
        self.task, self.steps, self.outcome = task, [], None
        self._clock = 0.0
        self._tokens = 0
        self._format_errors = 0
        with self._timed("environment"):
            self.box = open_sandbox(task, self.config.backend, command_timeout=self.config.command_timeout_s)
            self.before = workspace.snapshot(self.box)
        observation = f"{task.instruction.strip()}\n\n{self._listing()}"
        self.messages = [{"role": "system", "content": self.config.system_prompt.format(workdir=task.workdir)},
                         {"role": "user", "content": observation}]
        return observation, {"task_id": task.id, "workdir": task.workdir}

    def close(self) -> None:
        if self.box is not None:
            box, self.box = self.box, None
            box.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ limits

    @property
    def max_steps(self) -> int:
        return self.config.max_steps or self.task.limits.max_steps

    @property
    def time_limit(self) -> float:
        return self.config.time_limit_s or float(self.task.limits.agent_timeout_sec)

    # ------------------------------------------------------------------ steps

    def step(self, reply: Reply | str | Action) -> tuple[str | None, float | None, bool, bool, dict]:
        if self.task is None or self.outcome is not None:
            raise RuntimeError("step() needs an episode in progress: call reset() first")
        if isinstance(reply, str):
            reply = Reply(reply)
        text = reply.text if isinstance(reply, Reply) else ""
        self._clock += reply.gen_s if isinstance(reply, Reply) else 0.0
        self._tokens += len(reply.tokens or []) if isinstance(reply, Reply) else 0
        record = StepRecord(index=len(self.steps), reply=text, action=None, observation="",
                            gen_s=reply.gen_s if isinstance(reply, Reply) else 0.0)
        if isinstance(reply, Reply):
            record.tokens, record.logprobs, record.prompt_tokens = reply.tokens, reply.logprobs, reply.prompt_tokens
        ending = None
        try:
            parsed = parse(text) if isinstance(reply, Reply) else None
            action = parsed.action if parsed else reply
        except FormatError as e:
            self._format_errors += 1
            record.format_error = str(e)
            record.observation = f"Format error: {e}"
            action = None
        if action is not None:
            self._format_errors = 0
            record.action = action.to_dict()
            if action.kind is ActionKind.SUBMIT:
                ending = Ending.SUBMITTED
            else:
                started = time.perf_counter()
                with self._timed("environment"):
                    record.observation = self._act(action, record)
                record.env_s = time.perf_counter() - started
                self._clock += record.env_s
                if parsed and parsed.ignored:
                    record.observation += (f"\n[note: only the first action of a reply runs; "
                                           f"{parsed.ignored} more ignored]")
        self.steps.append(record)
        if ending is None:
            ending = self._limit_reached()
        if ending is None:
            self.messages += [{"role": "assistant", "content": text}, {"role": "user", "content": record.observation}]
            return record.observation, 0.0, False, False, {"step": record.index}
        return self._finish(ending)

    def _act(self, action: Action, record: StepRecord) -> str:
        remaining = max(self.time_limit - self._clock, 1.0)
        return apply_action(self.box, self.task, action, record,
                            timeout=min(self.config.command_timeout_s, remaining),
                            observation_chars=self.config.observation_chars)

    def _limit_reached(self) -> Ending | None:
        if self._format_errors >= self.config.max_format_errors:
            return Ending.FORMAT_ERRORS
        if self._clock >= self.time_limit:
            return Ending.TIME_LIMIT
        if self.config.max_tokens is not None and self._tokens >= self.config.max_tokens:
            return Ending.TOKEN_LIMIT
        if len(self.steps) >= self.max_steps:
            return Ending.STEP_LIMIT
        return None

    # ------------------------------------------------------------------ the end

    def _finish(self, ending: Ending) -> tuple[str, float | None, bool, bool, dict]:
        from termrl.hacks.detectors import run_detectors
        from termrl.verify import verify, workspace

        trace = [s.trace() for s in self.steps]
        after = home = None
        if self.config.detect:  # the agent's final state, before the hidden tests may write into it
            with self._timed("detection"):
                try:
                    after, home = workspace.snapshot(self.box), workspace.home_snapshot(self.box)
                except OSError:
                    after = None
        with self._timed("verification"):
            evidence = verify(self.task, self.box, before=self.before, trace=trace,
                              per_test_timeout=self.config.per_test_timeout, static=self.config.static)
        findings = []
        if self.config.detect and evidence.verified:
            if after is None:
                evidence.verified, evidence.verify_error = False, "the workspace snapshot for the detectors failed"
            else:
                with self._timed("detection"):
                    findings = run_detectors(HackInput(task=self.task, evidence=evidence, before=self.before,
                                                       after=after, home=home, trace=trace))
        with self._timed("reward"):
            reward = self.spec.score(evidence, findings=findings, progress=self.progress) if self.spec else None
        self.outcome = Outcome(ending, evidence, findings, reward)
        self.close()
        if reward is not None:
            total = reward.total
        else:
            total = None if not evidence.verified else float(evidence.passed)
        info = {"ending": ending, "evidence": evidence, "findings": findings, "reward": reward,
                "step_rewards": reward.steps if reward is not None else []}
        last = self.steps[-1].observation if self.steps else ""
        return last, total, ending is Ending.SUBMITTED, ending is not Ending.SUBMITTED, info

    # ------------------------------------------------------------------ helpers

    def _timed(self, name: str):
        from contextlib import nullcontext

        return self._phase(name) if self._phase else nullcontext()

    def _listing(self) -> str:
        res = self.box.exec(f"find . -mindepth 1 -maxdepth 3 -not -path './.git/*' | sort | "
                            f"head -n {self.config.listing_entries + 1}", timeout=30)
        entries = [line for line in res.stdout.splitlines() if line.strip()]
        if not entries:
            return f"The directory {self.task.workdir} is empty."
        more = "\n..." if len(entries) > self.config.listing_entries else ""
        return (f"Files in {self.task.workdir}:\n"
                + "\n".join(entries[: self.config.listing_entries]) + more)
