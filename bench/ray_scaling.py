"""Episodes per second on 1, 2 and 4 Ray worker processes, side by side with the local pool.

For each N in --workers: a local Ray instance with N CPUs (N worker processes, one episode each
at a time) plays the same episodes as ``run_rollouts`` with N workers (threads and sandboxes in
this process): the oracle on the built-in suite's tasks (python, debug, shell, data). Ray is
kept on 127.0.0.1. Prints ``name=value`` lines:

  local_per_s_N=    episodes/s of the local pool with N workers
  ray_per_s_N=      episodes/s of N Ray worker processes
  ratio_N=          ray_per_s_N / local_per_s_N (1.0: Ray costs nothing over the local pool)
  ray_speedup_N=    ray_per_s_N / ray_per_s of the first count (how Ray scales on this machine)
  cpus=             the machine's cores: scaling past them measures waiting, not computing

Both sides play every episode fresh (no store). The ratio is what Ray's task dispatch, the
transfer of tasks and trajectories, and the policy built in each task cost; the speedup beyond
the machine's cores says how much of an episode is waiting (sandbox start, process exits).

Usage: python bench/ray_scaling.py [--workers 1,2,4] [--tasks 16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Ray keeps 127.0.0.1 as this machine's address (and its servers on loopback): a single node
# needs nothing more (see tests/cluster/raynode.py for a multi-node cluster on one machine)
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2,4", help="Worker counts, comma-separated.")
    ap.add_argument("--tasks", type=int, default=16, help="Built-in tasks played (oracle, one episode each).")
    args = ap.parse_args()

    import ray

    from termrl.policies.scripted import OraclePolicy
    from termrl.rollout.ray_backend import run_rollouts_ray
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.tasks.suites import resolve

    tasks = [e.task for e in resolve("builtin") if e.task is not None and not e.task.unsupported
             and e.category in ("python", "debug", "shell", "data")][: args.tasks]
    counts = [int(n) for n in args.workers.split(",")]
    print(f"ray_scaling: {len(tasks)} tasks, workers {counts}", file=sys.stderr, flush=True)
    run_rollouts(tasks[:2], OraclePolicy(), RolloutConfig(workers=2))  # warm: imports, page cache

    results: dict[str, float] = {}
    for n in counts:
        config = RolloutConfig(workers=n)
        started = time.perf_counter()
        local = run_rollouts(tasks, OraclePolicy(), config)
        results[f"local_per_s_{n}"] = len(local) / (time.perf_counter() - started)

        ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
        try:
            run_rollouts_ray(tasks[:n], "oracle", config)  # start the N worker processes first
            started = time.perf_counter()
            remote = run_rollouts_ray(tasks, "oracle", config)
            results[f"ray_per_s_{n}"] = len(remote) / (time.perf_counter() - started)
        finally:
            ray.shutdown()
        failed = [t.episode_id for t in local + remote if not t.passed]
        if failed:
            raise SystemExit(f"ray_scaling: the oracle failed {failed}: the figures would not compare like with like")
        print(f"ray_scaling: {n} workers done", file=sys.stderr, flush=True)

    for n in counts:
        print(f"local_per_s_{n}={results[f'local_per_s_{n}']:.3f}")
        print(f"ray_per_s_{n}={results[f'ray_per_s_{n}']:.3f}")
        print(f"ratio_{n}={results[f'ray_per_s_{n}'] / results[f'local_per_s_{n}']:.3f}")
        print(f"ray_speedup_{n}={results[f'ray_per_s_{n}'] / results[f'ray_per_s_{counts[0]}']:.3f}")
    print(f"cpus={os.cpu_count()}")


if __name__ == "__main__":
    main()
