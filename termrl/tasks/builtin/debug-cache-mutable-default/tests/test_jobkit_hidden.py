import random
from collections import OrderedDict

import pytest

# --- harness -----------------------------------------------------------------
# The agent's code runs in a separate, isolated interpreter (cwd = workdir); only
# plain JSON comes back, and every comparison happens here, on values built here.
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

WORKDIR = Path.cwd()
MARK = "@@TERMRL-RESULT@@"

PRELUDE = r'''
import sys, os
_out = sys.stdout
import json as _json
import decimal as _decimal
import datetime as _dt
_dumps, _loads = _json.dumps, _json.loads
_Decimal, _date, _datetime = _decimal.Decimal, _dt.date, _dt.datetime
_type, _issubclass, _repr, _str, _len = type, issubclass, repr, str, len
_tuple, _float, _list = tuple, float, list
_EXC = tuple((c.__name__, c) for c in (
    ValueError, TypeError, KeyError, IndexError, LookupError, ZeroDivisionError,
    ArithmeticError, RecursionError, RuntimeError, NotImplementedError, NameError,
    ImportError, AttributeError, OverflowError))
DATA = _loads(sys.stdin.read())
_RESULTS = []

def _enc(x):
    t = _type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return {"float": _repr(x)}
    if t is list:
        return [_enc(v) for v in x]
    if t is tuple:
        return {"tuple": [_enc(v) for v in x]}
    if t is dict:
        return {"dict": [[_enc(k), _enc(v)] for k, v in x.items()]}
    if t is _Decimal:
        return {"decimal": _str(x)}
    if t is _date:
        return {"date": x.isoformat()}
    if t is _datetime:
        return {"datetime": x.isoformat()}
    return {"other": _str(t.__name__)}

def _dec(x):
    t = _type(x)
    if t is list:
        return [_dec(v) for v in x]
    if t is dict:
        if "tuple" in x:
            return _tuple(_dec(v) for v in x["tuple"])
        if "float" in x:
            return _float(x["float"])
        if "dict" in x:
            return {_dec(k): _dec(v) for k, v in x["dict"]}
        if "decimal" in x:
            return _Decimal(x["decimal"])
        if "date" in x:
            return _date.fromisoformat(x["date"])
        if "datetime" in x:
            return _datetime.fromisoformat(x["datetime"])
    return x

def _call(fn, *a, **k):
    try:
        return {"ok": _enc(fn(*a, **k))}
    except Exception as e:
        return {"exc": _str(_type(e).__name__), "is": [n for n, c in _EXC if _issubclass(_type(e), c)]}

def emit(x):
    _RESULTS.append(x)

def _finish():
    _out.write("\n@@TERMRL-RESULT@@" + _dumps(_RESULTS) + "\n")
    _out.flush()

sys.path.insert(0, os.getcwd())
'''


def enc(x):
    """Encode a value built by the test the same way the child encodes results."""
    t = type(x)
    if x is None or t in (bool, int, str):
        return x
    if t is float:
        return {"float": repr(x)}
    if t is list:
        return [enc(v) for v in x]
    if t is tuple:
        return {"tuple": [enc(v) for v in x]}
    if t is dict:
        return {"dict": [[enc(k), enc(v)] for k, v in x.items()]}
    name = t.__name__
    if name == "Decimal":
        return {"decimal": str(x)}
    if name in ("date", "datetime"):
        return {name: x.isoformat()}
    raise TypeError(t)


def canon(x):
    return json.dumps(x, sort_keys=True)


def run_child(code, data=None, timeout=30, setup=""):
    """Run PRELUDE + setup + code in a fresh interpreter in the workdir; return the emitted list."""
    src = PRELUDE + "\n" + textwrap.dedent(setup) + "\n" + textwrap.dedent(code) + "\n_finish()\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    r = subprocess.run([sys.executable, "-I", "-c", src], input=json.dumps(data),
                       capture_output=True, text=True, cwd=WORKDIR, timeout=timeout, env=env)
    lines = [l for l in r.stdout.splitlines() if l.startswith(MARK)]
    assert r.returncode == 0 and len(lines) == 1, (
        f"child failed (rc={r.returncode})\nstdout:\n{r.stdout[-1500:]}\nstderr:\n{r.stderr[-3000:]}")
    return json.loads(lines[0][len(MARK):])


def pairs(a, b):
    a, b = list(a), list(b)
    assert len(a) == len(b), f"expected {len(a)} results, got {len(b)}"
    return zip(a, b)


def ok(value):
    return {"ok": enc(value)}


def raised(result, exc_name):
    return isinstance(result, dict) and "exc" in result and exc_name in result["is"]


