#!/bin/bash
cat > duration.py <<'PY'
"""Parsing and formatting of human-readable durations (reference solution)."""
import re

_UNITS = [("w", 604800), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]
_UNIT_RE = re.compile(
    r"(?:([0-9]+)w)?[ \t\n\r\f\v]*(?:([0-9]+)d)?[ \t\n\r\f\v]*(?:([0-9]+)h)?"
    r"[ \t\n\r\f\v]*(?:([0-9]+)m)?[ \t\n\r\f\v]*(?:([0-9]+)s)?")
_CLOCK_RE = re.compile(r"(?:([0-9]+):([0-5][0-9])|([0-9]+)):([0-5][0-9])")


def parse_duration(text):
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    s = text.strip()
    sign = 1
    if s.startswith("-"):
        sign, s = -1, s[1:]
    m = _CLOCK_RE.fullmatch(s)
    if m:
        if m.group(1) is not None:
            total = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(4))
        else:
            total = int(m.group(3)) * 60 + int(m.group(4))
        return sign * total
    m = _UNIT_RE.fullmatch(s)
    if not s or not m or s[-1].isspace() or s[0].isspace() or all(g is None for g in m.groups()):
        raise ValueError(f"invalid duration: {text!r}")
    return sign * sum(int(g) * mult for g, (_, mult) in zip(m.groups(), _UNITS) if g is not None)


def format_duration(seconds, style="units"):
    if type(seconds) is not int:
        raise TypeError("seconds must be an int")
    if style not in ("units", "clock"):
        raise ValueError(f"unknown style {style!r}")
    sign, n = ("-", -seconds) if seconds < 0 else ("", seconds)
    if style == "clock":
        h, rest = divmod(n, 3600)
        m, s = divmod(rest, 60)
        return f"{sign}{h}:{m:02d}:{s:02d}"
    parts = []
    for unit, mult in _UNITS:
        q, n = divmod(n, mult)
        if q:
            parts.append(f"{q}{unit}")
    return sign + ("".join(parts) or "0s")
PY
