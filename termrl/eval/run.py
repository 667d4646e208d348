"""``evaluate``: play a policy on a suite, store every episode and summarize the run; what
``termrl eval`` runs.

A run is one directory: its episodes (Parquet parts, ``termrl.rollout.store``), ``_run.json``
(the settings, and one stretch per call that played episodes) and ``_summary.json``. With
``resume=True`` a call finishes the run there without playing an episode twice; it refuses a
run made with other settings, since two runs mixed in one directory would measure neither.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from termrl.actions import action_format
from termrl.env import EnvConfig
from termrl.eval import bad_cases, summarize
from termrl.policies import make_policy
from termrl.provenance import backend, harness
from termrl.reward import SpecError, load_spec
from termrl.reward.judge import make_judge
from termrl.rollout.accounting import Accountant
from termrl.rollout.ray_backend import run_rollouts_ray
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.tasks import envs
from termrl.tasks.formats import TaskFormatError
from termrl.tasks.suites import SuiteError, resolve

if TYPE_CHECKING:
    from termrl.protocols import Trajectory

log = logging.getLogger(__name__)

RESUME_KEYS = ("policy", "model", "suite", "spec", "samples", "action_format")
"""What must match for a resumed run to continue instead of mixing two."""

EPISODE_KEYS = ("max_steps", "time_limit", "temperature", "max_new_tokens", "dtype", "stop_at_action", "judge",
                "judge_model")
"""The settings that decide how an episode is played and scored: they must match too, where the
stored run recorded them (runs stored before they were recorded carry none, and are not checked)."""

LOCAL_MODELS = ("hf", "ct2", "llamacpp")
"""Policies that load a model into the process: one per episode on a cluster, so not with ``ray``."""


class EvalError(ValueError):
    """Settings that cannot run, or a run directory that does not fit them: says what to do instead."""


@dataclass
class EvalConfig:
    """What an evaluation plays and how: ``_run.json`` records it; a resumed run must match it."""

    policy: str
    """oracle, nop, script:FILE, hf:PATH, ct2:PATH, llamacpp:PATH or openai:BASE_URL (``termrl.policies.make_policy``)."""
    suite: str
    """builtin, humaneval, mbpp, FAMILY:SEEDS or a directory; a slice after a colon (humaneval:0-39)."""
    spec: str = "staged"
    """Reward spec: preset name or TOML file."""
    k: int = 1
    """pass@k is reported for this k (and pass@1)."""
    samples: int | None = None
    """Episodes per task; None: ``k``."""
    model: str | None = None
    """Model name an openai: endpoint serves."""
    workers: int = 2
    """Episodes (sandboxes) alive at once."""
    max_steps: int | None = None
    """Replies per episode; None: the task's."""
    time_limit: float | None = None
    """Seconds of sandbox and generation time per episode; None: the task's agent timeout."""
    temperature: float | None = None
    """Sampling temperature (model policies)."""
    max_new_tokens: int | None = None
    """Tokens per reply (model policies)."""
    dtype: str | None = None
    """hf: weights dtype: auto, float32 or bfloat16."""
    stop_at_action: bool = False
    """hf:, ct2:, llamacpp: end each reply at its first whole action."""
    threads: int | None = None
    """ct2:, llamacpp: the engine's CPU threads; None: its default (on a shared CPU, 1 is faster)."""
    backend: str = "bwrap"
    """Sandbox backend: bwrap, docker or local."""
    action_format: str = "tool_call"
    """How the agent is asked to act (``termrl.actions.ACTION_FORMATS``)."""
    ray: str | None = None
    """Play on the Ray cluster at this address (``local``: start one here); scripted and openai: policies only."""
    judge: str | None = None
    """A model judge of every passing episode: hf:PATH or openai:BASE_URL (with ``judge_model``)."""
    judge_model: str | None = None
    """Model name the ``judge`` endpoint serves."""

    def __post_init__(self):
        self.samples = self.samples if self.samples is not None else self.k
        if self.k < 1 or self.samples < 1:
            raise EvalError("-k and --samples must be at least 1")
        if self.k > self.samples:
            raise EvalError(f"-k {self.k} needs at least {self.k} samples per task; pass --samples {self.k} or more")
        if self.ray is not None and self.policy.split(":", 1)[0] in LOCAL_MODELS:
            raise EvalError(f"--ray with --policy {self.policy}: every episode on the cluster would load the model "
                            "again; serve it with vLLM (`vllm serve PATH`) and pass --policy "
                            "openai:http://HOST:8000/v1, or drop --ray")
        if self.ray is not None and self.judge is not None:
            raise EvalError("--judge does not run on a Ray cluster yet: drop --ray, or --judge")
        try:
            action_format(self.action_format)
        except ValueError as e:
            raise EvalError(f"--action-format: {e}") from None

    def meta(self) -> dict:
        """The settings ``_run.json`` records."""
        return {key: getattr(self, key) for key in (*RESUME_KEYS, *EPISODE_KEYS)}

    def policy_options(self) -> dict:
        """The model options given: what ``make_policy`` takes besides the spec."""
        given = (("temperature", self.temperature), ("max_new_tokens", self.max_new_tokens), ("dtype", self.dtype),
                 ("stop_at_action", self.stop_at_action or None), ("threads", self.threads))
        return {key: value for key, value in given if value is not None}


