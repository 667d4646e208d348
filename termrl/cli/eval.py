"""``termrl eval``: run a policy on a suite and report pass@k, rewards, hacks and bad cases
(``termrl.evaluate`` runs it)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional, Self

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from termrl.cli.output import CommandConsole, emit_json, say_skipped
from termrl.eval import render_bad_cases, render_summary
from termrl.eval.run import EvalConfig, EvalError, evaluate
from termrl.rollout.accounting import as_table
from termrl.rollout.store import StoreError

console = CommandConsole()
err = CommandConsole(stderr=True)


def _progress_line(done: int, total: int, already: int, elapsed: float, last: str) -> None:
    """``eval 43/600 (12 this run in 6.1 min, 1.97/min, about 283 min left): TASK: pass`` on stderr."""
    ran = done - already
    rate = ran / (elapsed / 60) if elapsed > 0 else 0.0
    left = f", about {(total - done) / rate:.0f} min left" if rate > 0 and done < total else ""
    print(f"eval {done}/{total} ({ran} this run in {elapsed / 60:.1f} min, {rate:.2f}/min{left}): {last}",
          file=sys.stderr, flush=True)


class _Bar:
    """The run's progress on stderr: a bar on a terminal, one line per episode in a log file."""

    def __init__(self, what: str, transient: bool):
        self.what = what
        self.progress = Progress(TextColumn("eval {task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=err,
                                 transient=transient)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def start(self, total: int, already: int) -> None:
        self.total, self.already, self.done, self.started = total, already, already, time.monotonic()
        self.progress.start()
        self.bar = self.progress.add_task(self.what, total=total, completed=already, last="")

    def episode(self, traj) -> None:
        mark = "pass" if traj.passed else (traj.ending if traj.ending != "submitted" else "fail")
        self.progress.update(self.bar, advance=1, last=f"{traj.task_id}: {mark}")
        self.done += 1
        if not err.is_terminal:  # a log file: one line per episode, where a bar would show nothing
            _progress_line(self.done, self.total, self.already, time.monotonic() - self.started,
                           f"{traj.task_id}: {mark}")


def _fail(message: str) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


def eval_cmd(
    policy: str = typer.Option(..., "--policy", help="oracle, nop, script:FILE, hf:PATH, ct2:PATH "
                                                      "(CTranslate2, int8), llamacpp:PATH (llama.cpp, "
                                                      "GGUF q8_0) or openai:BASE_URL."),
    suite: str = typer.Option(..., "--suite", help="builtin, humaneval, mbpp, FAMILY:SEEDS or a directory; "
                                                   "a slice after a colon (humaneval:0-39, mbpp:test)."),
    spec: str = typer.Option("staged", "--spec", help="Reward spec: preset name or TOML file."),
    k: int = typer.Option(1, "-k", help="Report pass@k for this k (and pass@1)."),
    samples: Optional[int] = typer.Option(None, "--samples", help="Episodes per task (default: k)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory for trajectories (Parquet)."),
    resume: bool = typer.Option(False, "--resume", help="Finish the run in --out without redoing episodes."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    model: Optional[str] = typer.Option(None, "--model", help="Model name an openai: endpoint serves."),
    workers: int = typer.Option(2, "--workers", help="Episodes (sandboxes) alive at once."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Replies per episode (default: task's)."),
    time_limit: Optional[float] = typer.Option(None, "--time-limit",
                                               help="Seconds of sandbox + generation time per episode "
                                                    "(default: the task's agent timeout)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", help="Sampling temperature (model policies)."),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", help="Tokens per reply (model policies)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="hf: weights dtype: auto, float32 or bfloat16."),
    stop_at_action: bool = typer.Option(False, "--stop-at-action",
                                        help="hf:, ct2:, llamacpp: end each reply at its first whole action (the rest is never "
                                             "run); saves the tokens small models spend explaining."),
    threads: Optional[int] = typer.Option(None, "--threads",
                                          help="ct2:, llamacpp: CPU threads (default: the engine's)."),
    backend: str = typer.Option("bwrap", "--backend", help="Sandbox backend: bwrap, docker or local."),
    action_format: str = typer.Option("tool_call", "--action-format",
                                      help="How the agent is asked to act: tool_call, native, json, bash or "
                                           "example (replies in any of them are understood)."),
    ray: Optional[str] = typer.Option(None, "--ray", metavar="[ADDRESS]",
                                      help="Run the episodes on a Ray cluster: --ray HOST:PORT joins it; --ray "
                                           "alone starts one on this machine. The policy must be scripted or an "
                                           "endpoint (openai:): serve a model with vLLM for a cluster."),
    judge: Optional[str] = typer.Option(None, "--judge",
                                        help="A model judge reads every passing episode (hf:PATH or "
                                             "openai:BASE_URL with --judge-model): its verdict is the evidence's "
                                             "judge stage and the spec's judge component."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model name the --judge endpoint serves."),
) -> None:
    """Evaluate POLICY on SUITE: pass@1, pass@k, rewards, hack findings, error classes, bad cases."""
    try:
        config = EvalConfig(policy=policy, suite=suite, spec=spec, k=k, samples=samples, model=model,
                            workers=workers, max_steps=max_steps, time_limit=time_limit, temperature=temperature,
                            max_new_tokens=max_new_tokens, dtype=dtype, stop_at_action=stop_at_action,
                            threads=threads, backend=backend, action_format=action_format, ray=ray, judge=judge,
                            judge_model=judge_model)
    except EvalError as e:
        _fail(str(e))
    try:
        with _Bar(f"{policy} on {suite}", transient=as_json) as bar:
            summary = evaluate(config, out=out, resume=resume, on_start=bar.start, on_episode=bar.episode,
                               on_skip=say_skipped(err),
                               on_warning=lambda note: err.print(f"[yellow]warning:[/] {note}"))
    except EvalError as e:
        _fail(str(e))
    except StoreError as e:
        err.print(f"[red]error:[/] {e}")
        raise typer.Exit(3)
    except (ConnectionError, ImportError) as e:
        _fail(f"--ray: {e}" if ray is not None else str(e))
    if as_json:
        emit_json(json.dumps(summary, default=str))
        return
    console.print(render_summary(summary))
    if summary["bad_cases"]:
        console.print(render_bad_cases(summary["bad_cases"]))
    console.print(as_table(summary["compute"]))
    console.print(f"trajectories: {summary['out']}")
