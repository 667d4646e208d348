import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from ratelimit import SlidingWindowLimiter, TokenBucket


def test_token_bucket():
    b = TokenBucket(rate=1, capacity=2)
    assert b.allow(0) is True
    assert b.allow(0) is True
    assert b.allow(0) is False
    assert b.wait_time(0.5) == 0.5
    assert b.allow(1) is True
    assert b.available(1) == 0.0


def test_sliding_window():
    w = SlidingWindowLimiter(limit=2, window=10)
    assert w.allow("u", 0) is True
    assert w.allow("u", 3) is True
    assert w.allow("u", 4) is False
    assert w.allow("other", 4) is True
    assert w.retry_after("u", 5) == 5.0
    assert w.count("u", 10) == 1
    assert w.allow("u", 10) is True


def test_time_goes_backwards():
    w = SlidingWindowLimiter(limit=1, window=1)
    w.allow("u", 5)
    with pytest.raises(ValueError):
        w.allow("u", 4)
