#!/bin/bash
cat > ratelimit.py <<'PY'
"""Rate limiters driven by an explicit clock value ``now`` (reference solution)."""
from collections import deque


class TokenBucket:
    def __init__(self, rate, capacity):
        if not rate > 0 or not capacity > 0:
            raise ValueError("rate and capacity must be positive")
        self.rate, self.capacity = rate, capacity
        self.tokens = float(capacity)
        self.last = None

    def _refill(self, now):
        if self.last is not None:
            if now < self.last:
                raise ValueError("time went backwards")
            self.tokens = min(float(self.capacity), self.tokens + (now - self.last) * self.rate)
        self.last = now

    def allow(self, now, cost=1):
        if not cost > 0:
            raise ValueError("cost must be positive")
        self._refill(now)
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False

    def available(self, now):
        self._refill(now)
        return float(self.tokens)

    def wait_time(self, now, cost=1):
        if not cost > 0 or cost > self.capacity:
            raise ValueError("invalid cost")
        self._refill(now)
        if self.tokens >= cost:
            return 0.0
        return float((cost - self.tokens) / self.rate)


class SlidingWindowLimiter:
    def __init__(self, limit, window):
        if type(limit) is not int or limit <= 0 or not window > 0:
            raise ValueError("limit must be a positive int and window positive")
        self.limit, self.window = limit, window
        self.hits = {}          # key -> deque of times that still count
        self.order = deque()    # (time, key) of every recorded request, oldest first
        self.last = None

    def _advance(self, key, now):
        if self.last is not None and now < self.last:
            raise ValueError("time went backwards")
        self.last = now
        order, hits = self.order, self.hits
        while order and not order[0][0] > now - self.window:
            _, k = order.popleft()
            q = hits[k]
            q.popleft()
            if not q:
                del hits[k]
        return hits.get(key, ())

    def allow(self, key, now):
        q = self._advance(key, now)
        if len(q) < self.limit:
            self.hits.setdefault(key, deque()).append(now)
            self.order.append((now, key))
            return True
        return False

    def count(self, key, now):
        return len(self._advance(key, now))

    def retry_after(self, key, now):
        q = self._advance(key, now)
        if len(q) < self.limit:
            return 0.0
        return float(q[0] + self.window - now)
PY
