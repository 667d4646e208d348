"""``termrl train CONFIG.toml``: one run of GRPO, RFT or DPO, resumable after kill -9.

Layout of ``output_dir``::

    config.json        the resolved config (a resumed run must match it)
    model-init/        the tiny model built from config (model.tiny)
    sft/               the SFT warm start ([sft]), which the algorithm and the "before" evaluation start from
    checkpoints/       the trainer's checkpoints (GRPO, DPO): checkpoint-STEP/
    rollouts/          GRPO: every scored rollout, one Parquet row each (TrajectoryStore)
    samples/           DPO: the sampled episodes the pairs come from
    rft/               RFT: round-N/{samples,kept,model,heldout,transfer}
    tensorboard/       metrics (TensorBoard; W&B too when configured)
    final/             the trained model (and tokenizer)
    heldout-before/    the held-out evaluation of the initial model (eval.before)
    heldout/           the held-out evaluation at the end (RFT: its last round's, rft/round-N/heldout)
    transfer-before/, transfer/   the same for tasks.transfer, a set training never touches (RFT:
                       transfer/ is the last round's rft/round-N/transfer)
    compute.json       where the run's time went, per phase
    results.json       what the run measured

Resume (``--resume``): the trainer restarts from its last checkpoint. Rollouts stored after
that checkpoint belonged to steps that are done again, so they are dropped from the store
before training goes on: each step's rollouts are stored exactly once. Sampled episodes
(RFT rounds, DPO samples, the held-out evaluation) are skipped when already stored.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
import re
import shutil
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from termrl.distributed import current, join, processes
from termrl.env import EnvConfig
from termrl.episode import PoolVerifier
from termrl.eval.metrics import paired, passed_fraction, summarize, two_proportion_z
from termrl.policies.ct2 import CT2Policy, ct2_config
from termrl.policies.hf import HFConfig, HFPolicy, auto_dtype
from termrl.policies.llamacpp import LlamaCppPolicy, llamacpp_config
from termrl.policies.tiny import build_tiny_model, quickstart_tokenizer
from termrl.protocols import Trajectory
from termrl.provenance import harness
from termrl.reward.exports.trl import ScoredBatch
from termrl.reward.judge import make_judge
from termrl.rollout.accounting import Accountant
from termrl.rollout.ray_backend import RayVerifierPool
from termrl.rollout.runner import RolloutConfig, play_stored
from termrl.rollout.store import TrajectoryStore, read
from termrl.sandbox.warm import warm_sandboxes_closed
from termrl.tasks import envs
from termrl.tasks.overlap import overlap
from termrl.tasks.suites import resolve
from termrl.training.config import TrainConfig, trl_checkpointing
from termrl.training.grpo import GRPO_PROMPT, train_grpo
from termrl.training.mix import split_parts, train_mix
from termrl.training.rft import (
    RFTConfig,
    adapter_saved,
    engine_policy_factory,
    fine_tune,
    hf_policy_factory,
    restore_merged,
    rft_round,
    trained_with,
)
from termrl.training.sft import (
    dropped_summary,
    episode_rows,
    progress_callback,
    reference_episodes,
    sft_rows,
    train_sft,
)
from termrl.training.trajdata import dpo_pairs
from termrl.verify.pool import VerifierPool

STEP_ID = re.compile(r"#grpo-step(\d+)#")


class ResumeError(ValueError):
    """--resume on a directory that holds another run, or a run directory reused without --resume."""


def _prepare_dir(cfg: TrainConfig, resume: bool) -> Path:
    out = Path(cfg.output_dir)
    saved = out / "config.json"
    if saved.exists():
        if not resume:
            raise ResumeError(f"{out} already holds a run: pass --resume to finish it, or choose another output_dir")
        old = _with_defaults(json.loads(saved.read_text()))
        if _what_it_does(old) != _what_it_does(cfg.to_dict()):
            if _more_rounds(_what_it_does(old), _what_it_does(cfg.to_dict())):
                print(f"termrl train: {out}: extending the run from {old['rft']['rounds']} to {cfg.rft.rounds} "
                      "RFT rounds (the rounds done are kept)", file=sys.stderr)
            else:
                new = _what_it_does(cfg.to_dict())
                diff = sorted(k for k in set(_what_it_does(old)) | set(new) if old.get(k) != new.get(k))
                raise ResumeError(f"{saved} was written by a run with other settings (differs in: "
                                  f"{', '.join(diff)}); resume with the same config (a finished RFT run may be "
                                  "given more rft.rounds), or choose another output_dir")
    elif resume and out.exists() and any(out.iterdir()):
        raise ResumeError(f"{out} holds no config.json: nothing to resume")
    out.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(cfg.to_dict(), indent=1))
    return out


WHERE_IT_RUNS = ("ray",)
"""Config sections that say where a run's work is done, not what it does: a resumed run may change them."""


def _what_it_does(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in WHERE_IT_RUNS}


CLUSTER_VERIFIER: contextvars.ContextVar = contextvars.ContextVar("cluster_verifier", default=None)
"""The run's ``PoolVerifier`` on Ray actors while ``run_training`` runs with ``ray.address`` set."""


