from .models import Product


def price_with_tax(product):
    """Unit price plus tax (price * rate / 100, rounded half up to a cent), in cents."""
    if not isinstance(product, Product):
        raise TypeError("expected a Product")
    tax = product.price_cents * product.tax_rate // 100
    return product.price_cents + tax


def line_total(product, qty):
    """Price of qty units including tax, in cents."""
    return price_with_tax(product) * qty
