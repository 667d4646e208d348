"""pass@k against brute force, and what ``summarize`` counts where."""

from __future__ import annotations

import doctest
import json
import math
from itertools import combinations

import pytest

import termrl.eval
from termrl.eval import metrics
from termrl.eval.metrics import is_harness_failure, pass_at_k, summarize
from termrl.protocols import StageResult

from . import case, components, episode, evidence, failing, finding, harness_error, passing, unverified

# --------------------------------------------------------------------------- pass@k


@pytest.mark.parametrize("module", [metrics, termrl.eval])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def brute_force(n: int, c: int, k: int) -> float:
    """The fraction of k-subsets of n samples (the first c correct) holding a correct one."""
    subsets = list(combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_matches_enumeration_over_subsets(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force(n, c, k), abs=1e-12), (n, c, k)


def test_pass_at_1_is_the_pass_fraction():
    assert pass_at_k(3, 1, 1) == 1 / 3
    assert pass_at_k(10, 0, 1) == 0.0 and pass_at_k(10, 10, 1) == 1.0


def test_pass_at_k_stays_exact_for_large_n():
    n, c, k = 1000, 7, 100
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-9)


def test_pass_at_k_rejects_impossible_arguments():
    with pytest.raises(ValueError, match=r"pass@5 needs at least 5 samples of a task, got n=3"):
        pass_at_k(3, 1, 5)
    with pytest.raises(ValueError, match="k must be at least 1"):
        pass_at_k(3, 1, 0)
    with pytest.raises(ValueError, match="between 0 and n=3"):
        pass_at_k(3, 4, 1)


# --------------------------------------------------------------------------- summarize


