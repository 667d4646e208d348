"""Builds the configuration dict and resolves ${...} references."""
import re

from .errors import ConfigError
from .lexer import tokenize_line
from .values import ValueSyntaxError, coerce

REF_RE = re.compile(r"\$\{([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)?)\}")


def loads(text):
    result = {}
    current = "default"
    for lineno, line in enumerate(text.splitlines(), 1):
        token = tokenize_line(line, lineno)
        if token is None:
            continue
        if token[0] == "section":
            current = token[1]
            result.setdefault(current, {})
            continue
        _, key, raw = token
        try:
            value = coerce(raw)
        except ValueSyntaxError as exc:
            raise ConfigError(str(exc), lineno) from None
        result[current][key] = value
    return _interpolate(result)


def load(path):
    with open(path, encoding="utf-8") as fh:
        return loads(fh.read())


def _interpolate(config):
    return {section: {key: _resolve(config, section, value) for key, value in values.items()}
            for section, values in config.items()}


def _text(value):
    if isinstance(value, list):
        raise ConfigError("cannot interpolate a list")
    if value is None:
        return "none"
    return str(value)


def _resolve(config, section, value):
    if isinstance(value, list):
        return [_resolve(config, section, item) for item in value]
    if not isinstance(value, str):
        return value

    def replace(match):
        ref = match.group(1)
        ref_section, _, ref_key = ref.rpartition(".")
        ref_section = ref_section or section
        try:
            target = config[ref_section][ref_key]
        except KeyError:
            raise ConfigError(f"undefined reference ${{{ref}}}") from None
        return _text(_resolve(config, ref_section, target))

    return REF_RE.sub(replace, value)
