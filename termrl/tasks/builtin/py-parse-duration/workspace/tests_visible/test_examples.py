import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from duration import format_duration, parse_duration


@pytest.mark.parametrize("text, secs", [("1h 30m", 5400), ("1h30m", 5400), ("45s", 45),
                                        ("2w", 1209600), ("1:02:03", 3723), ("90:15", 5415),
                                        ("  -5m ", -300)])
def test_parse(text, secs):
    assert parse_duration(text) == secs


@pytest.mark.parametrize("bad", ["", "1 h", "30m1h", "1.5h", "10"])
def test_parse_invalid(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_format():
    assert format_duration(5400) == "1h30m"
    assert format_duration(0) == "0s"
    assert format_duration(3723, style="clock") == "1:02:03"
    with pytest.raises(TypeError):
        format_duration(1.0)
