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

SETUP = '''
from inventory import Inventory, Item
from inventory.report import top_items
def build(rows):
    return Inventory([Item(*r) for r in rows])
def skus(items):
    return [(i.sku, i.qty) for i in items]
'''


def rand_rows(rng, n):
    skus = rng.sample([f"{c}{k:03d}" for c in "PQRSTUVW" for k in range(200)], n)
    return [[s, f"part {s}", rng.randint(0, 40), rng.randint(1, 900)] for s in skus]


def sorted_pairs(rows):
    return [(r[0], r[2]) for r in sorted(rows)]


@pytest.mark.core
def test_pages_cover_all_items_in_order():
    rng = random.Random(515)
    scen = []
    for _ in range(30):
        rows = rand_rows(rng, rng.randint(1, 40))
        scen.append([rows, rng.randint(1, 9)])
    code = '''
    for rows, per in DATA:
        inv = build(rows)
        n = inv.page_count(per)
        emit(_enc([n, [skus(inv.page(k, per)) for k in range(1, n + 3)]]))
    '''
    got = run_child(code, scen, setup=SETUP)
    for (rows, per), g in pairs(scen, got):
        listing = sorted_pairs(rows)
        n = -(-len(listing) // per)
        pages = [listing[(k - 1) * per:k * per] for k in range(1, n + 3)]
        assert canon(g) == canon(enc([n, pages])), f"{len(rows)} items, per_page={per}: {g!r}"


@pytest.mark.core
def test_low_stock_includes_threshold():
    rng = random.Random(516)
    scen = [[rand_rows(rng, rng.randint(0, 30)), rng.randint(0, 20)] for _ in range(30)]
    code = '''
    for rows, th in DATA:
        emit(_enc(skus(build(rows).low_stock(th))))
    '''
    got = run_child(code, scen, setup=SETUP)
    for (rows, th), g in pairs(scen, got):
        exp = sorted(((r[2], r[0]) for r in rows if r[2] <= th))
        assert canon(g) == canon(enc([(s, q) for q, s in exp])), f"threshold {th}: {g!r}"


@pytest.mark.core
def test_top_items_any_n():
    rng = random.Random(517)
    scen = []
    for _ in range(30):
        rows = rand_rows(rng, rng.randint(0, 12))
        scen.append([rows, rng.randint(-2, 20)])
    code = '''
    for rows, n in DATA:
        emit(_call(lambda: skus(top_items(build(rows), n))))
    '''
    got = run_child(code, scen, setup=SETUP)
    for (rows, n), g in pairs(scen, got):
        ranked = sorted(rows, key=lambda r: (-r[2] * r[3], r[0]))[:max(n, 0)]
        assert canon(g) == canon(ok([(r[0], r[2]) for r in ranked])), f"n={n}, {len(rows)} items: {g!r}"


@pytest.mark.boundary
def test_edges():
    code = '''
    empty = build([])
    emit(_call(empty.page_count, 3))
    emit(_call(lambda: skus(empty.page(1, 3))))
    emit(_call(lambda: skus(empty.low_stock(100))))
    inv = build([["X9", "x", 1, 1], ["X1", "y", 0, 2], ["X5", "z", 7, 3]])
    emit(_call(inv.page_count, 1))
    emit(_call(inv.page_count, 3))
    emit(_call(inv.page_count, 4))
    emit(_call(lambda: skus(inv.page(3, 1))))
    emit(_call(lambda: skus(inv.page(1, 10))))
    emit(_call(inv.page, 0, 2))
    emit(_call(inv.page, 1, 0))
    emit(_call(inv.page_count, 0))
    emit(_call(lambda: skus(inv.low_stock(0))))
    inv.remove("X5", 7)
    emit(_call(lambda: skus(inv.page(1, 5))))
    emit(_call(inv.remove, "X9", 5))
    '''
    got = run_child(code, setup=SETUP)
    exp = [ok(0), ok([]), ok([]), ok(3), ok(1), ok(1), ok([("X9", 1)]),
           ok([("X1", 0), ("X5", 7), ("X9", 1)]), ("raises", "ValueError"), ("raises", "ValueError"),
           ("raises", "ValueError"), ok([("X1", 0)]), ok([("X1", 0), ("X9", 1)]), ("raises", "ValueError")]
    check_all(list(range(len(exp))), got, exp)
