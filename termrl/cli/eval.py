"""``termrl eval``: run a policy on a suite and report pass@k, rewards, hacks and bad cases."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from termrl.cli.output import emit_json, runnable

console = Console()
err = Console(stderr=True)

RESUME_KEYS = ("policy", "model", "suite", "spec", "samples", "action_format")
"""What must match for ``--resume`` to continue a run instead of mixing two."""

EPISODE_KEYS = ("max_steps", "time_limit", "temperature", "max_new_tokens", "dtype", "stop_at_action", "judge",
                "judge_model")
"""The options that decide how an episode is played and scored: they must match too, where the stored
run recorded them (runs made before it was recorded them carry none, and are not checked)."""


LOCAL_MODELS = ("hf",)
"""Policies that load a model into the process: one per episode on a cluster, so not with --ray."""


def _progress_line(done: int, total: int, already: int, elapsed: float, last: str) -> None:
    """``eval 43/600 (12 this run in 6.1 min, 1.97/min, about 283 min left): TASK: pass`` on stderr."""
    ran = done - already
    rate = ran / (elapsed / 60) if elapsed > 0 else 0.0
    left = f", about {(total - done) / rate:.0f} min left" if rate > 0 and done < total else ""
    print(f"eval {done}/{total} ({ran} this run in {elapsed / 60:.1f} min, {rate:.2f}/min{left}): {last}",
          file=sys.stderr, flush=True)


def _same_setting(key: str, old, new) -> bool:
    """A stored run's setting against this call's: a local model's path matches through links and
    ``~`` (``hf:/work/qwen05`` and the folder it links to are one model).

    >>> _same_setting("policy", "hf:/tmp", "hf:/tmp/"), _same_setting("policy", "hf:/tmp", "hf:/usr")
    (True, False)
    """
    if old == new:
        return True
    if key != "policy" or not isinstance(old, str) or not isinstance(new, str):
        return False
    (kind, _, a), (kind2, _, b) = old.partition(":"), new.partition(":")
    if kind != kind2 or kind not in LOCAL_MODELS or not a or not b:
        return False
    return os.path.realpath(os.path.expanduser(a)) == os.path.realpath(os.path.expanduser(b))


def _changed(old: dict, new: dict) -> list[str]:
    """The settings of this call that differ from the stored run's (``old``), as ``KEY: OLD now NEW``:
    every one of ``RESUME_KEYS``, and those of ``EPISODE_KEYS`` the stored run recorded.

    >>> _changed({"suite": "builtin", "temperature": 0.0}, {"suite": "builtin", "temperature": 0.7, "dtype": None})
    ['temperature: 0.0 now 0.7']
    """
    keys = [*RESUME_KEYS, *(key for key in EPISODE_KEYS if key in old)]
    return [f"{key}: {old.get(key)!r} now {new.get(key)!r}" for key in keys
            if not _same_setting(key, old.get(key), new.get(key))]


def _stretch(agent) -> dict:
    """This call's part of the run: when it started and, for a model loaded here, the dtype and
    device it generates in (``--dtype auto`` decides the dtype by machine, so two stretches of one
    run can differ, and ``_run.json`` says so)."""
    stretch = {"started": time.time()}
    model = getattr(agent, "model", None)
    if model is not None and hasattr(model, "dtype"):
        stretch.update(dtype=str(model.dtype).removeprefix("torch."), device=str(getattr(agent, "device", "")))
    return stretch


def _precision_note(stretches: list[dict]) -> str | None:
    """A warning when this stretch (the last) generates in another dtype than an earlier one."""
    now = stretches[-1].get("dtype")
    before = sorted({s["dtype"] for s in stretches[:-1] if s.get("dtype")} - {now})
    if now is None or not before:
        return None
    return (f"this stretch generates in {now}, earlier stretches of the run in {', '.join(before)} (--dtype auto "
            f"decides by machine); pass --dtype {before[0]} to match them")


def _fail(message: str) -> None:
    err.print(f"[red]error:[/] {message}")
    raise typer.Exit(2)


def eval_cmd(
    policy: str = typer.Option(..., "--policy", help="oracle, nop, script:FILE, hf:PATH or openai:BASE_URL."),
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
                                        help="hf: end each reply at its first whole action (the rest is never "
                                             "run); saves the tokens small models spend explaining."),
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
    from termrl.env import EnvConfig
    from termrl.eval import bad_cases, render_bad_cases, render_summary, summarize
    from termrl.policies import make_policy
    from termrl.reward import SpecError, load_spec
    from termrl.rollout import store as stores
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.tasks import envs
    from termrl.tasks.formats import TaskFormatError
    from termrl.tasks.suites import SuiteError, resolve

    samples = samples if samples is not None else k
    if k < 1 or samples < 1:
        _fail("-k and --samples must be at least 1")
    if k > samples:
        _fail(f"-k {k} needs at least {k} samples per task; pass --samples {k} or more")
    if resume and out is None:
        _fail("--resume needs --out DIR, the run directory to finish")
    out = out or Path("runs") / f"eval-{time.strftime('%Y%m%d-%H%M%S')}"
    meta = {"policy": policy, "model": model, "suite": suite, "spec": spec, "samples": samples,
            "action_format": action_format, "max_steps": max_steps, "time_limit": time_limit,
            "temperature": temperature, "max_new_tokens": max_new_tokens, "dtype": dtype,
            "stop_at_action": stop_at_action, "judge": judge, "judge_model": judge_model}
    try:
        old = stores.read_meta(out)
    except stores.StoreError as e:
        _fail(str(e))
    if old is not None and not resume:
        _fail(f"{out} already holds a run; pass --resume to finish it or choose another --out")
    if old is not None:
        old = {"action_format": "tool_call", **old}  # runs from before the option used that format
        changed = _changed(old, meta)
        if changed:
            _fail(f"{out / stores.META_NAME} was made with different settings ({'; '.join(changed)}); "
                  "resume with the same ones or choose another --out")
    given = (("temperature", temperature), ("max_new_tokens", max_new_tokens), ("dtype", dtype),
             ("stop_at_action", stop_at_action or None))
    options = {key: value for key, value in given if value is not None}
    if ray is not None and policy.split(":", 1)[0] in LOCAL_MODELS:
        _fail(f"--ray with --policy {policy}: every episode on the cluster would load the model again; serve it "
              "with vLLM (`vllm serve PATH`) and pass --policy openai:http://HOST:8000/v1, or drop --ray")
    try:
        reward_spec = load_spec(spec)
        entries = envs.prepare(resolve(suite))
        agent = make_policy(policy, model=model, **options)
    except (SpecError, SuiteError, TaskFormatError, ValueError, OSError) as e:
        _fail(str(e))
    tasks, skipped = runnable(entries, err)
    if not tasks:
        _fail(f"suite {suite}: no task can run ({len(skipped)} skipped, each said above); "
              f"`termrl tasks validate {suite}` checks them")
    try:
        store = stores.TrajectoryStore(out)
        stretches = [*(old or {}).get("stretches", []), _stretch(agent)]
        stores.write_meta(out, {**meta, "k": k, "started": old["started"] if old else time.time(),
                                "stretches": stretches})
    except (stores.StoreError, OSError) as e:
        _fail(str(e))
    try:
        env = EnvConfig(max_steps=max_steps, time_limit_s=time_limit, backend=backend,
                        action_format=action_format)
    except ValueError as e:
        _fail(f"--action-format: {e}")
    judged = None
    if judge is not None:
        if ray is not None:
            _fail("--judge does not run on a Ray cluster yet: drop --ray, or --judge")
        from termrl.reward.judge import make_judge

        try:
            judged = make_judge(judge, model=judge_model, cache_dir=out / "judge-cache")
        except (ValueError, OSError) as e:
            _fail(f"--judge: {e}")
    note = _precision_note(stretches)
    if note:
        err.print(f"[yellow]warning:[/] {note}")
    config = RolloutConfig(samples=samples, workers=workers, spec=reward_spec, env=env, judge=judged)
    accountant = Accountant()
    already = len(store.done_ids())
    progress = Progress(TextColumn("eval {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("{task.fields[last]}"), console=err, transient=as_json)
    with progress:
        bar = progress.add_task(f"{policy} on {suite}", total=len(tasks) * samples, completed=already, last="")

        total, started, done = len(tasks) * samples, time.monotonic(), [already]

        def advance(traj) -> None:
            mark = "pass" if traj.passed else (traj.ending if traj.ending != "submitted" else "fail")
            progress.update(bar, advance=1, last=f"{traj.task_id}: {mark}")
            done[0] += 1
            if not err.is_terminal:  # a log file: one line per episode, where a bar would show nothing
                _progress_line(done[0], total, already, time.monotonic() - started, f"{traj.task_id}: {mark}")

        try:
            with accountant:
                if ray is None:
                    run_rollouts(tasks, agent, config, store=store, accountant=accountant, on_episode=advance,
                                 keep=False)
                else:
                    from termrl.rollout.ray_backend import run_rollouts_ray

                    run_rollouts_ray(tasks, policy, config, store=store, address=ray, on_episode=advance,
                                     keep=False, model=model, **options)
        except stores.StoreError as e:
            progress.stop()
            err.print(f"[red]error:[/] {e}")
            raise typer.Exit(3)
        except (ConnectionError, ImportError) as e:
            progress.stop()
            err.print(f"[red]error:[/] --ray: {e}")
            raise typer.Exit(2)
    trajectories = store.read()
    summary = summarize(trajectories, ks=sorted({1, k}))
    summary.update(out=str(out), policy=policy, suite=suite, spec=spec, skipped_tasks=skipped,
                   compute=accountant.summary(), bad_cases=bad_cases(trajectories))
    (out / "_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    if as_json:
        emit_json(json.dumps(summary, default=str))
        return
    console.print(render_summary(summary))
    if summary["bad_cases"]:
        console.print(render_bad_cases(summary["bad_cases"]))
    console.print(accountant.as_table())
    console.print(f"trajectories: {out}")
