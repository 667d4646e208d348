"""``termrl serve``: termrl environments behind an OpenEnv server (``openenv-core``'s own classes).

Each WebSocket session (``/ws``) is one ``TerminalEnv`` at a time, in a sandbox of its own: ``reset``
starts an episode of a served task (``task_id``, else the suite's task ``seed`` modulo its size,
else the next in turn) and closes the session's previous one; ``step`` takes a reply or a tool
call (``TermrlAction``); the last step's observation carries the ending, the reward, its
components and the hack findings, scored by the server's spec at ``progress`` (a reset argument,
default 1.0). Closing or dropping the session closes its sandbox; so does the idle-session reaper
(``session_timeout_s``). At most ``max_sessions`` sessions at once: one more is refused with
OpenEnv's ``CAPACITY_REACHED`` error, never queued.

The app is OpenEnv's production mode: ``/ws``, ``/health``, ``/schema``, ``/metadata`` and
``/mcp`` (whose ``openenv/session/*`` methods answer an unknown session id with an error);
OpenEnv's stateless ``/reset`` and ``/step`` are left out (an episode lives in a session). With a
``token``, every route but ``/health`` needs ``Authorization: Bearer <token>``; without one the
server listens on 127.0.0.1 only (``serve`` refuses another interface). Frames over
``max_message_bytes`` close the connection (1009); HTTP bodies over it get 413.
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from openenv.core.env_server.http_server import HTTPEnvServer
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata, ServerMode

from termrl.actions import TOOL_SCHEMAS
from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import harness_failure
from termrl.protocols import HarnessError, Outcome, Task
from termrl.reward.spec import RewardSpec, as_spec
from termrl.sandbox.bwrap import sweep_stale
from termrl.serve.protocol import (
    TermrlAction,
    TermrlObservation,
    TermrlState,
    episode_to_json,
    outcome_to_json,
)

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class ServeError(ValueError):
    """A server that cannot start as asked; says what to change."""


@dataclass
class Served:
    """What a server serves: its tasks (by id, in suite order), the spec scoring its episodes, the
    episodes' limits and sandbox, and its session bounds."""

    tasks: Sequence[Task]
    spec: RewardSpec | str | None = "staged"
    env: EnvConfig = field(default_factory=EnvConfig)
    max_sessions: int = 8
    session_timeout_s: float | None = 600.0
    """Seconds a session may stay idle before its sandbox is closed; None: never."""
    token: str | None = None
    max_message_bytes: int = 8 << 20
    name: str = "termrl"

    def __post_init__(self):
        if not self.tasks:
            raise ServeError("no tasks to serve: give a suite with at least one task")
        if self.max_sessions < 1:
            raise ServeError(f"max_sessions must be 1 or more, got {self.max_sessions}")
        self.spec = as_spec(self.spec) if self.spec is not None else None
        self.by_id: dict[str, Task] = {t.id: t for t in self.tasks}
        self._turn = itertools.count()
        self.resets = 0
        """Episodes asked for so far (resets), in every session."""
        self._lock = threading.Lock()

    def pick(self, task_id: str | None, seed: int | None) -> Task:
        """The task a reset asks for: by id, else the ``seed``-th (modulo), else the next in turn."""
        with self._lock:
            self.resets += 1
        if task_id is not None:
            task = self.by_id.get(task_id)
            if task is None:
                some = ", ".join(list(self.by_id)[:5])
                raise ValueError(f"unknown task_id {task_id!r}: this server serves {len(self.by_id)} tasks "
                                 f"({some}{', ...' if len(self.by_id) > 5 else ''}); pass one of them, or a "
                                 f"seed, or nothing for the next")
            return task
        if seed is None:
            with self._lock:
                seed = next(self._turn)
        return self.tasks[seed % len(self.tasks)]


