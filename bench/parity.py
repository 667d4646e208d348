"""Does termrl handicap a model? A plain prompt-and-run harness beside ``termrl eval``, one model.

One ``hf:`` policy answers the plain harness's single message (``termrl.eval.plain``) and
then plays the same tasks as termrl episodes, with the same decoding. Prints:

  plain_pass=  passed / tasks in the plain harness
  termrl_pass= passed / tasks as termrl episodes (--max-steps replies each; default: the task's limit)
  gap_points=  100 * (plain - termrl) / tasks
  endings=     termrl episodes by ending; first_action= the kind of each episode's first action

Replies stop at their first whole action on both sides (``HFConfig.stop_at_action``; the plain
harness's code block is one), which halves the tokens here; ``--full-replies`` turns that off.

With ``--out DIR`` both halves are kept there as they finish (``termrl.eval.plain``), and the
same command again finishes a measurement an earlier run left, which at a CPU's speed can take
longer than a session.

Usage: python bench/parity.py MODEL_DIR [--suite humaneval:0-39] [--max-steps N]
                              [--max-new-tokens 512] [--action-format FORMAT] [--out DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import time


def main() -> None:
    from termrl.env import EnvConfig
    from termrl.eval.plain import parity
    from termrl.policies import make_policy
    from termrl.tasks.suites import resolve

    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--suite", default="humaneval:0-39")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="replies per episode (default: the task's own limit)")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--action-format", default="tool_call")
    parser.add_argument("--full-replies", action="store_true",
                        help="generate to eos or max tokens instead of stopping at the first whole action")
    parser.add_argument("--out", default=None, help="keep results here as they finish; rerun to resume")
    parser.add_argument("--json", default=None, help="also write the figures and every reply here")
    args = parser.parse_args()
    tasks = [e.task for e in resolve(args.suite) if e.task is not None]
    policy = make_policy(f"hf:{args.model}", temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                         stop_at_action=not args.full_replies)
    env = EnvConfig(max_steps=args.max_steps, time_limit_s=3600, action_format=args.action_format)
    t0 = time.perf_counter()
    got = parity(tasks, policy, env, out=args.out)
    wall = time.perf_counter() - t0
    endings = collections.Counter(t.ending for t in got.episodes)
    first = collections.Counter((t.steps[0].action or {}).get("kind", "format_error") if t.steps else "none"
                                for t in got.episodes)
    print(f"suite={args.suite} tasks={got.tasks} max_new_tokens={args.max_new_tokens} "
          f"temperature={args.temperature} wall_s={wall:.0f}")
    print(f"plain_pass={got.plain_passed}/{got.tasks}")
    print(f"termrl_pass={got.termrl_passed}/{got.tasks} (max_steps={args.max_steps}, "
          f"action_format={args.action_format})")
    print(f"gap_points={got.gap_points:.1f}")
    print(f"endings={dict(endings)} first_action={dict(first)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "plain_pass": got.plain_passed, "termrl_pass": got.termrl_passed,
                       "tasks": got.tasks, "plain": [r.__dict__ for r in got.plain],
                       "termrl": [{"task_id": t.task_id, "passed": t.passed, "ending": t.ending,
                                   "replies": [s.reply for s in t.steps]} for t in got.episodes]}, f, indent=1)


if __name__ == "__main__":
    main()
