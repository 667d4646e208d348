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

MULT = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
ORDER = "wdhms"
WS = " \t\n\r\f\v"
DIG = "0123456789"


def ref_parse(text):
    """Hand-written tokenizer; returns int or None for invalid input."""
    s = text.strip()
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    if not s:
        return None
    if ":" in s:
        parts = s.split(":")
        if len(parts) not in (2, 3) or not parts[0] or any(c not in DIG for c in parts[0]):
            return None
        for p in parts[1:]:
            if len(p) != 2 or any(c not in DIG for c in p) or int(p) > 59:
                return None
        vals = [int(p) for p in parts]
        total = vals[0] * 3600 + vals[1] * 60 + vals[2] if len(vals) == 3 else vals[0] * 60 + vals[1]
        return -total if neg else total
    i, total, last = 0, 0, -1
    if s[0] in WS:
        return None
    while i < len(s):
        j = i
        while j < len(s) and s[j] in DIG:
            j += 1
        if j == i or j >= len(s) or s[j] not in MULT:
            return None
        k = ORDER.index(s[j])
        if k <= last:
            return None
        last = k
        total += int(s[i:j]) * MULT[s[j]]
        i = j + 1
        while i < len(s) and s[i] in WS:
            i += 1
    return -total if neg else total


def ref_format(n, style="units"):
    sign, n = ("-", -n) if n < 0 else ("", n)
    if style == "clock":
        return f"{sign}{n // 3600}:{n // 60 % 60:02d}:{n % 60:02d}"
    out = ""
    for u in ORDER:
        q, n = divmod(n, MULT[u])
        out += f"{q}{u}" if q else ""
    return sign + (out or "0s")


CHILD = '''
import duration
for name, args, kwargs in _dec(DATA):
    emit(_call(getattr(duration, name), *args, **kwargs))
'''


def run_cases(cases):
    return run_child(CHILD, [[n, [enc(a) for a in args], kw] for n, args, kw in cases])


def expect_parse(text):
    v = ref_parse(text)
    return ("raises", "ValueError") if v is None else ok(v)


def random_unit_text(rng):
    units = sorted(rng.sample(ORDER, rng.randint(1, 5)), key=ORDER.index)
    comps = [f"{rng.choice(['', '0'])}{rng.randint(0, 400)}{u}" for u in units]
    sep = lambda: rng.choice(["", "", " ", "  ", "\t"])
    return rng.choice(["", " ", "\n"]) + rng.choice(["", "", "-"]) + "".join(
        c + sep() for c in comps[:-1]) + comps[-1] + rng.choice(["", " ", "\t "])


@pytest.mark.core
def test_parse_random_unit_form():
    rng = random.Random(606)
    texts = [random_unit_text(rng) for _ in range(400)]
    cases = [("parse_duration", [t], {}) for t in texts]
    assert all(ref_parse(t) is not None for t in texts)
    check_all(cases, run_cases(cases), [expect_parse(t) for t in texts])


@pytest.mark.core
def test_parse_random_clock_form():
    rng = random.Random(607)
    texts = []
    for _ in range(200):
        if rng.random() < 0.5:
            t = f"{rng.randint(0, 120)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        else:
            t = f"{rng.randint(0, 5000)}:{rng.randint(0, 59):02d}"
        texts.append(rng.choice(["", "-", " -"]) + t)
    cases = [("parse_duration", [t], {}) for t in texts]
    check_all(cases, run_cases(cases), [expect_parse(t) for t in texts])


