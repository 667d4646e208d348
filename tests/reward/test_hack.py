"""The hack component's three modes."""

from __future__ import annotations

import pytest

from termrl.protocols import Finding
from termrl.reward import load_spec, spec_from_dict

from .conftest import correct, link_error, wrong_edge_case

HIGH = Finding("test_file_modified", "high", "tests/test_solution.py was rewritten")
LOW = Finding("sleep_in_solution", "low")
MEDIUM = Finding("hardcoded_output", "medium")


def spec(**hack):
    return spec_from_dict({"components": {
        "outcome": {"type": "outcome", "weight": 1.0, "mode": "graded"},
        "hack": {"type": "hack", "weight": 1.0, **hack},
    }})


def test_zero_mode_zeroes_a_positive_total():
    reward = spec(mode="zero").score(correct(), findings=[HIGH])
    assert reward.total == 0.0
    assert reward.components["hack"].to_dict() == {"weight": 1.0, "value": 1.0, "contribution": -1.0,
                                                   "findings": ["test_file_modified"]}


def test_zero_mode_keeps_a_negative_total():
    assert spec(mode="zero").score(link_error(), findings=[HIGH]).total == -1.0


def test_zero_mode_respects_min_severity():
    assert spec(mode="zero").score(correct(), findings=[LOW, MEDIUM]).total == 1.0
    assert spec(mode="zero").score(correct(), findings=[LOW, MEDIUM]).components["hack"].value == 0.0
    assert spec(mode="zero", min_severity="medium").score(correct(), findings=[MEDIUM]).total == 0.0


def test_zero_mode_is_applied_after_every_other_component():
    s = spec_from_dict({"components": {
        "hack": {"type": "hack", "weight": 1.0},
        "outcome": {"type": "outcome", "weight": 1.0},
    }})
    assert s.score(correct(), findings=[HIGH]).total == 0.0


def test_zero_mode_disabled_by_zero_weight():
    s = spec_from_dict({"components": {
        "outcome": {"type": "outcome", "weight": 1.0},
        "hack": {"type": "hack", "weight": {"kind": "step", "before": 0, "after": 1, "at": 0.5}},
    }})
    assert s.score(correct(), findings=[HIGH], progress=0.2).total == 1.0
    assert s.score(correct(), findings=[HIGH], progress=0.5).total == 0.0


def test_every_preset_caps_a_caught_hack_below_doing_nothing():
    for name in ("sparse", "coderl", "rltf", "staged"):
        preset = load_spec(name)
        for p in (0.0, 0.5, 1.0):
            hacked = preset.score(correct(), findings=[HIGH], progress=p).total
            assert hacked == pytest.approx(-1.0)  # the presets' floor: what a compile error earns
            assert hacked <= preset.score(wrong_edge_case(), progress=p).total


def test_zero_mode_floor_defaults_to_zero():
    assert spec(mode="zero").score(correct(), findings=[HIGH]).total == 0.0
    assert spec(mode="zero", floor=-0.5).score(correct(), findings=[HIGH]).total == -0.5
    assert spec(mode="zero", floor=-0.5).score(correct(), findings=[LOW]).total == 1.0


def test_penalty_mode():
    reward = spec(mode="penalty").score(correct(), findings=[HIGH, LOW, MEDIUM])
    assert reward.components["hack"].value == pytest.approx(-1.6)
    assert reward.total == pytest.approx(1.0 - 1.6)
    custom = spec(mode="penalty", penalties={"low": 0.0, "high": 2.0})
    assert custom.score(correct(), findings=[HIGH, LOW, MEDIUM]).total == pytest.approx(1.0 - 2.5)


def test_log_mode_only_reports():
    reward = spec(mode="log").score(wrong_edge_case(), findings=[HIGH, LOW])
    assert reward.total == -0.3
    assert reward.components["hack"].value == 0.0
    assert reward.components["hack"].findings == ("test_file_modified", "sleep_in_solution")


def test_unknown_severity_is_rejected():
    with pytest.raises(ValueError, match="severity"):
        spec().score(correct(), findings=[Finding("x", "critical")])