class TermrlEnvironment(Environment[TermrlAction, TermrlObservation, TermrlState]):
    """One session's episodes: a ``TerminalEnv`` scored by the served spec."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: Served):
        super().__init__()
        self.served = served
        self.env: TerminalEnv | None = None
        self._state = TermrlState(episode_id=None, step_count=0)
        self._failed: Outcome | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None,
              progress: float = 1.0, **kwargs) -> TermrlObservation:
        task = self.served.pick(task_id, seed)
        if not 0.0 <= float(progress) <= 1.0:
            raise ValueError(f"progress must be within [0, 1] (the training progress the spec's schedules "
                             f"read), got {progress}")
        self.close()
        self._failed = None
        self.env = TerminalEnv(self.served.env, spec=self.served.spec, progress=float(progress))
        self._state = TermrlState(episode_id=episode_id or uuid.uuid4().hex, step_count=0, task_id=task.id)
        limits = {"max_steps": float(self.served.env.max_steps or task.limits.max_steps),
                  "time_limit_s": float(self.served.env.time_limit_s or task.limits.agent_timeout_sec)}
        try:
            text, _ = self.env.reset(task)
        except HarnessError as e:
            self._failed = harness_failure(task.id, e, "reset")
            return self._ended(self._failed, f"The environment failed to start ({type(e).__name__}).")
        meta = {"seed": task.meta.seed, "split": task.meta.split, "family": task.meta.family}
        return TermrlObservation(text=text, task_id=task.id, task_meta=meta, messages=[dict(m) for m in self.env.messages],
                                 tools=[dict(t) for t in TOOL_SCHEMAS], limits=limits, reward=0.0)

    def step(self, action: TermrlAction, timeout_s: float | None = None, **kwargs) -> TermrlObservation:
        if self.env is None or self._failed is not None or self.env.outcome is not None:
            raise RuntimeError("no episode in progress in this session: reset first (the last one ended)")
        text, _, terminated, truncated, _ = self.env.step(action.step_input())
        self._state.step_count = len(self.env.steps)
        if terminated or truncated:
            return self._ended(self.env.outcome, text)
        return TermrlObservation(text=text, task_id=self._state.task_id, step=len(self.env.steps), reward=0.0)

    def _ended(self, outcome: Outcome, text: str) -> TermrlObservation:
        self._state.ending, self._state.done = outcome.ending.value, True
        steps = self.env.steps if self.env is not None else []
        messages = [dict(m) for m in self.env.messages[:2]] if self.env is not None else []
        return TermrlObservation(
            text=text, task_id=self._state.task_id or "", step=len(steps), done=True, reward=outcome.total,
            ending=outcome.ending.value, passed=bool(outcome.evidence.passed) if outcome.verified else None,
            components=outcome.reward.component_dicts() if outcome.reward is not None else {},
            findings=[{"kind": f.kind, "severity": f.severity, "message": f.message} for f in outcome.findings],
            error=outcome.error, outcome=outcome_to_json(outcome), episode=episode_to_json(messages, steps))

    @property
    def state(self) -> TermrlState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self.served.name, version="1",
                                   description=f"termrl terminal tasks ({len(self.served.tasks)} served): "
                                               "bash and write_file tool calls or model replies, rewards "
                                               "from hidden tests and hack detectors")

    def close(self) -> None:
        if self.env is not None:
            self.env.close()


def make_app(served: Served):
    """The FastAPI app serving ``served`` (OpenEnv's ``HTTPEnvServer`` routes, production mode),
    behind the token and size checks."""
    from fastapi import FastAPI  # heavy: fastapi (openenv-core's)

    sweep_stale()  # sandboxes a killed server left behind
    app = FastAPI(title=f"{served.name}: termrl environments (OpenEnv)")
    server = HTTPEnvServer(lambda: TermrlEnvironment(served), TermrlAction, TermrlObservation,
                           concurrency_config=ConcurrencyConfig(max_concurrent_envs=served.max_sessions,
                                                                session_timeout=served.session_timeout_s))
    server.register_routes(app, mode=ServerMode.PRODUCTION)
    app.state.openenv = server
    return Guard(app, served.token, served.max_message_bytes)


class Guard:
    """ASGI middleware: the bearer token (every route but ``/health``) and the HTTP body limit."""

    def __init__(self, app, token: str | None, max_body: int):
        self.app, self.token, self.max_body = app, token, max_body
        self.state = app.state

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or scope.get("path") == "/health":
            return await self.app(scope, receive, send)
        if self.token is not None and not self._authorised(scope):
            if scope["type"] == "websocket":
                return await send({"type": "websocket.close", "code": 1008, "reason": "unauthorised"})
            return await _answer(send, 401, b'{"detail": "unauthorised: send Authorization: Bearer <token>"}')
        if scope["type"] == "http":
            size = dict(scope.get("headers") or []).get(b"content-length")
            if size is not None and (not size.isdigit() or int(size) > self.max_body):
                return await _answer(send, 413, b'{"detail": "request body over the server\'s limit"}')
            return await self.app(scope, receive, send)
        from starlette.websockets import WebSocketDisconnect  # heavy: starlette (fastapi's)

        try:
            return await self.app(scope, receive, send)
        except WebSocketDisconnect:
            # the client left first: OpenEnv's endpoint has closed the session (and its sandbox), then
            # closes the socket again and fails on it; nothing is lost, nothing to log
            return

    def _authorised(self, scope) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())


async def _answer(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def check_listen(host: str, token: str | None) -> None:
    """Refuse a non-loopback interface without a token."""
    if host not in LOOPBACK and not token:
        raise ServeError(f"--host {host} listens beyond this machine: give a token (--token-file FILE or "
                         f"TERMRL_SERVE_TOKEN) that clients must present, or keep the default 127.0.0.1")


def _server(served: Served, host: str, port: int, log_level: str):
    import uvicorn  # heavy: uvicorn (openenv-core's)

    check_listen(host, served.token)
    return uvicorn.Server(uvicorn.Config(make_app(served), host=host, port=port, log_level=log_level,
                                         ws_max_size=served.max_message_bytes, ws="websockets-sansio",
                                         lifespan="on"))


def serve(served: Served, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning",
          on_ready=None) -> None:
    """Run the server until interrupted. ``on_ready(port)``: called once it listens (port 0: any free)."""
    server = _server(served, host, port, log_level)
    if on_ready is not None:
        started = server.startup

        async def startup(sockets=None):
            await started(sockets)
            on_ready(server.servers[0].sockets[0].getsockname()[1])

        server.startup = startup
    server.run()


@contextlib.contextmanager
def running(served: Served, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> Iterator[str]:
    """The server in a thread of this process while the block runs; yields its url
    (``http://HOST:PORT``). At the end it stops and its sessions' sandboxes are closed."""
    server = _server(served, host, port, log_level)
    thread = threading.Thread(target=server.run, name="termrl-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise ServeError(f"the server did not start on {host}:{port}")
        time.sleep(0.05)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)


__all__ = ["LOOPBACK", "ServeError", "Served", "TermrlEnvironment", "check_listen", "make_app", "running", "serve"]