@pytest.mark.core
def test_parse_random_mutations():
    """Randomly corrupted strings: ValueError exactly when the grammar says so."""
    rng = random.Random(608)
    alphabet = "0123456789wdhmsWDHMx:. -+\t"
    texts = set()
    while len(texts) < 500:
        base = list(random_unit_text(rng) if rng.random() < 0.7 else f"{rng.randint(0, 99)}:{rng.randint(0, 99):02d}")
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(base) + 1)
            op = rng.random()
            if op < 0.4:
                base.insert(pos, rng.choice(alphabet))
            elif op < 0.7 and base:
                base.pop(min(pos, len(base) - 1))
            elif base:
                base[min(pos, len(base) - 1)] = rng.choice(alphabet)
        texts.add("".join(base))
    texts = sorted(texts)
    assert sum(ref_parse(t) is None for t in texts) > 150
    cases = [("parse_duration", [t], {}) for t in texts]
    check_all(cases, run_cases(cases), [expect_parse(t) for t in texts])


@pytest.mark.boundary
def test_parse_tricky_invalid():
    bad = ["", "   ", "-", "- 5m", "+5m", "--5m", "5", "5 m", "m", "5M", "5H", "1h1h", "1s1m",
           "1d1w", "1.0s", "1,5h", "1h-5m", "5m:", ":30", "1:5", "1:60", "1:2:3", "1:00:60",
           "1:60:00", "1::00", "1:00:00:00", "a:00", "\u0661\u0662m", "\u00b2h", "\uff15s",
           "\u0665:00", "1_000s", "0x10s", "5m 5", "1hour", "1h30mins", "ms"]
    assert all(ref_parse(b) is None for b in bad)
    cases = [("parse_duration", [b], {}) for b in bad]
    check_all(cases, run_cases(cases), [("raises", "ValueError")] * len(bad))


@pytest.mark.boundary
def test_parse_edge_valid_and_types():
    cases = [("parse_duration", [t], {}) for t in
             ["0s", "000m", "0:00", "-0:00", "\t 12w  \n", "99999999999999999999w", "00:00:59",
              "100:59:59", "1w2d3h4m5s", "1w 2d\t3h  4m5s", "7d"]]
    exp = [ok(0), ok(0), ok(0), ok(0), ok(12 * 604800), ok(99999999999999999999 * 604800),
           ok(59), ok(100 * 3600 + 59 * 60 + 59), ok(788645), ok(788645), ok(604800)]
    cases += [("parse_duration", [x], {}) for x in [None, 5, 5.5, ["5m"]]]
    exp += [("raises", "TypeError")] * 4
    check_all(cases, run_cases(cases), exp)


@pytest.mark.core
def test_format_random_and_round_trip():
    rng = random.Random(609)
    values = [rng.choice([rng.randint(-10 ** 7, 10 ** 7), rng.randint(0, 200),
                          rng.randint(0, 10 ** 12)]) for _ in range(300)]
    cases, exp = [], []
    for v in values:
        cases.append(("format_duration", [v], {}))
        exp.append(ok(ref_format(v)))
        cases.append(("format_duration", [v], {"style": "clock"}))
        exp.append(ok(ref_format(v, "clock")))
        cases.append(("parse_duration", [ref_format(v, rng.choice(["units", "clock"]))], {}))
        exp.append(ok(v))
    check_all(cases, run_cases(cases), exp)


@pytest.mark.boundary
def test_format_edges_and_errors():
    cases = [("format_duration", [0], {}), ("format_duration", [0], {"style": "clock"}),
             ("format_duration", [-1], {}), ("format_duration", [-3601], {"style": "clock"}),
             ("format_duration", [604800 * 3 + 59], {}), ("format_duration", [86400 * 13], {}),
             ("format_duration", [360000], {"style": "clock"}), ("format_duration", [59], {"style": "units"}),
             ("format_duration", [1.0], {}), ("format_duration", [True], {}),
             ("format_duration", ["60"], {}), ("format_duration", [None], {"style": "clock"}),
             ("format_duration", [60], {"style": "iso"}), ("format_duration", [60], {"style": "Clock"})]
    exp = [ok("0s"), ok("0:00:00"), ok("-1s"), ok("-1:00:01"), ok("3w59s"), ok("1w6d"),
           ok("100:00:00"), ok("59s")] + [("raises", "TypeError")] * 4 + [("raises", "ValueError")] * 2
    check_all(cases, run_cases(cases), exp)
