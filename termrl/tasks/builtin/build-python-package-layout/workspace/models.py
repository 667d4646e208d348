"""Data model of the inventory."""
from dataclasses import dataclass
from decimal import Decimal, ROUND_HALF_UP


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    qty: int
    price: Decimal

    @property
    def value(self) -> Decimal:
        return (self.price * self.qty).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
