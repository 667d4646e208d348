"""A least-recently-used (LRU) cache with O(1) operations."""


class LRUCache:
    """Mapping with a fixed capacity that evicts the least recently used entry.

    Attributes ``hits`` and ``misses`` (ints, start at 0) count the outcomes of get().
    """

    def __init__(self, capacity):
        """Create an empty cache. capacity: int >= 0, negative -> ValueError."""
        raise NotImplementedError

    def get(self, key, default=None):
        """Return the value for key and mark it most recently used; on a miss return default.

        Counts one hit or one miss.
        """
        raise NotImplementedError

    def put(self, key, value):
        """Insert/update key as most recently used.

        Returns the evicted (key, value) tuple if inserting a new key exceeded the capacity,
        else None. With capacity 0 nothing is stored and None is returned.
        """
        raise NotImplementedError

    def peek(self, key, default=None):
        """Return the value for key (or default) without changing recency or counters."""
        raise NotImplementedError

    def delete(self, key):
        """Remove key. Return True if it was present, else False."""
        raise NotImplementedError

    def keys(self):
        """Return a list of keys from least recently used to most recently used."""
        raise NotImplementedError

    def resize(self, new_capacity):
        """Set a new capacity (negative -> ValueError); evict LRU entries as needed.

        Returns the list of evicted (key, value) tuples, least recently used first.
        """
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def __contains__(self, key):
        """Membership test; does not change recency."""
        raise NotImplementedError
