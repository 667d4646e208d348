from .discounts import apply_discount
from .pricing import line_total


class Cart:
    def __init__(self):
        self._lines = {}  # sku -> [product, qty]

    def add(self, product, qty=1):
        """Add qty (>= 1) units of product; repeated adds of a SKU accumulate."""
        if qty < 1:
            raise ValueError("qty must be >= 1")
        self._lines[product.sku] = [product, qty]

    def quantity(self, sku):
        line = self._lines.get(sku)
        return line[1] if line else 0

    def remove(self, sku):
        del self._lines[sku]

    def subtotal_cents(self):
        return sum(line_total(product, qty) for product, qty in self._lines.values())

    def total_cents(self, code=None):
        return apply_discount(self.subtotal_cents(), code)
