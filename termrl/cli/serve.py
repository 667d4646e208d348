"""``termrl serve``: a suite's episodes as an OpenEnv environment server (``termrl.serve``)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from termrl.cli.output import CommandConsole, say_skipped
from termrl.env import EnvConfig
from termrl.reward import SpecError, load_spec
from termrl.tasks import envs
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, resolve

err = CommandConsole(stderr=True)
TOKEN_ENV = "TERMRL_SERVE_TOKEN"


def _fail(message: str) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


def _token(token_file: Path | None) -> str | None:
    if token_file is None:
        return os.environ.get(TOKEN_ENV) or None
    try:
        token = token_file.read_text().strip()
    except OSError as e:
        _fail(f"--token-file {token_file}: {e.strerror or e}; give a readable file holding the token")
    if not token:
        _fail(f"--token-file {token_file}: the file is empty; write the token clients must present into it")
    return token


def serve_cmd(
    suite: str = typer.Option(..., "--suite", help="The tasks served: builtin, humaneval, mbpp, FAMILY:SEEDS or "
                                                   "a directory, as termrl eval takes them."),
    spec: str = typer.Option("staged", "--spec", help="Reward spec scoring each episode: preset name or TOML file."),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on. Another than loopback needs a "
                                                         "token (--token-file or TERMRL_SERVE_TOKEN)."),
    port: int = typer.Option(8000, "--port", help="TCP port (0: any free one, printed when listening)."),
    max_sessions: int = typer.Option(8, "--max-sessions", help="Episodes (sandboxes) at once; one more session "
                                                               "is refused, not queued."),
    session_timeout: float = typer.Option(600.0, "--session-timeout",
                                          help="Seconds a session may stay idle before its sandbox is closed "
                                               "(0: never)."),
    token_file: Path | None = typer.Option(None, "--token-file", help="A file holding the bearer token "
                                                                         "clients must present (default: "
                                                                         "TERMRL_SERVE_TOKEN, else none)."),
    max_steps: int | None = typer.Option(None, "--max-steps", help="Replies per episode (default: task's)."),
    time_limit: float | None = typer.Option(None, "--time-limit", help="Seconds per episode (default: task's)."),
    backend: str = typer.Option("bwrap", "--backend", help="Sandbox backend: bwrap, docker or local."),
    action_format: str = typer.Option("tool_call", "--action-format",
                                      help="The system prompt episodes open with: tool_call, native, json, bash "
                                           "or example (steps take a reply in any of them, or a tool call)."),
    max_message_mb: float = typer.Option(8.0, "--max-message-mb", help="Largest message a client may send."),
) -> None:
    """Serve SUITE's episodes over OpenEnv (WebSocket /ws): reset, step, state; rewards from SPEC."""
    from termrl.serve.server import Served, ServeError, check_listen, serve  # heavy: openenv-core, fastapi

    token = _token(token_file)
    try:
        check_listen(host, token)
        env = EnvConfig(max_steps=max_steps, time_limit_s=time_limit, backend=backend, action_format=action_format)
        reward_spec = load_spec(spec)
        tasks, _ = envs.runnable(envs.prepare(resolve(suite)), say_skipped(err))
        served = Served(tasks, reward_spec, env, max_sessions=max_sessions,
                        session_timeout_s=session_timeout or None, token=token,
                        max_message_bytes=int(max_message_mb * (1 << 20)))
    except (ServeError, SpecError, SuiteError, TaskFormatError, ValueError, OSError) as e:
        _fail(str(e))

    def ready(bound: int) -> None:
        err.print(f"termrl serve: {len(served.tasks)} tasks of {suite} on http://{host}:{bound} "
                  f"(WebSocket /ws, at most {max_sessions} sessions{', token required' if token else ''})")

    serve(served, host=host, port=port, on_ready=ready)
