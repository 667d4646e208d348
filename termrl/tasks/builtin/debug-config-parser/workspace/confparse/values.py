"""Conversion of raw value text to Python values."""
import re

INT_RE = re.compile(r"-?[0-9]+")
FLOAT_RE = re.compile(r"-?[0-9]+\.[0-9]+")
TRUE_WORDS = ("true", "yes", "on")
FALSE_WORDS = ("false", "no", "off")
ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


class ValueSyntaxError(ValueError):
    pass


def parse_quoted(raw):
    """Parse a double-quoted string that must span all of ``raw``."""
    out = []
    i = 1
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in ESCAPES:
                raise ValueSyntaxError(f"bad escape in {raw!r}")
            out.append(ESCAPES[raw[i + 1]])
            i += 2
            continue
        if ch == '"':
            if i != len(raw) - 1:
                raise ValueSyntaxError(f"text after closing quote in {raw!r}")
            return "".join(out)
        out.append(ch)
        i += 1
    raise ValueSyntaxError(f"missing closing quote in {raw!r}")


def coerce(raw):
    """Convert stripped value text according to the table in README.md."""
    raw = raw.strip()
    if raw == "":
        return ""
    if raw.startswith('"'):
        return parse_quoted(raw)
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        if not inner:
            return []
        return [coerce(part) for part in inner.split(",")]
    low = raw.lower()
    if low in TRUE_WORDS or low in FALSE_WORDS:
        return bool(low)
    if low in ("none", "null"):
        return None
    if INT_RE.fullmatch(raw):
        return int(raw)
    if FLOAT_RE.fullmatch(raw):
        return float(raw)
    return raw
