#!/bin/bash
set -e
cat > shop/pricing.py <<'PY'
def price_with_tax(product):
    """Unit price plus tax (price * rate / 100, rounded half up to a cent), in cents."""
    from .models import Product  # local import: models imports this module at load time
    if not isinstance(product, Product):
        raise TypeError("expected a Product")
    tax = (product.price_cents * product.tax_rate * 2 + 100) // 200
    return product.price_cents + tax


def line_total(product, qty):
    """Price of qty units including tax, in cents."""
    return price_with_tax(product) * qty
PY
python3 - <<'PY'
import pathlib
p = pathlib.Path("shop/discounts.py")
s = p.read_text()
s = s.replace("    kind, value = DISCOUNT_TABLE[code.upper()]\n",
              "    try:\n        kind, value = DISCOUNTS[code.upper()]\n"
              "    except KeyError:\n        raise ValueError(f\"unknown discount code {code!r}\") from None\n")
p.write_text(s)
p = pathlib.Path("shop/cart.py")
s = p.read_text()
s = s.replace("        self._lines[product.sku] = [product, qty]\n",
              "        if product.sku in self._lines:\n            self._lines[product.sku][1] += qty\n"
              "        else:\n            self._lines[product.sku] = [product, qty]\n")
p.write_text(s)
PY
