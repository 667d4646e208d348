import calendar
import copy
import importlib
import os
import random
import sys
from datetime import date, datetime, timedelta

import pytest

sys.path.insert(0, os.getcwd())  # pytest runs with -P from the workdir, where the agent's datekit/ is


@pytest.fixture(autouse=True)
def fresh_datekit():
    """Every test imports the agent's modules anew (each test used to run them in a new interpreter)."""
    for name in [n for n in sys.modules if n == "datekit" or n.startswith("datekit.")]:
        del sys.modules[name]


def same(got, expected):
    """Equal in type and value, recursively: True is not 1, a datetime is not a date, a tuple is not
    a list."""
    t = type(expected)
    if type(got) is not t:
        return False
    if t is list or t is tuple:
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if t is date or t is datetime:
        return got.isoformat() == expected.isoformat()
    if t in (type(None), bool, int, str):
        return got == expected
    raise TypeError(f"no comparison for {t.__name__}")


class Raises:
    def __init__(self, exc):
        self.exc = exc


def check_calls(calls, expected):
    """calls: (module in datekit, function, args); expected: a value (same type and value) or
    Raises(exception class) per call. Each call gets its own copy of its arguments."""
    assert len(calls) == len(expected)
    for (mod, fn, args), exp in zip(calls, expected):
        func = getattr(importlib.import_module("datekit." + mod), fn)
        if isinstance(exp, Raises):
            with pytest.raises(exp.exc):
                got = func(*copy.deepcopy(args))
                pytest.fail(f"{fn}{tuple(args)!r}: expected {exp.exc.__name__}, got {got!r}")
        else:
            got = func(*copy.deepcopy(args))
            assert same(got, exp), f"{fn}{tuple(args)!r}: expected {exp!r}, got {got!r}"


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
        exp.append(ref_range(start, end, step))
    d = rand_date(rng)
    calls += [("ranges", "date_range", [d, d]), ("ranges", "date_range", [d, d, -3]),
              ("ranges", "date_range", [d, d - timedelta(days=1)]), ("ranges", "date_range", [d, d, 0])]
    exp += [[d], [d], [], Raises(ValueError)]
    check_calls(calls, exp)


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
    exp = [ref_add_months(*args) for _, _, args in calls]
    check_calls(calls, exp)


@pytest.mark.core
def test_leap_years_and_days_in_month():
    rng = random.Random(103)
    years = [1600, 1700, 1800, 1900, 2000, 2100, 2200, 2400, 1996, 2023, 2024] + [rng.randint(1, 9999) for _ in range(60)]
    calls, exp = [], []
    for y in years:
        calls.append(("months", "is_leap", [y]))
        exp.append(calendar.isleap(y))
        m = rng.choice([2, 2, rng.randint(1, 12)])
        calls.append(("months", "days_in_month", [y, m]))
        exp.append(calendar.monthrange(y, m)[1])
        calls.append(("months", "month_end", [date(y, m, 1)]))
        exp.append(date(y, m, calendar.monthrange(y, m)[1]))
    for m in (0, 13, -1):
        calls.append(("months", "days_in_month", [2024, m]))
        exp.append(Raises(ValueError))
    check_calls(calls, exp)


@pytest.mark.core
def test_business_days_random():
    rng = random.Random(104)
    calls, exp = [], []
    for _ in range(120):
        start = rand_date(rng, 2020, 2026)
        hol = sorted({start + timedelta(days=rng.randint(-20, 40)) for _ in range(rng.randint(0, 6))})
        end = start + timedelta(days=rng.randint(-5, 45))
        calls.append(("business", "business_days_between", [start, end, hol]))
        exp.append(ref_between(start, end, set(hol)))
        n = rng.randint(-15, 15)
        calls.append(("business", "add_business_days", [start, n, hol]))
        exp.append(start if n == 0 else ref_add_bd(start, n, set(hol)))
        calls.append(("business", "is_business_day", [start, hol]))
        exp.append(is_bd(start, set(hol)))
    sat = date(2025, 6, 7)
    calls += [("business", "is_business_day", [sat]), ("business", "business_days_between", [sat, sat]),
              ("business", "add_business_days", [sat, 1]), ("business", "add_business_days", [sat, -1]),
              ("business", "add_business_days", [sat, 0])]
    exp += [False, 0, date(2025, 6, 9), date(2025, 6, 6), sat]
    check_calls(calls, exp)


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
        exp.append(d)
    check_calls(calls, exp)


@pytest.mark.boundary
def test_parse_date_rejects_invalid():
    bad = ["", "   ", "20240105", "2024/01/05", "2023-02-29", "1900-02-29", "31.04.2024", "13/01/2024",
           "02/30/2024", "2024-13-01", "2024-00-10", "abc", "2024-01", "1.2.24", "2024-01-05x",
           "05.03.2024.", "5/3", "2024-01-05 10:00", "\u0662\u0660\u0662\u0664-01-05", "--"]
    calls = [("parse", "parse_date", [b]) for b in bad]
    check_calls(calls, [Raises(ValueError)] * len(bad))
