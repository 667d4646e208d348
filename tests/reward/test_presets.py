"""Every preset orders outcomes as a reward should, and never scores a failed verification 0."""

from __future__ import annotations

from itertools import pairwise

import pytest

from termrl.protocols import ComponentScore, Evidence, Finding
from termrl.reward import load_spec, preset_names
from termrl.reward.spec import PRESETS_DIR

from .conftest import CASES, TIERS, correct, wrong_edge_case

PRESETS = ["sparse", "partial", "coderl", "rltf", "staged"]
PROGRESS = [0.0, 0.5, 1.0]


def test_presets_are_found():
    assert set(PRESETS) <= set(preset_names())


@pytest.mark.parametrize("name", PRESETS)
def test_preset_has_comment_header_and_hack_in_zero_mode(name):
    assert (PRESETS_DIR / f"{name}.toml").read_text().startswith("# ")
    spec = load_spec(name)
    hacks = [c for c in spec.components if c.type == "hack"]
    assert [(c.params["mode"], c.params["min_severity"]) for c in hacks] == [("zero", "high")]


@pytest.mark.parametrize("progress", PROGRESS)
@pytest.mark.parametrize("name", ["coderl", "rltf", "staged"])
def test_graded_presets_order_strictly(name, progress):
    """correct > wrong edge case > runtime error / timeout > compile, link, syntax error."""
    spec = load_spec(name)
    totals = [{case: spec.score(make(), progress=progress).total for case, make in tier.items()} for tier in TIERS]
    for better, worse in pairwise(totals):
        assert min(better.values()) > max(worse.values()), (name, progress, totals)


@pytest.mark.parametrize("progress", PROGRESS)
def test_sparse_ranks_correct_first_and_ties_every_failure_at_zero(progress):
    """Sparse gives no signal about how close a failure came: all failures score exactly 0."""
    spec = load_spec("sparse")
    assert spec.score(correct(), progress=progress).total == 1.0
    assert {name: spec.score(make(), progress=progress).total for name, make in CASES.items() if name != "correct"} \
        == {name: 0.0 for name in CASES if name != "correct"}


@pytest.mark.parametrize("progress", PROGRESS)
def test_partial_pays_a_pass_most_and_a_failure_by_the_tests_it_passed(progress):
    spec = load_spec("partial")
    assert spec.score(correct(), progress=progress).total == 1.5
    assert spec.score(wrong_edge_case(), progress=progress).total == pytest.approx(0.5 * 3 / 4)
    for name, make in CASES.items():
        evidence = make()
        if not evidence.passed:
            assert spec.score(evidence, progress=progress).total == pytest.approx(0.5 * evidence.test_pass_ratio)


@pytest.mark.parametrize("name", PRESETS)
def test_failed_verification_is_none_never_zero(name):
    spec = load_spec(name)
    unverified = Evidence("t", verified=False, verify_error="SandboxError: bwrap died", passed=False)
    for ev in (unverified, None):
        reward = spec.score(ev, progress=0.5)
        assert reward.total is None
        assert list(reward.components) == list(spec.component_names)
        assert all(c.value is None and c.contribution is None for c in reward.components.values())
        assert [c.weight for c in reward.components.values()] == list(spec.weights(0.5).values())
        assert reward.steps == []


@pytest.mark.parametrize("name", PRESETS)
def test_every_component_is_reported_and_contributions_sum_to_total(name):
    spec = load_spec(name)
    for make in CASES.values():
        reward = spec.score(make(), progress=0.8)
        assert list(reward.components) == list(spec.component_names)
        assert all({"weight", "value", "contribution"} <= set(c.to_dict()) for c in reward.components.values())
        parts = [c.contribution for c in reward.components.values() if c.contribution is not None]
        assert reward.total == pytest.approx(sum(parts))


def test_staged_weights_move_with_progress():
    spec = load_spec("staged")
    w = {p: spec.weights(p) for p in (0.0, 0.25, 0.5, 0.59, 0.6, 0.69, 0.7, 1.0)}
    assert w[0.0]["compile"] == 0.5 and w[1.0]["compile"] == pytest.approx(0.05)
    assert w[0.0]["compile"] > w[0.5]["compile"] > w[1.0]["compile"]
    assert w[0.0]["tests"] == 0.2 and w[0.25]["tests"] == pytest.approx(0.6)
    assert w[0.5]["tests"] == w[1.0]["tests"] == 1.0
    assert all(w[p]["outcome"] == 1.0 for p in w)
    assert w[0.59]["complexity"] == 0.0 and w[0.6]["complexity"] > 0 and w[1.0]["complexity"] > 0
    assert w[0.69]["lint"] == 0.0 and w[0.7]["lint"] > 0 and w[1.0]["lint"] > 0


def test_staged_partial_progress_pays_more_later():
    """A wrong edge case earns more as the test weight rises."""
    spec = load_spec("staged")
    early, mid = (spec.score(wrong_edge_case(), progress=p).total for p in (0.0, 0.5))
    assert early == pytest.approx(0.5 + 0.2 * 0.75 - 0.3)
    assert mid == pytest.approx(0.275 + 1.0 * 0.75 - 0.3)


def test_score_validates_its_arguments():
    spec = load_spec("coderl")
    with pytest.raises(ValueError, match="progress"):
        spec.score(correct(), progress=1.5)
    with pytest.raises(ValueError, match="length"):
        spec.score(correct(), length=-1)
    with pytest.raises(ValueError, match="unknown error classes"):
        spec.score(Evidence("t", error_classes=["segfault"]))


@pytest.mark.parametrize("name", PRESETS)
def test_components_are_stored_as_the_dicts_they_always_were(name):
    """``ComponentScore`` in memory, ``{"weight", "value", "contribution"}`` in a trajectory (and
    ``"findings"`` on the hack component of a verified episode): stores read as before."""
    spec = load_spec(name)
    found = [Finding("test_file_modified", "high")]
    for ev in (correct(), Evidence("t", verified=False, verify_error="SandboxError: gone")):
        reward = spec.score(ev, findings=found if ev.verified else (), progress=0.5)
        stored = reward.component_dicts()
        for component in spec.components:
            keys = {"weight", "value", "contribution"} | ({"findings"} if ev.verified and component.type == "hack"
                                                          else set())
            assert set(stored[component.name]) == keys
            assert ComponentScore.from_dict(stored[component.name]) == reward.components[component.name]
        if ev.verified:
            assert stored["hack"]["findings"] == ["test_file_modified"]


@pytest.mark.parametrize("progress", PROGRESS)
@pytest.mark.parametrize("name", PRESETS)
def test_every_total_lies_within_the_specs_bounds_and_the_oracle_reaches_the_top(name, progress):
    """``RewardSpec.bounds``: what a printed reward is out of. A pass earns the most, and no case,
    caught hacking or not, falls outside."""
    spec = load_spec(name)
    low, high = spec.bounds(progress)
    totals = [spec.score(make(), findings, progress=progress).total for make in CASES.values()
              for findings in ((), (Finding("test_edit", "high"),))]
    assert all(low - 1e-9 <= t <= high + 1e-9 for t in totals), (low, high, totals)
    assert spec.score(correct(), progress=progress).total == pytest.approx(high)
    assert min(totals) == pytest.approx(low) or name == "staged"  # staged: no case fails every term at once
