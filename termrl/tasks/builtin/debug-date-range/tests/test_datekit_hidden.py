import calendar
import random
from datetime import date, timedelta

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
for mod, fn, args in _dec(DATA):
    emit(_call(getattr(importlib.import_module("datekit." + mod), fn), *args))
'''


def run_calls(calls):
    return run_child(CHILD, [[m, f, [enc(a) for a in args]] for m, f, args in calls])


def rand_date(rng, lo=1890, hi=2110):
    y = rng.randint(lo, hi)
    m = rng.randint(1, 12)
    return date(y, m, rng.randint(1, calendar.monthrange(y, m)[1]))


def ref_range(start, end, step):
    out, d = [], start
    while (d <= end) if step > 0 else (d >= end):
        out.append(d)
        d += timedelta(days=step)
    return out


def ref_add_months(d, n):
    y, m0 = divmod(d.year * 12 + d.month - 1 + n, 12)
    return date(y, m0 + 1, min(d.day, calendar.monthrange(y, m0 + 1)[1]))


def is_bd(d, hol):
    return d.weekday() < 5 and d not in hol


def ref_between(start, end, hol):
    return sum(1 for k in range((end - start).days) if is_bd(start + timedelta(days=k), hol))


def ref_add_bd(d, n, hol):
    step = 1 if n > 0 else -1
    for _ in range(abs(n)):
        d += timedelta(days=step)
        while not is_bd(d, hol):
            d += timedelta(days=step)
    return d


@pytest.mark.core
def test_date_range_random():
    rng = random.Random(101)
    calls, exp = [], []
    for _ in range(150):
        start = rand_date(rng, 1999, 2030)
        step = rng.choice([1, 1, 2, 3, 7, -1, -2, -5, 10])
        end = start + timedelta(days=rng.randint(-40, 40))
        calls.append(("ranges", "date_range", [start, end, step] if step != 1 or rng.random() < 0.5 else [start, end]))
        exp.append(ok(ref_range(start, end, step)))
    d = rand_date(rng)
    calls += [("ranges", "date_range", [d, d]), ("ranges", "date_range", [d, d, -3]),
              ("ranges", "date_range", [d, d - timedelta(days=1)]), ("ranges", "date_range", [d, d, 0])]
    exp += [ok([d]), ok([d]), ok([]), ("raises", "ValueError")]
    check_all(calls, run_calls(calls), exp)


@pytest.mark.core
def test_add_months_random_and_month_ends():
    rng = random.Random(102)
    calls = []
    for _ in range(300):
        d = rand_date(rng, 1800, 2200)
        if rng.random() < 0.4:
            d = date(d.year, d.month, calendar.monthrange(d.year, d.month)[1])
        calls.append(("months", "add_months", [d, rng.randint(-40, 40)]))
    for d, n in [(date(1899, 12, 31), 2), (date(2000, 1, 31), 1), (date(1900, 1, 29), 1),
                 (date(2100, 3, 31), -1), (date(2023, 12, 15), 0), (date(2023, 12, 15), 12),
                 (date(2024, 12, 31), -12), (date(2024, 2, 29), 12), (date(2024, 2, 29), 48)]:
        calls.append(("months", "add_months", [d, n]))
    exp = [ok(ref_add_months(*args)) for _, _, args in calls]
    check_all(calls, run_calls(calls), exp)


@pytest.mark.core
def test_leap_years_and_days_in_month():
    rng = random.Random(103)
    years = [1600, 1700, 1800, 1900, 2000, 2100, 2200, 2400, 1996, 2023, 2024] + [rng.randint(1, 9999) for _ in range(60)]
    calls, exp = [], []
    for y in years:
        calls.append(("months", "is_leap", [y]))
        exp.append(ok(calendar.isleap(y)))
        m = rng.choice([2, 2, rng.randint(1, 12)])
        calls.append(("months", "days_in_month", [y, m]))
        exp.append(ok(calendar.monthrange(y, m)[1]))
        calls.append(("months", "month_end", [date(y, m, 1)]))
        exp.append(ok(date(y, m, calendar.monthrange(y, m)[1])))
    for m in (0, 13, -1):
        calls.append(("months", "days_in_month", [2024, m]))
        exp.append(("raises", "ValueError"))
    check_all(calls, run_calls(calls), exp)


@pytest.mark.core
def test_business_days_random():
    rng = random.Random(104)
    calls, exp = [], []
    for _ in range(120):
        start = rand_date(rng, 2020, 2026)
        hol = sorted({start + timedelta(days=rng.randint(-20, 40)) for _ in range(rng.randint(0, 6))})
        end = start + timedelta(days=rng.randint(-5, 45))
        calls.append(("business", "business_days_between", [start, end, hol]))
        exp.append(ok(ref_between(start, end, set(hol))))
        n = rng.randint(-15, 15)
        calls.append(("business", "add_business_days", [start, n, hol]))
        exp.append(ok(start if n == 0 else ref_add_bd(start, n, set(hol))))
        calls.append(("business", "is_business_day", [start, hol]))
        exp.append(ok(is_bd(start, set(hol))))
    sat = date(2025, 6, 7)
    calls += [("business", "is_business_day", [sat]), ("business", "business_days_between", [sat, sat]),
              ("business", "add_business_days", [sat, 1]), ("business", "add_business_days", [sat, -1]),
              ("business", "add_business_days", [sat, 0])]
    exp += [ok(False), ok(0), ok(date(2025, 6, 9)), ok(date(2025, 6, 6)), ok(sat)]
    check_all(calls, run_calls(calls), exp)


@pytest.mark.core
def test_parse_date_formats():
    rng = random.Random(105)
    calls, exp = [], []
    for _ in range(150):
        d = rand_date(rng, 1000, 2999)
        fmt = rng.randrange(3)
        text = [f"{d.year:04d}-{d.month:02d}-{d.day:02d}",
                f"{d.day:0{rng.choice([1, 2])}d}.{d.month:0{rng.choice([1, 2])}d}.{d.year:04d}",
                f"{d.month:0{rng.choice([1, 2])}d}/{d.day:0{rng.choice([1, 2])}d}/{d.year:04d}"][fmt]
        calls.append(("parse", "parse_date", [rng.choice(["", " ", "\t"]) + text + rng.choice(["", "\n"])]))
        exp.append(ok(d))
    check_all(calls, run_calls(calls), exp)


@pytest.mark.boundary
def test_parse_date_rejects_invalid():
    bad = ["", "   ", "20240105", "2024/01/05", "2023-02-29", "1900-02-29", "31.04.2024", "13/01/2024",
           "02/30/2024", "2024-13-01", "2024-00-10", "abc", "2024-01", "1.2.24", "2024-01-05x",
           "05.03.2024.", "5/3", "2024-01-05 10:00", "\u0662\u0660\u0662\u0664-01-05", "--"]
    calls = [("parse", "parse_date", [b]) for b in bad]
    check_all(calls, run_calls(calls), [("raises", "ValueError")] * len(bad))
