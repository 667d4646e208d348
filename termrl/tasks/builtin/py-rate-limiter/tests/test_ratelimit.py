import random
from fractions import Fraction as F

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

CHILD = '''
import ratelimit as m
for kind, ctor, ops in _dec(DATA):
    out = []
    r = _call(getattr(m, kind), *ctor)
    if "exc" in r:
        out.append(r)
    else:
        obj = getattr(m, kind)(*ctor)
        for name, args in ops:
            out.append(_call(getattr(obj, name), *args))
    emit(out)
'''


class RefBucket:
    def __init__(self, rate, cap):
        self.rate, self.cap, self.tokens, self.last = F(rate), F(cap), F(cap), None

    def refill(self, now):
        now = F(now)
        if self.last is not None:
            if now < self.last:
                return False
            self.tokens = min(self.cap, self.tokens + (now - self.last) * self.rate)
        self.last = now
        return True

    def apply(self, name, args):
        now = args[0]
        cost = F(args[1]) if len(args) > 1 else F(1)
        if name != "available" and (cost <= 0 or (name == "wait_time" and cost > self.cap)):
            return ("raises", "ValueError")
        if not self.refill(now):
            return ("raises", "ValueError")
        if name == "allow":
            if self.tokens >= cost:
                self.tokens -= cost
                return ok(True)
            return ok(False)
        if name == "available":
            return ok(float(self.tokens))
        return ok(0.0 if self.tokens >= cost else float((cost - self.tokens) / self.rate))


class RefWindow:
    def __init__(self, limit, window):
        self.limit, self.window, self.log, self.last = limit, F(window), {}, None

    def apply(self, name, args):
        key, now = args[0], F(args[1])
        if self.last is not None and now < self.last:
            return ("raises", "ValueError")
        self.last = now
        live = [t for t in self.log.get(key, []) if t > now - self.window]
        self.log[key] = live
        if name == "allow":
            if len(live) < self.limit:
                live.append(now)
                return ok(True)
            return ok(False)
        if name == "count":
            return ok(len(live))
        return ok(0.0 if len(live) < self.limit else float(live[0] + self.window - now))


def run_scenarios(scenarios):
    got = run_child(CHILD, [[k, [enc(c) for c in ctor], [[n, [enc(a) for a in args]] for n, args in ops]]
                            for k, ctor, ops in scenarios])
    assert len(got) == len(scenarios)
    for (kind, ctor, ops), g in zip(scenarios, got):
        ref = (RefBucket if kind == "TokenBucket" else RefWindow)(*ctor)
        for i, ((name, args), r) in enumerate(zip(ops, g)):
            e = ref.apply(name, args)
            where = f"{kind}{tuple(ctor)} after {ops[max(0, i - 5):i + 1]}"
            if isinstance(e, tuple):
                assert raised(r, e[1]), f"{where}: expected {e[1]}, got {r!r}"
            else:
                assert canon(r) == canon(e), f"{where}: expected {e!r}, got {r!r}"
        assert len(g) == len(ops)


def dyadic_times(rng, n, step_choices):
    t, out = rng.choice([0, 0.5, 100]), []
    for _ in range(n):
        t += rng.choice(step_choices)
        out.append(t)
    return out


@pytest.mark.core
def test_token_bucket_random_workloads():
    rng = random.Random(42)
    scenarios = []
    for _ in range(40):
        rate = rng.choice([0.25, 0.5, 1, 2, 4, 8])
        cap = rng.choice([1, 2, 3, 5, 10, 2.5])
        ops = []
        for t in dyadic_times(rng, 60, [0, 0, 0.125, 0.25, 0.5, 1, 3]):
            r = rng.random()
            if r < 0.6:
                ops.append(("allow", [t] + ([rng.choice([1, 2, 0.5, 3])] if rng.random() < 0.4 else [])))
            elif r < 0.8:
                ops.append(("available", [t]))
            else:
                ops.append(("wait_time", [t] + ([rng.choice([1, 2, 1.5])] if rng.random() < 0.5 else [])))
        scenarios.append(("TokenBucket", [rate, cap], ops))
    run_scenarios(scenarios)


@pytest.mark.core
def test_sliding_window_random_workloads():
    rng = random.Random(43)
    scenarios = []
    for _ in range(40):
        limit = rng.randint(1, 5)
        window = rng.choice([1, 2, 2.5, 5, 10])
        keys = ["alice", "bob", "carol", 7][: rng.randint(1, 4)]
        ops = []
        for t in dyadic_times(rng, 80, [0, 0, 0.25, 0.5, 1, 2]):
            k = rng.choice(keys)
            r = rng.random()
            ops.append(("allow" if r < 0.65 else "count" if r < 0.8 else "retry_after", [k, t]))
        scenarios.append(("SlidingWindowLimiter", [limit, window], ops))
    run_scenarios(scenarios)


