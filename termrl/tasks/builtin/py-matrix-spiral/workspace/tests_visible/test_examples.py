import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from spiral import spiral_fill, spiral_order


def test_square():
    assert spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == [1, 2, 3, 6, 9, 8, 7, 4, 5]


def test_counterclockwise():
    assert spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]], clockwise=False) == [1, 4, 7, 8, 9, 6, 3, 2, 5]


def test_fill():
    assert spiral_fill(3, 4) == [[1, 2, 3, 4], [10, 11, 12, 5], [9, 8, 7, 6]]


def test_empty():
    assert spiral_order([]) == []


def test_ragged():
    with pytest.raises(ValueError):
        spiral_order([[1, 2], [3]])