@contextlib.contextmanager
def cluster_verifier(cfg: TrainConfig) -> Iterator[dict]:
    """While it is open, the run's episodes are verified on ``cfg.ray``'s cluster (nothing
    without an address). Yields what results.json says of it, filled in when it closes:
    ``{"address", "actors", "verifications", "failures"}`` ({} without a cluster)."""
    record: dict = {}
    if not cfg.ray.address:
        yield record
        return

    world = current()  # under a launcher each rank verifies on its share of the actors
    actors = max(1, cfg.ray.verifier_actors // world.size)
    with RayVerifierPool(actors, cfg.ray.verifier_workers, address=cfg.ray.address) as pool:
        token = CLUSTER_VERIFIER.set(PoolVerifier(pool))
        try:
            yield record
        finally:
            CLUSTER_VERIFIER.reset(token)
            counts = world.gather((pool.verifications, pool.failures))
            record.update(address=cfg.ray.address, actors=actors * world.size,
                          verifications=sum(v for v, _ in counts), failures=sum(f for _, f in counts))


def _with_defaults(saved: dict) -> dict:
    """A saved config with the settings added to termrl since it was written at their defaults,
    so a run started by an older termrl resumes."""
    def fill(have, default):
        if not isinstance(have, dict) or not isinstance(default, dict):
            return have
        return {**default, **{k: fill(v, default.get(k)) for k, v in have.items()}}

    return fill(saved, TrainConfig().to_dict())


def _more_rounds(old: dict, new: dict) -> bool:
    """Whether ``new`` is the RFT run ``old`` with more rounds and nothing else changed: resuming
    it trains the extra rounds on top of the ones done."""
    if old.get("algorithm") != "rft" or new.get("algorithm") != "rft":
        return False
    rounds_old, rounds_new = old.get("rft", {}).get("rounds", 0), new.get("rft", {}).get("rounds", 0)
    same = {**old, "rft": {**old.get("rft", {}), "rounds": rounds_new}} == new
    return same and rounds_new > rounds_old


def _model_dir(cfg: TrainConfig, out: Path) -> Path:
    if not cfg.model.tiny:
        return Path(cfg.model.path).expanduser()
    init = out / "model-init"
    if not (init / "config.json").exists():
        m = cfg.model
        tokenizer = quickstart_tokenizer(m.tiny_tokenizer, m.tiny_tokenizer_seeds, m.tiny_vocab_size,
                                         _rollout_prompt(cfg) or "") if m.tiny_tokenizer else None
        build_tiny_model(init, hidden_size=m.tiny_hidden_size, layers=m.tiny_layers, heads=m.tiny_heads,
                         vocab_size=m.tiny_vocab_size, seed=cfg.seed, max_positions=m.tiny_max_positions,
                         tokenizer=tokenizer)
    return init


def _rollout_prompt(cfg: TrainConfig) -> str | None:
    """The system prompt of the algorithm's own episodes: the configured one, else GRPO's (the
    native tool-calling format's) for GRPO, else None (the action format's)."""
    if cfg.env.system_prompt is not None:
        return cfg.env.system_prompt
    return GRPO_PROMPT if cfg.algorithm == "grpo" else None


def warm_start(cfg: TrainConfig, out: Path, model_dir: Path, accountant: Accountant) -> tuple[Path, dict | None]:
    """The SFT warm start of ``[sft]`` from ``model_dir`` into OUTPUT_DIR/sft (kept on resume);
    returns the model the algorithm starts from and what results.json says of the stage."""
    if not cfg.sft.steps:
        return model_dir, None
    from trl import SFTConfig  # heavy: trl

    where = out / "sft"
    record = where / "sft.json"
    world = current()
    if world.from_main(lambda: record.is_file()):
        return where, world.from_main(lambda: json.loads(record.read_text()))
    s = cfg.sft
    env = dataclasses.replace(_env(cfg), system_prompt=_rollout_prompt(cfg))
    played = None
    if s.source == "episodes":  # verified episodes of the reference solutions; GRPO's rollouts are native tool calls
        env = dataclasses.replace(env, action_format="native" if cfg.algorithm == "grpo" else env.action_format)
        kept, played = reference_episodes(_tasks(s.tasks), dataclasses.replace(_sampling(cfg, 1, 0.0)[0], env=env),
                                          where / "episodes", accountant=accountant, label="train: sft episodes")
        if not kept:
            raise ValueError(f"sft.tasks {s.tasks}: no reference episode was verified ({dropped_summary(played)}; "
                             f"stored in {where / 'episodes'}): nothing to imitate")
        rows = episode_rows(kept, env.tools)
    else:
        rows = sft_rows(_tasks(s.tasks), env)
    loss = {"completion_only_loss": True} if played is None else {"assistant_only_loss": True}
    # no checkpoints and no TensorBoard: the stage's metrics are sft/log_history.json, apart from the algorithm's
    args = SFTConfig(**{**_common_args(cfg, out), "output_dir": str(where), "save_strategy": "no", "logging_steps": 10,
                        "report_to": []},
                     **trl_checkpointing(SFTConfig), max_steps=s.steps, per_device_train_batch_size=s.batch_size,
                     learning_rate=s.learning_rate, lr_scheduler_type=s.lr_scheduler, adam_beta2=s.adam_beta2,
                     **loss, max_length=s.max_length, dataloader_num_workers=0)
    what = "reference solutions" if played is None else \
        f"verified {env.action_format} episodes of the reference solutions ({played['played']} played, " \
        f"{dropped_summary(played)})"
    print(f"termrl train: SFT warm start, {s.steps} steps of {s.batch_size} on {len(rows)} {what} ({s.tasks})",
          file=sys.stderr, flush=True)
    with accountant.phase("training"):
        if played is not None and cfg.lora.enabled:  # a LoRA adapter, merged exactly as RFT's rounds are
            trained = fine_tune(model_dir, kept, args, where, peft_config=_peft(cfg), label="the SFT warm start",
                                adapter_to=out / "sft-adapter", tools=env.tools)
        else:
            trained = train_sft(model_dir, where, rows, args)
        summary = {**trained, "tasks": s.tasks, "source": s.source,
                   **({"action_format": env.action_format, "episodes": played} if played is not None else {}),
                   "model": str(where),  # what the algorithm and the "before" evaluation start from
                   "before": ("heldout_before and transfer_before are this SFT model's: *_pass_rate_before -> "
                              "*_after is the RL stage's gain alone") if cfg.eval.before else None}
    if world.main:
        record.write_text(json.dumps(summary, indent=1))
    world.barrier()
    return where, summary


def train_tasks(cfg: TrainConfig, n: int | None = None) -> list:
    """The tasks training draws: every task of ``tasks.train`` when it has no ``tasks.weights`` and
    ``n`` is None; else the first ``n`` of the weighted mix of its parts (``termrl.training.mix``;
    ``n`` None: as many as the parts hold together)."""
    if not cfg.tasks.weights and n is None:
        return _tasks(cfg.tasks.train)
    loaded = {part: _tasks(part) for part in split_parts(cfg.tasks.train)}
    return train_mix(cfg.tasks.train, cfg.tasks.weights, n if n is not None else sum(map(len, loaded.values())),
                     cfg.seed, loaded.__getitem__)


def round_tasks(cfg: TrainConfig, index: int) -> list:
    """RFT round ``index``'s (1-based) training tasks: every task of ``tasks.train``, or with
    ``rft.tasks_per_round`` the round's own stretch of the mix, so each round samples new tasks."""
    k = cfg.rft.tasks_per_round
    if not k:
        return train_tasks(cfg)
    return train_tasks(cfg, index * k)[(index - 1) * k:]


def grpo_tasks(cfg: TrainConfig) -> list:
    """GRPO's dataset: every task of ``tasks.train``, or with ``tasks.weights`` as many tasks of the
    mix as the steps take (prompts per step x steps), so each is played once where the suite allows."""
    if not cfg.tasks.weights:
        return train_tasks(cfg)
    g = cfg.grpo
    per_step = g.batch_size * g.gradient_accumulation_steps * current().size // g.num_generations
    return train_tasks(cfg, max(1, per_step) * g.steps)


def _tasks(suite: str):
    entries = envs.prepare(resolve(suite))
    bad = [e for e in entries if e.task is None]
    if bad:
        raise ValueError(f"suite {suite!r}: task {bad[0].id} cannot be loaded: {bad[0].error}")
    tasks = [e.task for e in entries if not e.task.unsupported]
    for e in entries:
        if e.task.unsupported:
            print(f"termrl train: suite {suite}: skipping {e.id}, which cannot run here: {e.task.unsupported}",
                  file=sys.stderr)
    if not tasks:
        raise ValueError(f"suite {suite!r}: none of its {len(entries)} tasks can run here (each said above)")
    return tasks


def overlap_with_training(cfg: TrainConfig, out: Path) -> dict:
    """What each evaluated set shares with the tasks trained on (``tasks.train`` and ``sft.tasks``):
    ``{set: termrl tasks overlap's figures}``, written with every task's nearest match to
    ``overlap.json`` and printed, before any training, so no claim rests on content trained on."""
    trained_on = "+".join(suite for suite in (cfg.tasks.train, cfg.sft.tasks if cfg.sft.steps else "") if suite)
    sets = [(name, suite) for name, suite in (("heldout", cfg.tasks.heldout), ("transfer", cfg.tasks.transfer)) if suite]
    if not trained_on or not sets:
        return {}
    train = [e.task for e in resolve(trained_on) if e.task is not None]
    found, summary = {}, {}
    for name, suite in sets:
        result = overlap([e.task for e in resolve(suite) if e.task is not None], train, suite=suite,
                         against_name=trained_on)
        found[name], summary[name] = result.to_dict(), result.summary()
        print(f"termrl train: {name} {suite} against the training tasks: {result.exact} of {result.tasks} exact "
              f"duplicates, {result.near} near (similarity >= {result.threshold}), {result.disjoint} disjoint",
              file=sys.stderr)
    (out / "overlap.json").write_text(json.dumps(found, indent=1))
    return summary


def _env(cfg: TrainConfig):
    e = cfg.env
    return EnvConfig(max_steps=e.max_steps, time_limit_s=e.time_limit_s, command_timeout_s=e.command_timeout_s,
                     observation_chars=e.observation_chars, backend=e.backend, action_format=e.action_format,
                     warm_sandboxes=e.warm_sandboxes, system_prompt=e.system_prompt, static=e.static)


def _report_to(cfg: TrainConfig) -> list[str]:
    return (["tensorboard"] if cfg.logging.tensorboard else []) + (["wandb"] if cfg.logging.wandb else [])


def _common_args(cfg: TrainConfig, out: Path) -> dict:
    import torch  # heavy: torch

    # TRL turns bf16 autocast on by default, on a CPU too; a tiny model is built and trained in float32
    mixed = {"bf16": False} if cfg.model.tiny else {}
    return {"output_dir": str(out / "checkpoints"), "seed": cfg.seed, "report_to": _report_to(cfg),
            "logging_steps": 1, "save_steps": cfg.logging.save_steps, "save_total_limit": 2,
            "use_cpu": not torch.cuda.is_available(), "disable_tqdm": True, **mixed}


def _peft(cfg: TrainConfig):
    if not cfg.lora.enabled:
        return None
    from peft import LoraConfig  # heavy: peft

    return LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=cfg.lora.target_modules, task_type="CAUSAL_LM")