def check_all(cases, got, expected):
    """got: child results; expected: list of ok(...) / ("raises", Name) per case."""
    assert isinstance(got, list) and len(got) == len(expected), "wrong number of results"
    for case, g, e in zip(cases, got, expected):
        if isinstance(e, tuple) and e and e[0] == "raises":
            assert raised(g, e[1]), f"input {case!r}: expected {e[1]}, got {g!r}"
        else:
            assert canon(g) == canon(e), f"input {case!r}: expected {e!r}, got {g!r}"
# --- end harness -------------------------------------------------------------


@pytest.mark.core
def test_each_function_has_its_own_cache():
    code = '''
    from jobkit.memo import memoize
    @memoize()
    def double(x):
        return 2 * x
    @memoize()
    def negate(x):
        return -x
    a, b = DATA
    emit([double(a), negate(a), double(b), negate(b), double(a), negate(a)])
    emit([double.cache_info(), negate.cache_info()])
    '''
    got = run_child(code, [17, 40])
    assert got[0] == [34, -17, 80, -40, 34, -17], got
    assert got[1] == [{"hits": 1, "misses": 2, "size": 2}] * 2, got


@pytest.mark.core
def test_keyword_arguments_are_part_of_the_key():
    code = '''
    from jobkit.memo import memoize
    calls = []
    @memoize()
    def area(w, h=1, scale=1):
        calls.append(1)
        return w * h * scale
    s1, s2 = DATA
    out = [area(2, scale=s1), area(2, scale=s2), area(2, scale=s1), area(3, h=2, scale=s2),
           area(3, scale=s2, h=2), area(w=5), area(w=5, h=1)]
    emit(out)
    emit(area.cache_info())
    emit(_len(calls))
    '''
    got = run_child(code, [3, 7])
    assert got[0] == [6, 14, 6, 42, 42, 5, 5], got
    # area(w=5) and area(w=5, h=1) may or may not share an entry; everything else is fixed
    info = got[1]
    assert info["hits"] + info["misses"] == 7 and info["hits"] in (2, 3), info
    assert got[2] == info["misses"] and info["size"] == info["misses"], got


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
def test_lru_eviction_matches_model():
    rng = random.Random(2468)
    scen = []
    for _ in range(25):
        maxsize = rng.choice([1, 2, 3, 5, 8, None])
        calls = [rng.randint(0, 10) for _ in range(rng.randint(5, 80))]
        scen.append([maxsize, calls])
    code = '''
    from jobkit.memo import memoize
    for maxsize, calls in DATA:
        invoked = []
        def f(x):
            invoked.append(x)
            return x * 3 + 1
        g = memoize(maxsize=maxsize)(f)
        results = [g(x) for x in calls]
        emit([results, invoked, g.cache_info()])
    '''
    got = run_child(code, scen)
    for (maxsize, calls), g in pairs(scen, got):
        invoked, info = lru_model(calls, maxsize)
        assert g == [[3 * x + 1 for x in calls], invoked, info], f"maxsize={maxsize} calls={calls}: {g!r}"


@pytest.mark.boundary
def test_unbounded_invalid_maxsize_exceptions_and_clear():
    code = '''
    from jobkit.memo import memoize
    n = DATA
    @memoize(maxsize=None)
    def ident(x):
        return x
    for i in range(n):
        ident(i)
    for i in range(n):
        ident(i)
    emit(ident.cache_info())
    for bad in (0, -3, 2.5):
        emit(_call(lambda: memoize(maxsize=bad)(lambda x: x)))
    attempts = []
    @memoize()
    def flaky(x):
        """flaky doc"""
        attempts.append(x)
        if _len(attempts) == 1:
            raise ZeroDivisionError("first call fails")
        return x + 1
    emit(_call(flaky, 4))
    emit(_call(flaky, 4))
    emit(_call(flaky, 4))
    emit(_len(attempts))
    emit([flaky.__name__, flaky.__doc__])
    ident.cache_clear()
    emit(ident.cache_info())
    emit(flaky.cache_info()["size"])
    ident(1)
    emit(ident.cache_info())
    '''
    n = 700
    got = run_child(code, n)
    assert got[0] == {"hits": n, "misses": n, "size": n}, got[0]
    assert all(raised(r, "ValueError") for r in got[1:4]), got[1:4]
    assert raised(got[4], "ZeroDivisionError") and got[5] == ok(5) and got[6] == ok(5), got[4:7]
    assert got[7] == 2, got[7]
    assert got[8] == ["flaky", "flaky doc"], got[8]
    assert got[9] == {"hits": 0, "misses": 0, "size": 0}, got[9]
    assert got[10] == 1, "cache_clear of one function must not clear another"
    assert got[11] == {"hits": 0, "misses": 1, "size": 1}, got[11]


