"""Conversion between integers and canonical Roman numerals (1..3999)."""


def to_roman(n):
    """Return the canonical uppercase Roman numeral for ``n`` (1 <= n <= 3999).

    Raises ValueError if n is out of range, TypeError if n is not an int (bool excluded).

    >>> to_roman(1994)
    'MCMXCIV'
    """
    raise NotImplementedError


def from_roman(s):
    """Return the int value of the canonical Roman numeral ``s``.

    Only strings that to_roman() can produce are accepted; anything else raises
    ValueError. A non-str argument raises TypeError.

    >>> from_roman('MCMXCIV')
    1994
    """
    raise NotImplementedError
