import random

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

# ----- independent brute-force model: the set of covered integer points -----

def points(intervals):
    s = set()
    for a, b in intervals:
        s.update(range(a, b))
    return s


def runs(pts):
    out = []
    for p in sorted(pts):
        if out and out[-1][1] == p:
            out[-1][1] = p + 1
        else:
            out.append([p, p + 1])
    return [(a, b) for a, b in out]


def rand_intervals(rng, n, lo=-30, hi=60, maxlen=12):
    res = []
    for _ in range(n):
        a = rng.randint(lo, hi)
        res.append((a, a + rng.randint(0, maxlen)))
    return res


CHILD = '''
import intervals as m
fn = {"merge": m.merge_intervals, "length": m.covered_length,
      "intersect": m.intersect_intervals, "subtract": m.subtract_intervals}
for name, args in _dec(DATA):
    emit(_call(fn[name], *args))
'''


def run_cases(cases):
    return run_child(CHILD, [[name, [enc(a) for a in args]] for name, args in cases])


@pytest.mark.core
def test_merge_random_against_model():
    rng = random.Random(4711)
    cases, expected = [], []
    for _ in range(300):
        iv = rand_intervals(rng, rng.randint(0, 9))
        cases.append(("merge", [iv]))
        expected.append(ok(runs(points(iv))))
    check_all(cases, run_cases(cases), expected)


@pytest.mark.core
def test_covered_length_random():
    rng = random.Random(99)
    cases, expected = [], []
    for _ in range(200):
        iv = rand_intervals(rng, rng.randint(0, 9), maxlen=25)
        cases.append(("length", [iv]))
        expected.append(ok(len(points(iv))))
    check_all(cases, run_cases(cases), expected)


@pytest.mark.core
def test_intersect_random_against_model():
    rng = random.Random(2024)
    cases, expected = [], []
    for _ in range(250):
        a = rand_intervals(rng, rng.randint(0, 6))
        b = rand_intervals(rng, rng.randint(0, 6))
        cases.append(("intersect", [a, b]))
        expected.append(ok(runs(points(a) & points(b))))
    check_all(cases, run_cases(cases), expected)


@pytest.mark.core
def test_subtract_random_against_model():
    rng = random.Random(77)
    cases, expected = [], []
    for _ in range(250):
        a = rand_intervals(rng, rng.randint(0, 6), maxlen=20)
        b = rand_intervals(rng, rng.randint(0, 6), maxlen=6)
        cases.append(("subtract", [a, b]))
        expected.append(ok(runs(points(a) - points(b))))
    check_all(cases, run_cases(cases), expected)


@pytest.mark.boundary
def test_touching_empty_and_nested():
    cases = [
        ("merge", [[(10, 12), (12, 14), (14, 14), (-3, -3)]]),
        ("merge", [[(0, 100), (20, 30), (40, 41)]]),
        ("merge", [[(8, 8)]]),
        ("merge", [[(4, 6), (4, 6), (4, 6)]]),
        ("merge", [[(1, 2), (3, 4)]]),
        ("length", [[]]),
        ("length", [[(7, 7)]]),
        ("intersect", [[(0, 5)], [(5, 9)]]),
        ("intersect", [[], [(0, 3)]]),
        ("subtract", [[(0, 5)], [(0, 5)]]),
        ("subtract", [[(0, 5)], []]),
        ("subtract", [[], [(1, 2)]]),
        ("subtract", [[(0, 5), (5, 9)], [(4, 6)]]),
    ]
    expected = [ok([(10, 14)]), ok([(0, 100)]), ok([]), ok([(4, 6)]), ok([(1, 2), (3, 4)]),
                ok(0), ok(0), ok([]), ok([]), ok([]), ok([(0, 5)]), ok([]), ok([(0, 4), (6, 9)])]
    check_all(cases, run_cases(cases), expected)


@pytest.mark.boundary
def test_huge_and_negative_values():
    big = 10 ** 18
    cases = [
        ("merge", [[(big, big + 5), (-big, 3), (2, big)]]),
        ("length", [[(-big, big), (0, 1)]]),
        ("subtract", [[(-big, big)], [(-1, 1)]]),
        ("intersect", [[(-big, -big + 10)], [(-big + 9, 0)]]),
    ]
    expected = [ok([(-big, big + 5)]), ok(2 * big), ok([(-big, -1), (1, big)]),
                ok([(-big + 9, -big + 10)])]
    check_all(cases, run_cases(cases), expected)


@pytest.mark.boundary
def test_invalid_intervals_raise_value_error():
    cases = [
        ("merge", [[(0, 2), (9, 8)]]),
        ("length", [[(5, 4)]]),
        ("intersect", [[(0, 3)], [(2, 1)]]),
        ("subtract", [[(0, 3)], [(7, -7)]]),
        ("subtract", [[(3, 0)], []]),
    ]
    check_all(cases, run_cases(cases), [("raises", "ValueError")] * len(cases))


@pytest.mark.boundary
def test_lists_generators_and_no_mutation():
    code = '''
    import intervals as m
    a = [[9, 12], [1, 4], [3, 5], [12, 13]]
    b = [(4, 10)]
    emit(_call(m.merge_intervals, a))
    emit(_call(m.merge_intervals, (tuple(p) for p in a)))
    emit(_call(m.covered_length, iter(a)))
    emit(_call(m.subtract_intervals, a, b))
    emit(_call(m.intersect_intervals, a, iter(b)))
    emit(_enc(a))
    emit(_enc(b))
    '''
    got = run_child(code)
    exp = [ok([(1, 5), (9, 13)]), ok([(1, 5), (9, 13)]), ok(8), ok([(1, 4), (10, 13)]),
           ok([(4, 5), (9, 10)]), enc([[9, 12], [1, 4], [3, 5], [12, 13]]), enc([(4, 10)])]
    assert canon(got) == canon(exp), got
