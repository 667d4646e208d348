"""Multi-turn GRPO's tool calls: one rollout after another (TRL) against all at once (termrl).

TRL 1.16 runs the tool calls of a batch's rollouts one rollout after another
(``GRPOTrainer._tool_call_loop``); ``termrl.reward.exports.trl_env.ToolCallsAhead`` runs up to
``workers`` rollouts' calls at a time, and finishes (verifies) the episode of a rollout that
stopped calling tools while the others go on. This runs the same GRPO steps through
``train_grpo`` once per worker count, side by side in one run: a tiny model whose ``generate``
answers each rollout with its task's reference command as a ``bash`` call, then (``--max-turns``
above 1) with ``ls`` calls, then with plain text (so every rollout makes real calls in its own
sandbox, and every episode is verified), on the same tasks, batch and seed. With ``--max-turns``
1 an episode has its task's own step limit (one step for ``one-command``: it ends, and is
verified, inside its call); above 1 it may take ``max_turns + 1`` steps, so that each ends with
the model's last reply, not inside a call. The rollouts of
task i make 1 + i % max_turns calls. ``--generate-ms`` makes each ``generate`` call sleep that
long, standing in for a real model's decoding (the finishing ahead overlaps it).

Prints ``name=value`` lines, per worker count W (and W-nofinish: W workers, episodes finished
only after the tool loop, as TRL would, with ``--finish-ahead on,off``):

  tool_loop_s_wW=    seconds per step inside TRL's tool loop (the rollouts' calls)
  reset_s_wW=        seconds per step in the environments' resets (TRL makes them one after
                     another; each starts the rollout's sandbox)
  step_s_wW=         wall seconds per optimizer step
  finished_ahead_wW= episodes per step finished while other rollouts still called tools
  tool_loop_speedup_wW=, step_speedup_wW=   the same, the first run over this one

Usage: python bench/tool_calls_ahead.py [--family one-command] [--tasks 4] [--group 4] [--steps 3]
       [--workers 1,4,8] [--max-turns 1] [--generate-ms 0] [--finish-ahead on|off|on,off]
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
    a bash call, its next ``turns - 1`` an ``ls`` call, every later turn plain text (the episode
    ends and is verified). Each call sleeps ``generate_s`` first."""

    def __init__(self, tokenizer, tasks, max_turns: int = 1, generate_s: float = 0.0):
        import torch

        from termrl.policies.tiny import reference_reply

        self.torch, self.tok, self.generate_s = torch, tokenizer, generate_s
        self.replies = {task.instruction.strip()[:80]: (reference_reply(task), 1 + i % max_turns)
                        for i, task in enumerate(tasks)}
        self.response = tokenizer.convert_tokens_to_ids("<tool_response>")
        self.ls = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'

    def __call__(self, input_ids, attention_mask=None, **kwargs):
        time.sleep(self.generate_s)
        torch, rows = self.torch, []
        for row in input_ids:
            text = self.tok.decode(row)
            reply, turns = next(r for key, r in self.replies.items() if key in text)
            done = int((row == self.response).sum())
            reply = (reply if not done else self.ls if done < turns else "Done.") + "<|im_end|>"
            rows.append(torch.cat([row, torch.tensor(self.tok(reply, add_special_tokens=False)["input_ids"])]))
        width = max(len(r) for r in rows)
        return torch.stack([torch.cat([r, torch.full((width - len(r),), self.tok.pad_token_id)]) for r in rows])


def run(model_dir: Path, tasks, workers: int, finish: bool, args, out: Path) -> tuple[float, float, float, float]:
    """Seconds per step: inside the tool loop, in resets, and in all; episodes finished ahead per step."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from termrl.env import EnvConfig
    from termrl.reward.exports.trl_env import TerminalToolEnv
    from termrl.training.ahead import grpo_trainer_class
    from termrl.training.grpo import train_grpo

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.generate = ReferenceReplies(tokenizer, tasks, args.max_turns, args.generate_ms / 1000)
    trainer_class = grpo_trainer_class()
    trainer_class.finish_ahead = finish
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
    episode_steps = args.max_turns + 1 if args.max_turns > 1 else None  # None: the task's own limit
    start = time.perf_counter()
    try:
        trainer = train_grpo(model, tokenizer, tasks, "coderl", config,
                             env_config=EnvConfig(static=False, max_steps=episode_steps), workers=workers)
    finally:
        trainer_class._tool_call_loop, TerminalToolEnv.reset = loop, reset
        trainer_class.finish_ahead = True
    return (spent[loop] / args.steps, spent[reset] / args.steps, (time.perf_counter() - start) / args.steps,
            trainer.episodes_finished_ahead / args.steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", default="one-command")
    ap.add_argument("--tasks", type=int, default=4, help="tasks per step")
    ap.add_argument("--group", type=int, default=4, help="rollouts per task (num_generations)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--workers", default="1,4,8", help="comma-separated worker counts; the first is the baseline")
    ap.add_argument("--max-turns", type=int, default=1, help="the rollouts of task i make 1 + i %% N calls")
    ap.add_argument("--generate-ms", type=float, default=0.0, help="each generate call sleeps this long")
    ap.add_argument("--finish-ahead", default="on", help="on, off or on,off: finish episodes ahead (W > 1)")
    args = ap.parse_args()
    finishes = [{"on": True, "off": False}[f] for f in args.finish_ahead.split(",")]

    from termrl.policies.tiny import build_tiny_model
    from termrl.tasks.families import get_family

    family = get_family(args.family)
    tasks = [family.generate(family.train_seeds.start + i) for i in range(args.tasks * args.steps)]
    counts = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="termrl-bench-") as tmp:
        model_dir = build_tiny_model(Path(tmp) / "tiny", hidden_size=16, layers=1, heads=2)
        results = {}
        for w in counts:
            for finish in finishes if w > 1 else [True]:
                name = f"{w}" if finish else f"{w}-nofinish"
                results[name] = run(model_dir, tasks, w, finish, args, Path(tmp) / f"out-{name}")
    base_loop, _, base_step, _ = next(iter(results.values()))
    print(f"rollouts_per_step={args.tasks * args.group}")
    for w, (loop_s, reset_s, step_s, finished) in results.items():
        print(f"tool_loop_s_w{w}={loop_s:.3f}")
        print(f"reset_s_w{w}={reset_s:.3f}")
        print(f"step_s_w{w}={step_s:.3f}")
        print(f"finished_ahead_w{w}={finished:.1f}")
        print(f"tool_loop_speedup_w{w}={base_loop / loop_s:.2f}")
        print(f"step_speedup_w{w}={base_step / step_s:.2f}")


if __name__ == "__main__":
    main()
