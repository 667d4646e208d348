"""Each component type on hand-built evidence, with hand-computed numbers."""

from __future__ import annotations

import doctest
import importlib

import pytest

from termrl.protocols import Evidence, StageResult
from termrl.reward import spec_from_dict
from termrl.reward.components import TYPES
from termrl.reward.context import Context
from termrl.reward.params import check_params

from .conftest import correct, link_error, runtime_error, syntax_error, timeout, wrong_edge_case


def value(type_name: str, ev: Evidence, ctx: Context | None = None, **given) -> float | None:
    ctype = TYPES[type_name]
    return ctype.fn(ev, check_params(ctype, given), ctx or Context())


@pytest.mark.parametrize("module", ["schedules", "components", "quality", "process", "length", "hack", "spec",
                                    "__init__"])
def test_doctests(module):
    mod = importlib.import_module("termrl.reward" if module == "__init__" else f"termrl.reward.{module}")
    result = doctest.testmod(mod)
    assert result.failed == 0


# ---------------------------------------------------------------- outcome

def test_outcome_binary():
    assert value("outcome", correct()) == 1.0
    assert value("outcome", wrong_edge_case()) == 0.0


@pytest.mark.parametrize("make, expected", [
    (correct, 1.0), (wrong_edge_case, -0.3), (runtime_error, -0.6), (timeout, -0.6),
    (syntax_error, -1.0), (link_error, -1.0),
])
def test_outcome_graded_coderl_defaults(make, expected):
    assert value("outcome", make(), mode="graded") == expected


def test_outcome_graded_uses_the_dominant_class():
    ev = Evidence("t", error_classes=["wrong_answer", "memory", "runtime.key"])
    assert value("outcome", ev, mode="graded") == -0.6
    assert value("outcome", Evidence("t", error_classes=[]), mode="graded") == -0.3, "no class = wrong answer"


def test_outcome_coefficients_override_groups_and_classes():
    coef = {"compile": -0.8, "link.undefined_reference": -0.9, "timeout": -0.5, "pass": 2.0}
    assert value("outcome", link_error(), mode="graded", coefficients=coef) == -0.9
    assert value("outcome", syntax_error(), mode="graded", coefficients=coef) == -0.8
    assert value("outcome", timeout(), mode="graded", coefficients=coef) == -0.5
    assert value("outcome", runtime_error(), mode="graded", coefficients=coef) == -0.6
    assert value("outcome", correct(), mode="graded", coefficients=coef) == 2.0


def test_outcome_unquoted_dotted_coefficient_is_flattened():
    coef = {"link": {"undefined_reference": -0.9}}      # what TOML makes of link.undefined_reference = -0.9
    assert value("outcome", link_error(), mode="graded", coefficients=coef) == -0.9


def test_outcome_partial_credit_is_rltf():
    assert value("outcome", wrong_edge_case(), mode="graded", partial_credit=True) == pytest.approx(-0.3 + 1.3 * 0.75)
    assert value("outcome", runtime_error(), mode="graded", partial_credit=True) == -0.6, "only wrong answers"
    assert value("outcome", correct(), mode="graded", partial_credit=True) == 1.0


# ---------------------------------------------------------------- compile and tests

def test_compile_success():
    assert value("compile_success", correct()) == 1.0
    assert value("compile_success", wrong_edge_case()) == 1.0
    assert value("compile_success", runtime_error()) == 1.0
    assert value("compile_success", link_error()) == 0.0
    failed_build = Evidence("t", stages={"build": StageResult("build", "failed")})
    assert value("compile_success", failed_build) == 0.0


def test_test_pass_ratio_plain_and_tag_weighted():
    assert value("test_pass_ratio", wrong_edge_case()) == 0.75
    # three core tests pass (3 x 1.0), the boundary one fails (0.5): 3 / 3.5
    weighted = value("test_pass_ratio", wrong_edge_case(), tag_weights={"boundary": 0.5, "core": 1.0})
    assert weighted == pytest.approx(3 / 3.5)
    assert value("test_pass_ratio", link_error(), tag_weights={"boundary": 0.5}) == 0.0


# ---------------------------------------------------------------- quality

def quality(max_cc: int | None = None, ruff: int | None = None, safety: int | None = None) -> Evidence:
    data = {}
    if max_cc is not None:
        data["complexity"] = {"max_cc": max_cc, "mean_cc": 3.0, "mi": 60.0}
    if ruff is not None:
        data["ruff"] = {"count": ruff, "by_category": {"E": ruff}}
    stages = {"quality": StageResult("quality", "ok", data=data)}
    if safety is not None:
        stages["safety"] = StageResult("safety", "failed" if safety else "ok", data={"count": safety})
    return Evidence("t", stages=stages)


