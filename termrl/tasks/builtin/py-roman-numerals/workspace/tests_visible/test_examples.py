import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from roman import from_roman, to_roman


@pytest.mark.parametrize("n, s", [(1, "I"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"),
                                  (90, "XC"), (400, "CD"), (1994, "MCMXCIV"), (3999, "MMMCMXCIX")])
def test_round_trip(n, s):
    assert to_roman(n) == s
    assert from_roman(s) == n


@pytest.mark.parametrize("bad", [0, -1, 4000])
def test_out_of_range(bad):
    with pytest.raises(ValueError):
        to_roman(bad)


@pytest.mark.parametrize("bad", ["", "IIII", "IC", "MMMM", "xiv"])
def test_invalid_numerals(bad):
    with pytest.raises(ValueError):
        from_roman(bad)
