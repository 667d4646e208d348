"""What termrl adds to an RL step: bare TRL GRPO vs termrl's GRPO, side by side in one run.

All runs train the same model (the quickstart's tiny model, built with its tokenizer, after a
short SFT warm start, so that its replies are real actions) with the same ``GRPOConfig`` (the
quickstart's, ``configs/quickstart.toml``, built as ``termrl train`` builds it: batch, group size,
completion length, seed, one turn per episode: ``max_tool_calling_iterations=0``) for the same
number of steps on the same tasks:

- **bare**: TRL's ``GRPOTrainer`` with one constant reward function, the rollouts' prompts as
  the environment's ``reset`` makes them, and the same tools (``bash``, ``write_file``) given to
  TRL, which parses each reply's calls and runs none of them (nothing is run);
- **termrl**: ``termrl.training.grpo.train_grpo`` as ``termrl train`` runs the quickstart, but
  through TRL's plain ``GRPOTrainer``: every rollout a one-turn ``TerminalToolEnv`` episode
  (its sandbox started at ``reset``, its reply's tool call run when the episode is finished),
  verified on the warm ``VerifierPool``, read by the hack detectors and scored by the spec;
- **termrl, rewards ahead**: the same through ``termrl.training.ahead.grpo_trainer_class()``
  (``train_grpo``'s own trainer), which finishes each rollout's episode as soon as the model has
  finished its reply, while the rest of the batch still generates.

Each run's time is split by ``termrl.rollout.accounting.Accountant``: ``generation`` (the
model's ``generate``), ``environment``, ``verification``, ``detection`` (the episodes: reset,
the reply's call, the finish), ``reward`` (the reward functions, less the episodes' phases
nested in them) and ``training`` (the rest of the step: the loss, backward and optimizer). Where
episodes run beside generation the Accountant divides each instant among the phases open then.
Prints ``name=value`` lines:

  step_s_bare=, step_s_termrl=   wall seconds per optimizer step
  step_ratio=                    step_s_termrl / step_s_bare (goal <= 1.2)
  share_<phase>=                 the phase's share of termrl's wall time
  env_reward_share=              environment + verification + reward + detection (goal <= 0.10)
  reward_wait_share=             the share of the step the trainer spent inside the reward functions
  step_s_ahead=, step_ratio_ahead=, env_reward_share_ahead=, reward_wait_share_ahead=
                                 the same with rewards ahead
  started_during_generation=, started_after_generation=, taken_ahead=
                                 episodes the ahead run finished while the batch generated / after,
                                 and how many of them the reward functions used
  replayed_ahead=                of those, episodes played again because TRL decoded the reply
                                 otherwise than the ahead trainer had (costs time, never a reward)
  episodes=                      episodes the termrl run played (one per rollout: no cache)
  episode_ms_p50=, _p90=, _p99=, _max=   an episode's wall milliseconds in the termrl run: its
                                 reset plus its finish (the reply's call, verification, detection);
                                 stragglers hold up a step

Usage: python bench/rl_overhead.py [--steps 10] [--sft-steps 100] [--verifier-workers N] [--warm-sandboxes N]
       [--ahead-first] [--model DIR [--dtype bfloat16] [--lora R]] [--torch-threads N]
       [--prompts-per-step N] [--num-generations N] [--max-completion-tokens N] [--tokenizer-seeds N]

``--model`` trains a real pretrained model (e.g. Qwen2.5-Coder-0.5B-Instruct) instead of the tiny
one, with no SFT first: the same three runs, to see the side's share where generation is real.
The smallest run (a minute or two): ``--steps 1 --sft-steps 1 --prompts-per-step 1
--num-generations 2 --max-completion-tokens 16 --tokenizer-seeds 50``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Self
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

SIDE = ("environment", "verification", "reward", "detection")


def timed_accountant():
    """An ``Accountant`` whose ``waited_s`` sums the wall time of the outermost ``reward`` phases
    (the trainer inside the reward functions)."""
    from termrl.rollout.accounting import Accountant

    class TimedAccountant(Accountant):
        def __init__(self):
            super().__init__()
            self.waited_s = 0.0
            self._inside = threading.local()

        @contextlib.contextmanager
        def phase(self, name, episode=None):
            outer = name == "reward" and not getattr(self._inside, "reward", False)
            started = time.perf_counter()
            if outer:
                self._inside.reward = True
            try:
                with super().phase(name, episode):
                    yield
            finally:
                if outer:
                    self._inside.reward = False
                    self.waited_s += time.perf_counter() - started

    return TimedAccountant()


def timed_generate(model, accountant):
    """``model.generate`` counted as the generation phase."""
    generate = model.generate

    @functools.wraps(generate)
    def wrapped(*args, **kwargs):
        with accountant.phase("generation"):
            return generate(*args, **kwargs)

    model.generate = wrapped


class EpisodeClock:
    """While open, each ``TerminalToolEnv`` episode's wall milliseconds: its ``reset`` plus its
    finish (``episode_outcome``: the reply's pending calls, verification, detection), and the
    command it ran. A finish asked for twice (ahead, then by the reward call, which waits for it)
    counts once, by its first call."""

    def __init__(self):
        self.reset_ms: dict[int, float] = {}
        self.finish_ms: dict[int, float] = {}
        self.reply: dict[int, str] = {}
        self._lock = threading.Lock()
        self._patches = contextlib.ExitStack()

    def __enter__(self) -> Self:
        from termrl.reward.exports.trl_env import TerminalToolEnv

        reset, finish, clock = TerminalToolEnv.reset, TerminalToolEnv._finish, self

        def timed_reset(env, *args, **kwargs):
            started = time.perf_counter()
            try:
                return reset(env, *args, **kwargs)
            finally:
                with clock._lock:
                    clock.reset_ms[env.episode] = 1000 * (time.perf_counter() - started)

        def timed_finish(env, pending=()):
            episode, started = env.episode, time.perf_counter()
            with clock._lock:
                first = episode not in clock.finish_ms
                if first:
                    clock.finish_ms[episode] = 0.0  # claimed: a later call only waits for this one
            try:
                return finish(env, pending)
            finally:
                if first:
                    with clock._lock:
                        clock.finish_ms[episode] = 1000 * (time.perf_counter() - started)
                        clock.reply[episode] = _commands(pending)

        self._patches.enter_context(mock.patch.object(TerminalToolEnv, "reset", timed_reset))
        self._patches.enter_context(mock.patch.object(TerminalToolEnv, "_finish", timed_finish))
        return self

    def __exit__(self, *exc) -> None:
        self._patches.close()

    def spans(self) -> list[tuple[float, str]]:
        """(milliseconds, command) of each finished episode."""
        return [(self.reset_ms.get(e, 0.0) + ms, self.reply.get(e, "")) for e, ms in self.finish_ms.items()]


def _commands(pending) -> str:
    calls = [c.get("function", {}) for c in pending if isinstance(c, dict)]
    return " ; ".join(json.dumps(c.get("arguments"))[:200] for c in calls) or "(no tool call)"


@contextlib.contextmanager
def quiet():
    """No progress bars and no FutureWarnings from the libraries (as ``termrl train``)."""
    import warnings

    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"(transformers|trl|datasets)(\.|$)")
        yield


class Constant:
    """The bare run's reward: 0 for every completion, counted as the reward phase."""

    __name__ = "constant"

    def __init__(self, accountant):
        self.accountant = accountant

    def __call__(self, prompts, completions, **kwargs):
        with self.accountant.phase("reward"):
            return [0.0] * len(completions)


def quickstart(args):
    """The quickstart's ``TrainConfig`` with the bench's options applied (``--set`` overrides)."""
    from termrl.training import QUICKSTART
    from termrl.training.config import load_config

    sets = {"grpo.steps": args.steps, "sft.steps": 0 if args.model else args.sft_steps,
            "grpo.verifier_workers": args.verifier_workers, "grpo.workers": args.verifier_workers,
            "env.warm_sandboxes": args.warm_sandboxes, "threads": args.torch_threads,
            "grpo.num_generations": args.num_generations, "grpo.max_completion_length": args.max_completion_tokens,
            "model.tiny_tokenizer_seeds": args.tokenizer_seeds}
    cfg = load_config(QUICKSTART, [f"{k}={v}" for k, v in sets.items() if v is not None])
    prompts = args.prompts_per_step or cfg.grpo.batch_size // cfg.grpo.num_generations
    cfg.grpo.batch_size = prompts * cfg.grpo.num_generations
    return cfg


def env_config(cfg):
    """The episodes' ``EnvConfig``, as ``termrl train`` builds it from ``[env]``."""
    from termrl.env import EnvConfig

    e = cfg.env
    return EnvConfig(max_steps=e.max_steps, time_limit_s=e.time_limit_s, command_timeout_s=e.command_timeout_s,
                     observation_chars=e.observation_chars, backend=e.backend, action_format=e.action_format,
                     warm_sandboxes=e.warm_sandboxes, system_prompt=e.system_prompt, static=e.static)


def grpo_args(cfg, out: Path, tiny: bool):
    """The run's ``GRPOConfig``, built from ``[grpo]`` as ``termrl train`` builds it (no checkpoints,
    no reports, a log line per step)."""
    import torch
    from trl import GRPOConfig

    from termrl.training.config import trl_checkpointing

    g = cfg.grpo
    return GRPOConfig(output_dir=str(out / "checkpoints"), seed=cfg.seed, report_to="none", logging_steps=1,
                      save_strategy="no", use_cpu=not torch.cuda.is_available(), disable_tqdm=True,
                      **({"bf16": False} if tiny else {}), **trl_checkpointing(GRPOConfig),
                      max_steps=g.steps, learning_rate=g.learning_rate, lr_scheduler_type=g.lr_scheduler,
                      adam_beta2=g.adam_beta2, num_iterations=g.num_iterations, num_generations=g.num_generations,
                      per_device_train_batch_size=g.batch_size,
                      gradient_accumulation_steps=g.gradient_accumulation_steps,
                      max_completion_length=g.max_completion_length, temperature=g.temperature, beta=g.beta,
                      max_tool_calling_iterations=g.max_turns - 1 if g.max_turns else None)


def build_model(cfg, work: Path) -> Path:
    """The quickstart's tiny model and tokenizer (``model.tiny_*``), then its SFT warm start."""
    from termrl.policies.tiny import build_tiny_model, quickstart_tokenizer
    from termrl.training.run import warm_start

    m = cfg.model
    tokenizer = quickstart_tokenizer(m.tiny_tokenizer, m.tiny_tokenizer_seeds, m.tiny_vocab_size,
                                     cfg.env.system_prompt or "")
    init = build_tiny_model(work / "init", hidden_size=m.tiny_hidden_size, layers=m.tiny_layers,
                            heads=m.tiny_heads, vocab_size=m.tiny_vocab_size, seed=cfg.seed,
                            max_positions=m.tiny_max_positions, tokenizer=tokenizer)
    model_dir, _ = warm_start(cfg, work, init)
    return model_dir


def load(model_dir: Path, accountant, dtype: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype))
    timed_generate(model, accountant)
    return model, tokenizer


