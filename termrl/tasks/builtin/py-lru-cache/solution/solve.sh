#!/bin/bash
cat > lru.py <<'PY'
"""A least-recently-used (LRU) cache with O(1) operations."""
from collections import OrderedDict

_MISSING = object()


class LRUCache:
    def __init__(self, capacity):
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self._data = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key, default=None):
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            self.misses += 1
            return default
        self.hits += 1
        self._data.move_to_end(key)
        return value

    def put(self, key, value):
        if self.capacity == 0:
            return None
        if key in self._data:
            self._data[key] = value
            self._data.move_to_end(key)
            return None
        self._data[key] = value
        if len(self._data) > self.capacity:
            return self._data.popitem(last=False)
        return None

    def peek(self, key, default=None):
        return self._data.get(key, default)

    def delete(self, key):
        return self._data.pop(key, _MISSING) is not _MISSING

    def keys(self):
        return list(self._data)

    def resize(self, new_capacity):
        if new_capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = new_capacity
        evicted = []
        while len(self._data) > new_capacity:
            evicted.append(self._data.popitem(last=False))
        return evicted

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data
PY