def test_complexity_penalty():
    assert value("complexity_penalty", quality(max_cc=8)) == 0.0
    assert value("complexity_penalty", quality(max_cc=13)) == pytest.approx(-0.3)
    assert value("complexity_penalty", quality(max_cc=45)) == -1.0, "capped at -1"
    assert value("complexity_penalty", quality(max_cc=13), threshold=5, scale=16) == pytest.approx(-0.5)
    assert value("complexity_penalty", Evidence("t")) is None
    errored = Evidence("t", stages={"quality": StageResult("quality", "error", message="ruff could not run")})
    assert value("complexity_penalty", errored) is None


def test_lint_penalty_counts_ruff_and_safety():
    assert value("lint_penalty", quality(ruff=0, safety=0)) == 0.0
    assert value("lint_penalty", quality(ruff=2, safety=1)) == pytest.approx(-0.3)
    assert value("lint_penalty", quality(ruff=2), scale=4) == -0.5
    assert value("lint_penalty", quality(ruff=30, safety=5)) == -1.0
    assert value("lint_penalty", Evidence("t")) is None


def test_bloat_penalty():
    ev = Evidence("t", lines_added=50, reference_lines=10)     # 5x the reference, 3 beyond ratio 2
    assert value("bloat_penalty", ev) == -1.0
    assert value("bloat_penalty", Evidence("t", lines_added=30, reference_lines=10)) == -0.5
    assert value("bloat_penalty", Evidence("t", lines_added=15, reference_lines=10)) == 0.0
    assert value("bloat_penalty", Evidence("t", lines_added=40, reference_lines=10), ratio=3.0) == pytest.approx(-1 / 3)
    assert value("bloat_penalty", Evidence("t", lines_added=50)) is None


# ---------------------------------------------------------------- process terms

STEPS = [
    {"command": "ls", "exit_code": 0, "timed_out": False, "format_error": False, "output_bytes": 80},
    {"command": "cat x.py", "exit_code": 0, "timed_out": False, "format_error": False, "output_bytes": 900},
    {"command": None, "exit_code": None, "timed_out": False, "format_error": True, "output_bytes": 0},
    {"command": "python x.py", "exit_code": 1, "timed_out": False, "format_error": False, "output_bytes": 300},
    {"command": "cat  x.py", "exit_code": 0, "timed_out": False, "format_error": False, "output_bytes": 900},
    {"command": "pwd", "exit_code": 0, "timed_out": False, "format_error": False, "output_bytes": 11},
    {"command": "sleep 999", "exit_code": None, "timed_out": True, "format_error": False, "output_bytes": 0},
]
SUCCESS = [1, 1, 0, 0, 1, 1, 0]
FORMAT = [0, 0, -1, 0, 0, 0, 0]
REPEAT = [0, 0, 0, 0, -1, -1, 0]      # "cat  x.py" repeats "cat x.py"; pwd is a no-op


def traced(steps=STEPS) -> Evidence:
    return Evidence("t", passed=True, stages={"trace": StageResult("trace", "ok", data={"steps": steps})})


def test_process_terms_plain_mean():
    assert value("command_success", traced()) == pytest.approx(4 / 7)
    assert value("format_compliance", traced()) == pytest.approx(-1 / 7)
    assert value("repeat_penalty", traced()) == pytest.approx(-2 / 7)


def test_process_terms_discounted_mean():
    g = [0.5 ** t for t in range(7)]       # 1, .5, .25, .125, .0625, .03125, .015625; sum 1.984375
    assert value("command_success", traced(), discount=0.5) == pytest.approx((1 + 0.5 + 0.0625 + 0.03125) / sum(g))
    assert value("format_compliance", traced(), discount=0.5) == pytest.approx(-0.25 / 1.984375)
    assert value("repeat_penalty", traced(), discount=0.5) == pytest.approx(-(0.0625 + 0.03125) / 1.984375)


def test_process_terms_without_trace_are_none():
    assert value("command_success", correct()) is None
    assert value("repeat_penalty", traced([])) is None


