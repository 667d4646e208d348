"""Interest calculation."""


def monthly_interest(balance_cents, annual_rate):
    """Interest for one month in int cents: balance_cents * annual_rate / 100 / 12.

    ``annual_rate`` is a percentage given as an int or a decimal string such as "4.25".
    The exact result is rounded to the nearest cent; halves are rounded away from zero
    (0.5 -> 1, -0.5 -> -1, 2.5 -> 3).
    """
    return round(balance_cents * float(annual_rate) / 1200)
