"""The quickstart's GRPO reward log, step by step, on a small budget, as JSON.

For refactors of the reward path: the quickstart is seeded end to end (model, data order,
sampling), so its GRPO reward log must not move when the road from an episode to its reward is
rebuilt. Run before and after, then compare the ``logs`` lists (``--compare``).

Usage:
  python scripts/quickstart_reward_log.py OUT.json WORKDIR [--grpo-steps 10] [--sft-steps 150]
  python scripts/quickstart_reward_log.py --compare BEFORE.json AFTER.json

About 5 minutes on 2 cores with the defaults. ``sandbox_episodes`` in the result may differ by a
few between runs: identical completions verified at the same moment in two threads can both miss
the evaluator's cache. The rewards do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def reward_log(out_dir: Path, grpo_steps: int, sft_steps: int) -> dict:
    import torch
    import transformers

    from termrl.tasks.families import get_family
    from termrl.training import quickstart as q

    logs: list[dict] = []
    original = transformers.Trainer.log

    def log(self, values, *args, **kwargs):  # TRL's GRPOTrainer.log adds its metrics, then calls this
        logs.append({k: v for k, v in values.items() if k.startswith(("reward", "termrl"))})
        return original(self, values, *args, **kwargs)

    transformers.Trainer.log = log
    config = q.QuickstartConfig(sft_steps=sft_steps, sft_examples=64, grpo_steps=grpo_steps, tokenizer_seeds=300)
    torch.set_num_threads(config.torch_threads)
    start = get_family(config.family).train_seeds.start
    try:
        with q._quiet():
            q.build_model(out_dir / "init", config)
            q.train_sft(out_dir / "init", out_dir / "sft", config, range(start, start + 64), print)
            seeds = range(start + 64, start + 64 + grpo_steps * config.prompts_per_step)
            result = q.train_grpo(out_dir / "sft", out_dir / "rl", config, seeds, print)
    finally:
        transformers.Trainer.log = original
    return {"logs": [entry for entry in logs if entry], "result": result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs=2, help="OUT.json WORKDIR, or BEFORE.json AFTER.json with --compare")
    parser.add_argument("--compare", action="store_true", help="compare two logs; exit 1 if they differ")
    parser.add_argument("--grpo-steps", type=int, default=10)
    parser.add_argument("--sft-steps", type=int, default=150)
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(Path(p).read_text())["logs"] for p in args.paths)
        same = before == after
        print(f"steps={len(before)} / {len(after)} identical={same}")
        sys.exit(0 if same else 1)
    out, work = args.paths
    Path(out).write_text(json.dumps(reward_log(Path(work), args.grpo_steps, args.sft_steps), indent=1))


if __name__ == "__main__":
    main()
