"""TerminalEnv: one multi-turn episode of a task in a sandbox, Gymnasium style.

``reset(task)`` (or ``reset(family=..., seed=...)``) opens a sandbox holding the
task's workspace and returns the first observation: the instruction and a listing
of the workspace (``termrl.episode.initial_messages``). ``step(reply)`` parses the
reply (``termrl.actions``), runs the action in the sandbox's persistent shell, checks
the limits of ``EnvConfig`` and returns ``(observation, reward, terminated,
truncated, info)`` (its docstring defines each).

When the episode ends it is finished by ``termrl.episode.finish_episode``, the one
road every caller shares: snapshots, verification, hack detection, scoring by the
reward spec. ``reward`` is then the total (None when the harness failed: never 0);
``info`` holds the ``Outcome``, the evidence, the findings, the reward breakdown and
the typed ``Ending``. Steps before the last earn 0.0; the spec's per-step process
rewards are in ``info["step_rewards"]`` at the end. A ``HarnessError`` during a step
ends the episode as ``Ending.ERROR`` with reward None (``termrl.episode.harness_failure``).

Time: the episode's clock counts the sandbox's time and the generation time each
reply reports (``Reply.gen_s``), not time spent waiting for other episodes of a
batch. A command may run for ``command_timeout_s`` at most, and never past the
episode's time limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Self

from termrl.actions import DEFAULT_FORMAT, FormatError, action_format, observation_message, parse
from termrl.episode import (
    Phase,
    SandboxVerifier,
    Verifier,
    finish_episode,
    harness_failure,
    initial_messages,
    starts_empty,
    workspace_listing,
)
from termrl.protocols import (
    Action,
    ActionKind,
    Ending,
    HarnessError,
    Judge,
    Outcome,
    Reply,
    Sandbox,
    StepRecord,
    Task,
    TaskFamily,
)
from termrl.reward.spec import RewardSpec, as_spec
from termrl.sandbox import warm, workspace
from termrl.tasks.families import get_family
from termrl.tasks.runtime import open_sandbox

TRUNCATION_MARKER = "\n[... {n} characters truncated ...]\n"
LISTING_COMMAND = "find . -mindepth 1 -maxdepth 3 -not -path './.git/*' | sort | head -n {n}"
"""What lists the workspace for the first observation (``n``: one more than the entries shown)."""


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
    action_format: str = DEFAULT_FORMAT
    """How the agent is asked to act (``termrl.actions.ACTION_FORMATS``): its system prompt and
    the tools its chat template is given. Replies in any format are understood."""
    system_prompt: str | None = None
    """Replaces the action format's system prompt; formatted with ``workdir``."""
    listing_entries: int = 50
    """Workspace entries shown in the first observation."""
    detect: bool = True
    """Run the hack detectors at the end."""
    static: bool = True
    """Run the verifier's quality and safety stages (ruff, radon)."""
    per_test_timeout: float | None = None
    """Seconds per hidden test; default: the verifier's own per-task default."""
    warm_sandboxes: int = 0
    """Sandboxes of each task shape kept started ahead of the episodes (``termrl.sandbox.warm``):
    an episode takes a ready one instead of waiting for its start. 0: each starts its own."""

    def __post_init__(self):
        action_format(self.action_format)  # an unknown name fails here, naming the choices
        if self.warm_sandboxes < 0:
            raise ValueError(f"warm_sandboxes must be 0 or more, got {self.warm_sandboxes}")

    @property
    def prompt(self) -> str:
        """The system prompt episodes open with."""
        if self.system_prompt is not None:
            return self.system_prompt
        return action_format(self.action_format).system_prompt

    @property
    def example(self) -> tuple[dict, ...]:
        """Chat turns shown before the task (the ``example`` format's worked episode), unless a
        ``system_prompt`` of the caller's replaces the format's."""
        return () if self.system_prompt is not None else action_format(self.action_format).example

    @property
    def tools(self) -> tuple[dict, ...]:
        """Tool schemas for the policy's chat template (empty unless the format is native)."""
        return action_format(self.action_format).tools


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

    The one place an action touches a sandbox (``TerminalEnv.step`` calls it; evaluation,
    GRPO's tool calls (one-turn episodes' included) all run through
    ``TerminalEnv``). A relative write path is taken from the task's workdir; a write that
    fails is exit code 1 with the error as observation. ``action`` must not be a submission.
    """
    if action.kind is ActionKind.SUBMIT:
        raise ValueError("apply_action runs commands and writes; a submission ends the episode instead")
    action = _clean(action)
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


def _relative(path: str, workdir: str) -> str:
    """A write's path as the task's workspace names files: relative to ``workdir`` when inside it."""
    prefix = workdir.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


class _Ended(Exception):
    """Raised where a step ends the episode (a submission, a limit); ``step`` turns it into the end."""

    def __init__(self, ending: Ending):
        super().__init__(ending.value)
        self.ending = ending


def _normalise(reply: Reply | str | Action) -> tuple[Reply, Action | None]:
    """A step's input as a ``Reply`` and, when the caller already parsed it (GRPO's tool calls),
    its ``Action``; text that is not valid Unicode (lone surrogates, as JSON escapes from an
    endpoint can carry) has them replaced by U+FFFD, so no command, file or stored row chokes
    on it."""
    if isinstance(reply, Action):
        return Reply(""), _clean(reply)
    if isinstance(reply, str):
        return Reply(_text(reply)), None
    return dataclasses.replace(reply, text=_text(reply.text)), None


def _clean(action: Action) -> Action:
    """``action`` with its text valid Unicode (``_text``): a tool call's JSON can spell lone
    surrogates (``"\\udcff"``), which no shell command or file can hold."""
    fields = {k: _text(v) for k in ("command", "path", "content") if isinstance(v := getattr(action, k), str)}
    return dataclasses.replace(action, **fields)


def _text(text: str) -> str:
    try:
        text.encode()
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


class TerminalEnv:
    """One episode at a time; ``close()`` (idempotent) releases the sandbox.

    ``spec``: a ``RewardSpec`` (or a preset name or TOML path, loaded here) scoring the episode
    at ``progress``; without one the final reward is 1.0/0.0 for passed/failed (None when unverified).
    ``phase``: an optional ``(name) -> context manager`` the rollout runner passes to
    account environment, verification, reward and detection time. ``verifier``: what
    turns the finished workspace into evidence (default: the hidden tests in the
    episode's own sandbox; ``termrl.episode.PoolVerifier`` uses a warm pool).
    """

    def __init__(self, config: EnvConfig | None = None, spec: RewardSpec | str | None = None,
                 progress: float = 1.0, phase: Phase | None = None, verifier: Verifier | None = None,
                 judge: Judge | None = None):
        self.config = config or EnvConfig()
        self.judge = judge
        """A ``Judge`` that reads each passing episode, or None."""
        self.spec = as_spec(spec) if spec is not None else None
        self.progress = progress
        self.verifier = verifier or SandboxVerifier(self.config.per_test_timeout, self.config.static)
        self._phase = phase
        self.box: Sandbox | None = None
        """The episode's sandbox while it runs; None before ``reset`` and after the end."""
        self.task: Task | None = None
        """The task of the current (or last) episode."""
        self.steps: list[StepRecord] = []
        """Every reply of the episode, format errors and the submission included."""
        self.messages: list[dict] = []
        """The conversation so far (system prompt, first observation, then replies and observations)."""
        self.outcome: Outcome | None = None
        """How the episode ended; None while it runs."""
        self.before: dict[str, bytes] = {}
        """The workspace after setup, before the agent's first step."""
        self.files: dict[str, object] = {}
        """The workspace's files as the episode knows them (the task's, then each write's content),
        for ``parse`` to decide where a block of code that names no file goes."""
        self._clock = 0.0
        self._tokens = 0
        self._format_errors = 0

    # ------------------------------------------------------------------ lifecycle

    def reset(self, task: Task | None = None, *, family: TaskFamily | str | None = None,
              seed: int | None = None) -> tuple[str, dict]:
        """Start an episode of ``task``, or of ``family`` (a ``TaskFamily`` or its name) at ``seed``.

        Returns the first observation and ``{"task_id", "workdir"}``.

        Raises:
            HarnessError: the sandbox or the task's setup failed (nothing is left open).
        """
        if task is None:
            if family is None or seed is None:
                raise ValueError("reset needs a task, or a family and a seed")
            task = (get_family(family) if isinstance(family, str) else family).generate(seed)
        self.close()
        self.task, self.steps, self.outcome, self.before = task, [], None, {}
        self.files = dict(task.workspace)
        self._clock, self._tokens, self._format_errors = 0.0, 0, 0
        with self._timed("environment"):
            try:
                self.box = open_sandbox(task, self.config.backend, command_timeout=self.config.command_timeout_s,
                                        warm=warm.shared(self.config.warm_sandboxes)
                                        if self.config.warm_sandboxes > 0 else None)
                self.before = workspace.snapshot(self.box)
                listing = self._listing()
            except BaseException:
                self.close()
                self.task = None  # no episode in progress: step() says to reset first
                raise
        self.messages = initial_messages(task, self.config.prompt, listing, self.config.example)
        return self.messages[-1]["content"], {"task_id": task.id, "workdir": task.workdir}

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

    def step(self, reply: Reply | str | Action) -> tuple[str, float | None, bool, bool, dict]:
        """Take one reply of the agent: a policy's ``Reply``, its text, or an ``Action`` already parsed
        (GRPO's tool calls). Every reply is a step, format errors and the submission included.

        Returns ``(observation, reward, terminated, truncated, info)``:

        - ``observation``: what the agent reads next: the command's exit code and output, the
          write's confirmation or the format error. At the end, the last step's observation.
        - ``reward``: 0.0 while the episode goes on; at the end ``Outcome.total``: the spec's
          total, or 1.0 / 0.0 for passed / failed without a spec; None when the harness failed.
        - ``terminated``: the agent ended the episode (``Ending.terminated``): it submitted, or
          replied with no action.
        - ``truncated``: the episode was cut short (``Ending.truncated``, the one definition): a
          limit of ``EnvConfig`` (steps, time, tokens, ``max_format_errors`` consecutive
          unparseable replies) or a harness failure. Never both; both False until the end.
        - ``info``: ``{"step": index}`` until the end; then ``{"outcome", "ending", "evidence",
          "findings", "reward", "step_rewards"}``.

        Raises:
            RuntimeError: no episode is in progress (``reset`` first; the last one ended).
        """
        if self.task is None or self.outcome is not None:
            raise RuntimeError("step() needs an episode in progress: call reset() first")
        reply, action = _normalise(reply)
        record = self._record(reply)
        self.steps.append(record)
        try:
            self._act(reply.text if action is None else None, action, record)
            self._check_limits()
        except _Ended as end:
            return self._finish(end.ending)
        except HarnessError as e:
            return self._end(harness_failure(self.task.id, e, "step"))
        self.messages += [{"role": "assistant", "content": reply.text},
                          observation_message(record.observation)]
        return record.observation, 0.0, False, False, {"step": record.index}

    def _record(self, reply: Reply) -> StepRecord:
        """The step's record, with the reply's generation time and tokens counted."""
        self._clock += reply.gen_s
        self._tokens += len(reply.tokens or [])
        return StepRecord(index=len(self.steps), reply=reply.text, action=None, observation="",
                          gen_s=reply.gen_s,
                          tokens=reply.tokens, logprobs=reply.logprobs, prompt_tokens=reply.prompt_tokens)

    def _act(self, text: str | None, action: Action | None, record: StepRecord) -> None:
        """Parse ``text`` (unless ``action`` is given), then run the action; a submission ends the episode."""
        ignored = 0
        if action is None:
            try:
                parsed = parse(text, self.files)
            except FormatError as e:
                self._format_errors += 1
                record.format_error, record.observation = str(e), f"Format error: {e}"
                return
            action, ignored = _clean(parsed.action), parsed.ignored
        self._format_errors = 0
        record.action = action.to_dict()
        if action.kind is ActionKind.SUBMIT:
            raise _Ended(Ending.SUBMITTED)
        started = time.perf_counter()
        with self._timed("environment"):
            remaining = max(self.time_limit - self._clock, 1.0)
            record.observation = apply_action(self.box, self.task, action, record,
                                              timeout=min(self.config.command_timeout_s, remaining),
                                              observation_chars=self.config.observation_chars)
        record.env_s = time.perf_counter() - started
        self._clock += record.env_s
        if action.kind is ActionKind.WRITE and record.exit_code == 0:
            self.files[_relative(action.path, self.task.workdir)] = action.content
        if ignored:
            record.observation += f"\n[note: only the first action of a reply runs; {ignored} more ignored]"

    def _check_limits(self) -> None:
        """Raise ``_Ended`` with the first limit of ``EnvConfig`` the episode has reached."""
        if self._format_errors >= self.config.max_format_errors:
            raise _Ended(Ending.FORMAT_ERRORS)
        if self._clock >= self.time_limit:
            raise _Ended(Ending.TIME_LIMIT)
        if self.config.max_tokens is not None and self._tokens >= self.config.max_tokens:
            raise _Ended(Ending.TOKEN_LIMIT)
        if len(self.steps) >= self.max_steps:
            raise _Ended(Ending.STEP_LIMIT)

    # ------------------------------------------------------------------ the end

    def _finish(self, ending: Ending) -> tuple[str, float | None, bool, bool, dict]:
        return self._end(finish_episode(self.task, self.box, ending, before=self.before,
                                        trace=[s.trace() for s in self.steps], verifier=self.verifier,
                                        detect=self.config.detect, spec=self.spec, progress=self.progress,
                                        phase=self._phase, judge=self.judge))

    def _end(self, outcome: Outcome) -> tuple[str, float | None, bool, bool, dict]:
        self.outcome = outcome
        self.close()
        info = {"outcome": outcome, "ending": outcome.ending, "evidence": outcome.evidence,
                "findings": list(outcome.findings), "reward": outcome.reward,
                "step_rewards": outcome.reward.steps if outcome.reward is not None else []}
        last = self.steps[-1].observation if self.steps else ""
        return last, outcome.total, outcome.ending.terminated, outcome.ending.truncated, info

    # ------------------------------------------------------------------ helpers

    def _timed(self, name: str) -> contextlib.AbstractContextManager:
        return self._phase(name) if self._phase else contextlib.nullcontext()

    def _listing(self) -> str:
        if starts_empty(self.task):  # nothing to list, no command to run (GRPO starts thousands of these)
            return workspace_listing(self.task.workdir, [])
        res = self.box.exec(LISTING_COMMAND.format(n=self.config.listing_entries + 1), timeout=30)
        entries = [line for line in res.stdout.splitlines() if line.strip()]
        return workspace_listing(self.task.workdir, entries, self.config.listing_entries)
