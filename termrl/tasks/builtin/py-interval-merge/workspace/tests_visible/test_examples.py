import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from intervals import covered_length, intersect_intervals, merge_intervals, subtract_intervals


def test_merge_examples():
    assert merge_intervals([(5, 7), (1, 3), (2, 4)]) == [(1, 4), (5, 7)]
    assert merge_intervals([(1, 3), (3, 5), (6, 6)]) == [(1, 5)]
    assert merge_intervals([]) == []


def test_covered_length_example():
    assert covered_length([(0, 10), (5, 15), (20, 21)]) == 16


def test_intersect_example():
    assert intersect_intervals([(0, 5), (8, 12)], [(3, 9)]) == [(3, 5), (8, 9)]


def test_subtract_example():
    assert subtract_intervals([(0, 10)], [(2, 4), (6, 7)]) == [(0, 2), (4, 6), (7, 10)]


def test_invalid_interval():
    with pytest.raises(ValueError):
        merge_intervals([(3, 1)])
