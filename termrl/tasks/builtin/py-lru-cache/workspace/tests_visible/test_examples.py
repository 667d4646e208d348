import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from lru import LRUCache


def test_basic_eviction():
    c = LRUCache(2)
    assert c.put("a", 1) is None
    assert c.put("b", 2) is None
    assert c.get("a") == 1          # "a" becomes most recently used
    assert c.put("c", 3) == ("b", 2)
    assert c.keys() == ["a", "c"]
    assert len(c) == 2


def test_counters_and_peek():
    c = LRUCache(1)
    c.put("x", 10)
    assert c.get("y", "missing") == "missing"
    assert c.peek("x") == 10
    assert (c.hits, c.misses) == (0, 1)


def test_negative_capacity():
    with pytest.raises(ValueError):
        LRUCache(-1)
