"""Multi-turn GRPO's tool calls: one rollout after another (TRL) against all at once (termrl).

TRL 1.16 runs the tool calls of a batch's rollouts one rollout after another
(``GRPOTrainer._tool_call_loop``); ``termrl.train.grpo_env.ToolCallsAhead`` runs up to
``workers`` rollouts' calls at a time. This runs the same GRPO steps through ``train_grpo``
once per worker count, side by side in one run: a tiny model whose ``generate`` answers each
rollout with its task's reference command as a ``bash`` call and then with plain text (so every
rollout makes one real call in its own sandbox, and every episode is verified), on the same
tasks, batch and seed.

Prints ``name=value`` lines, per worker count W:

  tool_loop_s_wW=    seconds per step inside TRL's tool loop (the rollouts' calls)
  reset_s_wW=        seconds per step in the environments' resets (TRL makes them one after
                     another; each starts the rollout's sandbox)
  step_s_wW=         wall seconds per optimizer step
  tool_loop_speedup_wW=, step_speedup_wW=   the same, workers=1 over workers=W

Usage: python bench/tool_calls_ahead.py [--family one-command] [--tasks 4] [--group 4] [--steps 3]
       [--workers 1,4,8]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


class ReferenceReplies:
    """Stands in for ``model.generate``: a rollout's first turn is its task's reference command as
    a bash call, every later turn plain text (the episode ends and is verified)."""

    def __init__(self, tokenizer, tasks):
        import torch

        from termrl.train.quickstart import reference_reply

        self.torch, self.tok = torch, tokenizer
        self.replies = {task.instruction.strip()[:80]: reference_reply(task) for task in tasks}
        self.response = tokenizer.convert_tokens_to_ids("<tool_response>")

    def __call__(self, input_ids, attention_mask=None, **kwargs):
        torch, rows = self.torch, []
        for row in input_ids:
            text = self.tok.decode(row)
            reply = next(r for key, r in self.replies.items() if key in text)
            reply = (reply if not int((row == self.response).sum()) else "Done.") + "<|im_end|>"
            rows.append(torch.cat([row, torch.tensor(self.tok(reply, add_special_tokens=False)["input_ids"])]))
        width = max(len(r) for r in rows)
        return torch.stack([torch.cat([r, torch.full((width - len(r),), self.tok.pad_token_id)]) for r in rows])


def run(model_dir: Path, tasks, workers: int, args, out: Path) -> tuple[float, float, float]:
    """Seconds per step: inside the tool loop, in resets, and in all."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from termrl.env import EnvConfig
    from termrl.train.grpo import _trainer_class, train_grpo
    from termrl.train.grpo_env import TerminalToolEnv

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.generate = ReferenceReplies(tokenizer, tasks)
    trainer_class = _trainer_class()
    loop, reset = trainer_class._tool_call_loop, TerminalToolEnv.reset
    spent = {loop: 0.0, reset: 0.0}

    def timer(method):
        def timed(self, *a, **k):
            start = time.perf_counter()
            try:
                return method(self, *a, **k)
            finally:
                spent[method] += time.perf_counter() - start
        return timed

    trainer_class._tool_call_loop, TerminalToolEnv.reset = timer(loop), timer(reset)
    config = GRPOConfig(output_dir=str(out), use_cpu=True, report_to="none", max_steps=args.steps,
                        per_device_train_batch_size=args.tasks * args.group, num_generations=args.group,
                        max_completion_length=512, learning_rate=1e-5, logging_steps=1, save_strategy="no",
                        seed=0, disable_tqdm=True)
    start = time.perf_counter()
    try:
        train_grpo(model, tokenizer, tasks, "coderl", config, env_config=EnvConfig(static=False),
                   workers=workers)
    finally:
        trainer_class._tool_call_loop, TerminalToolEnv.reset = loop, reset
    return spent[loop] / args.steps, spent[reset] / args.steps, (time.perf_counter() - start) / args.steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="one-command")
    ap.add_argument("--tasks", type=int, default=4, help="tasks per step")
    ap.add_argument("--group", type=int, default=4, help="rollouts per task (num_generations)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--workers", default="1,4,8", help="comma-separated worker counts; the first is the baseline")
    args = ap.parse_args()

    from termrl.policies.tiny import build_tiny_model
    from termrl.tasks.families import get_family

    family = get_family(args.family)
    tasks = [family.generate(family.train_seeds.start + i) for i in range(args.tasks * args.steps)]
    counts = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="termrl-bench-") as tmp:
        model_dir = build_tiny_model(Path(tmp) / "tiny", hidden_size=16, layers=1, heads=2)
        results = {w: run(model_dir, tasks, w, args, Path(tmp) / f"out-{w}") for w in counts}
    base_loop, _, base_step = results[counts[0]]
    print(f"rollouts_per_step={args.tasks * args.group}")
    for w, (loop_s, reset_s, step_s) in results.items():
        print(f"tool_loop_s_w{w}={loop_s:.3f}")
        print(f"reset_s_w{w}={reset_s:.3f}")
        print(f"step_s_w{w}={step_s:.3f}")
        print(f"tool_loop_speedup_w{w}={base_loop / loop_s:.2f}")
        print(f"step_speedup_w{w}={base_step / step_s:.2f}")


if __name__ == "__main__":
    main()