def peft_config(lora: int):
    """A LoRA adapter of rank ``lora`` on every linear layer (None: full fine-tuning)."""
    if not lora:
        return None
    from peft import LoraConfig

    return LoraConfig(r=lora, lora_alpha=2 * lora, target_modules="all-linear", task_type="CAUSAL_LM")


def train_bare(model_dir: Path, out: Path, cfg, tasks, accountant, options: dict):
    """TRL's ``GRPOTrainer`` with a constant reward on the prompts the episodes open with, the
    episodes' tools given to TRL (none is run: ``max_tool_calling_iterations=0``). Seconds per step."""
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import GRPOTrainer

    from termrl.reward.exports.trl_env import TerminalToolEnv
    from termrl.training.sft import opening_messages

    env = env_config(cfg)
    model, tokenizer = load(model_dir, accountant, options["dtype"])
    tools = TerminalToolEnv(env)  # never reset: its methods give TRL the tools' schemas
    rows = [{"prompt": opening_messages(task, env)} for task in tasks]
    trainer = GRPOTrainer(model=model, reward_funcs=[Constant(accountant)], args=grpo_args(cfg, out, options["tiny"]),
                          train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                          tools=[tools.bash, tools.write_file], peft_config=peft_config(options["lora"]))
    trainer.remove_callback(PrinterCallback)
    with accountant.phase("training"):
        trainer.train()
    accountant.stop()
    return accountant.summary()["wall_s"] / trainer.state.global_step


