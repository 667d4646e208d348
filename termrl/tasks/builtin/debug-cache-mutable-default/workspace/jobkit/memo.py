"""Memoization decorator."""
import functools


def memoize(maxsize=128, _cache={}):
    """Decorator factory caching a function's results by its arguments.

    - Every decorated function has its own, independent cache.
    - The cache key is made of the positional *and* keyword arguments (keyword order does not
      matter). Arguments must be hashable.
    - At most ``maxsize`` results are kept per function; when a new result would exceed that,
      the least recently used entry is dropped (a cache hit makes an entry the most recently
      used). ``maxsize=None`` means unbounded; otherwise it must be an int >= 1 (ValueError).
    - Calls that raise an exception are not cached.
    - The wrapper keeps the wrapped function's ``__name__`` and ``__doc__`` and has
      ``cache_info()``, returning ``{"hits": int, "misses": int, "size": int}`` for this
      function, and ``cache_clear()``, which empties this function's cache and resets its
      counters to 0.
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            key = args
            if key in _cache:
                wrapper.hits += 1
                return _cache[key]
            wrapper.misses += 1
            result = func(*args, **kwargs)
            _cache[key] = result
            if len(_cache) > maxsize:
                del _cache[next(iter(_cache))]
            return result

        wrapper.hits = 0
        wrapper.misses = 0
        wrapper.cache_info = lambda: {"hits": wrapper.hits, "misses": wrapper.misses, "size": len(_cache)}
        wrapper.cache_clear = _cache.clear
        return wrapper

    return decorate
