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

SYMS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def ref_roman(n):
    # digit-by-digit construction, independent of the greedy table walk
    units = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"]
    tens = ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"]
    hund = ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"]
    return "M" * (n // 1000) + hund[n // 100 % 10] + tens[n // 10 % 10] + units[n % 10]


CANON = {ref_roman(i): i for i in range(1, 4000)}

CHILD = '''
import roman
for name, arg in _dec(DATA):
    emit(_call(getattr(roman, name), arg))
'''


def run_cases(cases):
    return run_child(CHILD, [[name, enc(arg)] for name, arg in cases])


@pytest.mark.core
def test_to_roman_all_values():
    cases = [("to_roman", n) for n in range(1, 4000)]
    check_all(cases, run_cases(cases), [ok(ref_roman(n)) for n in range(1, 4000)])


@pytest.mark.core
def test_from_roman_all_canonical():
    items = list(CANON.items())
    random.Random(5).shuffle(items)
    cases = [("from_roman", s) for s, _ in items]
    check_all(cases, run_cases(cases), [ok(n) for _, n in items])


@pytest.mark.core
def test_from_roman_rejects_random_noncanonical():
    rng = random.Random(31337)
    strings = set()
    while len(strings) < 600:
        s = "".join(rng.choice("IVXLCDM") for _ in range(rng.randint(1, 7)))
        strings.add(s)
    strings = sorted(strings)
    cases = [("from_roman", s) for s in strings]
    expected = [ok(CANON[s]) if s in CANON else ("raises", "ValueError") for s in strings]
    assert sum(1 for s in strings if s not in CANON) > 300
    check_all(cases, run_cases(cases), expected)


@pytest.mark.boundary
def test_from_roman_tricky_invalid():
    bad = ["IIV", "VIV", "IXI", "XCX", "CMC", "IM", "ID", "VL", "LC", "DM", "XD", "IIX",
           "XXXX", "CCCC", "DD", "LL", "VV", "MMMCMXCIXI", "MMMM", "IVI", "XLX", "CDC",
           "MCMC", "IXIX", " XII", "XII ", "X II", "xii", "Xii", "\u216b", "XIIA", "0", "-X", "\n"]
    cases = [("from_roman", s) for s in bad]
    check_all(cases, run_cases(cases), [("raises", "ValueError")] * len(cases))


@pytest.mark.boundary
def test_range_and_type_errors():
    cases = [("to_roman", 0), ("to_roman", -7), ("to_roman", 4000), ("to_roman", 10 ** 9),
             ("to_roman", 5.0), ("to_roman", True), ("to_roman", "12"), ("to_roman", None),
             ("from_roman", 12), ("from_roman", None), ("from_roman", ["X"]),
             ("to_roman", 3998), ("from_roman", "MMMCMXCVIII")]
    expected = [("raises", "ValueError")] * 4 + [("raises", "TypeError")] * 7 + [
        ok("MMMCMXCVIII"), ok(3998)]
    check_all(cases, run_cases(cases), expected)
