"""Helpers of the export tests: fake evidence, a fake ``evaluate``, a tiny locally built model."""

from __future__ import annotations

import gzip
import json

import pytest

from termrl.protocols import Evidence, StageResult, TestCase
from termrl.tasks.formats import codegen


def evidence(passed: bool, ratio: float = 1.0, verified: bool = True, task_id: str = "t") -> Evidence:
    """Evidence of a finished code task: ``ratio`` of 4 tests passed."""
    n_pass = round(4 * (1.0 if passed else ratio))
    tests = [TestCase(f"test_{i}", "passed" if i < n_pass else "failed",
                      error_class=None if i < n_pass else "wrong_answer") for i in range(4)]
    return Evidence(task_id=task_id, verified=verified, passed=passed and verified,
                    verify_error=None if verified else "SandboxError: the sandbox died",
                    tests=tests, error_classes=[] if passed else ["wrong_answer"],
                    stages={"tests": StageResult("tests", "ok" if passed else "failed")},
                    changed_files=["solution.py"], lines_added=3)


def fake_evaluate(prompt, completion: str, row: dict):
    """PASS -> passed; HALF -> half the tests; CRASH -> failed to verify; NONE -> no evidence; else failed."""
    if "CRASH" in completion:
        return evidence(False, verified=False), ()
    if "NONE" in completion:
        return None, ()
    if "PASS" in completion:
        return evidence(True), ()
    return evidence(False, ratio=0.5 if "HALF" in completion else 0.0), ()


class CountingEvaluate:
    """``fake_evaluate`` that records every call (module-level class: picklable)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def __call__(self, prompt, completion, row):
        self.calls.append((prompt, completion, row))
        return fake_evaluate(prompt, completion, row)


@pytest.fixture(scope="session")
def humaneval_problems() -> dict[str, dict]:
    with gzip.open(codegen.dataset_path(codegen.HUMANEVAL), "rt") as f:
        return {f"humaneval-{p['task_id'].split('/')[-1]}": p for p in map(json.loads, f) if p}


def canonical(problem: dict) -> str:
    return problem["prompt"] + problem["canonical_solution"]
