#!/bin/bash
set -e
cat > jobkit/memo.py <<'PY'
"""Memoization decorator."""
import functools
from collections import OrderedDict


def memoize(maxsize=128):
    """Decorator factory caching a function's results by its arguments (see README in docstring)."""
    if maxsize is not None and (type(maxsize) is not int or maxsize < 1):
        raise ValueError("maxsize must be None or an int >= 1")

    def decorate(func):
        cache = OrderedDict()
        stats = {"hits": 0, "misses": 0}

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            key = (args, frozenset(kwargs.items()))
            if key in cache:
                stats["hits"] += 1
                cache.move_to_end(key)
                return cache[key]
            stats["misses"] += 1
            result = func(*args, **kwargs)
            cache[key] = result
            if maxsize is not None and len(cache) > maxsize:
                cache.popitem(last=False)
            return result

        def cache_info():
            return {"hits": stats["hits"], "misses": stats["misses"], "size": len(cache)}

        def cache_clear():
            cache.clear()
            stats["hits"] = stats["misses"] = 0

        wrapper.cache_info = cache_info
        wrapper.cache_clear = cache_clear
        return wrapper

    return decorate
PY
python3 - <<'PY'
import pathlib
p = pathlib.Path("jobkit/registry.py")
s = p.read_text()
s = s.replace("    def register(self, name, func, tags=[]):", "    def register(self, name, func, tags=()):")
s = s.replace('''        tags.append("all")
        self._jobs[name] = {"func": func, "tags": tags}''', '''        if name in self._jobs:
            raise ValueError(f"job {name!r} is already registered")
        clean = [t for t in dict.fromkeys(tags) if t != "all"] + ["all"]
        self._jobs[name] = {"func": func, "tags": clean}''')
s = s.replace('''        return self._jobs[name]["tags"]''', '''        return list(self._jobs[name]["tags"])''')
p.write_text(s)

p = pathlib.Path("jobkit/settings.py")
s = p.read_text()
s = s.replace('''    def __getattr__(self, name):
        return self._values[name]

    def with_overrides(self, **kw):
        new = copy.copy(self)
        new._values.update(kw)
        return new''', '''    def __getattr__(self, name):
        if name.startswith("__") or name == "_values":
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def with_overrides(self, **kw):
        return Settings(self._values, **kw)''')
p.write_text(s)
PY
