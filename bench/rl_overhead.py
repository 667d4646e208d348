"""What termrl adds to an RL step: bare TRL GRPO vs termrl's GRPO, side by side in one run.

All runs train the same model (the quickstart's tiny model after a short SFT, so that its replies
are real actions) with the same ``GRPOConfig`` (the quickstart's: batch, group size, completion
length, seed) for the same number of steps on the same prompts:

- **bare**: ``GRPOTrainer`` with one constant reward function (nothing is run);
- **termrl**: the quickstart's reward: every completion run as a one-action episode in a
  sandbox, verified on the warm pool, read by the hack detectors and scored by the spec;
- **termrl, rewards ahead**: the same reward through ``termrl.training.ahead``'s trainer (the
  quickstart's), which starts each completion's episode as soon as the model has finished it,
  while the rest of the batch still generates.

Each run's time is split by ``termrl.rollout.accounting.Accountant``: ``generation`` (the
model's ``generate``), ``environment``, ``verification``, ``detection`` (inside the episodes),
``reward`` (the reward functions, less the episodes' phases nested in them) and ``training``
(the rest of the step: the loss, backward and optimizer). Where episodes run beside generation
the Accountant divides each instant among the phases open then. Prints ``name=value`` lines:

  step_s_bare=, step_s_termrl=   wall seconds per optimizer step
  step_ratio=                    step_s_termrl / step_s_bare (goal <= 1.2)
  share_<phase>=                 the phase's share of termrl's wall time
  env_reward_share=              environment + verification + reward + detection (goal <= 0.10)
  reward_wait_share=             the share of the step the trainer spent inside the reward functions
  step_s_ahead=, step_ratio_ahead=, env_reward_share_ahead=, reward_wait_share_ahead=
                                 the same with rewards ahead
  started_during_generation=, started_after_generation=, taken_ahead=
                                 episodes the ahead run started while the batch generated / after,
                                 and how many of them the reward functions used
  episodes=, cached=             episodes run in sandboxes, completions answered from the cache
  episode_ms_p50=, _p90=, _p99=, _max=   an episode's wall milliseconds (stragglers hold up a step)

Usage: python bench/rl_overhead.py [--steps 10] [--sft-steps 100] [--verifier-workers N] [--warm-sandboxes N]
       [--ahead-first] [--model DIR [--dtype bfloat16] [--lora R]] [--torch-threads N]
       [--prompts-per-step N] [--num-generations N] [--max-completion-tokens N]

``--model`` trains a real pretrained model (e.g. Qwen2.5-Coder-0.5B-Instruct) instead of the tiny
one, with no SFT first: the same three runs, to see the side's share where generation is real.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIDE = ("environment", "verification", "reward", "detection")


def timed_generate(model, accountant):
    """``model.generate`` counted as the generation phase."""
    generate = model.generate

    @functools.wraps(generate)
    def wrapped(*args, **kwargs):
        with accountant.phase("generation"):
            return generate(*args, **kwargs)

    model.generate = wrapped


class TimedReward:
    """A TRL reward function whose calls count as the reward phase; ``waited_s`` sums their wall time."""

    def __init__(self, func, accountant):
        self.func, self.accountant, self.__name__ = func, accountant, func.__name__
        self.scorer = getattr(func, "scorer", None)  # what the ahead trainer starts evaluations on
        self.waited_s = 0.0

    def __call__(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            with self.accountant.phase("reward"):
                return self.func(*args, **kwargs)
        finally:
            self.waited_s += time.perf_counter() - started


def constant(prompts, completions, **kwargs):
    return [0.0] * len(completions)


def timed_evaluator():
    """``SingleActionEvaluator`` that records each episode's wall milliseconds and completion."""
    from termrl.training.quickstart import SingleActionEvaluator

    class TimedEvaluator(SingleActionEvaluator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.spans: list[tuple[float, str]] = []

        def outcome(self, completion, seed):
            started = time.perf_counter()
            try:
                return super().outcome(completion, seed)
            finally:
                self.spans.append((1000 * (time.perf_counter() - started), completion))

    return TimedEvaluator


def train(sft_dir: Path, out: Path, config, seeds, reward_funcs, accountant, trainer_class=None,
          dtype: str = "float32", lora: int = 0):
    """GRPO from ``sft_dir`` with ``reward_funcs``: (seconds per optimizer step, the share of the
    run spent inside the reward functions, the trainer). ``lora``: the rank of a LoRA adapter on
    every linear layer (0: full fine-tuning)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import GRPOTrainer

    from termrl.training.quickstart import grpo_args, grpo_rows

    tokenizer = AutoTokenizer.from_pretrained(sft_dir)
    model = AutoModelForCausalLM.from_pretrained(sft_dir, dtype=getattr(torch, dtype))
    timed_generate(model, accountant)
    funcs = [TimedReward(f, accountant) for f in reward_funcs]
    peft_config = None
    if lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=lora, lora_alpha=2 * lora, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = (trainer_class or GRPOTrainer)(model=model, reward_funcs=funcs, args=grpo_args(config, out),
                                             train_dataset=Dataset.from_list(grpo_rows(config, seeds)),
                                             processing_class=tokenizer, peft_config=peft_config)
    trainer.remove_callback(PrinterCallback)
    started = time.perf_counter()
    with accountant, accountant.phase("training"):
        trainer.train()
    wall = time.perf_counter() - started
    return wall / trainer.state.global_step, sum(f.waited_s for f in funcs) / wall, trainer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=10, help="GRPO steps of each run.")
    ap.add_argument("--sft-steps", type=int, default=100, help="SFT steps before (the quickstart does 225).")
    ap.add_argument("--verifier-workers", type=int, default=None,
                    help="Warm verifiers and reward threads (default: the quickstart's, 3).")
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
    args = ap.parse_args()
    if args.model is not None and not (args.model / "config.json").is_file():
        ap.error(f"--model {args.model}: no config.json there; give a Hugging Face model directory "
                 "(e.g. ../shared/tools/qwen2.5-coder-0.5b.sh builds one)")
    if args.dtype not in ("float32", "bfloat16"):
        ap.error(f"--dtype {args.dtype}: use float32 or bfloat16")

    import torch

    from termrl.reward.exports.trl import trl_reward_funcs
    from termrl.reward.spec import load_spec
    from termrl.rollout.accounting import Accountant
    from termrl.sandbox.warm import warm_sandboxes_closed
    from termrl.tasks.families import get_family
    from termrl.training.ahead import rewards_ahead_trainer
    from termrl.training.quickstart import QuickstartConfig, build_model, train_sft
    from termrl.verify.pool import VerifierPool

    TimedEvaluator = timed_evaluator()
    overrides = {"verifier_workers": args.verifier_workers, "warm_sandboxes": args.warm_sandboxes,
                 "torch_threads": args.torch_threads, "prompts_per_step": args.prompts_per_step,
                 "num_generations": args.num_generations, "max_completion_tokens": args.max_completion_tokens}
    config = QuickstartConfig(grpo_steps=args.steps, sft_steps=args.sft_steps,
                              **{k: v for k, v in overrides.items() if v is not None})
    torch.set_num_threads(config.torch_threads)
    family = get_family(config.family)
    start = family.train_seeds.start
    sft_seeds = range(start, start + config.sft_examples)
    seeds = range(sft_seeds.stop, sft_seeds.stop + args.steps * config.prompts_per_step)
    work = Path(tempfile.mkdtemp(prefix="termrl-rl-overhead-"))
    if args.model is not None:
        model_dir = args.model
    else:
        model_dir = work / "sft"
        build_model(work / "init", config)
        train_sft(work / "init", model_dir, config, sft_seeds, say=lambda m: None)
    print(f"rl_overhead: model ready, {args.steps} GRPO steps each", file=sys.stderr, flush=True)
    options = {"dtype": args.dtype, "lora": args.lora}

    bare = Accountant()
    step_bare, _, _ = train(model_dir, work / "bare", config, seeds, [constant], bare, **options)
    print(f"rl_overhead: bare {step_bare:.2f} s/step", file=sys.stderr, flush=True)

    ours, ahead = Accountant(), Accountant()
    with VerifierPool(workers=config.verifier_workers, static=False) as pool, warm_sandboxes_closed():
        # each run its own evaluator: nothing is answered from the other run's cache
        evaluator = TimedEvaluator(config.family, pool, phase=ours.phase, warm_sandboxes=config.warm_sandboxes)
        funcs = trl_reward_funcs(load_spec(config.spec), evaluator, workers=config.verifier_workers)
        evaluator_ahead = TimedEvaluator(config.family, pool, phase=ahead.phase, warm_sandboxes=config.warm_sandboxes)
        funcs_ahead = trl_reward_funcs(load_spec(config.spec), evaluator_ahead, workers=config.verifier_workers)

        def plain():
            return train(model_dir, work / "termrl", config, seeds, funcs, ours, **options)

        def with_ahead():
            return train(model_dir, work / "ahead", config, seeds, funcs_ahead, ahead, rewards_ahead_trainer(),
                         **options)

        for name, run in ((("rewards ahead", with_ahead), ("termrl", plain)) if args.ahead_first
                          else (("termrl", plain), ("rewards ahead", with_ahead))):
            result = run()
            if run is plain:
                step_ours, wait_ours, _ = result
            else:
                step_ahead, wait_ahead, trainer_ahead = result
            print(f"rl_overhead: {name} {result[0]:.2f} s/step", file=sys.stderr, flush=True)
    completions = args.steps * config.prompts_per_step * config.num_generations

    shares = {name: row["share"] for name, row in ours.summary()["phases"].items()}
    shares_ahead = {name: row["share"] for name, row in ahead.summary()["phases"].items()}
    print(f"step_s_bare={step_bare:.3f}")
    print(f"step_s_termrl={step_ours:.3f}")
    print(f"step_ratio={step_ours / step_bare:.3f}")
    for name, share in shares.items():
        print(f"share_{name}={share:.3f}")
    print(f"env_reward_share={sum(shares[p] for p in SIDE):.3f}")
    print(f"reward_wait_share={wait_ours:.3f}")
    print(f"step_s_ahead={step_ahead:.3f}")
    print(f"step_ratio_ahead={step_ahead / step_bare:.3f}")
    print(f"env_reward_share_ahead={sum(shares_ahead[p] for p in SIDE):.3f}")
    print(f"reward_wait_share_ahead={wait_ahead:.3f}")
    print(f"started_during_generation={trainer_ahead.rewards_ahead.during_generation}")
    print(f"started_after_generation={trainer_ahead.rewards_ahead.after_generation}")
    print(f"taken_ahead={funcs_ahead[0].scorer.taken_ahead}")
    print(f"bare_share_generation={bare.summary()['phases']['generation']['share']:.3f}")
    print(f"episodes={evaluator.runs}")
    spans = sorted(ms for ms, _ in evaluator.spans)
    for q in (0.5, 0.9, 0.99):
        print(f"episode_ms_p{round(q * 100)}={spans[min(len(spans) - 1, int(q * len(spans)))]:.0f}")
    print(f"episode_ms_max={spans[-1]:.0f}")
    for ms, completion in sorted(evaluator.spans, reverse=True)[:3]:
        print(f"rl_overhead: slowest episodes: {ms:.0f} ms: {completion!r}", file=sys.stderr)
    print(f"cached={completions - evaluator.runs}")
    print(f"config={dataclasses.asdict(config) | {'system_prompt': '...'}}")
    print(f"model={args.model or 'tiny (quickstart)'} dtype={args.dtype} lora={args.lora}")


if __name__ == "__main__":
    main()
