"""The ``termrl`` command: one module per command group."""

from __future__ import annotations

import os
import re
import sys

import typer
import typer.core

from termrl.cli import audit, cache, checks, eval, judge, report, sandbox, serve, tasks, tokenizers, train, verify
from termrl.cli.output import json_only_stdout, quiet_on_closed_pipe


def _flags_take_no_value(typer_option: type) -> None:
    """Typer's rich help prints a type after every option, flags too (``--json <bool>``, ``--help
    <bool>``), as if they took a value; its plain help leaves flags bare. Make the rich help agree."""
    type_of = getattr(typer_option, "display_type_rich", None)
    if type_of is None or getattr(type_of, "flags_bare", False):
        return  # a typer without the method (older or newer): nothing to mend

    def display_type_rich(self, ctx):
        return None if self.is_flag else type_of(self, ctx)

    display_type_rich.flags_bare = True
    typer_option.display_type_rich = display_type_rich


_flags_take_no_value(typer.core.TyperOption)

app = typer.Typer(help="termrl: RL for terminal and coding agents on execution-verified rewards.",
                  no_args_is_help=True, add_completion=False)
app.add_typer(tasks.app, name="tasks")
tasks.app.command("validate")(checks.validate_cmd)
tasks.app.command("strength")(checks.strength_cmd)
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(cache.app, name="cache")
app.add_typer(tokenizers.app, name="tokenizers")
app.add_typer(judge.app, name="judge")
app.command("verify")(verify.verify_cmd)
app.add_typer(verify.reward_app, name="reward")
app.command("audit")(audit.audit_cmd)
app.command("eval")(eval.eval_cmd)
app.command("train")(train.train_cmd)
app.command("quickstart")(train.quickstart_cmd)
app.command("report")(report.report_cmd)
app.command("serve")(serve.serve_cmd)


OPTIONAL_VALUES = {"--ray": "local"}
"""Options whose value may be left out, and what they mean then (``--ray`` alone: a local Ray)."""


def with_optional_values(args: list[str]) -> list[str]:
    """``args`` with the value of each option of ``OPTIONAL_VALUES`` given alone filled in.

    >>> with_optional_values(["eval", "--ray", "--json"])
    ['eval', '--ray', 'local', '--json']
    >>> with_optional_values(["eval", "--ray", "10.0.0.1:6379"])
    ['eval', '--ray', '10.0.0.1:6379']
    >>> with_optional_values(["audit", "--ray", "logs-count:0-9"])  # a suite, not an address
    ['audit', '--ray', 'local', 'logs-count:0-9']
    """
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        value = args[i + 1] if i + 1 < len(args) else None
        if arg in OPTIONAL_VALUES and (value is None or not _an_address(value)):
            out.append(OPTIONAL_VALUES[arg])
    return out


def _an_address(text: str) -> bool:
    """HOST:PORT, ray://HOST:PORT, auto or local: what ``--ray`` takes."""
    return text in ("auto", "local") or re.fullmatch(r"(ray://)?[\w.\-]+:\d+", text) is not None


GENERATING = ("eval", "train")
"""Commands that may generate with CTranslate2 (``ct2:`` policies, ``[eval] backend``)."""


def restart_with_malloc_arena(args: list[str]) -> None:
    """Run a generating command again in a process that starts with one malloc arena
    (``MALLOC_ARENA_MAX=1``; ``TERMRL_TUNE_MALLOC=0`` opts out). glibc fixes its arena limit when the
    first thread needs an arena, so ``termrl.policies.ct2.tune_malloc`` cannot set it once threads
    have run; with its own arena each CTranslate2 thread gives its buffers back to the kernel every
    decoding step (a batch of 8 long prompts: 7.7 million page faults against 0.5 million, and
    17.3 against 22.0 tokens a second, ``bench/ct2_speed.py``)."""
    if (args[:1] and args[0] in GENERATING and sys.platform.startswith("linux")
            and "MALLOC_ARENA_MAX" not in os.environ and os.environ.get("TERMRL_TUNE_MALLOC", "1") != "0"):
        os.environ["MALLOC_ARENA_MAX"] = "1"
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def main() -> None:
    args = with_optional_values(sys.argv[1:])
    restart_with_malloc_arena(args)
    with quiet_on_closed_pipe():  # `termrl tasks list | head` ends quietly, with status 0
        if "--json" not in args:
            app(args=args)
            return
        with json_only_stdout():  # the JSON alone on stdout, whatever Ray or a library prints
            app(args=args)
