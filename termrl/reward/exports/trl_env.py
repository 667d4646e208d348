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
``termrl.reward.exports.trl``'s batch scorer, at the training progress of that moment. Because
TRL exposes every public method as a tool, the lifecycle methods are private
(``_finish``, ``_close``) and ``episode_outcome`` is a function of this module; the
instance is also a context manager and closes on garbage collection. ``reset`` closes
the previous episode, so an abandoned rollout never leaks a sandbox, and
``EnvironmentFactory.close()`` closes all of them.

A harness failure (the sandbox cannot start, or dies) is never the agent's fault: the
episode ends as ``Ending.ERROR`` with unverified evidence (``termrl.episode.harness_failure``),
so its reward is None and it never trains the policy.

TRL calls the tools of a batch one rollout after another (``GRPOTrainer._tool_call_loop``:
async tools are gathered only within one rollout's reply). ``ToolCallsAhead`` runs them for
every rollout at once, each rollout's calls in their order, and hands TRL the results when it
asks; ``termrl.training.ahead`` wraps TRL's loop in it when it is given more than one worker.

A rollout may end with a reply whose tool calls TRL's loop never ran: with
``GRPOConfig.max_tool_calling_iterations`` set, the reply that reaches the cap is kept as it is.
Those calls are the episode's last actions, so ``episode_outcome(env, pending_calls(completion,
cap))`` runs them before it submits. With a cap of 0, GRPO on one reply per episode is this
multi-turn path with one turn: the reply's calls run once, when the episode is finished.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import warnings
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import Phase, Verifier, harness_failure
from termrl.protocols import Action, ActionKind, Ending, HarnessError, Judge, Outcome, Task
from termrl.tasks.suites import find_task

TASKS: dict[str, Task] = {}
"""Tasks ``reset(task_id=...)`` finds by id before ``find_task`` (built-ins, ``FAMILY-SEED``)."""

_episodes = itertools.count()

TOOL_ACTIONS = {"bash": lambda command: Action(ActionKind.COMMAND, command=command),
                "write_file": lambda path, content: Action(ActionKind.WRITE, path=path, content=content)}
"""The action each of ``TerminalToolEnv``'s tools runs, from the tool's arguments."""


def register_tasks(tasks) -> None:
    """Make ``tasks`` (Task objects) findable by ``reset(task_id=task.id)`` in this process."""
    for task in tasks:
        TASKS[task.id] = task


def resolve_task(task_id: str) -> Task:
    """A registered task, else a built-in id, ``humaneval-N``, ``mbpp-N`` or ``FAMILY-SEED``."""
    if task_id in TASKS:
        return TASKS[task_id]
    return find_task(task_id)


def episode_outcome(env: TerminalToolEnv, pending: Sequence[dict] = ()) -> Outcome:
    """Finish ``env``'s episode once and return its outcome; idempotent.

    ``pending``: the tool calls of the rollout's last reply that TRL's loop did not run
    (``pending_calls``); they run first, in their order, as TRL would have run them. An episode
    still running then ends as a submission (the model replied without a tool call). A harness
    failure is an ``Ending.ERROR`` outcome with reward None, never 0."""
    return env._finish(pending)


