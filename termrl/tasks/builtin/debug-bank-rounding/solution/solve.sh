#!/bin/bash
set -e
cat > bank/money.py <<'PY'
"""Parsing and formatting of amounts. Amounts are always int cents internally."""
import re

_AMOUNT_RE = re.compile(r"(-?)([0-9][0-9,]*)(?:\.([0-9]{1,2}))?")


def to_cents(text):
    """Parse a decimal amount into int cents (see the original docstring)."""
    m = _AMOUNT_RE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"invalid amount: {text!r}")
    sign, whole, frac = m.groups()
    cents = int(whole.replace(",", "")) * 100 + int((frac or "0").ljust(2, "0"))
    return -cents if sign else cents


def format_cents(cents):
    """Format int cents as text with "," thousands separators and two decimals."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}.{frac:02d}"
PY
cat > bank/interest.py <<'PY'
"""Interest calculation."""
from decimal import ROUND_HALF_UP, Decimal


def monthly_interest(balance_cents, annual_rate):
    """Interest for one month in int cents, halves rounded away from zero."""
    exact = Decimal(balance_cents) * Decimal(str(annual_rate)) / Decimal(1200)
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))
PY
cat > bank/split.py <<'PY'
"""Splitting an amount into shares."""


def split_evenly(total_cents, n):
    if n < 1 or total_cents < 0:
        raise ValueError("need total >= 0 and n >= 1")
    share, extra = divmod(total_cents, n)
    return [share + 1] * extra + [share] * (n - extra)


def split_by_weights(total_cents, weights):
    weights = list(weights)
    if total_cents < 0 or not weights or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError("invalid total or weights")
    s = sum(weights)
    shares, rems = [], []
    for w in weights:
        q, r = divmod(total_cents * w, s)
        shares.append(q)
        rems.append(r)
    missing = total_cents - sum(shares)
    for i in sorted(range(len(weights)), key=lambda i: (-rems[i], i))[:missing]:
        shares[i] += 1
    return shares
PY
