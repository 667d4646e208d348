#!/bin/bash
cat > roman.py <<'PY'
"""Conversion between integers and canonical Roman numerals (1..3999)."""

_TABLE = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
_CANON = {}


def to_roman(n):
    if type(n) is not int:
        raise TypeError("n must be an int")
    if not 1 <= n <= 3999:
        raise ValueError("n must be in 1..3999")
    out = []
    for value, sym in _TABLE:
        count, n = divmod(n, value)
        out.append(sym * count)
    return "".join(out)


def from_roman(s):
    if not isinstance(s, str):
        raise TypeError("s must be a str")
    if not _CANON:
        _CANON.update((to_roman(i), i) for i in range(1, 4000))
    try:
        return _CANON[s]
    except KeyError:
        raise ValueError(f"not a canonical Roman numeral: {s!r}") from None
PY
