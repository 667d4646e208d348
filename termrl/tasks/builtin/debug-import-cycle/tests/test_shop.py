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


def half_up(num, den):
    """round(num / den) with halves rounded up, for num >= 0, den > 0."""
    q, r = divmod(num, den)
    return q + (1 if 2 * r >= den else 0)


def gross(price, rate):
    return price + half_up(price * rate, 100)


def discounted(amount, code):
    if code is None:
        return amount
    c = code.upper()
    if c == "SAVE10":
        return amount - half_up(amount * 10, 100)
    if c == "HALF":
        return amount - half_up(amount * 50, 100)
    if c == "FLAT5":
        return max(0, amount - 500)
    return None


@pytest.mark.core
@pytest.mark.parametrize("stmt", ["import shop", "import shop.pricing", "import shop.cart",
                                  "import shop.discounts", "from shop.models import Product",
                                  "from shop.pricing import price_with_tax, line_total"])
def test_every_module_imports_in_a_fresh_interpreter(stmt):
    got = run_child(stmt + "\nemit('imported')")
    assert got == ["imported"]


@pytest.mark.core
def test_gross_prices_round_half_up():
    rng = random.Random(90)
    cases = [(rng.randint(0, 100000), rng.choice([0, 5, 7, 10, 19, 20, 25])) for _ in range(400)]
    cases += [(25, 10), (5, 10), (15, 10), (1, 50), (3, 50), (1234, 20), (0, 20), (5, 30)]
    code = '''
    import shop
    from shop import pricing
    for price, rate in DATA:
        p = shop.Product("S", "thing", price, rate)
        emit([_call(p.gross_cents), _call(pricing.price_with_tax, p), _call(pricing.line_total, p, 3)])
    '''
    got = run_child(code, cases)
    for (price, rate), g in pairs(cases, got):
        e = gross(price, rate)
        assert canon(g) == canon([ok(e), ok(e), ok(3 * e)]), f"price {price} at {rate}%: {g!r}"


@pytest.mark.core
def test_random_carts_and_codes():
    rng = random.Random(91)
    scen = []
    for _ in range(60):
        catalog = [[f"sku{i}", f"item {i}", rng.randint(1, 20000), rng.choice([0, 7, 19, 20])]
                   for i in range(rng.randint(1, 6))]
        adds = [[rng.randrange(len(catalog)), rng.randint(1, 5)] for _ in range(rng.randint(1, 10))]
        code = rng.choice([None, "SAVE10", "save10", "HALF", "Half", "FLAT5", "flat5"])
        scen.append([catalog, adds, code])
    child = '''
    from shop import Cart, Product
    for catalog, adds, code in DATA:
        products = [Product(*row) for row in catalog]
        cart = Cart()
        for idx, qty in adds:
            cart.add(products[idx], qty)
        emit([[cart.quantity(p.sku) for p in products], _call(cart.subtotal_cents),
              _call(cart.total_cents, code), _call(cart.total_cents)])
    '''
    got = run_child(child, scen)
    for (catalog, adds, code), g in pairs(scen, got):
        qty = [0] * len(catalog)
        for idx, q in adds:
            qty[idx] += q
        sub = sum(gross(row[2], row[3]) * q for row, q in zip(catalog, qty))
        exp = [qty, ok(sub), ok(discounted(sub, code)), ok(sub)]
        assert canon(g) == canon(exp), f"catalog {catalog}, adds {adds}, code {code}: {g!r}"


@pytest.mark.boundary
def test_errors_and_edges():
    child = '''
    from shop import Cart, Product
    from shop.discounts import apply_discount
    cart = Cart()
    p = Product("k1", "cheap", 333, 25)
    emit(_call(cart.total_cents, "FLAT5"))
    emit(_call(cart.add, p, 0))
    cart.add(p)
    emit(_call(cart.total_cents, "flat5"))
    emit(_call(cart.total_cents, "BOGUS"))
    emit(_call(cart.total_cents, "SAVE-10"))
    emit(_call(cart.remove, "nope"))
    cart.add(p, 2)
    emit(_call(cart.quantity, "k1"))
    cart.remove("k1")
    emit(_call(cart.quantity, "k1"))
    emit(_call(cart.subtotal_cents))
    emit(_call(apply_discount, 5, "half"))
    emit(_call(apply_discount, 15, "SAVE10"))
    emit(_call(apply_discount, 999, None))
    '''
    got = run_child(child)
    exp = [ok(0), ("raises", "ValueError"), ok(0), ("raises", "ValueError"), ("raises", "ValueError"),
           ("raises", "KeyError"), ok(3), ok(0), ok(0), ok(2), ok(13), ok(999)]
    check_all(list(range(len(exp))), got, exp)
