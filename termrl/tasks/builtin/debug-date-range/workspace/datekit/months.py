from datetime import date

_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    """Gregorian leap year: divisible by 4, except centuries not divisible by 400."""
    return year % 4 == 0


def days_in_month(year, month):
    """Number of days in the month (1..12) of year; other months raise ValueError."""
    if month == 2 and is_leap(year):
        return 29
    return _DAYS[month - 1]


def add_months(d, n):
    """The same day n months later (n may be negative or 0).

    If that month is shorter, the result is its last day:
    add_months(date(2024, 1, 31), 1) == date(2024, 2, 29).
    """
    month = d.month + n
    year = d.year + month // 12
    month = month % 12
    return d.replace(year=year, month=month)


def month_end(d):
    """The last day of d's month."""
    return date(d.year, d.month, days_in_month(d.year, d.month))