def pending_calls(completion, max_tool_calling_iterations: int | None) -> list[dict]:
    """The tool calls of ``completion``'s last reply that TRL's tool loop left unrun because it had
    made ``max_tool_calling_iterations`` rounds (None: no cap, nothing is left).

    TRL's loop runs a reply's calls, then generates the next reply, at most that many times: a
    rollout whose last message is a reply with calls, and which holds more replies than the cap,
    stopped at the cap. (One that holds fewer stopped because the calls' results would not fit
    ``max_completion_length``: they ran, and only their messages were dropped.)

    >>> reply = {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
    ...          "function": {"name": "bash", "arguments": {"command": "ls"}}}]}
    >>> pending_calls([reply], 0) == reply["tool_calls"], pending_calls([reply], None), pending_calls([reply], 1)
    (True, [], [])
    """
    if max_tool_calling_iterations is None or not isinstance(completion, list) or not completion:
        return []
    last = completion[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or not last.get("tool_calls"):
        return []
    replies = sum(1 for m in completion if isinstance(m, dict) and m.get("role") == "assistant")
    return list(last["tool_calls"]) if replies > max_tool_calling_iterations else []


class TerminalToolEnv:
    """One rollout's terminal; its public methods ``bash`` and ``write_file`` are the model's tools.

    ``config``: the episode's limits and sandbox backend (``EnvConfig``); the spec is not
    given to the ``TerminalEnv``: the reward functions score the episode. ``phase``: an
    optional ``(name) -> context manager`` (``Accountant.phase``) timing environment,
    verification and detection.
    """

    def __init__(self, config: EnvConfig | None = None, phase: Phase | None = None,
                 verifier: Verifier | None = None, judge: Judge | None = None):
        self.env = TerminalEnv(config or EnvConfig(), spec=None, phase=phase, verifier=verifier, judge=judge)
        self.task_id: str | None = None
        self.episode: int | None = None
        """A number unique in this process per episode: the scorer's batches are keyed on it."""
        self._failed_reset: Outcome | None = None
        self._tool_calls = self._calls_before_finish = 0
        self._finish_lock = threading.Lock()
        self._ahead_of: ToolCallsAhead | None = None
        self._ahead: deque[Future] = deque()
        """Calls run ahead of TRL for this rollout (``ToolCallsAhead``), oldest first: (action, result)."""
        self._finished_with: list[dict] | None = None
        """The pending calls the episode was finished with (``_finish``); None while it runs."""
        self.replayed = 0
        """Times the episode was played again because it had been finished ahead with other calls."""

    def reset(self, task_id: str, **row) -> str:
        """Start an episode of ``task_id`` (the row's other fields are ignored); the first observation."""
        self._close()
        self.task_id, self.episode = task_id, next(_episodes)
        return self._start()

    def _start(self) -> str:
        self._failed_reset, self._finished_with, self._tool_calls, self._calls_before_finish = None, None, 0, 0
        task = resolve_task(self.task_id)  # an unknown id is a bug in the dataset: it raises
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
        return self._act(TOOL_ACTIONS["bash"](command=command))

    def write_file(self, path: str, content: str) -> str:
        """Create or overwrite a file with the given content.

        Args:
            path: The file's path, relative to the working directory or absolute.
            content: The complete new content of the file.

        Returns:
            A confirmation with the number of bytes written, or why the write failed.
        """
        return self._act(TOOL_ACTIONS["write_file"](path=path, content=content))

    # ------------------------------------------------------------------ lifecycle (private: not tools)

    def _act(self, action: Action) -> str:
        if getattr(_AHEAD, "running", False):  # a ToolCallsAhead thread runs this call for TRL
            _AHEAD.action = action
        elif self._ahead_of is not None:  # TRL's own call: its result may be ready
            self._ahead_of.start()
            if self._ahead:
                done, result = self._ahead.popleft().result()  # re-raises what the call raised
                if done == action:
                    return result
                warnings.warn(f"{self!r}: TRL called {action} but {done} was run ahead for it; running "
                              "TRL's call too (a bug in ToolCallsAhead: please report it)", RuntimeWarning,
                              stacklevel=2)
        return self._run(action)

    def _run(self, action: Action) -> str:
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

    def _finish(self, pending: Sequence[dict] = ()) -> Outcome:
        """``episode_outcome``: finish the episode once, running ``pending`` first (a submission if
        it still runs then); a second caller, in another thread (episodes are finished ahead),
        waits for the first. An episode finished ahead with other pending calls than the ones
        TRL's reply holds (a reply decoded ahead otherwise than TRL decoded it) is played again
        from its start with TRL's, when that reply was its only one; ``replayed`` counts it."""
        pending = list(pending)
        with self._finish_lock:
            if self._failed_reset is None and self.env.task is None and self._finished_with is None:
                raise RuntimeError("no episode to finish: TRL resets every environment before generating")
            if self._finished_with is not None and self._finished_with != pending:
                if self._calls_before_finish:
                    raise RuntimeError(f"{self!r} was finished with other calls than its last reply holds, "
                                       "after earlier calls: it cannot be played again")
                self.replayed += 1
                self._close()
                self._start()
            if self._finished_with is None:
                self._calls_before_finish = self._tool_calls
                tools = {"bash": self.bash, "write_file": self.write_file}
                for tool, arguments in _calls_of(self, tools, {}, pending) or ():
                    # the calls TRL's loop would make, run here directly (never through ToolCallsAhead,
                    # whose block may be open in TRL's thread meanwhile); a refused call is counted, not run
                    self._run(TOOL_ACTIONS[tool.__name__](**arguments))
                self._finished_with = pending
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


_AHEAD = threading.local()
"""``running``: this thread is a ``ToolCallsAhead`` worker; ``action``: the call it just made."""


class ToolCallsAhead:
    """Runs the tool calls of a batch's rollouts at once, ahead of TRL's loop asking for them.

    ``with ToolCallsAhead(environments, tool_dicts, async_tool_dicts, completions, workers):``
    around TRL's ``_tool_call_loop(..., completions, ...)``, with TRL's per-rollout
    ``environments``, ``_sync_tool_dicts`` and ``_async_tool_dicts``. The first call TRL makes in
    each round of its loop starts, in up to ``workers`` threads, the calls of every rollout whose
    last reply (``completions[i][-1]``, which TRL's loop appends to in place) holds calls not
    started yet. A rollout's calls run in their order, one at a time, in one thread, so a sandbox
    never sees two at once; TRL's own calls then take their results in the same order (an
    exception a call raised is raised to TRL again).

    Exactly the calls TRL's loop makes are run ahead: a ``function`` call that names a tool of
    the rollout's environment and whose arguments bind to it (TRL refuses the others before they
    reach the environment). A reply that also calls anything else (a standalone or async tool)
    is left to TRL, in TRL's order. With ``workers`` 1, or one rollout, nothing runs ahead.

    A rollout whose last reply calls no tool is over: TRL's loop never calls its tools again.
    Its episode is finished (submitted, verified, read by the detectors: ``episode_outcome``) in
    up to ``workers`` threads of their own while the other rollouts go on calling tools and
    generating, instead of after the whole batch; ``finished`` counts them (with
    ``finish=False`` none is). The scorer's own ``episode_outcome`` then waits for that finish
    and reads the same outcome. The block's end waits for every call and finish it started."""

    def __init__(self, environments: Sequence[TerminalToolEnv] | None, tool_dicts: Sequence[Mapping],
                 async_tool_dicts: Sequence[Mapping], completions: Sequence[list], workers: int,
                 finish: bool = True):
        self.environments = list(environments or ())
        self.tool_dicts, self.async_tool_dicts = tool_dicts, async_tool_dicts
        self.completions, self.workers, self.finish = completions, workers, finish
        self._started: dict[int, dict] = {}
        """id -> reply whose calls were started (held, so that no id is reused while the loop runs)."""
        self._finishing: set[int] = set()
        """Rollouts whose episode was handed to a thread to finish."""
        self.finished = 0
        """Episodes finished ahead: their rollouts were over while others still called tools."""
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._finisher: ThreadPoolExecutor | None = None
        """Threads of their own for the finishes, so that no call TRL waits for queues behind one."""

    def __enter__(self) -> ToolCallsAhead:
        if self.workers > 1 and len(self.environments) > 1:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="termrl-tools")
            if self.finish:
                self._finisher = ThreadPoolExecutor(self.workers, thread_name_prefix="termrl-finish")
            for env in self.environments:
                env._ahead_of = self
        return self

    def __exit__(self, *exc) -> None:
        if self._pool is None:
            return
        self._pool.shutdown(wait=True)
        if self._finisher is not None:
            self._finisher.shutdown(wait=True)
        for env in self.environments:
            env._ahead_of = None
            env._ahead.clear()

    def start(self) -> None:
        """Start the calls of every rollout whose last reply holds calls not started yet, and
        finish the episode of every rollout whose last reply calls no tool."""
        with self._lock:
            for i, (env, tools, async_tools, messages) in enumerate(zip(self.environments, self.tool_dicts,
                                                                        self.async_tool_dicts, self.completions)):
                reply = messages[-1] if messages else None
                if not isinstance(reply, dict) or reply.get("role") != "assistant" or id(reply) in self._started:
                    continue
                if not reply.get("tool_calls"):  # over: TRL's loop leaves it out from now on
                    if self.finish and i not in self._finishing:
                        self._finishing.add(i)
                        self.finished += 1
                        self._finisher.submit(episode_outcome, env)
                    continue
                self._started[id(reply)] = reply
                calls = _calls_of(env, tools, async_tools, reply["tool_calls"])
                if calls:
                    futures = [Future() for _ in calls]
                    env._ahead.extend(futures)
                    self._pool.submit(_run_ahead, calls, futures)