def _complete(checkpoint: Path) -> bool:
    """The trainer writes ``trainer_state.json`` last: a checkpoint without a readable one was cut by a kill."""
    try:
        json.loads((checkpoint / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return True


def _last_checkpoint(out: Path) -> Path | None:
    """The newest complete checkpoint. Newer ones that a kill cut mid-write are removed: the trainer
    saves those steps again, and a half-written directory would stand in the way of its rotation."""
    found = sorted((p for p in (out / "checkpoints").glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
                   key=lambda p: int(p.name.split("-")[-1]), reverse=True)
    for checkpoint in found:
        if _complete(checkpoint):
            return checkpoint
        print(f"termrl train: {checkpoint} was cut mid-write (no readable trainer_state.json); removing it",
              file=sys.stderr)
        shutil.rmtree(checkpoint)
    return None


def _drop_rollouts_after(store_dir: Path, step: int) -> int:
    """Rewrite the rollout store without the rollouts of steps >= ``step``; returns how many went."""
    if not store_dir.exists():
        return 0
    kept, dropped = [], 0
    for traj in read(store_dir):
        m = STEP_ID.search(traj.episode_id)
        if m and int(m.group(1)) >= step:
            dropped += 1
        else:
            kept.append(traj)
    if dropped:
        fresh = store_dir.with_name(store_dir.name + ".new")
        if fresh.exists():
            shutil.rmtree(fresh)
        TrajectoryStore(fresh).write(kept) if kept else fresh.mkdir()
        old = store_dir.with_name(store_dir.name + ".old")
        store_dir.rename(old)
        fresh.rename(store_dir)
        shutil.rmtree(old)
    return dropped


def _rollout_recorder(store: TrajectoryStore | None):
    """GRPO's ``on_batch``: every scored rollout of a batch, stored as one part. Under a launcher
    each rank builds its own rollouts' rows (numbered by their place in the whole batch) and rank 0,
    the only one with a ``store``, writes every rank's."""
    def record(batch: ScoredBatch) -> None:
        state = batch.trainer_state
        step = getattr(state, "global_step", 0) if state is not None else 0
        rows = []
        for i, (env, outcome, reward) in enumerate(zip(batch.environments, batch.outcomes, batch.rewards),
                                                   start=batch.offset):
            inner = env.env
            task = inner.task
            rows.append(Trajectory(
                episode_id=f"{task.id if task else env.task_id}#grpo-step{step}#{i}",
                task_id=task.id if task else env.task_id, policy="grpo",
                seed=task.meta.seed if task else None,
                split=task.meta.split if task else "train", sample=i,
                family=(task.meta.family or None) if task else None,
                prompt=[dict(m) for m in inner.messages[:2]], steps=list(inner.steps),
                ending=outcome.ending.value, error=outcome.error,
                passed=bool(outcome.evidence.passed), reward=reward.total,
                components=reward.component_dicts(), evidence=outcome.evidence.to_dict(),
                findings=[asdict(f) for f in outcome.findings], started=time.time()))
        everyone = batch.world.gather(rows)
        if store is not None:
            store.write([row for part in everyone for row in part])

    return record


def run_grpo(cfg: TrainConfig, out: Path, model_dir: Path, accountant: Accountant, resume: bool) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers
    from trl import GRPOConfig  # heavy: trl

    g = cfg.grpo
    world = current()
    checkpoint = world.from_main(lambda: _last_checkpoint(out) if resume else None)
    dropped = world.from_main(lambda: _drop_rollouts_after(out / "rollouts",
                                                           int(checkpoint.name.split("-")[-1]) if checkpoint else 0))
    args = GRPOConfig(**_common_args(cfg, out), **trl_checkpointing(GRPOConfig),
                      max_steps=g.steps, learning_rate=g.learning_rate, lr_scheduler_type=g.lr_scheduler,
                      adam_beta2=g.adam_beta2, num_iterations=g.num_iterations,
                      num_generations=g.num_generations, per_device_train_batch_size=g.batch_size,
                      gradient_accumulation_steps=g.gradient_accumulation_steps,
                      max_completion_length=g.max_completion_length, temperature=g.temperature, beta=g.beta,
                      max_tool_calling_iterations=g.max_turns - 1 if g.max_turns else None,
                      use_vllm=g.use_vllm, vllm_mode=g.vllm_mode,
                      vllm_server_base_url=g.vllm_server_base_url or None)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=_dtype(cfg, model_dir))
    store = TrajectoryStore(out / "rollouts") if world.main else None
    with contextlib.ExitStack() as stack:
        verifier = CLUSTER_VERIFIER.get()
        if verifier is None and g.verifier_workers:
            verifier = PoolVerifier(stack.enter_context(VerifierPool(g.verifier_workers, static=cfg.env.static)))
        trainer = train_grpo(model, tokenizer, grpo_tasks(cfg), cfg.spec, args, _peft(cfg), accountant,
                             [progress_callback("GRPO", ("reward",))], env_config=_env(cfg), workers=g.workers,
                             system_prompt=_rollout_prompt(cfg), on_batch=_rollout_recorder(store), verifier=verifier,
                             judge=_judge(cfg, out), resume_from_checkpoint=str(checkpoint) if checkpoint else None,
                             print_logs=False, remote=g.remote,
                             remote_token=os.environ.get(g.remote_token_env) or None)
    _save(trainer, tokenizer, out / "final")
    scorer = trainer.reward_funcs[0].scorer
    rewards = [e["reward"] for e in trainer.state.log_history if "reward" in e]
    tenth = max(1, len(rewards) // 10)
    return {"steps": trainer.state.global_step, "resumed_from": str(checkpoint) if checkpoint else None,
            "rollouts": world.from_main(lambda: len(store.done_ids())), "rollouts_dropped_on_resume": dropped,
            "zero_variance_groups": scorer.stats.fraction, "unverified": scorer.unverified,
            "finished_ahead": scorer.taken_ahead,
            "reward_first_tenth": _mean(rewards[:tenth]), "reward_last_tenth": _mean(rewards[-tenth:]),
            "log": [e for e in trainer.state.log_history if "loss" in e or "reward" in e][-5:],
            **processes(trainer.model, world, trainer)}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _dtype(cfg: TrainConfig, model_dir):
    """The configured dtype; ``auto`` as ``termrl.policies.hf.auto_dtype`` decides it for the
    device training runs on."""
    import torch  # heavy: torch

    name = cfg.model.dtype
    if name == "auto":
        name = auto_dtype(model_dir, "cuda" if torch.cuda.is_available() else "cpu")
    return {"auto": "auto", "float32": torch.float32, "bfloat16": torch.bfloat16}[name]


def _save(trainer, tokenizer, where: Path) -> None:
    """The trained model and its tokenizer in ``where``. Every rank calls it (FSDP and DeepSpeed
    gather their shards in ``save_model``); rank 0 writes; every rank returns once it is written."""
    trainer.save_model(str(where))
    world = current()
    if world.main:
        tokenizer.save_pretrained(str(where))
    world.barrier()


_JUDGES: dict[tuple, object] = {}


def _judge(cfg: TrainConfig, out: Path):
    """The run's model judge (``[judge]``), made once per process and cached under OUTPUT_DIR/judge-cache; None without one."""
    if not cfg.judge.policy:
        return None
    key = (cfg.judge.policy, cfg.judge.model, cfg.judge.max_tokens, str(out))
    if key not in _JUDGES:
        _JUDGES[key] = make_judge(cfg.judge.policy, model=cfg.judge.model or None, max_tokens=cfg.judge.max_tokens,
                                  cache_dir=out / "judge-cache")
    return _JUDGES[key]


def _sampling(cfg: TrainConfig, samples: int, temperature: float):
    return RolloutConfig(samples=samples, workers=cfg.eval.workers, spec=cfg.spec, env=_env(cfg),
                         verifier=CLUSTER_VERIFIER.get(), judge=_judge(cfg, Path(cfg.output_dir))), \
        {"temperature": temperature, "max_new_tokens": cfg.eval.max_new_tokens, "seed": cfg.seed,
         "stop_at_action": cfg.eval.stop_at_action, "dtype": cfg.model.dtype,
         "device": "auto"}  # a GPU where there is one (under a launcher: the rank's own)


def _policy(cfg: TrainConfig, model_dir: Path, options: dict):
    """The sampling or evaluation policy over ``model_dir``'s weights with ``_sampling``'s options, by
    ``[eval] backend``."""
    if cfg.eval.backend == "ctranslate2":
        return CT2Policy(model_dir, ct2_config(options, threads=cfg.eval.threads or cfg.threads))
    if cfg.eval.backend == "llama.cpp":
        return LlamaCppPolicy(model_dir, llamacpp_config(options, threads=cfg.eval.threads or cfg.threads))
    return HFPolicy(model_dir, HFConfig(**options))


def run_rft(cfg: TrainConfig, out: Path, model_dir: Path, accountant: Accountant, resume: bool) -> dict:
    from trl import SFTConfig  # heavy: trl

    r = cfg.rft
    world = current()
    rounds_file = out / "rft" / "rounds.json"
    records = world.from_main(lambda: json.loads(rounds_file.read_text())["rounds"] if rounds_file.exists() else [])

    def write_rounds() -> None:
        if world.main:
            rounds_file.write_text(json.dumps({"version": 1, "rounds": records}, indent=1))
    rollout, options = _sampling(cfg, r.samples_per_task, r.temperature)
    factory = hf_policy_factory(HFConfig(**options), HFConfig(**{**options, "temperature": cfg.eval.temperature}))
    engine = {"threads": cfg.eval.threads or cfg.threads}
    if cfg.eval.backend == "ctranslate2":
        factory = engine_policy_factory(CT2Policy, ct2_config(options, **engine),
                                        ct2_config(options, **engine, temperature=cfg.eval.temperature))
    elif cfg.eval.backend == "llama.cpp":
        factory = engine_policy_factory(LlamaCppPolicy, llamacpp_config(options, **engine),
                                        llamacpp_config(options, **engine, temperature=cfg.eval.temperature))
    rcfg = RFTConfig(rounds=r.rounds, samples_per_task=r.samples_per_task, threshold=r.threshold,
                     eval_samples=cfg.eval.samples, trim=r.trim)
    args = SFTConfig(**{**_common_args(cfg, out), "save_strategy": "no"}, **trl_checkpointing(SFTConfig),
                     num_train_epochs=r.epochs,
                     learning_rate=r.learning_rate, per_device_train_batch_size=r.batch_size,
                     assistant_only_loss=True, max_length=r.max_length)
    heldout = _tasks(cfg.tasks.heldout) if cfg.tasks.heldout else []

    def play(index: int, model_in: Path, first: dict | None = None) -> dict:
        return rft_round(index, model_in, round_tasks(cfg, index), heldout, args, out_dir=out / "rft", config=rcfg,
                         rollout=rollout, accountant=accountant, policy_factory=factory, base_dir=model_dir,
                         peft_config=_peft(cfg), first=first)

    def rebuild(index: int) -> None:
        """Round ``index``'s weights where they are gone (weights stay out of git, so a run that spans
        machines keeps only its stores and adapters), the earlier rounds it started from first. A
        LoRA round whose adapter is stored is merged again (``restore_merged``: the same bits on any
        machine, in seconds); otherwise the round trains again from its stored samples and kept
        episodes and plays nothing new. Weights trained again that are not the first training's
        (another CPU's kernels) keep that training's figures in the record's ``first_training``:
        the round's stored held-out episodes were played by those weights."""
        record = records[index - 1]
        if (Path(record["model_out"]) / "config.json").exists():
            return
        if index > 1:  # the weights it started from (and its own, when it trained nothing)
            rebuild(index - 1)
        if not record["trained"]:
            return
        gone = f"termrl train: round {index}'s weights are gone from {record['model_out']}"
        # what the round started from, where this machine holds it (a record names the first machine's path)
        start = model_dir if index == 1 else Path(records[index - 2]["model_out"])
        if world.from_main(lambda: adapter_saved(record.get("adapter"))):
            if world.main:
                print(f"{gone}: merging them again from their adapter in {record['adapter']} (no training)",
                      file=sys.stderr)
                digest = restore_merged(record["adapter"], record["model_out"], base=start)
                again = {**record, "weights_digest": digest, "trained_with": trained_with()}
                print(f"termrl train: round {index}'s weights merged again: {_same_weights(record, again)}",
                      file=sys.stderr)
            world.barrier()
            return
        print(f"{gone}: training them again on the round's stored episodes", file=sys.stderr)
        again = play(index, start, first=record)
        print(f"termrl train: round {index}'s weights trained again: {_same_weights(record, again)}", file=sys.stderr)
        if not _is_same(record, again):
            again["first_training"] = record.get("first_training") or {key: record.get(key) for key in TRAINING}
        records[index - 1] = again
        write_rounds()  # a stop before the next round is rebuilt keeps this one's record with its weights

    final = out / "final"
    held = world.from_main(lambda: _read_json(final / FINAL))  # None in a final/ from before the marker: it holds the last round
    if not (final / "config.json").exists():
        held = {"round": 0}
    if records and (len(records) < r.rounds or held is not None and held["round"] != len(records)):
        rebuild(len(records))
        write_rounds()
    latest = Path(records[-1]["model_out"]) if records else model_dir
    played = False
    for index in range(len(records) + 1, r.rounds + 1):
        record = play(index, latest)
        records.append(record)
        latest, played = Path(record["model_out"]), True
        write_rounds()
    if (played or held is not None and held["round"] != len(records)) and world.main:
        shutil.rmtree(final, ignore_errors=True)
        shutil.copytree(latest, final)
        (final / FINAL).write_text(json.dumps({"round": len(records), "model_out": str(latest)}))
    world.barrier()
    return {"rounds": records, **processes_of_rounds(records, world)}


TRAINING = ("train_loss", "weights_digest", "step_digests", "trained_with", "adapter")
"""A round record's keys that describe its training (kept under ``first_training`` when trained again
into other weights)."""


def _is_same(first: dict, again: dict) -> bool:
    """Whether ``again`` holds ``first``'s weights: by ``weights_digest``, or by train loss where
    ``first`` has none."""
    if first.get("weights_digest") and again.get("weights_digest"):
        return first["weights_digest"] == again["weights_digest"]
    return first.get("train_loss") == again.get("train_loss")


def _same_weights(first: dict, again: dict) -> str:
    """Whether a round trained again holds the weights its first training made (whose episodes the
    round's evaluation played), by ``weights_digest``, or by train loss for a record without one;
    when not, what differs in ``trained_with`` (libraries, hardware).

    >>> _same_weights({"weights_digest": "ab", "train_loss": 0.5}, {"weights_digest": "ab", "train_loss": 0.5})
    'the same weights as its first training (digest ab)'
    >>> first = {"train_loss": 0.5, "trained_with": {"torch": "2.13", "trl": "1.16"}}
    >>> again = {"weights_digest": "cd", "train_loss": 0.25, "trained_with": {"torch": "2.14", "trl": "1.16"}}
    >>> for part in _same_weights(first, again).split("; "):
    ...     print(part)
    NOT the weights its evaluation played: train loss 0.25, its first training 0.5 (torch 2.14, then 2.13)
    digest now cd
    """
    by_digest = bool(first.get("weights_digest") and again.get("weights_digest"))
    if _is_same(first, again):
        if by_digest:
            return f"the same weights as its first training (digest {again['weights_digest']})"
        return (f"train loss {again.get('train_loss')}, equal to its first training's to the last digit "
                f"(no digest was recorded then); digest now {again.get('weights_digest')}")
    if by_digest:
        evidence = f"digest {again['weights_digest']}, its first training {first['weights_digest']}"
    else:
        evidence = f"train loss {again.get('train_loss')}, its first training {first.get('train_loss')}"
    then, now = first.get("trained_with") or {}, again.get("trained_with") or {}
    differs = [f"{key} {now.get(key)}, then {then[key]}" for key in then if then[key] != now.get(key)]
    why = "; ".join(differs) if differs else ("other hardware or library versions" if not then else
                                              "the same libraries and hardware flags")
    tail = f"; digest now {again.get('weights_digest')}" if "digest" not in evidence else ""
    return f"NOT the weights its evaluation played: {evidence} ({why}){tail}"


def processes_of_rounds(records: list[dict], world) -> dict:
    """RFT's ``processes``: the last trained round's ``parameter_digests`` and ``parameters_agree``
    (``rft_round`` records them under a launcher)."""
    trained = [r for r in records if r.get("parameter_digests")]
    if world.size == 1 or not trained:
        return {"processes": world.size}
    return {"processes": world.size, "parameter_digests": trained[-1]["parameter_digests"],
            "parameters_agree": trained[-1]["parameters_agree"]}


FINAL = "termrl-final.json"
"""Written in ``final/`` by RFT: which round's weights it holds, so a run given more rounds
replaces them."""


def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def run_dpo(cfg: TrainConfig, out: Path, model_dir: Path, accountant: Accountant, resume: bool) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers
    from trl import DPOConfig  # heavy: trl

    from termrl.training.dpo import dpo_trainer  # heavy: subclasses TRL's DPO collator (trl, torch)

    d = cfg.dpo
    rollout, options = _sampling(cfg, d.samples_per_task, d.temperature)
    samples = play_stored(_tasks(cfg.tasks.train), _policy(cfg, model_dir, options), rollout,
                          out / "samples", accountant=accountant, label="train: dpo samples")
    pairs = dpo_pairs(samples, min_gap=d.min_gap)
    world = current()
    checkpoint = world.from_main(lambda: _last_checkpoint(out) if resume else None)
    args = DPOConfig(**_common_args(cfg, out), **trl_checkpointing(DPOConfig),
                     max_steps=d.steps, learning_rate=d.learning_rate, beta=d.beta,
                     per_device_train_batch_size=d.batch_size)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=_dtype(cfg, model_dir))
    trainer = dpo_trainer(model, tokenizer, pairs, args, _peft(cfg))
    with accountant.phase("training"):
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    _save(trainer, tokenizer, out / "final")
    return {"pairs": len(pairs), "steps": trainer.state.global_step,
            "resumed_from": str(checkpoint) if checkpoint else None, **processes(trainer.model, world, trainer)}


def evaluate(cfg: TrainConfig, model: Path, suite: str, store_dir: Path, accountant: Accountant,
             label: str) -> dict:
    """``cfg.eval.samples`` episodes of each task of ``suite`` played by the model in ``model``,
    stored in ``store_dir`` (a resumed run plays only the missing ones). Prints progress on stderr.
    Returns pass@1, episodes, errors, mean_reward, hack_rate, findings (kind -> count), splits,
    passed and pass_rate (passed / episodes the harness did not fail: what the test compares)."""
    rollout, options = _sampling(cfg, cfg.eval.samples, cfg.eval.temperature)
    trajectories = play_stored(_tasks(suite), _policy(cfg, model, options), rollout, store_dir,
                               accountant=accountant, label=f"train: {label}", about=f"{suite}, {model}")
    summary = summarize(trajectories)
    passed, scored = passed_fraction(trajectories)
    return {**{k: summary[k] for k in ("pass@1", "episodes", "errors", "mean_reward", "hack_rate", "splits")},
            "findings": {kind: entry["count"] for kind, entry in summary["findings"].items()},
            "passed": passed, "pass_rate": passed / scored if scored else None}


def _after_dir(cfg: TrainConfig, out: Path, name: str, trained: dict) -> Path:
    """Where the trained model's evaluation of set ``name`` is stored. RFT's last round already played
    the held-out set with the final weights at the same decoding: its episodes are the evaluation;
    its other sets are stored beside them, so a run given more rounds evaluates its new weights."""
    rounds = trained.get("rounds") or []
    if cfg.algorithm == "rft" and rounds and (name != "heldout" or rounds[-1].get("heldout_episodes")):
        return out / "rft" / f"round-{rounds[-1]['round']}" / name
    return out / name


def before_after(before: dict | None, after: dict | None, name: str, pairs: dict | None = None) -> dict:
    """``{name}_pass_rate_before/after``, ``{name}_episodes`` and the two-proportion test of the
    change; with ``pairs`` (``metrics.paired`` of the two stores: the same episodes, before and
    after), also ``{name}_gained``, ``{name}_lost`` and ``{name}_mcnemar_p``, the paired test."""
    if not before or not after or before["pass_rate"] is None or after["pass_rate"] is None:
        return {}
    n_before, n_after = before["episodes"] - before["errors"], after["episodes"] - after["errors"]
    z, p = two_proportion_z(before["pass_rate"], after["pass_rate"], n_before, n_after)
    paired = {f"{name}_gained": pairs["gained"], f"{name}_lost": pairs["lost"],
              f"{name}_mcnemar_p": pairs["mcnemar_p"]} if pairs else {}
    return {f"{name}_pass_rate_before": before["pass_rate"], f"{name}_pass_rate_after": after["pass_rate"],
            f"{name}_episodes": after["episodes"], f"{name}_z": z,
            f"{name}_p_value": p, **paired}


RUNNERS = {"grpo": run_grpo, "rft": run_rft, "dpo": run_dpo}


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No progress bars (datasets, transformers) and no FutureWarnings from the libraries' own calls
    (TRL calls transformers' ``gradient_checkpointing_enable``, which warns at every step)."""
    import datasets  # heavy: datasets
    import transformers  # heavy: transformers

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|datasets)(\.|$)")
            # TRL marks environment_factory experimental at every trainer; termrl pins the TRL it is tested on
            warnings.filterwarnings("ignore", message="You are using 'environment_factory'", category=UserWarning)
            yield
    finally:
        if bars:
            datasets.enable_progress_bars()
        transformers.utils.logging.enable_progress_bar()


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    """torch on ``n`` CPU threads for the block (0: as it is)."""
    if not n:
        yield
        return
    import torch  # heavy: torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_training(cfg: TrainConfig, resume: bool = False) -> dict:
    """Train as ``cfg`` says, evaluate on the held-out tasks, and write results.json."""
    world = join()
    out = world.from_main(lambda: _prepare_dir(cfg, resume))
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(out / "tensorboard")  # transformers' TensorBoard callback reads it
    accountant = Accountant()
    sets = [(name, suite) for name, suite in (("heldout", cfg.tasks.heldout),
                                              ("transfer", cfg.tasks.transfer)) if suite]
    before, after, stores = {}, {}, {}
    shared = world.from_main(lambda: overlap_with_training(cfg, out))

    with accountant, cluster_verifier(cfg) as cluster, warm_sandboxes_closed(), _threads(cfg.threads), _quiet():
        model_dir = world.from_main(lambda: _model_dir(cfg, out))
        model_dir, sft = warm_start(cfg, out, model_dir, accountant)
        if cfg.eval.before:
            for name, suite in sets:
                before[name] = evaluate(cfg, model_dir, suite, out / f"{name}-before", accountant,
                                        f"{name} (before)")
        trained = RUNNERS[cfg.algorithm](cfg, out, model_dir, accountant, resume)
        for name, suite in sets:
            stores[name] = _after_dir(cfg, out, name, trained)
            after[name] = evaluate(cfg, out / "final", suite, stores[name], accountant, f"{name} (after)")
    pairs = world.from_main(lambda: {name: paired(read(out / f"{name}-before"), read(stores[name]))
                                     for name in before if name in stores})
    compute = accountant.summary()
    if world.main:
        (out / "compute.json").write_text(json.dumps(compute, indent=1))
    results = {"algorithm": cfg.algorithm, "output_dir": str(out), "harness": harness(), "overlap": shared, "sft": sft, "training": trained,
               "heldout": after.get("heldout"), "heldout_before": before.get("heldout"),
               "transfer": after.get("transfer"), "transfer_before": before.get("transfer"),
               **before_after(before.get("heldout"), after.get("heldout"), "heldout", pairs.get("heldout")),
               **before_after(before.get("transfer"), after.get("transfer"), "transfer", pairs.get("transfer")),
               "compute": compute, "config": dataclasses.asdict(cfg), **({"ray": cluster} if cluster else {})}
    if world.main:
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return results
