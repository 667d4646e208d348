"""bench/before_after.py: the paired comparison of two stores of the same episodes."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

from termrl.eval import metrics
from termrl.protocols import Trajectory

spec = importlib.util.spec_from_file_location("before_after", Path(__file__).parents[2] / "bench" / "before_after.py")
before_after = importlib.util.module_from_spec(spec)
spec.loader.exec_module(before_after)


def test_mcnemar_exact_matches_the_binomial_tail():
    assert metrics.mcnemar_exact(0, 0) == 1.0
    assert metrics.mcnemar_exact(5, 5) == 1.0
    assert math.isclose(metrics.mcnemar_exact(10, 0), 2 / 1024)
    # 8 gained, 2 lost: 2 * P(X <= 2), X ~ Binomial(10, 1/2) = 2 * 56 / 1024
    assert math.isclose(metrics.mcnemar_exact(8, 2), 112 / 1024)
    assert metrics.mcnemar_exact(2, 8) == metrics.mcnemar_exact(8, 2)


def test_episodes_are_paired_by_id_and_only_shared_ones_count():
    def t(eid, passed):
        return Trajectory(eid, eid.split("#")[0], "p", passed=passed, ending="submitted", evidence={"verified": True})

    before = [t("a#0#0", False), t("b#0#0", True), t("c#0#0", True), t("d#0#0", False)]
    after = [t("a#0#0", True), t("b#0#0", True), t("c#0#0", False), t("e#0#0", True)]
    got = before_after.paired(before, after)
    assert (got["episodes"], got["passed_before"], got["passed_after"]) == (3, 2, 2)
    assert got["gained_ids"] == ["a#0#0"] and got["lost_ids"] == ["c#0#0"] and got["mcnemar_p"] == 1.0
    assert (got["z"], got["p_value"]) == (0.0, 1.0)


def test_the_unpaired_test_is_the_one_train_reports():
    def t(eid, passed):
        return Trajectory(eid, eid.split("#")[0], "p", passed=passed, ending="submitted", evidence={"verified": True})

    before = [t(f"x{i}#0#0", i < 53) for i in range(200)]
    after = [t(f"x{i}#0#0", i < 67) for i in range(200)]
    got = before_after.paired(before, after)
    assert math.isclose(got["z"], 1.5275, abs_tol=1e-4) and math.isclose(got["p_value"], 0.1266, abs_tol=1e-4)
    # a harness failure leaves the episode out of its side's rate, as in termrl train's results.json
    broken = [Trajectory("err#0#0", "err", "p", passed=False, ending="error", evidence={"verified": True})]
    again = before_after.paired(before + broken, after + broken)
    assert (again["z"], again["p_value"]) == (got["z"], got["p_value"])


def test_paired_leaves_out_harness_failures_and_unshared_episodes():
    def t(eid, passed, ending="submitted"):
        return Trajectory(eid, eid.split("#")[0], "p", passed=passed, ending=ending, evidence={"verified": True})

    before = [t(f"x{i}#0#0", False) for i in range(12)] + [t("err#0#0", False, "error")]
    after = [t(f"x{i}#0#0", i < 10) for i in range(12)] + [t("err#0#0", True), t("new#0#0", True)]
    got = metrics.paired(before, after)
    assert (got["episodes"], got["gained"], got["lost"]) == (12, 10, 0)
    assert math.isclose(got["mcnemar_p"], 2 / 1024)
    assert metrics.paired(before, [t("other#0#0", True)]) is None
