import random
from decimal import ROUND_HALF_UP, Decimal

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
import importlib
for mod, fn, args in DATA:
    emit(_call(getattr(importlib.import_module(mod), fn), *args))
'''


def run_calls(calls):
    return run_child(CHILD, [[m, f, list(a)] for m, f, a in calls])


def fmt(c):
    s = "-" if c < 0 else ""
    w, f = divmod(abs(c), 100)
    return f"{s}{w:,}.{f:02d}"


def interest(bal, rate):
    return int((Decimal(bal) * Decimal(str(rate)) / 1200).quantize(Decimal(1), rounding=ROUND_HALF_UP))


@pytest.mark.core
def test_to_cents_random_amounts():
    rng = random.Random(3141)
    calls, exp = [], []
    for _ in range(400):
        cents = rng.choice([rng.randint(0, 10 ** 4), rng.randint(0, 10 ** 12)])
        neg = rng.random() < 0.3
        w, f = divmod(cents, 100)
        style = rng.randrange(4)
        whole = f"{w:,}" if style == 0 else str(w)
        frac = [f".{f:02d}", f".{f:02d}", f".{f // 10}" if f % 10 == 0 else f".{f:02d}", ""][style]
        if style == 3:
            cents = w * 100
        text = rng.choice(["", " ", "\t"]) + ("-" if neg else "") + whole + frac + rng.choice(["", " "])
        calls.append(("bank.money", "to_cents", [text]))
        exp.append(ok(-cents if neg else cents))
    check_all(calls, run_calls(calls), exp)


@pytest.mark.core
def test_to_cents_float_traps():
    texts = ["0.29", "0.57", "1.15", "4.35", "8.20", "19.99", "1,005.03", "-0.29", "9007199254740993.01", "0.07"]
    values = [29, 57, 115, 435, 820, 1999, 100503, -29, 900719925474099301, 7]
    calls = [("bank.money", "to_cents", [t]) for t in texts]
    check_all(calls, run_calls(calls), [ok(v) for v in values])


@pytest.mark.boundary
def test_to_cents_rejects_bad_input():
    bad = ["", "   ", "abc", "1.234", "0.001", "1e3", "+5", ".5", "nan", "inf", "1.", "--1", "1-",
           "12.3.4", "$5", "5 .00", "0x10", "\u0665.00", "-"]
    calls = [("bank.money", "to_cents", [b]) for b in bad]
    check_all(calls, run_calls(calls), [("raises", "ValueError")] * len(bad))


@pytest.mark.core
def test_format_cents_random():
    rng = random.Random(2718)
    vals = [rng.choice([rng.randint(-999, 999), rng.randint(-10 ** 13, 10 ** 13)]) for _ in range(300)]
    vals += [0, -1, -5, -99, -100, -101, 100, 99999, -99999, 100000]
    calls = [("bank.money", "format_cents", [v]) for v in vals]
    check_all(calls, run_calls(calls), [ok(fmt(v)) for v in vals])


@pytest.mark.core
def test_monthly_interest_random_and_halves():
    rng = random.Random(1618)
    calls = []
    for _ in range(300):
        bal = rng.randint(-10 ** 7, 10 ** 9)
        rate = rng.choice([rng.randint(0, 20), f"{rng.randint(0, 15)}.{rng.randint(0, 99):02d}",
                           f"{rng.randint(0, 9)}.{rng.randint(0, 9)}"])
        calls.append(("bank.interest", "monthly_interest", [bal, rate]))
    # exact halves: balance * rate / 1200 == k + 1/2
    for k in range(0, 40):
        calls.append(("bank.interest", "monthly_interest", [600 * (2 * k + 1), 1]))
        calls.append(("bank.interest", "monthly_interest", [-600 * (2 * k + 1), 1]))
        calls.append(("bank.interest", "monthly_interest", [60 * (2 * k + 1), "10"]))
    calls.append(("bank.interest", "monthly_interest", [120000, "4.125"]))
    calls.append(("bank.interest", "monthly_interest", [12345678901, "3.33"]))
    exp = [ok(interest(*args)) for _, _, args in calls]
    check_all(calls, run_calls(calls), exp)


def ref_weights(total, weights):
    s = sum(weights)
    shares = [total * w // s for w in weights]
    rems = [total * w % s for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-rems[i], i))
    for i in order[:total - sum(shares)]:
        shares[i] += 1
    return shares


@pytest.mark.core
def test_split_evenly_random():
    rng = random.Random(55)
    calls, exp = [], []
    for _ in range(200):
        total, n = rng.randint(0, 10 ** 6), rng.randint(1, 13)
        q, r = divmod(total, n)
        calls.append(("bank.split", "split_evenly", [total, n]))
        exp.append(ok([q + 1] * r + [q] * (n - r)))
    for total, n in [(0, 1), (0, 4), (2, 5), (7, 1), (10 ** 15 + 1, 2)]:
        q, r = divmod(total, n)
        calls.append(("bank.split", "split_evenly", [total, n]))
        exp.append(ok([q + 1] * r + [q] * (n - r)))
    for total, n in [(500, 0), (5, -2), (-1, 3)]:
        calls.append(("bank.split", "split_evenly", [total, n]))
        exp.append(("raises", "ValueError"))
    check_all(calls, run_calls(calls), exp)


@pytest.mark.core
def test_split_by_weights_random():
    rng = random.Random(56)
    calls, exp = [], []
    for _ in range(250):
        weights = [rng.randint(0, 9) for _ in range(rng.randint(1, 7))]
        if sum(weights) == 0:
            weights[0] = 1
        total = rng.randint(0, 100000)
        calls.append(("bank.split", "split_by_weights", [total, weights]))
        exp.append(ok(ref_weights(total, weights)))
    for total, weights in [(10, [0, 0]), (10, []), (10, [2, -1]), (-5, [1, 1])]:
        calls.append(("bank.split", "split_by_weights", [total, weights]))
        exp.append(("raises", "ValueError"))
    check_all(calls, run_calls(calls), exp)


@pytest.mark.boundary
def test_account_statement_end_to_end():
    code = '''
    from bank.account import Account, InsufficientFunds
    a = Account("zoe", overdraft_cents=1000)
    a.deposit(" 0.29")
    a.deposit("1,000.07")
    a.withdraw("1000.41")
    emit(a.balance_cents)
    emit(_call(a.withdraw, "10.00"))
    a.withdraw("9.95")
    emit(a.add_monthly_interest(6))
    emit(_call(a.deposit, "0.00"))
    emit(_call(a.deposit, "2.999"))
    emit(a.statement())
    '''
    got = run_child(code)
    assert got[0] == -5
    assert raised(got[1], "ValueError")
    # balance -1000 at 6 % -> -5.0 exactly
    assert got[2] == -5
    assert raised(got[3], "ValueError") and raised(got[4], "ValueError")
    assert got[5] == ("deposit 0.29\ndeposit 1,000.07\nwithdrawal 1,000.41\nwithdrawal 9.95\n"
                      "interest -0.05\nbalance -10.05"), got[5]
