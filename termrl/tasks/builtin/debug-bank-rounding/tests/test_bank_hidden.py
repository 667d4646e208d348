import copy
import importlib
import json
import os
import random
import sys
from decimal import ROUND_HALF_UP, Decimal

import pytest

sys.path.insert(0, os.getcwd())  # pytest runs with -P from the workdir, where the agent's bank/ is


@pytest.fixture(autouse=True)
def fresh_bank():
    """Every test imports the agent's modules anew (each test used to run them in a new interpreter)."""
    for name in [n for n in sys.modules if n == "bank" or n.startswith("bank.")]:
        del sys.modules[name]


def same(got, expected):
    """Equal in type and value, recursively: True is not 1, 1.0 is not 1, a tuple is not a list."""
    t = type(expected)
    if type(got) is not t:
        return False
    if t is list or t is tuple:
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if t is float or t is Decimal:
        return repr(got) == repr(expected)
    if t in (type(None), bool, int, str):
        return got == expected
    raise TypeError(f"no comparison for {t.__name__}")


def as_json(value):
    """A value as the old tests compared it when they did not check its type: after a JSON round trip."""
    return json.loads(json.dumps(value))


class Raises:
    def __init__(self, exc):
        self.exc = exc


def check_calls(calls, expected):
    """calls: (module, function, args) of the agent's; expected: a value (same type and value) or
    Raises(exception class) per call. Each call gets its own copy of its arguments."""
    assert len(calls) == len(expected)
    for (mod, fn, args), exp in zip(calls, expected):
        func = getattr(importlib.import_module(mod), fn)
        if isinstance(exp, Raises):
            with pytest.raises(exp.exc):
                got = func(*copy.deepcopy(args))
                pytest.fail(f"{fn}{tuple(args)!r}: expected {exp.exc.__name__}, got {got!r}")
        else:
            got = func(*copy.deepcopy(args))
            assert same(got, exp), f"{fn}{tuple(args)!r}: expected {exp!r}, got {got!r}"


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
        exp.append(-cents if neg else cents)
    check_calls(calls, exp)


@pytest.mark.core
def test_to_cents_float_traps():
    texts = ["0.29", "0.57", "1.15", "4.35", "8.20", "19.99", "1,005.03", "-0.29", "9007199254740993.01", "0.07"]
    values = [29, 57, 115, 435, 820, 1999, 100503, -29, 900719925474099301, 7]
    check_calls([("bank.money", "to_cents", [t]) for t in texts], values)


@pytest.mark.boundary
def test_to_cents_rejects_bad_input():
    bad = ["", "   ", "abc", "1.234", "0.001", "1e3", "+5", ".5", "nan", "inf", "1.", "--1", "1-",
           "12.3.4", "$5", "5 .00", "0x10", "\u0665.00", "-"]
    check_calls([("bank.money", "to_cents", [b]) for b in bad], [Raises(ValueError)] * len(bad))


@pytest.mark.core
def test_format_cents_random():
    rng = random.Random(2718)
    vals = [rng.choice([rng.randint(-999, 999), rng.randint(-10 ** 13, 10 ** 13)]) for _ in range(300)]
    vals += [0, -1, -5, -99, -100, -101, 100, 99999, -99999, 100000]
    check_calls([("bank.money", "format_cents", [v]) for v in vals], [fmt(v) for v in vals])


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
    exp = [interest(*args) for _, _, args in calls]
    check_calls(calls, exp)


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
        exp.append([q + 1] * r + [q] * (n - r))
    for total, n in [(0, 1), (0, 4), (2, 5), (7, 1), (10 ** 15 + 1, 2)]:
        q, r = divmod(total, n)
        calls.append(("bank.split", "split_evenly", [total, n]))
        exp.append([q + 1] * r + [q] * (n - r))
    for total, n in [(500, 0), (5, -2), (-1, 3)]:
        calls.append(("bank.split", "split_evenly", [total, n]))
        exp.append(Raises(ValueError))
    check_calls(calls, exp)


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
        exp.append(ref_weights(total, weights))
    for total, weights in [(10, [0, 0]), (10, []), (10, [2, -1]), (-5, [1, 1])]:
        calls.append(("bank.split", "split_by_weights", [total, weights]))
        exp.append(Raises(ValueError))
    check_calls(calls, exp)


@pytest.mark.boundary
def test_account_statement_end_to_end():
    from bank.account import Account, InsufficientFunds  # noqa: F401  (the old test imported both)

    a = Account("zoe", overdraft_cents=1000)
    a.deposit(" 0.29")
    a.deposit("1,000.07")
    a.withdraw("1000.41")
    assert as_json(a.balance_cents) == -5
    with pytest.raises(ValueError):
        a.withdraw("10.00")
    a.withdraw("9.95")
    # balance -1000 at 6 % -> -5.0 exactly
    assert as_json(a.add_monthly_interest(6)) == -5
    with pytest.raises(ValueError):
        a.deposit("0.00")
    with pytest.raises(ValueError):
        a.deposit("2.999")
    statement = as_json(a.statement())
    assert statement == ("deposit 0.29\ndeposit 1,000.07\nwithdrawal 1,000.41\nwithdrawal 9.95\n"
                         "interest -0.05\nbalance -10.05"), statement
