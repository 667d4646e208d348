"""A termrl task as an environment of TRL's ``GRPOTrainer(environment_factory=...)``.

TRL's contract (trl 1.16, ``GRPOTrainer._generate_and_score_completions``): the factory
makes one instance per rollout (pooled and reused across batches); before generating,
TRL calls ``reset(**row)`` with every field of the rollout's dataset row (``prompt``
included) and appends the returned string to the last user message; every public
method other than ``reset`` and ``get_reward`` is a tool the model may call, its JSON
schema built from the type hints and the Google-style docstring; reward functions get
the instances as ``environments=[...]``, in rollout order.

``TerminalToolEnv`` runs each tool call through ``TerminalEnv.step``, so limits,
output truncation, the trace, the timing and the end (``termrl.episode.finish_episode``)
are those of evaluation. The episode is finished once, lazily, when the rewards ask for
it (``episode_outcome(env)``: the model replied without a tool call, a submission), or
at once when a call reaches a limit, as in evaluation. It is scored by
``termrl.train.grpo``'s episode scorer, at the training progress of that moment. Because
TRL exposes every public method as a tool, the lifecycle methods are private
(``_finish``, ``_close``) and ``episode_outcome`` is a function of this module; the
instance is also a context manager and closes on garbage collection. ``reset`` closes
the previous episode, so an abandoned rollout never leaks a sandbox, and
``EnvironmentFactory.close()`` closes all of them.

A harness failure (the sandbox cannot start, or dies) is never the agent's fault: the
episode ends as ``Ending.ERROR`` with unverified evidence (``termrl.episode.harness_failure``),
so its reward is None and it never trains the policy.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping

from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import Phase, harness_failure
from termrl.protocols import Action, ActionKind, Ending, HarnessError, Outcome, Task
from termrl.tasks.suites import find_task

TASKS: dict[str, Task] = {}
"""Tasks ``reset(task_id=...)`` finds by id before ``find_task`` (built-ins, ``FAMILY-SEED``)."""

_episodes = itertools.count()


def register_tasks(tasks) -> None:
    """Make ``tasks`` (Task objects) findable by ``reset(task_id=task.id)`` in this process."""
    for task in tasks:
        TASKS[task.id] = task


def resolve_task(task_id: str) -> Task:
    """A registered task, else a built-in id, ``humaneval-N``, ``mbpp-N`` or ``FAMILY-SEED``."""
    if task_id in TASKS:
        return TASKS[task_id]
    return find_task(task_id)


def episode_outcome(env: TerminalToolEnv) -> Outcome:
    """Finish ``env``'s episode once and return its outcome; idempotent.

    An episode still running ends as a submission (the model replied without a tool call).
    A harness failure is an ``Ending.ERROR`` outcome with reward None, never 0."""
    return env._finish()


class TerminalToolEnv:
    """One rollout's terminal; its public methods ``bash`` and ``write_file`` are the model's tools.

    ``config``: the episode's limits and sandbox backend (``EnvConfig``); the spec is not
    given to the ``TerminalEnv``: the reward functions score the episode. ``phase``: an
    optional ``(name) -> context manager`` (``Accountant.phase``) timing environment,
    verification and detection.
    """

    def __init__(self, config: EnvConfig | None = None, phase: Phase | None = None, verifier=None, judge=None):
        self.env = TerminalEnv(config or EnvConfig(), spec=None, phase=phase, verifier=verifier, judge=judge)
        self.task_id: str | None = None
        self.episode: int | None = None
        """A number unique in this process per episode: the scorer's batches are keyed on it."""
        self._failed_reset: Outcome | None = None
        self._tool_calls = 0

    def reset(self, task_id: str, **row) -> str:
        """Start an episode of ``task_id`` (the row's other fields are ignored); the first observation."""
        self._close()
        self.task_id, self.episode, self._failed_reset = task_id, next(_episodes), None
        self._tool_calls = 0
        task = resolve_task(task_id)  # an unknown id is a bug in the dataset: it raises
        try:
            observation, _ = self.env.reset(task)
        except HarnessError as e:
            self._failed_reset = harness_failure(task.id, e, "reset")
            return f"The environment failed to start ({type(e).__name__}); this episode is not scored."
        return observation

    # ------------------------------------------------------------------ tools (public = seen by the model)

    def bash(self, command: str) -> str:
        """Run a shell command in the task's working directory and return its exit code and output.

        The shell keeps its working directory and variables between calls; there is no network.

        Args:
            command: The bash command line to run, e.g. "ls -la" or "python -m pytest -q".

        Returns:
            The exit code, then the command's stdout and stderr (long output keeps its head and tail).
        """
        return self._act(Action(ActionKind.COMMAND, command=command))

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file with the given content.

        Args:
            path: The file's path, relative to the working directory or absolute.
            content: The complete new content of the file.

        Returns:
            A confirmation with the number of bytes written, or why the write failed.
        """
        return self._act(Action(ActionKind.WRITE, path=path, content=content))

    # ------------------------------------------------------------------ lifecycle (private: not tools)

    def _act(self, action: Action) -> str:
        if self._failed_reset is None and self.env.task is None:
            raise RuntimeError("a tool was called before reset(): TRL resets every environment first")
        self._tool_calls += 1
        outcome = self.outcome
        if outcome is not None and outcome.ending is Ending.ERROR:
            return f"The environment failed ({outcome.error}); this call was not run."
        if outcome is not None:
            return (f"The episode is over ({_ending_text(outcome.ending, self.env)}): this call was "
                    "not run. Stop calling tools; your work is checked as it is.")
        observation, _, terminated, truncated, _ = self.env.step(action)
        if not (terminated or truncated):
            return observation
        ending = self.env.outcome.ending
        if ending is Ending.ERROR:
            return f"The environment failed ({self.env.outcome.error}); this episode is not scored."
        return (observation + f"\n[The episode is over: {_ending_text(ending, self.env)}. "
                              "Further tool calls are not run.]")

    def _finish(self) -> Outcome:
        """``episode_outcome``: finish the episode once (a submission if it still runs)."""
        if self._failed_reset is None and self.env.task is None:
            raise RuntimeError("no episode to finish: TRL resets every environment before generating")
        if self.outcome is None:
            self.env.step(Action(ActionKind.SUBMIT))  # the model replied without a tool call
        self._close()
        return self.outcome

    @property
    def outcome(self) -> Outcome | None:
        """The episode's outcome once it ended (``Ending.ERROR`` on a harness failure); None while it runs."""
        return self._failed_reset or self.env.outcome

    @property
    def ending(self) -> Ending | None:
        """How the episode ended (``Ending.ERROR`` on a harness failure); None while it runs."""
        return self.outcome.ending if self.outcome is not None else None

    @property
    def tool_calls(self) -> int:
        """Tool calls the model made this episode, refused ones included."""
        return self._tool_calls

    def _close(self) -> None:
        self.env.close()

    def __enter__(self) -> TerminalToolEnv:
        return self

    def __exit__(self, *exc) -> None:
        self._close()

    def __del__(self) -> None:
        try:
            self._close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def __repr__(self) -> str:
        return f"TerminalToolEnv({self.task_id!r}, episode={self.episode})"


