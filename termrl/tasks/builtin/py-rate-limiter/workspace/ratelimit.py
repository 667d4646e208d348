"""Rate limiters driven by an explicit clock value ``now`` (seconds)."""


class TokenBucket:
    """Token bucket: ``rate`` tokens per second, at most ``capacity`` tokens, starts full."""

    def __init__(self, rate, capacity):
        """rate > 0 and capacity > 0, else ValueError."""
        raise NotImplementedError

    def allow(self, now, cost=1):
        """Refill, then take ``cost`` tokens if available and return True; else return False.

        cost <= 0 -> ValueError; now smaller than the previous call's now -> ValueError.
        """
        raise NotImplementedError

    def available(self, now):
        """Refill and return the current number of tokens as a float."""
        raise NotImplementedError

    def wait_time(self, now, cost=1):
        """Refill and return the seconds (float) until ``cost`` tokens are available (0.0 if now).

        cost <= 0 or cost > capacity -> ValueError.
        """
        raise NotImplementedError


class SlidingWindowLimiter:
    """At most ``limit`` allowed requests per key in any ``window`` seconds.

    A request allowed at time t counts while t > now - window. Denied requests are not recorded.
    """

    def __init__(self, limit, window):
        """limit: positive int, window: positive number, else ValueError."""
        raise NotImplementedError

    def allow(self, key, now):
        """Record and return True if fewer than ``limit`` requests of key count; else False."""
        raise NotImplementedError

    def count(self, key, now):
        """Number (int) of requests of key that count at time now."""
        raise NotImplementedError

    def retry_after(self, key, now):
        """Seconds (float) until a request of key would be allowed; 0.0 if allowed now."""
        raise NotImplementedError
