import importlib
import json
import os
import random
import sys
from collections import OrderedDict

import pytest

sys.path.insert(0, os.getcwd())  # pytest runs with -P from the workdir, where the agent's jobkit/ is


@pytest.fixture(autouse=True)
def fresh_jobkit():
    """Every test imports the agent's modules anew, as each test used to run them in a new
    interpreter: the bugs live in default arguments and module state, which must not carry over."""
    for name in [n for n in sys.modules if n == "jobkit" or n.startswith("jobkit.")]:
        del sys.modules[name]


# What the old tests did next to the agent's code, in its interpreter: define the functions the
# agent's memoize wraps (it reads their __name__ and __doc__, which the test process does not let
# the agent's code read from the test's own functions), read the wrapper's __doc__ (a handle's
# __doc__ is its local class's), copy and pickle the agent's objects, and change what the agent's
# code returned or was given. This module is written to a temporary folder and imported like the
# agent's modules, so it runs in the same worker interpreter; what it returns comes back as plain
# data or as handles, and every check is made here.
WORKER_SIDE = '''
import copy
import pickle

length = len
_LOGS = {}
_ATTEMPTS = {}
_CALLER_LISTS = {}
_KEPT = []


def function(kind):
    """A new function as the old test defined it; calls_of(fn) lists the calls it logs."""
    log = []
    if kind == "double":
        def fn(x):
            return 2 * x
    elif kind == "negate":
        def fn(x):
            return -x
    elif kind == "area":
        def fn(w, h=1, scale=1):
            log.append(1)
            return w * h * scale
    elif kind == "f":
        def fn(x):
            log.append(x)
            return x * 3 + 1
    elif kind == "ident":
        def fn(x):
            return x
    elif kind == "<lambda>":
        fn = lambda x: x  # noqa: E731
    elif kind == "flaky":
        def fn(x):
            """flaky doc"""
            log.append(x)
            if len(log) == 1:
                raise ZeroDivisionError("first call fails")
            return x + 1
    else:
        raise ValueError(kind)
    fn.__name__ = fn.__qualname__ = kind
    _LOGS[fn] = log
    return fn


def calls_of(fn):
    return list(_LOGS[fn])


def name_and_doc(fn):
    return [fn.__name__, fn.__doc__]


def kept_call(obj, method):
    """obj.method(), kept as the agent's code returned it: kept(i) reads it again later."""
    _KEPT.append(getattr(obj, method)())
    return len(_KEPT) - 1


def kept(i):
    return _KEPT[i]


def one(s):
    return 1


def boom(s):
    return 1 // 0


def retrying_job(key, name, fails):
    """Fails (KeyError) on its first ``fails`` attempts; attempts_of(key) counts them per name."""
    attempts = _ATTEMPTS.setdefault(key, {})

    def fn(s, name=name, fails=fails):
        attempts[name] = attempts.get(name, 0) + 1
        if attempts[name] <= fails:
            raise KeyError(name)
        return f"{name}:{s.label}:{attempts[name]}"
    return fn


def attempts_of(key):
    return _ATTEMPTS.get(key, {})


def one_shot(items):
    return (t for t in items)


def register_with_list(registry, name, func, items):
    """registry.register(name, func, a list of the caller's); caller_list(name) shows it later."""
    mine = _CALLER_LISTS[name] = list(items)
    registry.register(name, func, mine)


def caller_list(name):
    return _CALLER_LISTS[name]


def append_to_result(obj, method, arg, item):
    getattr(obj, method)(arg).append(item)


def set_in_result(obj, method, key, value):
    getattr(obj, method)()[key] = value


def settings_from_changed_dict(cls, pairs, **kw):
    """cls(base, **kw), then the caller changes base["retries"]."""
    base = dict(pairs)
    s = cls(base, **kw)
    base["retries"] = 999
    return s


def copy_of(obj):
    return copy.copy(obj)


def deepcopy_of(obj):
    return copy.deepcopy(obj)


def pickled(obj):
    return pickle.loads(pickle.dumps(obj))
'''


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    folder = tmp_path_factory.mktemp("worker_side")
    (folder / "jobkit_test_worker_side.py").write_text(WORKER_SIDE)
    sys.path.insert(0, str(folder))
    return importlib.import_module("jobkit_test_worker_side")


def same(got, expected):
    """Equal in type and value, recursively: True is not 1, 1.0 is not 1, a tuple is not a list,
    and a dict's items in order."""
    t = type(expected)
    if type(got) is not t:
        return False
    if t is list or t is tuple:
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if t is dict:
        return len(got) == len(expected) and all(same(gk, ek) and same(gv, ev) for (gk, gv), (ek, ev)
                                                 in zip(got.items(), expected.items()))
    if t is float:
        return repr(got) == repr(expected)
    if t in (type(None), bool, int, str):
        return got == expected
    raise TypeError(f"no comparison for {t.__name__}")