def _calls_of(env: TerminalToolEnv, tools: Mapping, async_tools: Mapping, tool_calls: list) -> list[tuple] | None:
    """``(tool, arguments)`` of each call of one reply that TRL's loop would run, in its order;
    None when the reply also calls something other than ``env``'s own sync tools (TRL then runs
    all of it: it runs a reply's async calls after its sync ones)."""
    calls = []
    for call in tool_calls:
        if not isinstance(call, dict) or call.get("type") != "function":
            continue  # TRL records an error; nothing runs
        function = call.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str):
            continue  # TRL's lookup fails: nothing runs
        if name in async_tools:
            return None
        tool = tools.get(name)
        if tool is None:
            continue  # "Tool not found": nothing runs
        if getattr(tool, "__self__", None) is not env:
            return None
        try:
            inspect.signature(tool).bind(**arguments)
        except TypeError:
            continue  # TRL's call fails on the arguments before the tool runs
        calls.append((tool, arguments))
    return calls


def _run_ahead(calls: list[tuple], futures: list[Future]) -> None:
    _AHEAD.running = True
    try:
        for (tool, arguments), future in zip(calls, futures):
            _AHEAD.action = None
            try:
                result = tool(**arguments)
            except Exception as e:  # noqa: BLE001 - handed to TRL's call, which records it as TRL would
                future.set_exception(e)
            else:
                future.set_result((_AHEAD.action, result))
    finally:
        _AHEAD.running = False


class EnvironmentFactory:
    """The ``environment_factory`` given to TRL: makes ``TerminalToolEnv``s and can close them all."""

    def __init__(self, config: EnvConfig | None = None, phase: Phase | None = None,
                 tasks: Mapping[str, Task] | None = None, verifier: Verifier | None = None,
                 judge: Judge | None = None):
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


__all__ = [
    "TASKS",
    "EnvironmentFactory",
    "TerminalToolEnv",
    "ToolCallsAhead",
    "episode_outcome",
    "pending_calls",
    "register_tasks",
    "resolve_task",
]
