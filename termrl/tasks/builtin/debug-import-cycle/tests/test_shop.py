import json
import os
import random
import sys

import pytest

sys.path.insert(0, os.getcwd())  # pytest runs with -P from the workdir, where the agent's shop/ is


@pytest.fixture(autouse=True)
def fresh_shop():
    """Every test imports the agent's package anew, as in a new interpreter: forgetting it here makes
    the next import of shop run all of its modules again in the worker that runs the agent's code."""
    for name in [n for n in sys.modules if n == "shop" or n.startswith("shop.")]:
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


def half_up(num, den):
    """round(num / den) with halves rounded up, for num >= 0, den > 0."""
    q, r = divmod(num, den)
    return q + (1 if 2 * r >= den else 0)


def gross(price, rate):
    return price + half_up(price * rate, 100)


def discounted(amount, code):
    if code is None:
        return amount
    c = code.upper()
    if c == "SAVE10":
        return amount - half_up(amount * 10, 100)
    if c == "HALF":
        return amount - half_up(amount * 50, 100)
    if c == "FLAT5":
        return max(0, amount - 500)
    return None


@pytest.mark.core
@pytest.mark.parametrize("stmt", ["import shop", "import shop.pricing", "import shop.cart",
                                  "import shop.discounts", "from shop.models import Product",
                                  "from shop.pricing import price_with_tax, line_total"])
def test_every_module_imports_in_a_fresh_interpreter(stmt):
    exec(stmt, {})


@pytest.mark.core
def test_gross_prices_round_half_up():
    rng = random.Random(90)
    cases = [(rng.randint(0, 100000), rng.choice([0, 5, 7, 10, 19, 20, 25])) for _ in range(400)]
    cases += [(25, 10), (5, 10), (15, 10), (1, 50), (3, 50), (1234, 20), (0, 20), (5, 30)]
    import shop
    from shop import pricing

    for price, rate in cases:
        p = shop.Product("S", "thing", price, rate)
        g = [p.gross_cents(), pricing.price_with_tax(p), pricing.line_total(p, 3)]
        e = gross(price, rate)
        assert same(g, [e, e, 3 * e]), f"price {price} at {rate}%: {g!r}"


@pytest.mark.core
def test_random_carts_and_codes():
    rng = random.Random(91)
    scen = []
    for _ in range(60):
        catalog = [[f"sku{i}", f"item {i}", rng.randint(1, 20000), rng.choice([0, 7, 19, 20])]
                   for i in range(rng.randint(1, 6))]
        adds = [[rng.randrange(len(catalog)), rng.randint(1, 5)] for _ in range(rng.randint(1, 10))]
        code = rng.choice([None, "SAVE10", "save10", "HALF", "Half", "FLAT5", "flat5"])
        scen.append([catalog, adds, code])
    from shop import Cart, Product

    for catalog, adds, code in scen:
        products = [Product(*row) for row in catalog]
        cart = Cart()
        for idx, qty in adds:
            cart.add(products[idx], qty)
        g = [[cart.quantity(p.sku) for p in products], cart.subtotal_cents(), cart.total_cents(code),
             cart.total_cents()]
        qty = [0] * len(catalog)
        for idx, q in adds:
            qty[idx] += q
        sub = sum(gross(row[2], row[3]) * q for row, q in zip(catalog, qty))
        # the quantities were compared as JSON text, the totals by type and value
        assert json.dumps(g[0]) == json.dumps(qty) and same(g[1:], [sub, discounted(sub, code), sub]), \
            f"catalog {catalog}, adds {adds}, code {code}: {g!r}"


@pytest.mark.boundary
def test_errors_and_edges():
    from shop import Cart, Product
    from shop.discounts import apply_discount

    cart = Cart()
    p = Product("k1", "cheap", 333, 25)
    assert same(cart.total_cents("FLAT5"), 0)
    with pytest.raises(ValueError):
        cart.add(p, 0)
    cart.add(p)
    assert same(cart.total_cents("flat5"), 0)
    with pytest.raises(ValueError):
        cart.total_cents("BOGUS")
    with pytest.raises(ValueError):
        cart.total_cents("SAVE-10")
    with pytest.raises(KeyError):
        cart.remove("nope")
    cart.add(p, 2)
    assert same(cart.quantity("k1"), 3)
    cart.remove("k1")
    assert same(cart.quantity("k1"), 0)
    assert same(cart.subtotal_cents(), 0)
    assert same(apply_discount(5, "half"), 2)
    assert same(apply_discount(15, "SAVE10"), 13)
    assert same(apply_discount(999, None), 999)