def as_json(value):
    """A value as the old tests compared it when they did not check its type: after a JSON round trip."""
    return json.loads(json.dumps(value))


@pytest.mark.core
def test_each_function_has_its_own_cache(probe):
    from jobkit.memo import memoize

    double = memoize()(probe.function("double"))
    negate = memoize()(probe.function("negate"))
    a, b = 17, 40
    got = as_json([double(a), negate(a), double(b), negate(b), double(a), negate(a)])
    assert got == [34, -17, 80, -40, 34, -17], got
    got = as_json([double.cache_info(), negate.cache_info()])
    assert got == [{"hits": 1, "misses": 2, "size": 2}] * 2, got


@pytest.mark.core
def test_keyword_arguments_are_part_of_the_key(probe):
    from jobkit.memo import memoize

    fn = probe.function("area")
    area = memoize()(fn)
    s1, s2 = 3, 7
    out = as_json([area(2, scale=s1), area(2, scale=s2), area(2, scale=s1), area(3, h=2, scale=s2),
                   area(3, scale=s2, h=2), area(w=5), area(w=5, h=1)])
    assert out == [6, 14, 6, 42, 42, 5, 5], out
    # area(w=5) and area(w=5, h=1) may or may not share an entry; everything else is fixed
    info = as_json(area.cache_info())
    assert info["hits"] + info["misses"] == 7 and info["hits"] in (2, 3), info
    calls = probe.calls_of(fn)
    assert len(calls) == info["misses"] and info["size"] == info["misses"], (calls, info)


def lru_model(calls, maxsize):
    cache, invoked, hits = OrderedDict(), [], 0
    for x in calls:
        if x in cache:
            cache.move_to_end(x)
            hits += 1
        else:
            invoked.append(x)
            cache[x] = True
            if maxsize is not None and len(cache) > maxsize:
                cache.popitem(last=False)
    return invoked, {"hits": hits, "misses": len(invoked), "size": len(cache)}


@pytest.mark.core
def test_lru_eviction_matches_model(probe):
    rng = random.Random(2468)
    scen = []
    for _ in range(25):
        maxsize = rng.choice([1, 2, 3, 5, 8, None])
        calls = [rng.randint(0, 10) for _ in range(rng.randint(5, 80))]
        scen.append([maxsize, calls])
    from jobkit.memo import memoize

    for maxsize, calls in scen:
        f = probe.function("f")
        g = memoize(maxsize=maxsize)(f)
        results = [g(x) for x in calls]
        got = as_json([results, probe.calls_of(f), g.cache_info()])
        invoked, info = lru_model(calls, maxsize)
        assert got == [[3 * x + 1 for x in calls], invoked, info], f"maxsize={maxsize} calls={calls}: {got!r}"


@pytest.mark.boundary
def test_unbounded_invalid_maxsize_exceptions_and_clear(probe):
    from jobkit.memo import memoize

    n = 700
    ident = memoize(maxsize=None)(probe.function("ident"))
    for i in range(n):
        ident(i)
    for i in range(n):
        ident(i)
    first = probe.kept_call(ident, "cache_info")
    got = as_json(probe.kept(first))
    assert got == {"hits": n, "misses": n, "size": n}, got
    for bad in (0, -3, 2.5):
        with pytest.raises(ValueError):
            memoize(maxsize=bad)(probe.function("<lambda>"))
    fn = probe.function("flaky")
    flaky = memoize()(fn)
    with pytest.raises(ZeroDivisionError):
        flaky(4)
    got = [flaky(4), flaky(4)]
    assert same(got, [5, 5]), got
    assert len(probe.calls_of(fn)) == 2, probe.calls_of(fn)
    got = as_json(probe.name_and_doc(flaky))
    assert got == ["flaky", "flaky doc"], got
    ident.cache_clear()
    cleared = probe.kept_call(ident, "cache_info")
    got = as_json(probe.kept(cleared))
    assert got == {"hits": 0, "misses": 0, "size": 0}, got
    assert as_json(flaky.cache_info()["size"]) == 1, "cache_clear of one function must not clear another"
    ident(1)
    last = probe.kept_call(ident, "cache_info")
    got = as_json(probe.kept(last))
    assert got == {"hits": 0, "misses": 1, "size": 1}, got
    # what cache_info() returned must not change afterwards (the old test read these at its end)
    got = as_json([probe.kept(first), probe.kept(cleared)])
    assert got == [{"hits": n, "misses": n, "size": n}, {"hits": 0, "misses": 0, "size": 0}], got


