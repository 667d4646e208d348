"""``termrl cache list|prune``: the built task environments (``termrl.tasks.pyenv``)."""

from __future__ import annotations

import json
import time
from typing import Optional

import typer
from rich.table import Table

from termrl.cli.output import CommandConsole, emit_json
from termrl.tasks import pyenv

app = typer.Typer(help="The cache of built task environments (TERMRL_CACHE).", no_args_is_help=True)
console = CommandConsole()
err = CommandConsole(stderr=True)


def _rows(envs) -> list[dict]:
    return [{"path": str(c.path), "kind": c.kind, "contents": list(c.requirements), "size_bytes": c.size_bytes,
             "last_used": round(c.last_used, 3)} for c in envs]


@app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help='Print {"cache", "limit_bytes", "usage_bytes", '
                                                                  '"environments"}')) -> None:
    """Every built environment, least recently used first, and the cache's size limit."""
    limit = _limit(None)
    envs = pyenv.cached()
    if as_json:
        emit_json(json.dumps({"cache": str(pyenv.cache_root()), "limit_bytes": limit, "usage_bytes": pyenv.usage(),
                              "environments": _rows(envs)}))
        return
    table = Table(title=f"{pyenv.cache_root()}: {len(envs)} environments, "
                        f"{pyenv.usage() / 2**30:.1f} of {limit / 2**30:.1f} GiB on disk")
    for col in ("environment", "kind", "contents", "size", "last used"):
        table.add_column(col, overflow="fold")
    for c in envs:
        table.add_row(c.path.name, c.kind, " ".join(c.requirements), f"{c.size_bytes / 2**20:.0f} MiB",
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(c.last_used)))
    console.print(table)


@app.command("prune")
def prune_cmd(
    max_size: Optional[str] = typer.Option(None, "--max-size", help="Keep at most this much (500M, 20G); "
                                           "default TERMRL_CACHE_MAX, else 50G."),
    everything: bool = typer.Option(False, "--all", help="Delete every environment."),
    as_json: bool = typer.Option(False, "--json", help='Print {"deleted": [...], "freed_bytes"}'),
) -> None:
    """Delete the least recently used environments until the cache fits its limit. Run it when no
    other termrl run is using the cache: an environment a live sandbox mounts would vanish under it."""
    before = pyenv.usage()
    gone = pyenv.prune(0 if everything else _limit(max_size))
    freed = before - pyenv.usage()  # what went from the disk: shared files stay while an environment links them
    if as_json:
        emit_json(json.dumps({"deleted": _rows(gone), "freed_bytes": freed}))
    else:
        console.print(f"deleted {len(gone)} environments, {freed / 2**20:.0f} MiB freed")


def _limit(text: str | None) -> int:
    try:
        return pyenv.parse_size(text, "--max-size") if text else pyenv.max_bytes()
    except ValueError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(2)
