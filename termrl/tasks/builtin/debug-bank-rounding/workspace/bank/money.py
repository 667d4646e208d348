"""Parsing and formatting of amounts. Amounts are always int cents internally."""


def to_cents(text):
    """Parse a decimal amount into int cents.

    Accepted (after stripping surrounding whitespace): an optional leading "-", then one or
    more digits, which may contain "," thousands separators (they are ignored), then
    optionally "." followed by one or two digits.
    Examples: "12.34" -> 1234, "-0.5" -> -50, "1,234.56" -> 123456, "7" -> 700.
    Anything else raises ValueError (e.g. "", "abc", "1.234", "1e3", "+5", ".5", "nan").
    """
    cleaned = text.strip().replace(",", "")
    return int(float(cleaned) * 100)


def format_cents(cents):
    """Format int cents as text with "," thousands separators and two decimals.

    Examples: 123456 -> "1,234.56", -5 -> "-0.05", 0 -> "0.00", -123456789 -> "-1,234,567.89".
    """
    whole, frac = divmod(cents, 100)
    return f"{whole:,}.{frac:02d}"
