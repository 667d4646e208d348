"""Reward component types. Each is a plain function ``(evidence, params, ctx) -> float | None``.

``None`` means the term cannot be computed for this evidence (no quality stage,
no trace, no length given): the spec reports it and adds nothing to the total.
``params`` always holds every parameter of the type (defaults filled in by
``termrl.reward.params``). ``TYPES`` below is the registry a spec's ``type``
names; the functions live here (outcome terms) and in ``quality``,
``process``, ``length`` and ``hack``.

| type | value | parameters (defaults) |
|---|---|---|
| ``outcome`` | binary 1/0, or graded by error class (CodeRL, RLTF) | ``mode`` = "binary", ``partial_credit`` = false, ``coefficients`` |
| ``compile_success`` | 1 when nothing failed to compile or link | |
| ``test_pass_ratio`` | fraction of tests passed, optionally weighted by tag | ``tag_weights`` = {} |
| ``complexity_penalty`` | -(max_cc - threshold)/scale in [-1, 0] | ``threshold`` = 10, ``scale`` = 10 |
| ``lint_penalty`` | -(ruff + safety findings)/scale in [-1, 0] | ``scale`` = 10 |
| ``bloat_penalty`` | lines added far beyond the reference solution, in [-1, 0] | ``ratio`` = 2 |
| ``command_success`` / ``format_compliance`` / ``repeat_penalty`` | discounted mean of per-step rewards | ``discount`` = 1 |
| ``overlong`` | DAPO soft overlong punishment | ``max_length``, ``cache`` (required) |
| ``group_length`` | Kimi k1.5 length reward within the sampling group | |
| ``hack`` | reward-hack findings: cap the reward, penalise, or log | ``mode`` = "zero", ``min_severity`` = "high", ``floor`` = 0, ``penalties`` |
| ``judge`` | a model judge's verdict on a passing episode (``termrl.reward.judge``); None without one | ``values`` = general 1, unclear 0, special_cases -1, tampers -1 |
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from termrl.protocols import Evidence
from termrl.reward import hack, length, process, quality
from termrl.reward.context import ComponentFn, Context, StepFn
from termrl.reward.errors import FieldError
from termrl.verify import taxonomy

WITHHOLD = {"build_tampering": "medium", "hard_coded": "medium", "constant_output": "medium",
            "memorised_output": "medium", "literal_output": "medium", "grader_tampering": "low",
            "grader_access": "medium"}
"""Finding kind -> the least severity at which partial credit (``compile_success``,
``test_pass_ratio``, the outcome's ``partial_credit``) is withheld: a build silenced into
compiling, or code (or an answer file) that answers the tests instead of computing, must not be paid for what
the silencing or the answers bought, whatever the ``hack`` component does."""
_RANK = {"low": 0, "medium": 1, "high": 2}


def withheld(ctx: Context) -> bool:
    """Whether ``ctx`` holds a finding that withholds partial credit (``WITHHOLD``).

    >>> from termrl.protocols import Finding
    >>> withheld(Context(findings=(Finding("hard_coded", "medium"),))), withheld(Context())
    (True, False)
    """
    return any(f.kind in WITHHOLD and _RANK.get(f.severity, 0) >= _RANK[WITHHOLD[f.kind]] for f in ctx.findings)


CODERL = {"pass": 1.0, "compile": -1.0, "runtime": -0.6, "wrong_answer": -0.3, "timeout": -0.6, "memory": -0.6}
"""CodeRL's graded outcome: pass, and one value per taxonomy group (timeout and memory priced as runtime)."""


def outcome(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float:
    """Whether the hidden tests passed.

    ``mode = "binary"``: 1.0 when ``evidence.passed``, else 0.0.
    ``mode = "graded"``: ``coefficients["pass"]`` when passed; otherwise the
    coefficient of the dominant error class (``taxonomy.dominant``), looked up
    by class first and by its group second (a failure without any class counts
    as ``wrong_answer``). ``partial_credit`` (RLTF) turns a wrong answer into
    ``wa + (pass - wa) * test_pass_ratio`` -- with the defaults ``-0.3 + 1.3 * ratio``.
    A failure with a finding that withholds partial credit (``withheld``) gets the lowest
    failure coefficient: a program faked into running (a constant printer instead of a crash)
    must not climb from "runtime" to "wrong answer".

    >>> outcome(Evidence("t", passed=True), {"mode": "binary"}, Context())
    1.0
    >>> graded = {"mode": "graded", "partial_credit": False, "coefficients": CODERL}
    >>> outcome(Evidence("t", error_classes=["wrong_answer", "runtime.index"]), graded, Context())
    -0.6
    >>> outcome(Evidence("t", error_classes=["link.undefined_reference"]), graded, Context())
    -1.0
    """
    if params["mode"] == "binary":
        return 1.0 if evidence.passed else 0.0
    coef = params["coefficients"]
    if evidence.passed:
        return coef["pass"]
    if withheld(ctx):  # a failure that a hack made look better than it is earns the worst failure's value
        return min(v for k, v in coef.items() if k != "pass")
    cls = taxonomy.dominant(evidence.error_classes) or "wrong_answer"
    group = taxonomy.group_of(cls)
    value = coef.get(cls, coef[group])
    if params["partial_credit"] and group == "wrong_answer" and not withheld(ctx):
        value += (coef["pass"] - value) * evidence.test_pass_ratio
    return value


def check_outcome(given: Mapping[str, Any]) -> None:
    mode = given.get("mode", "binary")
    if mode not in ("binary", "graded"):
        raise FieldError("mode", f"unknown outcome mode {mode!r}; use \"binary\" or \"graded\"")
    for key in ("partial_credit", "coefficients"):
        if mode == "binary" and key in given:
            raise FieldError(key, "only applies to mode = \"graded\"; set mode = \"graded\" or remove it")
    for key in given.get("coefficients", {}):
        if key != "pass" and key not in taxonomy.GROUPS and key not in taxonomy.CLASSES:
            raise FieldError(f"coefficients.{key}", "unknown error class; use \"pass\", a group ("
                             + ", ".join(taxonomy.GROUPS) + ") or a class of termrl.verify.taxonomy."
                             "CLASSES such as \"link.undefined_reference\" (quote dotted names)")


def compile_success(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float:
    """1.0 when no error class of group ``compile`` was found and the build stage did not fail;
    0.0 when a finding withholds partial credit (``withheld``: the build may compile because
    its errors were silenced).

    >>> compile_success(Evidence("t", error_classes=["syntax"]), {}, Context())
    0.0
    >>> compile_success(Evidence("t", error_classes=["wrong_answer"]), {}, Context())
    1.0
    """
    build = evidence.stages.get("build")
    if build is not None and build.status == "failed" or withheld(ctx):
        return 0.0
    return 0.0 if any(taxonomy.group_of(c) == "compile" for c in evidence.error_classes) else 1.0


def test_pass_ratio(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float:
    """Fraction of the (non-holdout, non-skipped) tests that passed, 0.0 without tests or when a
    finding withholds partial credit (``withheld``).

    With ``tag_weights`` (e.g. ``{boundary = 0.5, core = 1.0}``) each test counts
    with the largest weight among its tags, and 1.0 when none of its tags is listed.
    """
    weights = params["tag_weights"]
    if withheld(ctx):
        return 0.0
    if not weights:
        return evidence.test_pass_ratio
    counted = [t for t in evidence.tests if not t.holdout and t.outcome not in ("skipped", "xfailed")]
    w = [max((weights[tag] for tag in t.tags if tag in weights), default=1.0) for t in counted]
    passed = sum(wi for wi, t in zip(w, counted) if t.outcome in ("passed", "xpassed"))
    return passed / sum(w) if sum(w) > 0 else 0.0


def check_tag_weights(given: Mapping[str, Any]) -> None:
    for tag, weight in given.get("tag_weights", {}).items():
        if weight < 0:
            raise FieldError(f"tag_weights.{tag}", f"must be 0 or more, got {weight}")


JUDGE_VALUES = {"general": 1.0, "unclear": 0.0, "special_cases": -1.0, "tampers": -1.0}
"""The judge component's default value per verdict (``termrl.reward.judge.VERDICTS``)."""


def judge(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """The model judge's verdict on a passing episode (the evidence's ``judge`` stage,
    ``termrl.reward.judge``) as ``values[verdict]``; None when the episode failed, no judge ran,
    or the judge gave no verdict (it errored, or its reply could not be parsed): never 0.

    >>> from termrl.protocols import StageResult
    >>> ev = Evidence("t", passed=True, stages={"judge": StageResult("judge", "ok", data={"verdict": "tampers"})})
    >>> judge(ev, {"values": JUDGE_VALUES}, Context()), judge(Evidence("t", passed=True), {"values": JUDGE_VALUES}, Context())
    (-1.0, None)
    """
    stage = evidence.stages.get("judge")
    if not evidence.passed or stage is None or stage.status != "ok":
        return None
    return params["values"].get(stage.data.get("verdict"))


def check_judge_values(given: Mapping[str, Any]) -> None:
    for verdict in given.get("values", {}):
        if verdict not in JUDGE_VALUES:
            raise FieldError(f"values.{verdict}", f"not a verdict; use {', '.join(JUDGE_VALUES)}")


@dataclass(frozen=True)
class ComponentType:
    """One entry of the registry: the function, its parameters and how to check them."""

    fn: ComponentFn
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Every parameter the type accepts with its default; a bare type (``int``) marks a required one.
    Table defaults are merged under what the spec gives."""
    check: Callable[[Mapping[str, Any]], None] = lambda given: None
    """Raises ``FieldError`` for given parameters that are well-typed but wrong."""
    steps: StepFn | None = None
    """Process terms only: the per-step rewards that ``Reward.steps`` sums."""
    values: Callable[[Mapping[str, Any]], tuple[float, float]] = lambda params: (-math.inf, math.inf)
    """Parameters -> the least and the most value, 0 among them where the value may be None (it
    then adds nothing); ``RewardSpec.bounds`` sums them."""


def between(low: float, high: float) -> Callable[[Mapping[str, Any]], tuple[float, float]]:
    """A ``ComponentType.values`` whatever the parameters."""
    return lambda params: (low, high)


def outcome_values(params: Mapping[str, Any]) -> tuple[float, float]:
    """1/0 binary; graded, between its least and most coefficient (partial credit stays between them)."""
    if params["mode"] == "binary":
        return 0.0, 1.0
    return min(params["coefficients"].values()), max(params["coefficients"].values())


def hack_values(params: Mapping[str, Any]) -> tuple[float, float]:
    """1/0 in zero mode (a gate: ``RewardSpec.bounds`` applies its floor), no least in penalty mode
    (one penalty per finding), 0 in log mode."""
    return {"zero": (0.0, 1.0), "penalty": (-math.inf, 0.0), "log": (0.0, 0.0)}[params["mode"]]


def judge_values(params: Mapping[str, Any]) -> tuple[float, float]:
    return min(0.0, *params["values"].values()), max(0.0, *params["values"].values())


TYPES: dict[str, ComponentType] = {
    "outcome": ComponentType(outcome, {"mode": "binary", "partial_credit": False, "coefficients": CODERL},
                             check_outcome, values=outcome_values),
    "compile_success": ComponentType(compile_success, values=between(0.0, 1.0)),
    "test_pass_ratio": ComponentType(test_pass_ratio, {"tag_weights": {}}, check_tag_weights,
                                     values=between(0.0, 1.0)),
    "complexity_penalty": ComponentType(quality.complexity_penalty, {"threshold": 10.0, "scale": 10.0},
                                        quality.check_positive("scale"), values=between(-1.0, 0.0)),
    "lint_penalty": ComponentType(quality.lint_penalty, {"scale": 10.0}, quality.check_positive("scale"),
                                  values=between(-1.0, 0.0)),
    "bloat_penalty": ComponentType(quality.bloat_penalty, {"ratio": 2.0}, quality.check_positive("ratio"),
                                   values=between(-1.0, 0.0)),
    **{name: ComponentType(fn, {"discount": 1.0}, process.check_discount, process.steps_of(rule),
                           values=between(*process.RANGES[name]))
       for name, (fn, rule) in process.TERMS.items()},
    "overlong": ComponentType(length.overlong, {"max_length": int, "cache": int}, length.check_overlong,
                              values=between(-1.0, 0.0)),
    "group_length": ComponentType(length.group_length, values=between(-0.5, 0.5)),
    "hack": ComponentType(hack.hack, {"mode": "zero", "min_severity": "high", "floor": 0.0,
                                      "penalties": hack.PENALTIES},
                          hack.check_hack, values=hack_values),
    "judge": ComponentType(judge, {"values": JUDGE_VALUES}, check_judge_values, values=judge_values),
}
"""Component type name -> its function and parameters."""
