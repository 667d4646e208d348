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


SYMS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
        (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def ref_roman(n):
    # digit-by-digit construction, independent of the greedy table walk
    units = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"]
    tens = ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"]
    hund = ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"]
    return "M" * (n // 1000) + hund[n // 100 % 10] + tens[n // 10 % 10] + units[n % 10]


CANON = {ref_roman(i): i for i in range(1, 4000)}

def check_all(cases, expected):
    """Call roman.<name>(arg) for each case; expected: a value or ("raises", ExceptionClass)."""
    roman = load("roman")
    fns = {name: getattr(roman, name) for name in {name for name, _ in cases}}
    assert len(cases) == len(expected)
    for (name, arg), e in zip(cases, expected):
        arg = copy.deepcopy(arg)  # a copy per call: each case gets its own arguments
        if isinstance(e, tuple) and e and e[0] == "raises":
            with pytest.raises(e[1]):
                got = fns[name](arg)
                pytest.fail(f"input {(name, arg)!r}: expected {e[1].__name__}, got {got!r}")
        else:
            got = fns[name](arg)
            assert same(got, e), f"input {(name, arg)!r}: expected {e!r}, got {got!r}"


@pytest.mark.core
def test_to_roman_all_values():
    cases = [("to_roman", n) for n in range(1, 4000)]
    check_all(cases, [ref_roman(n) for n in range(1, 4000)])


@pytest.mark.core
def test_from_roman_all_canonical():
    items = list(CANON.items())
    random.Random(5).shuffle(items)
    cases = [("from_roman", s) for s, _ in items]
    check_all(cases, [n for _, n in items])


@pytest.mark.core
def test_from_roman_rejects_random_noncanonical():
    rng = random.Random(31337)
    strings = set()
    while len(strings) < 600:
        s = "".join(rng.choice("IVXLCDM") for _ in range(rng.randint(1, 7)))
        strings.add(s)
    strings = sorted(strings)
    cases = [("from_roman", s) for s in strings]
    expected = [CANON[s] if s in CANON else ("raises", ValueError) for s in strings]
    assert sum(1 for s in strings if s not in CANON) > 300
    check_all(cases, expected)


@pytest.mark.boundary
def test_from_roman_tricky_invalid():
    bad = ["IIV", "VIV", "IXI", "XCX", "CMC", "IM", "ID", "VL", "LC", "DM", "XD", "IIX",
           "XXXX", "CCCC", "DD", "LL", "VV", "MMMCMXCIXI", "MMMM", "IVI", "XLX", "CDC",
           "MCMC", "IXIX", " XII", "XII ", "X II", "xii", "Xii", "\u216b", "XIIA", "0", "-X", "\n"]
    cases = [("from_roman", s) for s in bad]
    check_all(cases, [("raises", ValueError)] * len(cases))


@pytest.mark.boundary
def test_range_and_type_errors():
    cases = [("to_roman", 0), ("to_roman", -7), ("to_roman", 4000), ("to_roman", 10 ** 9),
             ("to_roman", 5.0), ("to_roman", True), ("to_roman", "12"), ("to_roman", None),
             ("from_roman", 12), ("from_roman", None), ("from_roman", ["X"]),
             ("to_roman", 3998), ("from_roman", "MMMCMXCVIII")]
    expected = [("raises", ValueError)] * 4 + [("raises", TypeError)] * 7 + [
        "MMMCMXCVIII", 3998]
    check_all(cases, expected)
