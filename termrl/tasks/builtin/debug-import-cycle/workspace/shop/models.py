from dataclasses import dataclass

from .pricing import price_with_tax


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price_cents: int
    tax_rate: int = 20  # percent

    def gross_cents(self):
        """Unit price including tax, in cents."""
        return price_with_tax(self)