def test_reward_steps_sum_weighted_process_terms():
    spec = spec_from_dict({"components": {
        "ok": {"type": "command_success", "weight": 1.0, "discount": 0.9},
        "fmt": {"type": "format_compliance", "weight": 2.0},
        "rep": {"type": "repeat_penalty", "weight": 0.5},
        "outcome": {"type": "outcome", "weight": 1.0},
    }})
    reward = spec.score(traced())
    assert reward.steps == pytest.approx([s + 2 * f + 0.5 * r for s, f, r in zip(SUCCESS, FORMAT, REPEAT)])
    assert reward.steps == pytest.approx([1, 1, -2, 0, 0.5, 0.5, 0])
    assert reward.total == pytest.approx(sum(c.contribution for c in reward.components.values()))
    assert spec.score(correct()).steps == []
    assert spec_from_dict({"components": {"o": {"type": "outcome", "weight": 1}}}).score(traced()).steps == []


# ---------------------------------------------------------------- length terms

@pytest.mark.parametrize("length, expected", [(500, 0.0), (800, 0.0), (900, -0.5), (950, -0.75), (1000, -1.0),
                                              (1200, -1.0)])
def test_overlong_is_dapo_soft_punishment(length, expected):
    # max_length 1000, cache 200: free up to 800, then (800 - L) / 200, -1 beyond 1000
    ctx = Context(length=length)
    assert value("overlong", correct(), ctx, max_length=1000, cache=200) == pytest.approx(expected)


GROUP = ((100, True), (200, False), (300, True))


@pytest.mark.parametrize("length, make, expected", [
    (100, correct, 0.5),              # shortest: 0.5 - 0/200
    (300, correct, -0.5),             # longest: 0.5 - 200/200
    (250, correct, -0.25),            # 0.5 - 150/200
    (150, wrong_edge_case, 0.0),      # lambda 0.25, incorrect -> min(0, 0.25)
    (250, wrong_edge_case, -0.25),    # lambda -0.25 stays for incorrect too
])
def test_group_length_is_kimi(length, make, expected):
    assert value("group_length", make(), Context(length=length, group=GROUP)) == pytest.approx(expected)


def test_group_length_all_equal_is_zero():
    assert value("group_length", correct(), Context(length=50, group=((50, True), (50, False)))) == 0.0


def test_length_terms_without_length_contribute_nothing():
    spec = spec_from_dict({"components": {
        "outcome": {"type": "outcome", "weight": 1.0},
        "overlong": {"type": "overlong", "weight": 1.0, "max_length": 1000, "cache": 200},
        "kimi": {"type": "group_length", "weight": 0.5},
    }})
    reward = spec.score(correct())
    assert reward.total == 1.0
    assert reward.components["overlong"].to_dict() == {"weight": 1.0, "value": None, "contribution": None}
    assert reward.components["kimi"].value is None
    assert spec.score(correct(), length=100).components["kimi"].value is None, "no group"
    reward = spec.score(correct(), length=900, group=GROUP)
    assert reward.components["overlong"].value == pytest.approx(-0.5)
    assert reward.total == pytest.approx(1.0 - 0.5 + 0.5 * (0.5 - 800 / 800))


@pytest.mark.parametrize("kind, severity", [("build_tampering", "high"), ("hard_coded", "medium"),
                                            ("grader_access", "high"), ("grader_tampering", "high")])
def test_partial_credit_is_withheld_when_a_finding_says_it_was_bought(kind, severity):
    from termrl.protocols import Finding
    from termrl.reward import load_spec

    found = (Finding(kind, severity),)
    half = wrong_edge_case()  # compiles, 3 of 4 tests pass
    assert TYPES["compile_success"].fn(half, {}, Context(found)) == 0.0
    assert TYPES["test_pass_ratio"].fn(half, {"tag_weights": {}}, Context(found)) == 0.0
    assert TYPES["test_pass_ratio"].fn(half, {"tag_weights": {}}, Context()) == 0.75
    graded = {"mode": "graded", "partial_credit": True, "coefficients": {"pass": 1.0, "compile": -1.0,
              "runtime": -0.6, "wrong_answer": -0.3, "timeout": -0.6, "memory": -0.6}}
    assert TYPES["outcome"].fn(half, graded, Context(found)) == -1.0  # the worst failure: compile
    assert TYPES["outcome"].fn(half, graded, Context()) > -0.3
    for preset in ("sparse", "partial", "coderl", "rltf", "staged"):
        spec = load_spec(preset)
        for progress in (0.0, 0.5, 1.0):
            bought, honest = spec.score(half, found, progress).total, spec.score(half, (), progress).total
            assert bought <= honest, (preset, progress)


def test_a_low_suspicion_does_not_withhold_partial_credit():
    from termrl.protocols import Finding

    low = Context((Finding("hard_coded", "low"), Finding("command_spam", "high")))
    assert TYPES["test_pass_ratio"].fn(wrong_edge_case(), {"tag_weights": {}}, low) == 0.75
