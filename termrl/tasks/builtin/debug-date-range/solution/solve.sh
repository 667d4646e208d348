#!/bin/bash
set -e
cat > datekit/ranges.py <<'PY'
from datetime import timedelta


def date_range(start, end, step=1):
    """Inclusive range of dates from start towards end in steps of ``step`` days."""
    if step == 0:
        raise ValueError("step must not be 0")
    out = []
    current = start
    delta = timedelta(days=step)
    if step > 0:
        while current <= end:
            out.append(current)
            current += delta
    else:
        while current >= end:
            out.append(current)
            current += delta
    return out
PY
python3 - <<'PY'
import pathlib
p = pathlib.Path("datekit/months.py")
s = p.read_text()
s = s.replace("    return year % 4 == 0\n", "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n")
s = s.replace('''    if month == 2 and is_leap(year):''', '''    if not 1 <= month <= 12:
        raise ValueError(f"month must be in 1..12, got {month}")
    if month == 2 and is_leap(year):''')
s = s.replace('''    month = d.month + n
    year = d.year + month // 12
    month = month % 12
    return d.replace(year=year, month=month)''', '''    year, month0 = divmod(d.year * 12 + d.month - 1 + n, 12)
    month = month0 + 1
    return date(year, month, min(d.day, days_in_month(year, month)))''')
p.write_text(s)

p = pathlib.Path("datekit/business.py")
s = p.read_text()
s = s.replace("d.weekday() < 6", "d.weekday() < 5")
s = s.replace("for d in date_range(start, end) if", "for d in date_range(start, end - timedelta(days=1)) if")
p.write_text(s)
PY
cat > datekit/parse.py <<'PY'
import re
from datetime import date

_FORMATS = [
    (re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})"), ("y", "m", "d")),
    (re.compile(r"([0-9]{1,2})\.([0-9]{1,2})\.([0-9]{4})"), ("d", "m", "y")),
    (re.compile(r"([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})"), ("m", "d", "y")),
]


def parse_date(text):
    """Parse "YYYY-MM-DD", "DD.MM.YYYY" or "MM/DD/YYYY"; anything else raises ValueError."""
    text = text.strip()
    for regex, order in _FORMATS:
        m = regex.fullmatch(text)
        if m:
            parts = dict(zip(order, map(int, m.groups())))
            return date(parts["y"], parts["m"], parts["d"])
    raise ValueError(f"unrecognised date: {text!r}")
PY
