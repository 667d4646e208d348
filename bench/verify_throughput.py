"""Verification throughput, measured side by side in one run.

Prints:
  per_s_1=, per_s_2=, speedup=   full verifications per second of the built-in Python tasks'
                                 reference workspaces (categories python, debug) with 1 and 2
                                 workers, and their ratio (target on 2 cores: >= 1.7)
  plain_per_s=                   the 164 HumanEval canonical programs (prompt + solution + the
                                 data set's check) run as plain `python3 file.py`, 2 workers
  verified_per_s=                the same 164 through full sandboxed verification (build, tests
                                 with per-test outcomes, ruff + radon quality, security rules), 2 workers
  ratio_to_plain=                verified_per_s / plain_per_s (target >= 0.4)
  shared_per_s=                  the same verifications with the agent's code in the test process
                                 (TERMRL_ISOLATE=0: no worker interpreter; never used in training)
  isolation_cost=                1 - verified_per_s / shared_per_s: the share of throughput that
                                 out-of-process grading (termrl.verify.harness.isolate) costs
  unhidden_per_s=                the same verifications with the hidden tests in reach of the code
                                 under test (TERMRL_CONFINE=0; never used in training)
  confine_cost=                  1 - verified_per_s / unhidden_per_s: the share of throughput that
                                 hiding the tests (termrl.verify.harness.confine, Landlock) costs

Usage: python bench/verify_throughput.py [--rounds N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from termrl.tasks.formats import codegen
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.tasks.suites import builtin_entries
from termrl.sandbox import workspace
from termrl.verify.pool import VerifierPool


def reference_workspaces(tasks):
    """(task, files) after running each task's reference solution once."""
    jobs = []
    for task in tasks:
        box = open_sandbox(task)
        try:
            assert run_solution(box, task).ok, task.id
            jobs.append((task, workspace.snapshot(box)))
        finally:
            box.close()
    return jobs


def rate(pool: VerifierPool, jobs) -> float:
    t0 = time.perf_counter()
    results = pool.map(jobs)
    elapsed = time.perf_counter() - t0
    assert all(e.passed for e in results), [(e.task_id, e.error_classes, e.verify_error) for e in results if not e.passed]
    return len(jobs) / elapsed


def humaneval_problems() -> list[dict]:
    with gzip.open(codegen.dataset_path(codegen.HUMANEVAL), "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def humaneval_programs(problems: list[dict], root: Path) -> list[Path]:
    """Each problem as one plain program: prompt + canonical solution + the data set's check."""
    files = []
    for i, p in enumerate(problems):
        path = root / f"problem_{i}.py"
        path.write_text(f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\n\ncheck({p['entry_point']})\n")
        files.append(path)
    return files


def plain_rate(files: list[Path], workers: int) -> float:
    def run(path: Path) -> int:
        return subprocess.run([sys.executable, str(path)], capture_output=True).returncode

    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as ex:
        codes = list(ex.map(run, files))
    elapsed = time.perf_counter() - t0
    assert codes.count(0) == len(files), "a canonical HumanEval program failed"
    return len(files) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="repeat each measurement; the best round counts")
    args = parser.parse_args()

    builtin = [e.task for e in builtin_entries() if e.task.meta.category in ("python", "debug")]
    jobs = reference_workspaces(builtin)
    problems = humaneval_problems()
    tasks = {t.id: t for t in codegen.load_humaneval()}
    he_jobs = [(tasks[f"humaneval-{p['task_id'].split('/')[-1]}"],
                {"solution.py": (p["prompt"] + p["canonical_solution"]).encode()}) for p in problems]
    with tempfile.TemporaryDirectory() as tmp:
        programs = humaneval_programs(problems, Path(tmp))
        with VerifierPool(workers=1) as one, VerifierPool(workers=2) as two:
            rate(one, jobs[:2])  # warm up
            rate(two, jobs[:2])
            per_s_1 = max(rate(one, jobs) for _ in range(args.rounds))
            per_s_2 = max(rate(two, jobs) for _ in range(args.rounds))
            plain, verified, shared, unhidden = [], [], [], []
            for _ in range(args.rounds):  # interleaved, so load affects all alike
                plain.append(plain_rate(programs, 2))
                verified.append(rate(two, he_jobs))
                os.environ["TERMRL_ISOLATE"] = "0"
                try:
                    shared.append(rate(two, he_jobs))
                finally:
                    del os.environ["TERMRL_ISOLATE"]
                os.environ["TERMRL_CONFINE"] = "0"
                try:
                    unhidden.append(rate(two, he_jobs))
                finally:
                    del os.environ["TERMRL_CONFINE"]
    print(f"tasks_builtin={len(jobs)}")
    print(f"per_s_1={per_s_1:.2f}")
    print(f"per_s_2={per_s_2:.2f}")
    print(f"speedup={per_s_2 / per_s_1:.2f}")
    print(f"plain_per_s={max(plain):.2f}")
    print(f"verified_per_s={max(verified):.2f}")
    print(f"ratio_to_plain={max(verified) / max(plain):.2f}")
    print(f"shared_per_s={max(shared):.2f}")
    print(f"isolation_cost={1 - max(verified) / max(shared):.2f}")
    print(f"unhidden_per_s={max(unhidden):.2f}")
    print(f"confine_cost={1 - max(verified) / max(unhidden):.2f}")


if __name__ == "__main__":
    main()