@pytest.mark.boundary
def test_window_boundary_is_exclusive():
    ops = [("allow", ["k", 0]), ("allow", ["k", 1]), ("allow", ["k", 2]), ("retry_after", ["k", 2]),
           ("count", ["k", 9.75]), ("allow", ["k", 9.75]), ("retry_after", ["k", 9.75]),
           ("count", ["k", 10]), ("allow", ["k", 10]), ("allow", ["k", 10]), ("retry_after", ["k", 10]),
           ("count", ["k", 12]), ("count", ["new", 12]), ("retry_after", ["new", 12])]
    run_scenarios([("SlidingWindowLimiter", [2, 10], ops)])


@pytest.mark.boundary
def test_bucket_cap_fractional_costs_and_errors():
    ops = [("allow", [10, 3]), ("available", [10]), ("allow", [10, 0.5]), ("wait_time", [10, 3]),
           ("available", [100]), ("allow", [100, 4]), ("wait_time", [100, 4]), ("wait_time", [100, 3]),
           ("allow", [100, 0]), ("allow", [100, -1]), ("wait_time", [100, 0]), ("available", [99]),
           ("allow", [99]), ("available", [100.5]), ("allow", [100.5, 3])]
    run_scenarios([("TokenBucket", [0.5, 3], ops)])


@pytest.mark.boundary
def test_time_going_backwards_changes_nothing():
    ops_w = [("allow", ["a", 5]), ("allow", ["b", 4]), ("allow", ["a", 5]), ("count", ["a", 5]),
             ("allow", ["c", 6]), ("count", ["c", 5.5])]
    ops_b = [("allow", [5]), ("available", [4]), ("allow", [4]), ("available", [5])]
    run_scenarios([("SlidingWindowLimiter", [3, 60], ops_w), ("TokenBucket", [1, 1], ops_b)])


@pytest.mark.boundary
def test_constructor_validation():
    bad = [("TokenBucket", [0, 5]), ("TokenBucket", [1, 0]), ("TokenBucket", [-1, 5]),
           ("TokenBucket", [2, -3]), ("SlidingWindowLimiter", [0, 10]),
           ("SlidingWindowLimiter", [-2, 10]), ("SlidingWindowLimiter", [3, 0]),
           ("SlidingWindowLimiter", [3, -1]), ("SlidingWindowLimiter", [2.5, 10])]
    got = run_child(CHILD, [[k, ctor, []] for k, ctor in bad])
    for (k, ctor), g in pairs(bad, got):
        assert len(g) == 1 and raised(g[0], "ValueError"), f"{k}{tuple(ctor)}: {g!r}"


@pytest.mark.core
def test_sliding_window_is_fast_and_forgets():
    code = '''
    import time, gc
    import ratelimit as m
    n, limit = DATA
    w = m.SlidingWindowLimiter(limit, 1000)
    t0 = time.perf_counter()
    allowed = 0
    for i in range(n):
        if w.allow("hot", i * 0.125):
            allowed += 1
    mid = w.count("hot", n * 0.125)
    for i in range(20000):
        w.allow(f"user{i}", n * 0.125 + i * 0.0625)
    elapsed = time.perf_counter() - t0
    emit([allowed, mid, elapsed])
    # after everything expired, no request may still be held in memory
    def held(obj, seen=None, depth=0):
        total = 0
        for v in _list(vars(obj).values()) if hasattr(obj, "__dict__") else []:
            total += size(v, depth)
        return total
    def size(v, depth):
        if depth > 4:
            return 0
        if isinstance(v, dict):
            return _len(v) + sum(size(x, depth + 1) for x in _list(v.values()))
        if isinstance(v, (list, tuple, set)) or type(v).__name__ == "deque":
            return _len(v) + sum(size(x, depth + 1) for x in _list(v))
        return 0
    far = n * 0.125 + 20000 * 0.0625 + 5000
    w.allow("final", far)
    emit(held(w))
    '''
    got = run_child(code, [200_000, 5000], timeout=20)
    allowed, mid, elapsed = got[0]
    from collections import deque
    q, exp_allowed = deque(), 0
    for i in range(200_000):
        now = i * 0.125
        while q and not q[0] > now - 1000:
            q.popleft()
        if len(q) < 5000:
            q.append(now)
            exp_allowed += 1
    now = 200_000 * 0.125
    exp_mid = sum(1 for t in q if t > now - 1000)
    assert [allowed, mid] == [exp_allowed, exp_mid]
    assert elapsed < 6.0, f"too slow: {elapsed:.2f}s"
    assert got[1] < 100, f"limiter still holds about {got[1]} items after all requests expired"
