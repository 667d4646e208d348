"""Discount codes."""

DISCOUNTS = {
    "SAVE10": ("percent", 10),
    "HALF": ("percent", 50),
    "FLAT5": ("fixed", 500),
}


def apply_discount(amount_cents, code):
    """Return amount_cents after applying the discount code (None: no discount).

    Codes are case-insensitive; unknown codes raise ValueError. Percent discounts are
    rounded half up to a whole cent; fixed discounts never go below 0.
    """
    if code is None:
        return amount_cents
    kind, value = DISCOUNT_TABLE[code.upper()]
    if kind == "percent":
        discount = (amount_cents * value + 50) // 100
        return amount_cents - discount
    return max(0, amount_cents - value)