@pytest.mark.core
def test_registry_tags_are_independent():
    code = '''
    from jobkit.registry import Registry, job
    names = DATA
    reg = Registry()
    for n in names:
        reg.register(n, len)
    emit([reg.tags(n) for n in names])
    mine = ["ci", "nightly", "ci"]
    reg.register("custom", len, mine)
    emit(mine)
    emit(reg.tags("custom"))
    reg.register("gen", len, (t for t in ["x", "all", "y", "x"]))
    emit(reg.tags("gen"))
    t = reg.tags("custom")
    t.append("hacked")
    emit(reg.tags("custom"))
    emit(reg.by_tag("all"))
    emit(reg.by_tag("ci"))
    emit(reg.by_tag("hacked"))
    emit(_call(reg.register, names[0], len))
    emit(_call(reg.tags, "ghost"))
    other = Registry()
    f = lambda s: 1
    emit(job(other, "j1")(f) is f)
    emit(job(other, "j2", ["a"])(f) is f)
    emit([other.tags("j1"), other.tags("j2"), reg.by_tag("a")])
    emit(other.run("j2", None))
    '''
    names = ["zeta", "alpha", "mid"]
    got = run_child(code, names)
    assert got[0] == [["all"]] * 3, got[0]
    assert got[1] == ["ci", "nightly", "ci"], "the caller's list was modified"
    assert got[2] == ["ci", "nightly", "all"]
    assert got[3] == ["x", "y", "all"]
    assert got[4] == ["ci", "nightly", "all"], "tags() must return a copy"
    assert got[5] == ["alpha", "custom", "gen", "mid", "zeta"]
    assert got[6] == ["custom"] and got[7] == []
    assert raised(got[8], "ValueError") and raised(got[9], "KeyError"), got[8:10]
    assert got[10] is True and got[11] is True
    assert got[12] == [["all"], ["a", "all"], []]
    assert got[13] == 1


@pytest.mark.core
def test_settings_attributes_overrides_and_copies():
    code = '''
    import copy, pickle
    from jobkit.settings import Settings
    base = dict(DATA)
    s = Settings(base, extra="yes")
    base["retries"] = 999
    emit([s.retries, s.extra, s.as_dict()])
    emit(_call(lambda: s.missing))
    emit([getattr(s, "missing", "dflt"), hasattr(s, "missing"), hasattr(s, "retries")])
    t = s.with_overrides(retries=5, new=1)
    emit([t.as_dict(), s.as_dict()])
    d = s.as_dict()
    d["retries"] = -1
    emit(s.retries)
    for clone in (copy.copy(s), copy.deepcopy(s), pickle.loads(pickle.dumps(s))):
        emit([type(clone).__name__, clone.as_dict(), clone.retries])
    c = copy.copy(s).with_overrides(retries=0)
    emit([c.retries, s.retries])
    '''
    got = run_child(code, [["retries", 3], ["name", "nightly"]])
    assert got[0] == [3, "yes", {"retries": 3, "name": "nightly", "extra": "yes"}], got[0]
    assert raised(got[1], "AttributeError"), got[1]
    assert got[2] == ["dflt", False, True], got[2]
    assert got[3] == [{"retries": 5, "name": "nightly", "extra": "yes", "new": 1},
                      {"retries": 3, "name": "nightly", "extra": "yes"}], got[3]
    assert got[4] == 3
    for clone in got[5:8]:
        assert clone == ["Settings", {"retries": 3, "name": "nightly", "extra": "yes"}, 3], clone
    assert got[8] == [0, 3]


@pytest.mark.core
def test_runner_retries():
    rng = random.Random(1357)
    plan = [[f"job{i}", rng.randint(0, 4)] for i in range(6)]
    retries = rng.randint(1, 3)
    code = '''
    from jobkit.registry import Registry
    from jobkit.runner import run_all
    from jobkit.settings import Settings
    plan, retries = DATA
    def run(settings_obj):
        reg = Registry()
        attempts = {}
        for name, fails in plan:
            def fn(s, name=name, fails=fails):
                attempts[name] = attempts.get(name, 0) + 1
                if attempts[name] <= fails:
                    raise KeyError(name)
                return f"{name}:{s.label}:{attempts[name]}"
            reg.register(name, fn, ["batch"] if fails != 4 else ["other"])
        reg.register("boom", lambda s: 1 // 0, ["batch"])
        return [run_all(reg, "batch", settings_obj), attempts]
    emit(_call(run, Settings(label="L")))
    emit(_call(run, Settings(label="M", retries=retries)))
    '''
    got = run_child(code, [plan, retries])

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

    for g, (label, r) in pairs(got, [("L", 0), ("M", retries)]):
        res, att = expect(label, r)
        assert "ok" in g, g
        assert canon(g["ok"]) == canon(enc([res, att])), f"retries={r}: {g!r}"
