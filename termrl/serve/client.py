"""Clients of ``termrl serve``: an OpenEnv client, and remote episodes for TRL's ``GRPOTrainer``.

- ``TermrlEnvClient``: ``openenv-core``'s ``EnvClient`` for termrl's types (async; ``.sync()`` for
  a blocking one), with the server's bearer token when it has one::

      with TermrlEnvClient("http://127.0.0.1:8000").sync() as env:
          result = env.reset(task_id="logs-count-3")
          result = env.step(TermrlAction(tool="bash", arguments={"command": "ls"}))

- ``RemoteTerminalEnv``: the part of ``TerminalEnv`` that ``TerminalToolEnv`` drives, played on a
  server: one session per episode, opened by ``reset``, closed when the episode ends (or by
  ``close``). The observations are the server's ``TerminalEnv``'s, character for character, and the
  ``Outcome`` at the end is the one the server finished (``outcome_from_json``).
- ``RemoteEnvironmentFactory``: TRL's ``environment_factory`` whose environments play on one or
  more servers (each episode on the next, in turn). The reward functions score the outcomes in
  the trainer, with its spec at its progress: the same code as in-process, the same rewards.

A server that cannot be reached, drops the session, or refuses it (``CAPACITY_REACHED``) is a
harness failure: the episode ends as ``Ending.ERROR``, reward None, never 0. A reset the server
refuses for its arguments (a task it does not serve) is a ``RemoteError``: a setup mistake, raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Sequence
from types import SimpleNamespace

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from termrl.episode import Phase, harness_failure
from termrl.protocols import Action, HarnessError, Outcome, Reply, StepRecord
from termrl.reward.exports.trl_env import TerminalToolEnv
from termrl.serve.protocol import (
    TermrlAction,
    TermrlObservation,
    TermrlState,
    episode_from_json,
    outcome_from_json,
    tool_action,
)


class RemoteError(ValueError):
    """The server refused a request for its content (an unknown task id, a bad argument): a setup mistake."""


class TermrlEnvClient(EnvClient[TermrlAction, TermrlObservation, TermrlState]):
    """OpenEnv's WebSocket client for a termrl server. ``token``: sent as ``Authorization: Bearer``.
    ``message_timeout_s``: the longest wait for one answer (an episode's end runs its hidden tests)."""

    def __init__(self, base_url: str, token: str | None = None, connect_timeout_s: float = 10.0,
                 message_timeout_s: float = 3600.0, max_message_size_mb: float = 64.0):
        super().__init__(base_url, connect_timeout_s=connect_timeout_s, message_timeout_s=message_timeout_s,
                         max_message_size_mb=max_message_size_mb)
        self._token = token

    async def connect(self) -> TermrlEnvClient:
        if self._ws is not None:
            return self
        headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
        try:
            self._ws = await connect(self._ws_url, open_timeout=self._connect_timeout,
                                     max_size=self._max_message_size, additional_headers=headers, proxy=None)
        except Exception as e:
            raise ConnectionError(f"Failed to connect to {self._ws_url}: {e}") from e
        return self

    async def _send_and_receive(self, message: dict) -> dict:
        """OpenEnv's, and when the server has already closed the session (it refuses one past its
        limit as it opens), its reason, read from what it sent before closing."""
        try:
            await self._send(message)
        except ConnectionClosed:
            pass  # the refusal, if any, is waiting to be read; if not, _receive raises
        response = await self._receive()
        if response.get("type") == "error":
            error = response.get("data", {})
            raise RuntimeError(f"Server error: {error.get('message', 'Unknown error')} "
                               f"(code: {error.get('code', 'UNKNOWN')})")
        return response

    def _step_payload(self, action: TermrlAction) -> dict:
        if isinstance(action, Action):
            action = tool_action(action)
        return action.model_dump(exclude={"metadata"}, exclude_none=True)

    def _parse_result(self, payload: dict) -> StepResult[TermrlObservation]:
        observation = TermrlObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                        reward=payload.get("reward"))
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict) -> TermrlState:
        return TermrlState(**payload)


def _refused_for_content(error: BaseException) -> bool:
    text = str(error)
    return isinstance(error, RuntimeError) and "Server error:" in text and "EXECUTION_ERROR" in text