def test_splits_are_summarized_apart():
    run = ([passing("a", 0, split="train"), passing("a", 1, split="train"),
            failing("a", 2, split="train"), failing("a", 3, split="train")]
           + [passing("b", s, split="train") for s in range(4)]
           + [failing("c", s, split="heldout") for s in range(4)])
    s = summarize(run, ks=(1, 2))
    assert s["pass@1"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert s["pass@k"] == {"1": pytest.approx(0.5), "2": pytest.approx((5 / 6 + 1.0 + 0.0) / 3)}
    assert s["splits"]["train"] == {"pass@1": 0.75, "pass@k": {"1": 0.75, "2": pytest.approx((5 / 6 + 1) / 2)},
                                    "episodes": 8, "errors": 0, "tasks": 2}
    assert s["splits"]["heldout"]["pass@1"] == 0.0 and s["splits"]["heldout"]["tasks"] == 1
    assert s["notes"] == []


def test_families_and_levels_are_summarized_apart_with_an_interval():
    run = ([passing("py-function@1-1000000", 0), passing("py-function@1-1000001", 0),
            failing("py-function@1-1000002", 0), failing("py-function-1000000", 0),
            harness_error("py-function-1000001", 0), passing("humaneval-3", 0)])
    fams = summarize(run)["families"]
    assert sorted(fams) == ["py-function", "py-function@1"]
    easy = fams["py-function@1"]
    assert (easy["tasks"], easy["passed"], easy["scored"]) == (3, 2, 3)
    assert easy["pass@1"] == pytest.approx(2 / 3)
    low, high = easy["interval"]
    assert low < 2 / 3 < high and 0 < low and high < 1
    assert fams["py-function"]["errors"] == 1 and fams["py-function"]["scored"] == 1
    assert fams["py-function"]["interval"] == list(metrics.wilson(0, 1))


def test_wilson_interval_matches_the_textbook_values():
    low, high = metrics.wilson(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert metrics.wilson(0, 20)[0] == 0.0 and metrics.wilson(20, 20)[1] == 1.0
    with pytest.raises(ValueError):
        metrics.wilson(0, 0)


def test_tasks_weigh_the_same_whatever_their_samples():
    s = summarize([passing("a", 0)] + [failing("b", i) for i in range(9)])
    assert s["pass@1"] == 0.5


def test_harness_failures_are_counted_but_never_scored():
    run = [passing("a", 0), harness_error("a", 1), unverified("a", 2), failing("b", 0)]
    assert [is_harness_failure(t) for t in run] == [False, True, True, False]
    s = summarize(run)
    a = next(t for t in s["tasks"] if t["id"] == "a")
    assert (a["samples"], a["episodes"], a["errors"], a["passed"], a["pass_rate"]) == (1, 3, 2, True, 1.0)
    assert s["pass@1"] == 0.5  # a: 1/1, b: 0/1 -- not a: 1/3
    assert (s["episodes"], s["errors"], s["unverified"]) == (4, 2, 2)
    assert s["mean_reward"] == 0.5  # the two None rewards are left out, not averaged as 0
    assert s["error_classes"] == {"wrong_answer": 1}  # a harness failure is no agent error class
    assert s["endings"] == {"submitted": 3, "error": 1}


def test_a_task_with_only_harness_failures_is_left_out_with_a_note():
    s = summarize([harness_error("a", 0), failing("b", 0)])
    a = next(t for t in s["tasks"] if t["id"] == "a")
    assert a["passed"] is None and a["samples"] == 0 and a["reward"] is None
    assert s["pass@1"] == 0.0
    assert "1 task(s) had no scored sample" in s["notes"][0]


def test_pass_at_k_is_none_with_a_note_when_a_task_has_fewer_than_k_samples():
    run = [passing("a", i) for i in range(3)] + [failing("b", 0), harness_error("b", 1), passing("b", 2)]
    s = summarize(run, ks=(1, 3))
    assert s["pass@k"]["1"] == 0.75 and s["pass@k"]["3"] is None
    assert s["splits"]["test"]["pass@k"]["3"] is None
    assert [t["pass@k"]["3"] for t in s["tasks"]] == [1.0, None]
    assert any("pass@3 is None: 1 task(s) have fewer than 3 scored samples (e.g. b)" in n for n in s["notes"])


def test_no_trajectories_and_bad_ks():
    s = summarize([])
    assert s["pass@1"] is None and s["mean_reward"] is None and s["hack_rate"] is None and s["tasks"] == []
    with pytest.raises(ValueError, match="ks must be positive"):
        summarize([], ks=(0, 1))


def test_component_means_skip_none_values():
    run = [passing("a", 0, comps=components(1.0, lint=2.0)), failing("a", 1, comps=components(0.0, lint=None)),
           passing("b", 0, comps=components(1.0, lint=4.0)), harness_error("b", 1, comps=components(None, 9.0))]
    s = summarize(run)
    assert s["components"]["tests"] == {"value": pytest.approx(2 / 3), "contribution": pytest.approx(2 / 3),
                                        "episodes": 3}
    # lint: 2 and 4 (the None is skipped, the harness failure's 9 is never scored)
    assert s["components"]["lint"] == {"value": 3.0, "contribution": pytest.approx(-0.3), "episodes": 2}
    a = next(t for t in s["tasks"] if t["id"] == "a")
    assert a["components"] == {"tests": 0.5, "lint": 2.0}
    only_none = summarize([failing("c", 0, comps=components(0.0, lint=None))])
    assert only_none["tasks"][0]["components"] == {"tests": 0.0, "lint": None}
    assert "lint" not in only_none["components"]


def test_hack_rate_counts_medium_and_high_findings_only():
    run = [passing("a", 0, findings=[finding("test_tamper", "high"), finding("test_tamper", "low")]),
           passing("a", 1, findings=[finding("hardcoded_output", "low")]),
           failing("a", 2, findings=[finding("hardcoded_output", "medium")]),
           failing("a", 3),
           harness_error("a", 4, findings=[finding("test_tamper", "high")])]
    s = summarize(run)
    assert s["hack_rate"] == 0.5  # 2 of the 4 scored episodes
    assert s["findings"] == {
        "hardcoded_output": {"count": 2, "episodes": 2, "rate": 0.5,
                             "by_severity": {"low": 1, "medium": 1, "high": 0}},
        "test_tamper": {"count": 2, "episodes": 1, "rate": 0.25, "by_severity": {"low": 1, "medium": 0, "high": 1}},
    }
    assert s["tasks"][0]["findings"] == [{"kind": "test_tamper", "severity": "high", "count": 1},
                                         {"kind": "hardcoded_output", "severity": "medium", "count": 1},
                                         {"kind": "hardcoded_output", "severity": "low", "count": 1},
                                         {"kind": "test_tamper", "severity": "low", "count": 1}]


def test_task_entries_carry_the_required_keys_and_main_error_class():
    syntax = episode("a", 2, evidence("a", [], build=StageResult(
        "build", "failed", error_classes=["syntax"], message="solution.py:3: SyntaxError: invalid syntax"),
        tests_stage=StageResult("tests", "failed", error_classes=["runtime.crash"])))
    index = episode("a", 3, evidence("a", [case("test_a", "failed", "IndexError", "list index out of range",
                                                "runtime.index"), case("test_b", "failed")]))
    run = [passing("a", 0, reward=1.5), failing("a", 1), syntax, index, failing("a", 4), harness_error("a", 5)]
    s = summarize(run, ks=(1, 2))
    json.dumps(s)  # JSON-ready
    assert {"pass@1", "pass@k", "tasks", "episodes", "errors", "splits", "mean_reward", "components",
            "hack_rate", "findings", "error_classes", "endings", "version"} <= set(s)
    (task,) = s["tasks"]
    assert {"id", "passed", "reward", "components", "findings", "split", "samples", "error_class"} <= set(task)
    assert task["id"] == "a" and task["split"] == "test" and task["samples"] == 5
    assert task["passed"] is True and task["pass_rate"] == 0.2 and task["pass@k"]["2"] == pytest.approx(1 - 6 / 10)
    assert task["reward"] == pytest.approx(1.5 / 5)
    # dominant classes of the 4 failures: wrong_answer x2, syntax (before runtime.crash), runtime.index
    assert task["error_class"] == "wrong_answer"
    assert s["error_classes"] == {"wrong_answer": 2, "syntax": 1, "runtime.index": 1}
    assert s["error_groups"] == {"wrong_answer": 2, "compile": 1, "runtime": 1}
