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


# ----- independent brute-force model: the set of covered integer points -----

def points(intervals):
    s = set()
    for a, b in intervals:
        s.update(range(a, b))
    return s


def runs(pts):
    out = []
    for p in sorted(pts):
        if out and out[-1][1] == p:
            out[-1][1] = p + 1
        else:
            out.append([p, p + 1])
    return [(a, b) for a, b in out]


def rand_intervals(rng, n, lo=-30, hi=60, maxlen=12):
    res = []
    for _ in range(n):
        a = rng.randint(lo, hi)
        res.append((a, a + rng.randint(0, maxlen)))
    return res


NAMES = {"merge": "merge_intervals", "length": "covered_length",
         "intersect": "intersect_intervals", "subtract": "subtract_intervals"}


def check_all(cases, expected):
    """Call the function each case names; expected: a value or ("raises", ExceptionClass)."""
    m = load("intervals")
    fn = {key: getattr(m, name) for key, name in NAMES.items()}
    assert len(cases) == len(expected)
    for case, e in zip(cases, expected):
        name, args = copy.deepcopy(case)  # a copy per call: each case gets its own arguments
        if isinstance(e, tuple) and e and e[0] == "raises":
            with pytest.raises(e[1]):
                got = fn[name](*args)
                pytest.fail(f"input {case!r}: expected {e[1].__name__}, got {got!r}")
        else:
            got = fn[name](*args)
            assert same(got, e), f"input {case!r}: expected {e!r}, got {got!r}"


@pytest.mark.core
def test_merge_random_against_model():
    rng = random.Random(4711)
    cases, expected = [], []
    for _ in range(300):
        iv = rand_intervals(rng, rng.randint(0, 9))
        cases.append(("merge", [iv]))
        expected.append(runs(points(iv)))
    check_all(cases, expected)


@pytest.mark.core
def test_covered_length_random():
    rng = random.Random(99)
    cases, expected = [], []
    for _ in range(200):
        iv = rand_intervals(rng, rng.randint(0, 9), maxlen=25)
        cases.append(("length", [iv]))
        expected.append(len(points(iv)))
    check_all(cases, expected)


@pytest.mark.core
def test_intersect_random_against_model():
    rng = random.Random(2024)
    cases, expected = [], []
    for _ in range(250):
        a = rand_intervals(rng, rng.randint(0, 6))
        b = rand_intervals(rng, rng.randint(0, 6))
        cases.append(("intersect", [a, b]))
        expected.append(runs(points(a) & points(b)))
    check_all(cases, expected)


@pytest.mark.core
def test_subtract_random_against_model():
    rng = random.Random(77)
    cases, expected = [], []
    for _ in range(250):
        a = rand_intervals(rng, rng.randint(0, 6), maxlen=20)
        b = rand_intervals(rng, rng.randint(0, 6), maxlen=6)
        cases.append(("subtract", [a, b]))
        expected.append(runs(points(a) - points(b)))
    check_all(cases, expected)


@pytest.mark.boundary
def test_touching_empty_and_nested():
    cases = [
        ("merge", [[(10, 12), (12, 14), (14, 14), (-3, -3)]]),
        ("merge", [[(0, 100), (20, 30), (40, 41)]]),
        ("merge", [[(8, 8)]]),
        ("merge", [[(4, 6), (4, 6), (4, 6)]]),
        ("merge", [[(1, 2), (3, 4)]]),
        ("length", [[]]),
        ("length", [[(7, 7)]]),
        ("intersect", [[(0, 5)], [(5, 9)]]),
        ("intersect", [[], [(0, 3)]]),
        ("subtract", [[(0, 5)], [(0, 5)]]),
        ("subtract", [[(0, 5)], []]),
        ("subtract", [[], [(1, 2)]]),
        ("subtract", [[(0, 5), (5, 9)], [(4, 6)]]),
    ]
    expected = [[(10, 14)], [(0, 100)], [], [(4, 6)], [(1, 2), (3, 4)],
                0, 0, [], [], [], [(0, 5)], [], [(0, 4), (6, 9)]]
    check_all(cases, expected)


@pytest.mark.boundary
def test_huge_and_negative_values():
    big = 10 ** 18
    cases = [
        ("merge", [[(big, big + 5), (-big, 3), (2, big)]]),
        ("length", [[(-big, big), (0, 1)]]),
        ("subtract", [[(-big, big)], [(-1, 1)]]),
        ("intersect", [[(-big, -big + 10)], [(-big + 9, 0)]]),
    ]
    expected = [[(-big, big + 5)], 2 * big, [(-big, -1), (1, big)],
                [(-big + 9, -big + 10)]]
    check_all(cases, expected)


@pytest.mark.boundary
def test_invalid_intervals_raise_value_error():
    cases = [
        ("merge", [[(0, 2), (9, 8)]]),
        ("length", [[(5, 4)]]),
        ("intersect", [[(0, 3)], [(2, 1)]]),
        ("subtract", [[(0, 3)], [(7, -7)]]),
        ("subtract", [[(3, 0)], []]),
    ]
    check_all(cases, [("raises", ValueError)] * len(cases))


@pytest.mark.boundary
def test_lists_generators_and_no_mutation():
    m = load("intervals")
    a = [[9, 12], [1, 4], [3, 5], [12, 13]]
    b = [(4, 10)]
    got = [m.merge_intervals(a),
           m.merge_intervals(map(tuple, a)),  # a one-shot iterator of tuples (a generator cannot cross)
           m.covered_length(iter(a)),
           m.subtract_intervals(a, b),
           m.intersect_intervals(a, iter(b)),
           a, b]
    exp = [[(1, 5), (9, 13)], [(1, 5), (9, 13)], 8, [(1, 4), (10, 13)],
           [(4, 5), (9, 10)], [[9, 12], [1, 4], [3, 5], [12, 13]], [(4, 10)]]
    assert same(got, exp), got