class RemoteTerminalEnv:
    """``TerminalEnv``'s episode interface (``reset``, ``step``, ``close``, ``task``, ``outcome``,
    ``steps``, ``messages``, ``max_steps``, ``time_limit``) over a ``termrl serve`` session."""

    def __init__(self, url: str, token: str | None = None, progress: float = 1.0, phase: Phase | None = None,
                 message_timeout_s: float = 3600.0):
        self.url, self.token, self.progress, self._phase = url, token, progress, phase
        self.message_timeout_s = message_timeout_s
        self.client = None
        self.task = None
        """The episode's task as the server named it: ``id`` and ``meta`` (seed, split, family)."""
        self.outcome: Outcome | None = None
        self.steps: list[StepRecord] = []
        self.messages: list[dict] = []
        self.max_steps = 0
        self.time_limit = 0.0
        self._last = ""

    @property
    def box(self):
        """The session while an episode runs (``TerminalEnv.box``: None once it is over)."""
        return self.client

    def reset(self, task_id: str) -> tuple[str, dict]:
        """Open a session and start an episode of ``task_id``. HarnessError: the server cannot be
        reached, refuses the session or fails to start the sandbox. RemoteError: it does not serve
        the task."""
        self.close()
        self.outcome, self.steps, self.messages = None, [], []
        self.task = SimpleNamespace(id=task_id, meta=SimpleNamespace(seed=None, split="train", family=""))
        client = TermrlEnvClient(self.url, self.token, message_timeout_s=self.message_timeout_s).sync()
        try:
            client.connect()
            result = client.reset(task_id=task_id, progress=self.progress)
        except Exception as e:
            _close_quietly(client)
            if _refused_for_content(e):
                raise RemoteError(f"{self.url} refused task {task_id!r}: {e}") from e
            raise HarnessError(f"{self.url}: {type(e).__name__}: {e}") from e
        obs = result.observation
        if result.done:  # the server could not start the sandbox
            _close_quietly(client)
            raise HarnessError(f"{self.url}: {obs.error or 'the episode ended at reset'}")
        self.client = client
        self.task.meta = SimpleNamespace(**{"seed": None, "split": "train", "family": "", **obs.task_meta})
        self.messages = obs.messages
        self.max_steps, self.time_limit = int(obs.limits["max_steps"]), obs.limits["time_limit_s"]
        return obs.text, {"task_id": obs.task_id}

    def step(self, reply: Reply | str | Action | TermrlAction) -> tuple[str, float | None, bool, bool, dict]:
        """``TerminalEnv.step`` on the server (a reply, its text, a parsed ``Action`` or a ``TermrlAction``);
        a lost session ends the episode as a harness failure."""
        if self.client is None or self.outcome is not None:
            raise RuntimeError("step() needs an episode in progress: call reset() first")
        action = reply if isinstance(reply, (Action, TermrlAction)) else TermrlAction(
            reply=reply.text if isinstance(reply, Reply) else reply)
        try:
            with self._timed("environment"):
                result = self.client.step(action)
        except Exception as e:  # noqa: BLE001 - a lost server is the harness's failure, never the agent's
            return self._end(harness_failure(self.task.id, HarnessError(f"{self.url}: {type(e).__name__}: {e}"),
                                             "step"), self._last)
        obs = result.observation
        self._last = obs.text
        if not result.done:
            return obs.text, 0.0, False, False, {"step": obs.step - 1}
        messages, self.steps = episode_from_json(obs.episode) if obs.episode else ([], [])
        self.messages = messages or self.messages
        return self._end(outcome_from_json(obs.outcome), obs.text)

    def _end(self, outcome: Outcome, text: str) -> tuple[str, float | None, bool, bool, dict]:
        self.outcome = outcome
        self.close()
        info = {"outcome": outcome, "ending": outcome.ending, "evidence": outcome.evidence,
                "findings": list(outcome.findings)}
        return text, outcome.total, outcome.ending.terminated, outcome.ending.truncated, info

    def close(self) -> None:
        """End the session: the server closes the episode's sandbox. Idempotent."""
        client, self.client = self.client, None
        if client is not None:
            _close_quietly(client)

    def abandon(self) -> None:
        """``close`` for a finalizer: asks the client's own event loop to close the session and stop,
        waiting for nothing and starting no thread (a finalizer may run inside another thread's start)."""
        client, self.client = self.client, None
        loop = getattr(client, "_loop", None)
        if loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(client.async_client.close(), loop)
            loop.call_soon_threadsafe(loop.stop)

    def _timed(self, name: str):
        return self._phase(name) if self._phase else contextlib.nullcontext()


def _close_quietly(client) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001, S110 - the session is gone either way
        pass


class RemoteToolEnv(TerminalToolEnv):
    """``TerminalToolEnv`` whose episodes play on a ``termrl serve`` server: the same tools (``bash``,
    ``write_file``, with the same schemas), the same observations and lifecycle, the same
    ``Outcome`` for the reward functions."""

    def __init__(self, url: str, token: str | None = None, phase: Phase | None = None,
                 message_timeout_s: float = 3600.0):
        super().__init__(phase=phase)
        self.env = RemoteTerminalEnv(url, token, phase=phase, message_timeout_s=message_timeout_s)

    def _start(self) -> str:
        self._failed_reset, self._finished_with, self._tool_calls, self._calls_before_finish = None, None, 0, 0
        try:
            observation, _ = self.env.reset(self.task_id)
        except HarnessError as e:
            self._failed_reset = harness_failure(self.task_id, e, "reset")
            return f"The environment failed to start ({type(e).__name__}); this episode is not scored."
        return observation

    def __del__(self) -> None:
        try:
            self.env.abandon()
        except Exception:  # noqa: BLE001, S110 - never raise from a finalizer
            pass

    def __repr__(self) -> str:
        return f"RemoteToolEnv({self.task_id!r}, episode={self.episode}, url={self.env.url!r})"


class RemoteEnvironmentFactory:
    """TRL's ``environment_factory`` for episodes on ``termrl serve`` servers at ``urls`` (each new
    environment takes the next url in turn). ``token``: the servers' bearer token."""

    def __init__(self, urls: str | Sequence[str], token: str | None = None, phase: Phase | None = None,
                 message_timeout_s: float = 3600.0):
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        if not self.urls:
            raise ValueError("RemoteEnvironmentFactory needs at least one server url")
        self.token, self.phase, self.message_timeout_s = token, phase, message_timeout_s
        self._next = itertools.cycle(self.urls)
        self._lock = threading.Lock()
        self._made: list[RemoteToolEnv] = []

    def __call__(self) -> RemoteToolEnv:
        with self._lock:
            env = RemoteToolEnv(next(self._next), self.token, self.phase, self.message_timeout_s)
            self._made.append(env)
        return env

    @property
    def environments(self) -> list[RemoteToolEnv]:
        return list(self._made)

    def close(self) -> None:
        for env in self.environments:
            env._close()


__all__ = ["RemoteEnvironmentFactory", "RemoteError", "RemoteTerminalEnv", "RemoteToolEnv", "TermrlEnvClient"]