def _ending_text(ending: Ending, env: TerminalEnv) -> str:
    if ending is Ending.STEP_LIMIT:
        return f"the step limit ({env.max_steps} steps) is reached"
    if ending is Ending.TIME_LIMIT:
        return f"the time limit ({env.time_limit:g} s) is reached"
    if ending is Ending.TOKEN_LIMIT:
        return "the token limit is reached"
    return ending.value.replace("_", " ")


class EnvironmentFactory:
    """The ``environment_factory`` given to TRL: makes ``TerminalToolEnv``s and can close them all."""

    def __init__(self, config: EnvConfig | None = None, phase: Phase | None = None,
                 tasks: Mapping[str, Task] | None = None, verifier=None, judge=None):
        self.config, self.phase, self.verifier, self.judge = config, phase, verifier, judge
        if tasks:
            register_tasks(tasks.values())
        self._made: weakref.WeakSet[TerminalToolEnv] = weakref.WeakSet()

    def __call__(self) -> TerminalToolEnv:
        env = TerminalToolEnv(self.config, self.phase, self.verifier, self.judge)
        self._made.add(env)
        return env

    @property
    def environments(self) -> list[TerminalToolEnv]:
        """Every environment made so far that is still alive."""
        return list(self._made)

    def close(self) -> None:
        """Close every environment's sandbox (idempotent)."""
        for env in list(self._made):
            env._close()


__all__ = ["EnvironmentFactory", "TASKS", "TerminalToolEnv", "episode_outcome", "register_tasks",
           "resolve_task"]
