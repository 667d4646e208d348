"""How the side work of an RL step (one-turn episodes: environment, verification, detection)
scales with the number of episodes run at once.

For each worker count W: a warm ``VerifierPool`` of W verifiers and W threads run the same N
one-turn ``TerminalToolEnv`` episodes of the quickstart's family (``termrl.reward.exports.trl_env``,
as GRPO with ``max_turns = 1`` plays them: ``reset(task_id=...)``, then ``episode_outcome(env,
[call])`` runs the reply's tool call and finishes the episode), the family's reference reply as
the reply's call, so every episode runs a command and its hidden tests. Prints ``name=value``
lines per W:

  eps_per_s_W=          episodes per second
  speedup_W=            eps_per_s_W / eps_per_s_1
  ms_<phase>_W=         mean milliseconds per episode in the phase, summed over threads (an
                        episode's phase time; it grows with W where episodes wait on each other)
  ms_episode_W=         mean milliseconds from an episode's start to its end

Usage: python bench/side_scaling.py [--episodes 96] [--workers 1,2,4,8] [--warm N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class PhaseClock:
    """A ``phase`` callable for ``TerminalToolEnv``: thread time per phase, summed over
    threads (the innermost phase of each thread counts)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextlib.contextmanager
    def phase(self, name: str):
        stack = self._local.__dict__.setdefault("stack", [])
        now = time.perf_counter()
        if stack:
            self._add(stack[-1][0], now - stack[-1][1])
        stack.append([name, now])
        try:
            yield
        finally:
            now = time.perf_counter()
            self._add(name, now - stack.pop()[1])
            if stack:
                stack[-1][1] = now

    def _add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.seconds[name] += seconds


def reference_call(task) -> dict:
    """The task's reference reply as the tool call TRL parses out of it (``{"type": "function", ...}``)."""
    from termrl.policies.tiny import reference_reply

    text = reference_reply(task)  # <tool_call>{"name": "bash", "arguments": {...}}</tool_call>
    return {"type": "function", "function": json.loads(text.removeprefix("<tool_call>").removesuffix("</tool_call>"))}


def run(workers: int, seeds: list[int], family_name: str, ahead: int = 0) -> dict:
    from termrl.env import EnvConfig
    from termrl.episode import PoolVerifier
    from termrl.reward.exports.trl_env import TerminalToolEnv, episode_outcome, register_tasks
    from termrl.sandbox.warm import warm_sandboxes_closed
    from termrl.tasks.families import get_family
    from termrl.verify.pool import VerifierPool

    family = get_family(family_name)
    tasks = {seed: family.generate(seed) for seed in seeds}
    register_tasks(tasks.values())
    calls = {seed: reference_call(task) for seed, task in tasks.items()}
    clock = PhaseClock()
    spans: list[float] = []

    def one(seed: int, config: EnvConfig, phase, verifier) -> None:
        started = time.perf_counter()
        with TerminalToolEnv(config, phase=phase, verifier=verifier) as env:
            env.reset(task_id=tasks[seed].id)
            outcome = episode_outcome(env, [calls[seed]])
        spans.append(time.perf_counter() - started)
        if not outcome.verified or not outcome.evidence.passed:
            raise SystemExit(f"side_scaling: seed {seed} was not verified and passed: {outcome.ending} "
                             f"{outcome.error or outcome.evidence.verify_error or ''}")

    config = EnvConfig(static=False, command_timeout_s=10, warm_sandboxes=ahead)
    with VerifierPool(workers=workers, static=False) as pool, warm_sandboxes_closed():
        verifier = PoolVerifier(pool)
        cold = EnvConfig(static=False, command_timeout_s=10)
        with ThreadPoolExecutor(workers) as threads:  # every verifier and sandbox path warm
            list(threads.map(lambda s: one(s, cold, None, verifier), seeds[:workers]))
        spans.clear()
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as threads:
            list(threads.map(lambda s: one(s, config, clock.phase, verifier), seeds))
        wall = time.perf_counter() - started
    n = len(seeds)
    return {"eps_per_s": n / wall, "episode_ms": 1000 * sum(spans) / n,
            "phase_ms": {name: 1000 * s / n for name, s in sorted(clock.seconds.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=96)
    ap.add_argument("--workers", default="1,2,4,8", help="Comma-separated worker counts.")
    ap.add_argument("--family", default="one-command", help="The task family (the quickstart's).")
    ap.add_argument("--warm", type=int, default=0,
                    help="Episode sandboxes kept started ahead (EnvConfig.warm_sandboxes); 0: none.")
    args = ap.parse_args()
    from termrl.tasks.families import get_family

    start = get_family(args.family).train_seeds.start
    seeds = list(range(start, start + args.episodes))
    base = None
    for w in (int(x) for x in args.workers.split(",")):
        r = run(w, seeds, args.family, args.warm)
        base = base or r["eps_per_s"]
        print(f"eps_per_s_{w}={r['eps_per_s']:.2f}")
        print(f"speedup_{w}={r['eps_per_s'] / base:.2f}")
        print(f"ms_episode_{w}={r['episode_ms']:.1f}")
        for name, ms in r["phase_ms"].items():
            print(f"ms_{name}_{w}={ms:.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
