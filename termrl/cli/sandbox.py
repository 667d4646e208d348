"""``termrl sandbox run``: one command in a fresh sandbox."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer

from termrl.cli.output import emit_json
from termrl.protocols import HarnessError, Limits
from termrl.sandbox import BACKENDS, make_sandbox
from termrl.tasks.formats.common import read_tree

app = typer.Typer(help="Run commands in sandboxes.", no_args_is_help=True)


@app.command("run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    command: list[str] = typer.Argument(..., help="The command (after --)."),
    workspace: Optional[Path] = typer.Option(None, help="Directory copied in as the working directory "
                                                        "(the original is never modified)."),
    workdir: str = typer.Option("/workspace", help="Path of the working directory inside the sandbox."),
    timeout: float = typer.Option(60.0, help="Wall-clock limit in seconds."),
    memory_mb: int = typer.Option(1024, help="Memory limit of all processes together."),
    backend: str = typer.Option("bwrap", help=f"Sandbox backend: {', '.join(BACKENDS)}."),
    as_json: bool = typer.Option(False, "--json", help="Print exit code, timed_out, stdout/stderr, stop reason."),
) -> None:
    """Run one command in a fresh sandbox and print its output."""
    if workspace is not None and not workspace.is_dir():
        typer.echo(f"error: --workspace {workspace}: not a directory", err=True)
        raise typer.Exit(2)
    if backend not in BACKENDS:
        typer.echo(f"error: --backend {backend!r}: choose one of {', '.join(BACKENDS)}", err=True)
        raise typer.Exit(2)
    box = make_sandbox(backend, workdir=workdir, limits=Limits(memory_mb=memory_mb))
    try:
        box.start()
        if workspace is not None:
            box.put_files(workdir, read_tree(workspace))
        # one argument is a shell command line; several are an argv
        line = command[0] if len(command) == 1 else shlex.join(command)
        res = box.run(["/bin/bash", "-c", line], timeout=timeout)
    except HarnessError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(3)
    finally:
        box.close()
    if as_json:
        emit_json(json.dumps(res.to_dict()))
    else:
        sys.stdout.write(res.stdout)
        sys.stderr.write(res.stderr)
        if res.stop.value != "exited":
            typer.echo(f"[termrl] command stopped: {res.stop.value}", err=True)
    raise typer.Exit(res.exit_code if 0 <= res.exit_code < 256 else 1)
