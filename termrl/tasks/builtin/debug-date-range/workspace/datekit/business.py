from datetime import timedelta

from .ranges import date_range


def is_business_day(d, holidays=()):
    """Monday to Friday and not in holidays."""
    return d.weekday() < 6 and d not in holidays


def business_days_between(start, end, holidays=()):
    """Number of business days d with start <= d < end (0 if end <= start)."""
    return sum(1 for d in date_range(start, end) if is_business_day(d, holidays))


def add_business_days(d, n, holidays=()):
    """Move n business days forward (n > 0) or backward (n < 0) from d; n == 0 returns d.

    Only the days stepped onto count, so the start day itself need not be a business day.
    """
    step = 1 if n > 0 else -1
    remaining = abs(n)
    while remaining:
        d += timedelta(days=step)
        if is_business_day(d, holidays):
            remaining -= 1
    return d
