"""Each schedule kind, its clamping, and its validation."""

from __future__ import annotations

import pytest

from termrl.reward.errors import FieldError
from termrl.reward.schedules import Constant, Linear, Piecewise, Step, parse_weight


def test_a_number_is_a_constant():
    assert parse_weight(0.7) == Constant(0.7)
    assert parse_weight(2)(0.3) == 2.0
    assert parse_weight({"kind": "constant", "value": 0.25})(0.9) == 0.25


def test_linear_over_all_training():
    w = parse_weight({"kind": "linear", "start": 0.5, "end": 0.05})
    assert [w(p) for p in (0.0, 0.5, 1.0)] == pytest.approx([0.5, 0.275, 0.05])


def test_linear_with_bounds_clamps_outside_them():
    w = parse_weight({"kind": "linear", "start": 0.0, "end": 1.0, "from": 0.2, "to": 0.6})
    assert w == Linear(0.0, 1.0, 0.2, 0.6)
    assert [w(p) for p in (0.0, 0.2, 0.4, 0.6, 1.0)] == pytest.approx([0.0, 0.0, 0.5, 1.0, 1.0])


def test_piecewise_interpolates_and_clamps_at_the_ends():
    w = parse_weight({"kind": "piecewise", "points": [[0.2, 1.0], [0.5, 0.4], [0.8, 0.4], [1.0, 0.0]]})
    assert isinstance(w, Piecewise)
    assert [w(p) for p in (0.0, 0.2, 0.35, 0.5, 0.7, 0.9, 1.0)] == pytest.approx([1.0, 1.0, 0.7, 0.4, 0.4, 0.2, 0.0])


def test_piecewise_single_point_is_constant():
    w = parse_weight({"kind": "piecewise", "points": [[0.5, 3.0]]})
    assert w(0.0) == w(1.0) == 3.0


def test_step_switches_at_its_point():
    w = parse_weight({"kind": "step", "before": 0.0, "after": 0.2, "at": 0.6})
    assert w == Step(0.0, 0.2, 0.6)
    assert [w(p) for p in (0.0, 0.599, 0.6, 1.0)] == [0.0, 0.0, 0.2, 0.2]


@pytest.mark.parametrize("raw, key, words", [
    ("heavy", None, "number or a schedule table"),
    (True, None, "number"),
    ({"kind": "cosine", "start": 1}, "kind", "linear"),
    ({"kind": "linear", "start": 1}, "end", "missing"),
    ({"kind": "linear", "start": 1, "end": 0, "slope": 2}, "slope", "unknown key"),
    ({"kind": "linear", "start": 1, "end": 0, "from": 0.7, "to": 0.3}, "to", "greater than 'from'"),
    ({"kind": "step", "before": 0, "after": 1, "at": 1.5}, "at", "outside [0, 1]"),
    ({"kind": "piecewise", "points": [[0.0, 1.0], [1.2, 0.0]]}, "points[1]", "outside [0, 1]"),
    ({"kind": "piecewise", "points": [[0.5, 1.0], [0.2, 0.0]]}, "points[1]", "strictly increasing"),
    ({"kind": "piecewise", "points": [[0.5, 1.0], [0.5, 0.0]]}, "points[1]", "strictly increasing"),
    ({"kind": "piecewise", "points": [0.5, 1.0]}, "points[0]", "[progress, weight] pair"),
    ({"kind": "piecewise", "points": []}, "points", "list of [progress, weight] pairs"),
])
def test_bad_schedules_name_the_key(raw, key, words):
    with pytest.raises(FieldError) as info:
        parse_weight(raw)
    assert info.value.key == key and words in info.value.problem
