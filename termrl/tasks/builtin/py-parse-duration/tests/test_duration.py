import copy
import importlib
import os
import random
import sys

import pytest

sys.path.insert(0, os.getcwd())


def load(name):
    """The agent's module, imported afresh: every test starts from a clean module state."""
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def same(a, b):
    """Equal in type and value, recursively: True is not 1, 1.0 is not 1, a tuple is not a list."""
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(same(ka, kb) and same(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if type(a) is float:
        return repr(a) == repr(b)
    return a == b


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


def check_all(cases, expected):
    """Call duration.<name>(*args, **kwargs) for each case; expected: a value or
    ("raises", ExceptionClass)."""
    duration = load("duration")
    fns = {name: getattr(duration, name) for name in {name for name, _, _ in cases}}
    assert len(cases) == len(expected)
    for case, e in zip(cases, expected):
        name, args, kwargs = copy.deepcopy(case)  # a copy per call: each case gets its own arguments
        if isinstance(e, tuple) and e and e[0] == "raises":
            with pytest.raises(e[1]):
                got = fns[name](*args, **kwargs)
                pytest.fail(f"input {case!r}: expected {e[1].__name__}, got {got!r}")
        else:
            got = fns[name](*args, **kwargs)
            assert same(got, e), f"input {case!r}: expected {e!r}, got {got!r}"


def expect_parse(text):
    v = ref_parse(text)
    return ("raises", ValueError) if v is None else v


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
    check_all(cases, [expect_parse(t) for t in texts])


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
    check_all(cases, [expect_parse(t) for t in texts])


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
    check_all(cases, [expect_parse(t) for t in texts])


@pytest.mark.boundary
def test_parse_tricky_invalid():
    bad = ["", "   ", "-", "- 5m", "+5m", "--5m", "5", "5 m", "m", "5M", "5H", "1h1h", "1s1m",
           "1d1w", "1.0s", "1,5h", "1h-5m", "5m:", ":30", "1:5", "1:60", "1:2:3", "1:00:60",
           "1:60:00", "1::00", "1:00:00:00", "a:00", "\u0661\u0662m", "\u00b2h", "\uff15s",
           "\u0665:00", "1_000s", "0x10s", "5m 5", "1hour", "1h30mins", "ms"]
    assert all(ref_parse(b) is None for b in bad)
    cases = [("parse_duration", [b], {}) for b in bad]
    check_all(cases, [("raises", ValueError)] * len(bad))


@pytest.mark.boundary
def test_parse_edge_valid_and_types():
    cases = [("parse_duration", [t], {}) for t in
             ["0s", "000m", "0:00", "-0:00", "\t 12w  \n", "99999999999999999999w", "00:00:59",
              "100:59:59", "1w2d3h4m5s", "1w 2d\t3h  4m5s", "7d"]]
    exp = [0, 0, 0, 0, 12 * 604800, 99999999999999999999 * 604800,
           59, 100 * 3600 + 59 * 60 + 59, 788645, 788645, 604800]
    cases += [("parse_duration", [x], {}) for x in [None, 5, 5.5, ["5m"]]]
    exp += [("raises", TypeError)] * 4
    check_all(cases, exp)


@pytest.mark.core
def test_format_random_and_round_trip():
    rng = random.Random(609)
    values = [rng.choice([rng.randint(-10 ** 7, 10 ** 7), rng.randint(0, 200),
                          rng.randint(0, 10 ** 12)]) for _ in range(300)]
    cases, exp = [], []
    for v in values:
        cases.append(("format_duration", [v], {}))
        exp.append(ref_format(v))
        cases.append(("format_duration", [v], {"style": "clock"}))
        exp.append(ref_format(v, "clock"))
        cases.append(("parse_duration", [ref_format(v, rng.choice(["units", "clock"]))], {}))
        exp.append(v)
    check_all(cases, exp)


@pytest.mark.boundary
def test_format_edges_and_errors():
    cases = [("format_duration", [0], {}), ("format_duration", [0], {"style": "clock"}),
             ("format_duration", [-1], {}), ("format_duration", [-3601], {"style": "clock"}),
             ("format_duration", [604800 * 3 + 59], {}), ("format_duration", [86400 * 13], {}),
             ("format_duration", [360000], {"style": "clock"}), ("format_duration", [59], {"style": "units"}),
             ("format_duration", [1.0], {}), ("format_duration", [True], {}),
             ("format_duration", ["60"], {}), ("format_duration", [None], {"style": "clock"}),
             ("format_duration", [60], {"style": "iso"}), ("format_duration", [60], {"style": "Clock"})]
    exp = ["0s", "0:00:00", "-1s", "-1:00:01", "3w59s", "1w6d",
           "100:00:00", "59s"] + [("raises", TypeError)] * 4 + [("raises", ValueError)] * 2
    check_all(cases, exp)