def train_termrl(model_dir: Path, out: Path, cfg, tasks, accountant, verifier, ahead: bool, options: dict):
    """``train_grpo`` (with ``grpo_trainer_class()``, or TRL's plain ``GRPOTrainer`` without
    ``ahead``); returns (seconds per step, the trainer)."""
    from trl import GRPOTrainer

    from termrl.training import grpo

    model, tokenizer = load(model_dir, accountant, options["dtype"])
    plain = mock.patch.object(grpo, "grpo_trainer_class", lambda: GRPOTrainer)
    with contextlib.nullcontext() if ahead else plain:
        trainer = grpo.train_grpo(model, tokenizer, tasks, cfg.spec, grpo_args(cfg, out, options["tiny"]),
                                  peft_config(options["lora"]), accountant, env_config=env_config(cfg),
                                  workers=cfg.grpo.workers, system_prompt=cfg.env.system_prompt or "",
                                  verifier=verifier, print_logs=False)
    accountant.stop()  # its clocks started with the training phase, right before trainer.train()
    return accountant.summary()["wall_s"] / trainer.state.global_step, trainer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="GRPO steps of each run.")
    ap.add_argument("--sft-steps", type=int, default=100, help="SFT steps before (the quickstart does 200).")
    ap.add_argument("--verifier-workers", type=int, default=None,
                    help="Warm verifiers and episodes finished at once (default: the quickstart's, 3).")
    ap.add_argument("--warm-sandboxes", type=int, default=None,
                    help="Episode sandboxes started ahead (default: the quickstart's, 3; 0: none).")
    ap.add_argument("--ahead-first", action="store_true",
                    help="Run termrl with rewards ahead before termrl without (the default is after).")
    ap.add_argument("--model", type=Path, default=None,
                    help="A pretrained causal LM directory to train instead of the tiny model (no SFT).")
    ap.add_argument("--dtype", default="float32", help="The model's dtype: float32 or bfloat16.")
    ap.add_argument("--lora", type=int, default=0, help="LoRA rank on every linear layer (0: full fine-tuning).")
    ap.add_argument("--torch-threads", type=int, default=None, help="CPU threads (default: the quickstart's, 1).")
    ap.add_argument("--prompts-per-step", type=int, default=None, help="Tasks per step (default: 4).")
    ap.add_argument("--num-generations", type=int, default=None, help="Completions per task (default: 8).")
    ap.add_argument("--max-completion-tokens", type=int, default=None, help="Longest completion (default: 64).")
    ap.add_argument("--tokenizer-seeds", type=int, default=None,
                    help="Train tasks whose text trains the tiny model's tokenizer (default: the quickstart's, "
                         "3000; fewer builds it faster, for a smoke run).")
    args = ap.parse_args()
    if args.model is not None and not (args.model / "config.json").is_file():
        ap.error(f"--model {args.model}: no config.json there; give a Hugging Face model directory "
                 "(e.g. ../shared/tools/qwen2.5-coder-0.5b.sh builds one)")
    if args.dtype not in ("float32", "bfloat16"):
        ap.error(f"--dtype {args.dtype}: use float32 or bfloat16")

    import torch

    from termrl.episode import PoolVerifier
    from termrl.sandbox.warm import warm_sandboxes_closed
    from termrl.tasks.suites import resolve
    from termrl.verify.pool import VerifierPool

    cfg = quickstart(args)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    g = cfg.grpo
    prompts = g.batch_size // g.num_generations
    tasks = [e.task for e in resolve(cfg.tasks.train)][:args.steps * prompts]  # seeds SFT never saw
    work = Path(tempfile.mkdtemp(prefix="termrl-rl-overhead-"))
    options = {"dtype": args.dtype, "lora": args.lora, "tiny": args.model is None}
    with quiet():
        model_dir = args.model if args.model is not None else build_model(cfg, work)
        print(f"rl_overhead: model ready, {args.steps} GRPO steps each", file=sys.stderr, flush=True)

        bare = timed_accountant()
        step_bare = train_bare(model_dir, work / "bare", cfg, tasks, bare, options)
        print(f"rl_overhead: bare {step_bare:.2f} s/step", file=sys.stderr, flush=True)

        ours, ahead = timed_accountant(), timed_accountant()
        with VerifierPool(g.verifier_workers, static=cfg.env.static) as pool, warm_sandboxes_closed():
            verifier = PoolVerifier(pool)

            def plain():
                with EpisodeClock() as clock:
                    return (*train_termrl(model_dir, work / "termrl", cfg, tasks, ours, verifier, False, options),
                            clock)

            def with_ahead():
                return train_termrl(model_dir, work / "ahead", cfg, tasks, ahead, verifier, True, options)

            for name, run in ((("rewards ahead", with_ahead), ("termrl", plain)) if args.ahead_first
                              else (("termrl", plain), ("rewards ahead", with_ahead))):
                result = run()
                if run is plain:
                    step_ours, trainer_ours, clock = result
                else:
                    step_ahead, trainer_ahead = result
                print(f"rl_overhead: {name} {result[0]:.2f} s/step", file=sys.stderr, flush=True)

    shares = {name: row["share"] for name, row in ours.summary()["phases"].items()}
    shares_ahead = {name: row["share"] for name, row in ahead.summary()["phases"].items()}
    scorer_ahead = trainer_ahead.reward_funcs[0].scorer
    print(f"step_s_bare={step_bare:.3f}")
    print(f"step_s_termrl={step_ours:.3f}")
    print(f"step_ratio={step_ours / step_bare:.3f}")
    for name, share in shares.items():
        print(f"share_{name}={share:.3f}")
    print(f"env_reward_share={sum(shares[p] for p in SIDE):.3f}")
    print(f"reward_wait_share={ours.waited_s / ours.summary()['wall_s']:.3f}")
    print(f"step_s_ahead={step_ahead:.3f}")
    print(f"step_ratio_ahead={step_ahead / step_bare:.3f}")
    print(f"env_reward_share_ahead={sum(shares_ahead[p] for p in SIDE):.3f}")
    print(f"reward_wait_share_ahead={ahead.waited_s / ahead.summary()['wall_s']:.3f}")
    print(f"started_during_generation={trainer_ahead.rewards_ahead.during_generation}")
    print(f"started_after_generation={trainer_ahead.rewards_ahead.after_generation}")
    print(f"taken_ahead={scorer_ahead.taken_ahead}")
    print(f"replayed_ahead={sum(env.replayed for env in trainer_ahead.environments or ())}")
    print(f"bare_share_generation={bare.summary()['phases']['generation']['share']:.3f}")
    spans = clock.spans()
    print(f"episodes={len(spans)}")
    unverified = trainer_ours.reward_funcs[0].scorer.unverified
    if unverified:
        print(f"rl_overhead: {unverified} episodes of the termrl run were not verified", file=sys.stderr)
    ms = sorted(ms for ms, _ in spans)
    for q in (0.5, 0.9, 0.99):
        print(f"episode_ms_p{round(q * 100)}={ms[min(len(ms) - 1, int(q * len(ms)))]:.0f}")
    print(f"episode_ms_max={ms[-1]:.0f}")
    for slow, command in sorted(spans, reverse=True)[:3]:
        print(f"rl_overhead: slowest episodes: {slow:.0f} ms: {command}", file=sys.stderr)
    print(f"config={ {k: dataclasses.asdict(cfg)[k] for k in ('spec', 'threads', 'env', 'grpo')} }")
    print(f"model={args.model or 'tiny (quickstart)'} dtype={args.dtype} lora={args.lora}")


if __name__ == "__main__":
    main()
