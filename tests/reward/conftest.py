"""Hand-built evidence for the reward tests: one finished episode per kind of outcome.

Every case changes a Python file of four hidden tests (three ``core``, one
``boundary``) and carries clean quality and safety stages, so that only the
outcome differs between cases.
"""

from __future__ import annotations

from pathlib import Path

from termrl.protocols import Evidence, StageResult, TestCase
from termrl.reward import SpecError

CLEAN_QUALITY = {"ruff": {"count": 0, "by_category": {}}, "complexity": {"max_cc": 4, "mean_cc": 2.0, "mi": 80.0}}


def tc(name: str, outcome: str = "passed", tag: str = "core", exc: str = "", cls: str | None = None) -> TestCase:
    return TestCase(f"tests/test_solution.py::{name}", outcome, tags=(tag,), exc_type=exc, error_class=cls)


def evidence(passed: bool, tests: list[TestCase], classes: list[str], build: str = "ok") -> Evidence:
    return Evidence(
        task_id="py-interval-merge", passed=passed, tests=tests, error_classes=classes,
        stages={"build": StageResult("build", build), "tests": StageResult("tests", "ok" if passed else "failed"),
                "quality": StageResult("quality", "ok", data=CLEAN_QUALITY),
                "safety": StageResult("safety", "ok", data={"count": 0, "by_rule": {}})},
        changed_files=["solution.py"], lines_added=20, reference_lines=15)


def correct() -> Evidence:
    return evidence(True, [tc("a"), tc("b"), tc("c"), tc("empty", tag="boundary")], [])


def wrong_edge_case() -> Evidence:
    """One boundary test fails with an AssertionError; the core tests pass."""
    failed = tc("empty", "failed", "boundary", "AssertionError", "wrong_answer")
    return evidence(False, [tc("a"), tc("b"), tc("c"), failed], ["wrong_answer"])


def runtime_error() -> Evidence:
    """IndexError on two inputs."""
    crashed = [tc(n, "failed", exc="IndexError", cls="runtime.index") for n in ("c", "d")]
    return evidence(False, [tc("a"), tc("b"), *crashed], ["runtime.index"])


def timeout() -> Evidence:
    slow = [tc(n, "failed", exc="TermrlTestTimeout", cls="timeout") for n in ("c", "d")]
    return evidence(False, [tc("a"), tc("b"), *slow], ["timeout"])


def syntax_error() -> Evidence:
    """A Python SyntaxError: collection fails, no test runs."""
    return evidence(False, [tc("collect", "error", exc="SyntaxError", cls="syntax")], ["syntax"], build="failed")


def link_error() -> Evidence:
    return evidence(False, [], ["link.undefined_reference"], build="failed")


def compile_error() -> Evidence:
    return evidence(False, [], ["compile.undeclared", "link.other"], build="failed")


TIERS = [
    {"correct": correct},
    {"wrong_edge_case": wrong_edge_case},
    {"runtime_error": runtime_error, "timeout": timeout},
    {"syntax_error": syntax_error, "link_error": link_error, "compile_error": compile_error},
]
"""Cases from best to worst: every case of a tier must outscore every case of the next."""

CASES = {name: make for tier in TIERS for name, make in tier.items()}


def write_spec(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_names(err: SpecError, file: Path | str, field: str | None) -> None:
    """The error names ``file`` and ``field``, in its attributes and in its text."""
    text = str(err)
    assert err.file == str(file) and str(file) in text, text
    assert err.field == field, (err.field, text)
    if field is not None:
        assert f"'{field}'" in text, text
