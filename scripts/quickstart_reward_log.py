"""The quickstart's GRPO reward log, step by step, on a small budget, as JSON.

For refactors of the reward path: the quickstart is seeded end to end (model, data order,
sampling), so its GRPO reward log must not move when the road from an episode to its reward is
rebuilt. Run before and after, then compare the ``logs`` lists (``--compare``).

It runs ``termrl.training.train(QUICKSTART, overrides=[...])`` (``configs/quickstart.toml``, what
``termrl quickstart`` runs) in WORKDIR, made small: a tokenizer trained on 300 train tasks, SFT on
the first 64 train seeds, GRPO on the next ones, no held-out evaluation. The log is each step's
``reward*`` and ``termrl/*`` metrics from the trainer's ``log_history`` (the checkpoint saved at
the last step, ``checkpoints/checkpoint-N/trainer_state.json``); ``result`` is results.json's
``training`` record (steps, rollouts, unverified, finished_ahead, reward_first/last_tenth, ...).

Usage:
  python scripts/quickstart_reward_log.py OUT.json WORKDIR [--grpo-steps 10] [--sft-steps 150]
  python scripts/quickstart_reward_log.py --compare BEFORE.json AFTER.json

WORKDIR must be new or empty (the run's directory). About 5 minutes on 2 idle cores with the
defaults; ``--grpo-steps 1 --sft-steps 1`` is a smoke run of a minute or two. ``finished_ahead``
in the result may differ between runs (which episodes were finished while the batch still
generated depends on timing); the rewards do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SFT_EXAMPLES = 64
"""Train seeds 0..63 are SFT's reference solutions; GRPO trains on the seeds after them."""
TOKENIZER_SEEDS = 300


def reward_log(out_dir: Path, grpo_steps: int, sft_steps: int) -> dict:
    from termrl.training import QUICKSTART, train
    from termrl.training.config import load_config

    quickstart = load_config(QUICKSTART)
    family = quickstart.model.tiny_tokenizer  # the quickstart's family (its tokenizer is trained on it)
    prompts = quickstart.grpo.batch_size // quickstart.grpo.num_generations
    overrides = [f'output_dir="{out_dir}"',
                 f"model.tiny_tokenizer_seeds={TOKENIZER_SEEDS}",
                 f"sft.steps={sft_steps}", f'sft.tasks="{family}:0-{SFT_EXAMPLES - 1}"',
                 f"grpo.steps={grpo_steps}",
                 f'tasks.train="{family}:{SFT_EXAMPLES}-{SFT_EXAMPLES + grpo_steps * prompts - 1}"',
                 'tasks.heldout=""',  # no held-out evaluation: the log is what is compared
                 f"logging.save_steps={grpo_steps}"]  # a checkpoint at the last step keeps the whole log_history
    results = train(QUICKSTART, overrides=overrides)
    state = out_dir / "checkpoints" / f"checkpoint-{grpo_steps}" / "trainer_state.json"
    history = json.loads(state.read_text())["log_history"]
    logs = [{k: v for k, v in entry.items() if k.startswith(("reward", "termrl"))} for entry in history]
    return {"logs": [entry for entry in logs if entry], "result": results["training"]}


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
    out, work = Path(args.paths[0]), Path(args.paths[1]).resolve()
    if work.exists() and any(work.iterdir()):
        parser.error(f"WORKDIR {work} is not empty: give a new or empty directory (it becomes the run's)")
    out.write_text(json.dumps(reward_log(work, args.grpo_steps, args.sft_steps), indent=1))


if __name__ == "__main__":
    main()
