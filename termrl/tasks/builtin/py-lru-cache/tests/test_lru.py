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

# The child replays a list of operations on one cache and reports every result.
CHILD = '''
from lru import LRUCache
for capacity, ops in _dec(DATA):
    c = LRUCache(capacity)
    out = []
    for op in ops:
        name, args = op[0], op[1:]
        if name == "len":
            out.append(_call(lambda: c.__len__()))
            out.append(_enc(_len(c)))
        elif name == "in":
            out.append(_enc(args[0] in c))
        elif name == "stats":
            out.append(_enc([c.hits, c.misses]))
        else:
            out.append(_call(getattr(c, name), *args))
    emit(out)
'''


class Model:
    def __init__(self, cap):
        self.cap, self.d, self.hits, self.misses = cap, OrderedDict(), 0, 0

    def apply(self, op):
        name, args = op[0], op[1:]
        d = self.d
        if name == "get":
            key = args[0]
            default = args[1] if len(args) > 1 else None
            if key in d:
                self.hits += 1
                d.move_to_end(key)
                return [ok(d[key])]
            self.misses += 1
            return [ok(default)]
        if name == "put":
            key, value = args
            if self.cap == 0:
                return [ok(None)]
            if key in d:
                d[key] = value
                d.move_to_end(key)
                return [ok(None)]
            d[key] = value
            return [ok(d.popitem(last=False) if len(d) > self.cap else None)]
        if name == "peek":
            return [ok(d.get(args[0], args[1] if len(args) > 1 else None))]
        if name == "delete":
            present = args[0] in d
            d.pop(args[0], None)
            return [ok(present)]
        if name == "keys":
            return [ok(list(d))]
        if name == "len":
            return [ok(len(d)), enc(len(d))]
        if name == "in":
            return [enc(args[0] in d)]
        if name == "stats":
            return [enc([self.hits, self.misses])]
        if name == "resize":
            self.cap = args[0]
            ev = []
            while len(d) > self.cap:
                ev.append(d.popitem(last=False))
            return [ok(ev)]
        raise AssertionError(name)


def random_ops(rng, n, nkeys):
    ops = []
    for _ in range(n):
        k = rng.choice([f"k{rng.randrange(nkeys)}", rng.randrange(nkeys)])
        r = rng.random()
        if r < 0.35:
            ops.append(["put", k, rng.randint(1, 10 ** 6)])
        elif r < 0.6:
            ops.append(["get", k] + ([rng.choice(["dflt", -1, None])] if rng.random() < 0.4 else []))
        elif r < 0.67:
            ops.append(["peek", k] + (["pk"] if rng.random() < 0.5 else []))
        elif r < 0.74:
            ops.append(["delete", k])
        elif r < 0.8:
            ops.append(["in", k])
        elif r < 0.86:
            ops.append(["keys"])
        elif r < 0.9:
            ops.append(["len"])
        elif r < 0.95:
            ops.append(["stats"])
        else:
            ops.append(["resize", rng.randint(0, 8)])
    return ops


def run_scenarios(scenarios):
    got = run_child(CHILD, [[cap, [[enc(x) for x in op] for op in ops]] for cap, ops in scenarios])
    assert len(got) == len(scenarios)
    for (cap, ops), g in zip(scenarios, got):
        m = Model(cap)
        exp = []
        for op in ops:
            exp.extend(m.apply(op))
        assert len(g) == len(exp)
        for i, (a, b) in enumerate(zip(g, exp)):
            if canon(a) != canon(b):
                pytest.fail(f"capacity {cap}: after ops {ops[:i + 1][-6:]} expected {b!r}, got {a!r}")


@pytest.mark.core
def test_random_workloads_match_model():
    rng = random.Random(1234)
    scenarios = [(rng.randint(1, 7), random_ops(rng, 250, rng.randint(3, 14))) for _ in range(40)]
    run_scenarios(scenarios)


@pytest.mark.core
def test_update_existing_key_never_evicts():
    ops = [["put", "p", 1], ["put", "q", 2], ["put", "r", 3], ["put", "p", 11], ["keys"],
           ["put", "s", 4], ["keys"], ["get", "q"], ["get", "r"], ["stats"], ["len"]]
    run_scenarios([(3, ops)])


@pytest.mark.boundary
def test_zero_capacity_and_resize_to_zero():
    ops0 = [["put", "a", 1], ["get", "a"], ["len"], ["in", "a"], ["keys"], ["stats"],
            ["resize", 2], ["put", "a", 1], ["put", "b", 2], ["put", "c", 3], ["keys"]]
    ops1 = [["put", 1, "x"], ["put", 2, "y"], ["put", 3, "z"], ["get", 1], ["resize", 0],
            ["len"], ["put", 4, "w"], ["keys"], ["resize", 1], ["put", 5, "v"], ["keys"]]
    run_scenarios([(0, ops0), (3, ops1)])


@pytest.mark.boundary
def test_falsy_values_and_defaults():
    ops = [["put", "z", 0], ["put", "n", None], ["put", "e", ""], ["get", "z", "D"],
           ["get", "n", "D"], ["peek", "e", "D"], ["delete", "n"], ["delete", "n"],
           ["get", "n", "D"], ["in", "e"], ["in", "n"], ["stats"], ["keys"]]
    run_scenarios([(5, ops)])


@pytest.mark.boundary
def test_negative_capacity_errors():
    code = '''
    from lru import LRUCache
    emit(_call(LRUCache, -3))
    c = LRUCache(2)
    c.put("a", 1)
    emit(_call(c.resize, -1))
    emit(_enc(c.keys()))
    '''
    got = run_child(code)
    assert raised(got[0], "ValueError") and raised(got[1], "ValueError"), got
    assert canon(got[2]) == canon(enc(["a"]))


@pytest.mark.core
def test_operations_are_constant_time():
    code = '''
    import time
    from lru import LRUCache
    n, cap = DATA
    c = LRUCache(cap)
    t0 = time.perf_counter()
    evicted = 0
    for i in range(n):
        if i % 3 == 2:
            c.get(i - cap // 2)
        elif c.put(i, i) is not None:
            evicted += 1
    emit([evicted, _len(c), c.hits, c.misses, time.perf_counter() - t0])
    '''
    n, cap = 300_000, 100_000
    try:
        got = run_child(code, [n, cap], timeout=12)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{n} operations did not finish in 12s; operations must be O(1)")
    evicted, size, hits, misses, elapsed = got[0]
    puts = n - n // 3
    assert size == cap and evicted == puts - cap
    assert hits + misses == n // 3 and hits > 0
    assert elapsed < 5.0, f"{n} operations took {elapsed:.2f}s; operations must be O(1)"
