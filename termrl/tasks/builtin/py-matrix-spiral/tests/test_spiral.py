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


def ref_cw(m):
    m = [list(r) for r in m]
    out = []
    while m and m[0]:
        out += m.pop(0)
        m = [list(r) for r in zip(*m)][::-1]  # rotate remaining block counter-clockwise
    return out


def ref_order(m, clockwise=True):
    if clockwise:
        return ref_cw(m)
    return ref_cw([list(r) for r in zip(*m)]) if m and m[0] else []


def ref_fill(rows, cols, start=1, clockwise=True):
    idx = [[(r, c) for c in range(cols)] for r in range(rows)]
    grid = [[None] * cols for _ in range(rows)]
    for i, (r, c) in enumerate(ref_order(idx, clockwise)):
        grid[r][c] = start + i
    return grid


CHILD = '''
import spiral
for name, args, kwargs in _dec(DATA):
    emit(_call(getattr(spiral, name), *args, **kwargs))
'''


def run_cases(cases):
    return run_child(CHILD, [[n, [enc(a) for a in args], kw] for n, args, kw in cases])


def rand_matrix(rng, r, c):
    return [[rng.randint(-99, 999) for _ in range(c)] for _ in range(r)]


@pytest.mark.core
def test_spiral_order_random_shapes():
    rng = random.Random(8)
    cases, expected = [], []
    for r in range(1, 10):
        for c in range(1, 10):
            m = rand_matrix(rng, r, c)
            for cw in (True, False):
                cases.append(("spiral_order", [m], {"clockwise": cw}))
                expected.append(ok(ref_order(m, cw)))
    check_all(cases, run_cases(cases), expected)


@pytest.mark.core
def test_spiral_fill_shapes_and_start():
    rng = random.Random(81)
    cases, expected = [], []
    for r in range(0, 8):
        for c in range(0, 8):
            start = rng.randint(-50, 50)
            for cw in (True, False):
                cases.append(("spiral_fill", [r, c], {"start": start, "clockwise": cw}))
                expected.append(ok(ref_fill(r, c, start, cw)))
    cases.append(("spiral_fill", [5, 6], {}))
    expected.append(ok(ref_fill(5, 6)))
    check_all(cases, run_cases(cases), expected)


@pytest.mark.boundary
def test_degenerate_matrices():
    cases = [
        ("spiral_order", [[]], {}),
        ("spiral_order", [[[], [], []]], {}),
        ("spiral_order", [[[], []]], {"clockwise": False}),
        ("spiral_order", [[["x"]]], {}),
        ("spiral_order", [[[1, 2, 3, 4, 5]]], {"clockwise": False}),
        ("spiral_order", [[[1], [2], [3], [4]]], {}),
        ("spiral_order", [[[1], [2], [3], [4]]], {"clockwise": False}),
        ("spiral_order", [[["a", None, 2.5], [True, "b", (1, 2)]]], {}),
        ("spiral_fill", [0, 5], {}),
        ("spiral_fill", [3, 0], {}),
        ("spiral_fill", [1, 1], {"start": 41}),
    ]
    expected = [ok([]), ok([]), ok([]), ok(["x"]), ok([1, 2, 3, 4, 5]), ok([1, 2, 3, 4]),
                ok([1, 2, 3, 4]), ok(["a", None, 2.5, (1, 2), "b", True]), ok([]),
                ok([[], [], []]), ok([[41]])]
    check_all(cases, run_cases(cases), expected)


@pytest.mark.boundary
def test_errors():
    cases = [
        ("spiral_order", [[[1, 2], [3, 4], [5]]], {}),
        ("spiral_order", [[[1], [2, 3]]], {"clockwise": False}),
        ("spiral_order", [[[], [1]]], {}),
        ("spiral_fill", [-1, 3], {}),
        ("spiral_fill", [2, -4], {}),
    ]
    check_all(cases, run_cases(cases), [("raises", "ValueError")] * len(cases))


@pytest.mark.boundary
def test_input_not_modified_and_new_list():
    code = '''
    import spiral
    m = [[1, 2, 3], [4, 5, 6]]
    r1 = spiral.spiral_order(m)
    r2 = spiral.spiral_order(m, clockwise=False)
    emit(_enc(r1)); emit(_enc(r2)); emit(_enc(m))
    emit(r1 is not m and r1 is not m[0])
    r1.append(99)
    emit(_enc(spiral.spiral_order(m)))
    g = spiral.spiral_fill(3, 3)
    g[0][0] = 100
    emit(_enc(g[1]))
    '''
    got = run_child(code)
    exp = [enc([1, 2, 3, 6, 5, 4]), enc([1, 4, 5, 6, 3, 2]), enc([[1, 2, 3], [4, 5, 6]]), True,
           enc([1, 2, 3, 6, 5, 4]), enc([8, 9, 4])]
    assert canon(got) == canon(exp), got