def evaluate(config: EvalConfig | None = None, /, *, out: str | os.PathLike | None = None, resume: bool = False,
             on_start: Callable[[int, int], None] | None = None, on_episode: Callable[[Trajectory], None] | None = None,
             on_skip: Callable[[str, str], None] | None = None, on_warning: Callable[[str], None] | None = None,
             **settings) -> dict:
    """Play ``config`` (or ``EvalConfig(**settings)``), store the episodes in ``out`` (default
    ``runs/eval-TIME``) and return the summary ``termrl eval --json`` prints, also written to
    ``out/_summary.json``: pass@1 and pass@k per split, rewards and their components, hack
    findings, error classes, bad cases, compute, one entry per task.

    ``resume``: finish the run in ``out``. ``on_start(total, done)``: episodes in all and those
    already stored, before the first is played; ``on_episode(trajectory)``: after each one.
    ``on_skip(task_id, why)``: a task that cannot be loaded or run here; ``on_warning``: anything
    else worth saying. Both log a warning by default.

    Raises ``EvalError`` for settings that cannot run; a ``StoreError`` from the store while it
    plays (a full disk: free space and resume), ``ConnectionError`` when ``ray`` cannot be reached."""
    from termrl.rollout import store as stores  # heavy: pyarrow and numpy, kept off ``import termrl``

    if config is not None and settings:
        raise TypeError(f"evaluate takes an EvalConfig or its fields, not both: got {', '.join(settings)} too")
    config = config if config is not None else EvalConfig(**settings)
    on_skip = on_skip or (lambda task_id, why: log.warning("skipped %s: %s", task_id, why))
    on_warning = on_warning or log.warning
    if resume and out is None:
        raise EvalError("--resume needs --out DIR, the run directory to finish")
    out = Path(out) if out is not None else Path("runs") / f"eval-{time.strftime('%Y%m%d-%H%M%S')}"
    old = _stored_settings(out, resume, config.meta())
    tasks, skipped, spec, agent = _prepare(config, on_skip)
    try:
        store = stores.TrajectoryStore(out)
        stretches = [*(old or {}).get("stretches", []), _stretch(agent)]
        stores.write_meta(out, {**config.meta(), "k": config.k, "started": old["started"] if old else time.time(),
                                "stretches": stretches})
    except (stores.StoreError, OSError) as e:
        raise EvalError(str(e)) from None
    judge = _judge(config, out)
    note = _precision_note(stretches)
    if note:
        on_warning(note)
    rollout = RolloutConfig(samples=config.samples, workers=config.workers, spec=spec, judge=judge,
                            env=EnvConfig(max_steps=config.max_steps, time_limit_s=config.time_limit,
                                          backend=config.backend, action_format=config.action_format))
    accountant = Accountant()
    if on_start:
        on_start(len(tasks) * config.samples, len(store.done_ids()))
    with accountant:
        _play(config, tasks, agent, rollout, store, accountant, on_episode)
    trajectories = store.read()
    summary = summarize(trajectories, ks=sorted({1, config.k}))
    low, high = spec.bounds(rollout.progress)
    summary.update(out=str(out), policy=config.policy, suite=config.suite, spec=config.spec, skipped_tasks=skipped,
                   reward_bounds=[low if low > -math.inf else None, high], reward_scale=spec.scale(),
                   compute=accountant.summary(), bad_cases=bad_cases(trajectories))
    (out / "_summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def _stored_settings(out: Path, resume: bool, meta: dict) -> dict | None:
    """The metadata of the run stored in ``out``, or None for a new run; EvalError when there is a
    run and ``resume`` is not given, or when it was made with other settings than ``meta``."""
    from termrl.rollout import store as stores  # heavy: pyarrow and numpy, kept off ``import termrl``

    try:
        old = stores.read_meta(out)
    except stores.StoreError as e:
        raise EvalError(str(e)) from None
    if old is None:
        return None
    if not resume:
        raise EvalError(f"{out} already holds a run; pass --resume to finish it or choose another --out")
    old = {"action_format": "tool_call", **old}  # runs from before the option used that format
    changed = _changed(old, meta)
    if changed:
        raise EvalError(f"{out / stores.META_NAME} was made with different settings ({'; '.join(changed)}); "
                        "resume with the same ones or choose another --out")
    return old


def _prepare(config: EvalConfig, on_skip: Callable[[str, str], None]) -> tuple:
    """(tasks that can run, ids of those skipped, reward spec, policy) of ``config``."""
    try:
        spec = load_spec(config.spec)
        entries = envs.prepare(resolve(config.suite))
        agent = make_policy(config.policy, model=config.model, **config.policy_options())
    except (SpecError, SuiteError, TaskFormatError, ValueError, OSError) as e:
        raise EvalError(str(e)) from None
    tasks, skipped = envs.runnable(entries, on_skip)
    if not tasks:
        raise EvalError(envs.none_runnable(config.suite, skipped))
    return tasks, [task_id for task_id, _ in skipped], spec, agent


def _judge(config: EvalConfig, out: Path):
    """The model judge ``config`` names, caching its verdicts in ``out``, or None."""
    if config.judge is None:
        return None

    try:
        return make_judge(config.judge, model=config.judge_model, cache_dir=out / "judge-cache")
    except (ValueError, OSError) as e:
        raise EvalError(f"--judge: {e}") from None


def _play(config: EvalConfig, tasks: list, agent, rollout, store, accountant, on_episode) -> None:
    """Every episode of ``tasks`` not yet in ``store``, here or on the Ray cluster ``config.ray``."""
    if config.ray is None:
        run_rollouts(tasks, agent, rollout, store=store, accountant=accountant, on_episode=on_episode, keep=False)
        return

    run_rollouts_ray(tasks, config.policy, rollout, store=store, address=config.ray, on_episode=on_episode,
                     keep=False, model=config.model, **config.policy_options())


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
    """This call's part of the run: when it started, the engine and number format it generates with
    (``termrl.provenance.backend``: dtype auto decides by machine, so two stretches of one run can
    differ, and ``_run.json`` says so) and the harness commit (``termrl.provenance.harness``)."""
    return {"started": time.time(), **backend(agent), "harness": harness()}


def _precision_note(stretches: list[dict]) -> str | None:
    """A warning when this stretch (the last) generates in another dtype than an earlier one."""
    now = stretches[-1].get("dtype")
    before = sorted({s["dtype"] for s in stretches[:-1] if s.get("dtype")} - {now})
    if now is None or not before:
        return None
    return (f"this stretch generates in {now}, earlier stretches of the run in {', '.join(before)} (--dtype auto "
            f"decides by machine); pass --dtype {before[0]} to match them")
