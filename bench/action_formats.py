"""Which action format can a real model use? Every format of ``termrl.actions.ACTION_FORMATS``
played by one ``hf:`` model on one suite, side by side, the model loaded once.

Prints one row per format (and temperature):

  valid_action_rate  replies that ran a command or wrote a file, of all replies
  format_error_rate  replies that tried to act and could not be parsed, of all replies
  mean_steps         replies per episode
  pass@1             episodes that passed, of all episodes

With ``--out DIR`` every (format, temperature) cell's episodes go to a trajectory store
``DIR/FORMAT-tTEMP`` as they finish, and the same command again runs only what is missing.

Usage: python bench/action_formats.py MODEL_DIR [--suite one-command:heldout:0-4+py-function:heldout:0-4]
           [--formats tool_call,native,json,bash,example] [--temperatures 0,0.7] [--max-steps 4]
           [--max-new-tokens 384] [--stop-at-action] [--out DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time


def row(episodes) -> dict:
    replies = [s for t in episodes for s in t.steps]
    acted = sum(bool(s.action) and s.action["kind"] in ("command", "write") for s in replies)
    errors = sum(bool(s.format_error) for s in replies)
    return {"episodes": len(episodes), "replies": len(replies),
            "valid_action_rate": acted / len(replies) if replies else 0.0,
            "format_error_rate": errors / len(replies) if replies else 0.0,
            "mean_steps": len(replies) / len(episodes) if episodes else 0.0,
            "pass@1": sum(t.passed for t in episodes) / len(episodes) if episodes else 0.0}


def main() -> None:
    from termrl.env import EnvConfig
    from termrl.policies.hf import HFConfig, HFPolicy
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.rollout.store import TrajectoryStore
    from termrl.tasks.suites import resolve

    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--suite", default="one-command:heldout:0-4+py-function:heldout:0-4")
    parser.add_argument("--formats", default="tool_call,native,json,bash,example")
    parser.add_argument("--temperatures", default="0")
    parser.add_argument("--max-steps", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=384)
    parser.add_argument("--stop-at-action", action="store_true")
    parser.add_argument("--out", default=None, help="keep each cell's episodes here; rerun to resume")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    tasks = [e.task for e in resolve(args.suite) if e.task is not None]
    options = {"max_new_tokens": args.max_new_tokens, "seed": 0, "stop_at_action": args.stop_at_action}
    policy = HFPolicy(args.model, HFConfig(temperature=0.0, **options))
    rows = []
    print(f"suite={args.suite} tasks={len(tasks)} max_steps={args.max_steps} max_new_tokens={args.max_new_tokens}")
    print(f"{'format':<10} {'temp':>4} {'valid':>6} {'fmt_err':>7} {'steps':>5} {'pass@1':>6} {'wall_s':>6}")
    for temperature in (float(t) for t in args.temperatures.split(",")):
        policy.config = HFConfig(temperature=temperature, **options)
        for name in args.formats.split(","):
            env = EnvConfig(max_steps=args.max_steps, time_limit_s=3600, action_format=name)
            t0 = time.perf_counter()
            store = TrajectoryStore(f"{args.out}/{name}-t{temperature:g}") if args.out else None
            episodes = run_rollouts(tasks, policy, RolloutConfig(workers=8, max_batch=8, env=env), store=store)
            if store is not None:
                episodes = store.read()
            r = {"format": name, "temperature": temperature, **row(episodes),
                 "wall_s": time.perf_counter() - t0}
            rows.append({**r, "replies_text": [[s.reply for s in t.steps] for t in episodes]})
            print(f"{name:<10} {temperature:>4} {r['valid_action_rate']:>6.2f} {r['format_error_rate']:>7.2f} "
                  f"{r['mean_steps']:>5.2f} {r['pass@1']:>6.2f} {r['wall_s']:>6.0f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