@pytest.mark.core
def test_registry_tags_are_independent(probe):
    from jobkit.registry import Registry, job

    names = ["zeta", "alpha", "mid"]
    reg = Registry()
    for n in names:
        reg.register(n, probe.length)
    got = as_json([reg.tags(n) for n in names])
    assert got == [["all"]] * 3, got
    probe.register_with_list(reg, "custom", probe.length, ["ci", "nightly", "ci"])
    got = as_json(reg.tags("custom"))
    assert got == ["ci", "nightly", "all"], got
    reg.register("gen", probe.length, probe.one_shot(["x", "all", "y", "x"]))
    got = as_json(reg.tags("gen"))
    assert got == ["x", "y", "all"], got
    probe.append_to_result(reg, "tags", "custom", "hacked")
    assert as_json(reg.tags("custom")) == ["ci", "nightly", "all"], "tags() must return a copy"
    got = as_json(reg.by_tag("all"))
    assert got == ["alpha", "custom", "gen", "mid", "zeta"], got
    got = as_json([reg.by_tag("ci"), reg.by_tag("hacked")])
    assert got == [["custom"], []], got
    with pytest.raises(ValueError):
        reg.register(names[0], probe.length)
    with pytest.raises(KeyError):
        reg.tags("ghost")
    other = Registry()
    f = probe.one
    assert job(other, "j1")(f) is f
    assert job(other, "j2", ["a"])(f) is f
    got = as_json([other.tags("j1"), other.tags("j2"), reg.by_tag("a")])
    assert got == [["all"], ["a", "all"], []], got
    assert as_json(other.run("j2", None)) == 1
    assert as_json(probe.caller_list("custom")) == ["ci", "nightly", "ci"], "the caller's list was modified"


@pytest.mark.core
def test_settings_attributes_overrides_and_copies(probe):
    from jobkit.settings import Settings

    s = probe.settings_from_changed_dict(Settings, [["retries", 3], ["name", "nightly"]], extra="yes")
    got = as_json([s.retries, s.extra, s.as_dict()])
    assert got == [3, "yes", {"retries": 3, "name": "nightly", "extra": "yes"}], got
    with pytest.raises(AttributeError):
        s.missing
    got = as_json([getattr(s, "missing", "dflt"), hasattr(s, "missing"), hasattr(s, "retries")])
    assert got == ["dflt", False, True], got
    t = s.with_overrides(retries=5, new=1)
    got = as_json([t.as_dict(), s.as_dict()])
    assert got == [{"retries": 5, "name": "nightly", "extra": "yes", "new": 1},
                   {"retries": 3, "name": "nightly", "extra": "yes"}], got
    probe.set_in_result(s, "as_dict", "retries", -1)
    assert as_json(s.retries) == 3
    for clone in (probe.copy_of(s), probe.deepcopy_of(s), probe.pickled(s)):
        got = as_json([type(clone).__name__, clone.as_dict(), clone.retries])
        assert got == ["Settings", {"retries": 3, "name": "nightly", "extra": "yes"}, 3], got
    c = probe.copy_of(s).with_overrides(retries=0)
    assert as_json([c.retries, s.retries]) == [0, 3]


@pytest.mark.core
def test_runner_retries(probe):
    rng = random.Random(1357)
    plan = [[f"job{i}", rng.randint(0, 4)] for i in range(6)]
    retries = rng.randint(1, 3)
    from jobkit.registry import Registry
    from jobkit.runner import run_all
    from jobkit.settings import Settings

    def run(settings_obj, key):
        reg = Registry()
        for name, fails in plan:
            reg.register(name, probe.retrying_job(key, name, fails), ["batch"] if fails != 4 else ["other"])
        reg.register("boom", probe.boom, ["batch"])
        return [run_all(reg, "batch", settings_obj), probe.attempts_of(key)]

    got = [run(Settings(label="L"), "L"), run(Settings(label="M", retries=retries), "M")]

    def expect(label, r):
        results, attempts = {}, {}
        for name, fails in sorted(plan):
            if fails == 4:
                continue
            n = min(fails + 1, r + 1)
            attempts[name] = n
            results[name] = f"{name}:{label}:{n}" if fails < r + 1 else "error: KeyError"
        results["boom"] = "error: ZeroDivisionError"
        return {k: results[k] for k in sorted(results)}, attempts

    for g, (label, r) in zip(got, [("L", 0), ("M", retries)]):
        res, att = expect(label, r)
        assert same(g, [res, att]), f"retries={r}: {g!r}"
