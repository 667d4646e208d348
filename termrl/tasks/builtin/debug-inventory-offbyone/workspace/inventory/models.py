from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    qty: int
    price_cents: int

    @property
    def value_cents(self):
        """Stock value of this item in cents."""
        return self.qty * self.price_cents
