"""What preparing a real task's environment costs, one task per language, side by side in one run.

For each task directory given (one per language: the aider-polyglot adapters' C++, Go, Java,
JavaScript, Python, Rust), into a fresh cache:
  TASK_cold_s=          ``termrl tasks prepare`` of that task alone, nothing cached (downloads included)
  TASK_cold_mib=        what its environments added to the cache (hard links to the host and to
                        environments built before it cost nothing)
  TASK_cached_s=        the same prepare again: everything cached
  TASK_start_ms=        median start of an episode sandbox with the task's layers mounted, files in
                        place and setup run (``open_sandbox``), over --starts starts
  TASK_bare_start_ms=   the same task with no environment mounted (its files and setup only)
  TASK_start_ratio=     TASK_start_ms / TASK_bare_start_ms: what mounting its layers costs a start
  plain_start_ms=       the same for a task with no environment (a plain sandbox), in the same run
  cache_mib=            the cache's disk use at the end, each file once (``pyenv.usage``)
  copies_mib=           what the environments would take as separate copies (their sizes summed)
The cache is deleted afterwards unless --keep.

Usage: python bench/prepare_cost.py DATASET/polyglot_cpp_all-your-base DATASET/polyglot_go_bob ...
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="+", type=Path, help="task directories (Terminal-Bench or Harbor)")
    parser.add_argument("--starts", type=int, default=5, help="sandbox starts per task (median)")
    parser.add_argument("--keep", action="store_true", help="keep the cache (its path is printed)")
    args = parser.parse_args()

    cache = Path(tempfile.mkdtemp(prefix="termrl-prepare-cost-", dir=os.environ.get("TERMRL_BENCH_DIR")))
    cache.chmod(0o755)
    os.environ["TERMRL_CACHE"] = str(cache)
    from termrl.protocols import Task
    from termrl.tasks import envs, pyenv
    from termrl.tasks.formats import load_task
    from termrl.tasks.runtime import open_sandbox
    from termrl.tasks.suites import Entry

    def starts(task) -> float:
        times = []
        for _ in range(args.starts):
            t0 = time.monotonic()
            box = open_sandbox(task)
            times.append(time.monotonic() - t0)
            box.close()
        return statistics.median(times) * 1000

    try:
        plain = starts(Task(id="plain", instruction="", workdir="/app"))
        print(f"plain_start_ms={plain:.1f}", flush=True)
        copies = 0
        for path in args.tasks:
            task = load_task(path)
            name = path.name
            if task.unsupported:
                print(f"{name}_unsupported={task.unsupported[:200]!r}", flush=True)
                continue
            before = pyenv.usage()
            results = []
            t0 = time.monotonic()
            [entry] = envs.prepare([Entry(task.id, task=task)], results.append, limit_cache=False)
            cold = time.monotonic() - t0
            failed = [r.error for r in results if r.error]
            if failed:
                print(f"{name}_failed={failed[0][:200]!r}", flush=True)
                continue
            copies += sum(r.size_bytes + r.shared_bytes for r in results if not r.cached)
            added = pyenv.usage() - before
            t0 = time.monotonic()
            envs.prepare([Entry(task.id, task=task)], limit_cache=False)
            again = time.monotonic() - t0
            start = starts(entry.task)
            bare = starts(dataclasses.replace(entry.task, python_requirements=(), system_packages=(),
                                              system_files={}, node_project={}))
            print(f"{name}_cold_s={cold:.1f}\n{name}_cold_mib={added / 2**20:.0f}\n{name}_cached_s={again:.2f}\n"
                  f"{name}_start_ms={start:.1f}\n{name}_bare_start_ms={bare:.1f}\n"
                  f"{name}_start_ratio={start / bare:.2f}", flush=True)
        print(f"cache_mib={pyenv.usage() / 2**20:.0f}\ncopies_mib={copies / 2**20:.0f}")
    finally:
        if args.keep:
            print(f"cache={cache}")
        else:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
