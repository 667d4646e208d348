import os
import random
import sys

import pytest

sys.path.insert(0, os.getcwd())  # pytest runs with -P from the workdir, where the agent's inventory/ is


@pytest.fixture(autouse=True)
def fresh_inventory():
    """Every test imports the agent's modules anew (each test used to run them in a new interpreter)."""
    for name in [n for n in sys.modules if n == "inventory" or n.startswith("inventory.")]:
        del sys.modules[name]


def same(got, expected):
    """Equal in type and value, recursively: True is not 1, 1.0 is not 1, a tuple is not a list."""
    t = type(expected)
    if type(got) is not t:
        return False
    if t is list or t is tuple:
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if t in (type(None), bool, int, str):
        return got == expected
    raise TypeError(f"no comparison for {t.__name__}")


def agent_imports():
    """The agent's names every test imports first (a failing import fails the test)."""
    from inventory import Inventory, Item
    from inventory.report import top_items
    return Inventory, Item, top_items


def build(rows):
    Inventory, Item, _ = agent_imports()
    return Inventory([Item(*r) for r in rows])


def skus(items):
    return [(i.sku, i.qty) for i in items]


def rand_rows(rng, n):
    skus = rng.sample([f"{c}{k:03d}" for c in "PQRSTUVW" for k in range(200)], n)
    return [[s, f"part {s}", rng.randint(0, 40), rng.randint(1, 900)] for s in skus]


def sorted_pairs(rows):
    return [(r[0], r[2]) for r in sorted(rows)]


@pytest.mark.core
def test_pages_cover_all_items_in_order():
    rng = random.Random(515)
    scen = []
    for _ in range(30):
        rows = rand_rows(rng, rng.randint(1, 40))
        scen.append([rows, rng.randint(1, 9)])
    agent_imports()
    for rows, per in scen:
        inv = build(rows)
        count = inv.page_count(per)
        g = [count, [skus(inv.page(k, per)) for k in range(1, count + 3)]]
        listing = sorted_pairs(rows)
        n = -(-len(listing) // per)
        pages = [listing[(k - 1) * per:k * per] for k in range(1, n + 3)]
        assert same(g, [n, pages]), f"{len(rows)} items, per_page={per}: {g!r}"


@pytest.mark.core
def test_low_stock_includes_threshold():
    rng = random.Random(516)
    scen = [[rand_rows(rng, rng.randint(0, 30)), rng.randint(0, 20)] for _ in range(30)]
    agent_imports()
    for rows, th in scen:
        g = skus(build(rows).low_stock(th))
        exp = sorted(((r[2], r[0]) for r in rows if r[2] <= th))
        assert same(g, [(s, q) for q, s in exp]), f"threshold {th}: {g!r}"


@pytest.mark.core
def test_top_items_any_n():
    rng = random.Random(517)
    scen = []
    for _ in range(30):
        rows = rand_rows(rng, rng.randint(0, 12))
        scen.append([rows, rng.randint(-2, 20)])
    _, _, top_items = agent_imports()
    for rows, n in scen:
        g = skus(top_items(build(rows), n))
        ranked = sorted(rows, key=lambda r: (-r[2] * r[3], r[0]))[:max(n, 0)]
        assert same(g, [(r[0], r[2]) for r in ranked]), f"n={n}, {len(rows)} items: {g!r}"


@pytest.mark.boundary
def test_edges():
    agent_imports()
    empty = build([])
    assert same(empty.page_count(3), 0)
    assert same(skus(empty.page(1, 3)), [])
    assert same(skus(empty.low_stock(100)), [])
    inv = build([["X9", "x", 1, 1], ["X1", "y", 0, 2], ["X5", "z", 7, 3]])
    assert same(inv.page_count(1), 3)
    assert same(inv.page_count(3), 1)
    assert same(inv.page_count(4), 1)
    assert same(skus(inv.page(3, 1)), [("X9", 1)])
    assert same(skus(inv.page(1, 10)), [("X1", 0), ("X5", 7), ("X9", 1)])
    with pytest.raises(ValueError):
        inv.page(0, 2)
    with pytest.raises(ValueError):
        inv.page(1, 0)
    with pytest.raises(ValueError):
        inv.page_count(0)
    assert same(skus(inv.low_stock(0)), [("X1", 0)])
    inv.remove("X5", 7)
    assert same(skus(inv.page(1, 5)), [("X1", 0), ("X9", 1)])
    with pytest.raises(ValueError):
        inv.remove("X9", 5)
