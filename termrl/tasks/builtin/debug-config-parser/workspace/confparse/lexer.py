"""Turns single lines into tokens."""
import re

from .errors import ConfigError

SECTION_RE = re.compile(r"\[([A-Za-z0-9_-]+)\]")
PAIR_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*=[ \t]*(.*)", re.S)


def strip_comment(line):
    """Remove the comment: a '#' or ';' outside a double-quoted string starts it."""
    return line.split("#")[0].split(";")[0]


def tokenize_line(line, lineno):
    """Return None (nothing), ("section", name) or ("pair", key, raw_value)."""
    text = strip_comment(line).strip()
    if not text:
        return None
    m = SECTION_RE.fullmatch(text)
    if m:
        return ("section", m.group(1))
    m = PAIR_RE.fullmatch(text)
    if m:
        return ("pair", m.group(1), m.group(2).strip())
    raise ConfigError(f"cannot parse {text!r}", lineno)
