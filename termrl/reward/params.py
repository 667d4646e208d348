"""Checking a component's parameters as written in TOML, before any scoring.

Each type declares its parameters and defaults in ``components.TYPES``. A given
value must have the default's type (an int is accepted for a float); a bare
type as the default marks a required parameter. Tables (``coefficients``,
``tag_weights``, ``penalties``) map names to numbers; a dotted key written
without quotes (``link.undefined_reference = -0.9``, which TOML reads as a nested
table) is flattened back to its dotted name. Given tables are merged over the
default table.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from termrl.reward.components import ComponentType
from termrl.reward.errors import FieldError
from termrl.reward.schedules import number

TYPE_WORDS = {float: "a number", int: "an integer", bool: "true or false", str: "a string", dict: "a table"}


def check_params(ctype: ComponentType, given: Mapping[str, Any]) -> dict[str, Any]:
    """Given parameters -> every parameter of the type, defaults filled in; ``FieldError`` if wrong."""
    for key in given:
        if key not in ctype.defaults:
            allowed = ", ".join(["type", "weight", *ctype.defaults])
            raise FieldError(key, f"unknown key; a component of this type takes: {allowed}")
    typed = {key: _typed(key, ctype.defaults[key], value) for key, value in given.items()}
    for key, default in ctype.defaults.items():
        if isinstance(default, type) and key not in typed:
            raise FieldError(key, f"missing: this component type needs {key} = <{TYPE_WORDS[default]}>")
    ctype.check(typed)
    params = {key: copy.deepcopy(default) for key, default in ctype.defaults.items()}
    for key, value in typed.items():
        params[key] = {**params[key], **value} if isinstance(value, dict) else value
    return params


def _typed(key: str, default: Any, value: Any) -> Any:
    kind = default if isinstance(default, type) else type(default)
    if kind is float:
        return number(value, key)
    if kind is dict:
        if not isinstance(value, dict):
            raise FieldError(key, f"must be a table such as {{name = 1.0}}, got {value!r}")
        return {name: number(v, f"{key}.{name}") for name, v in _flatten(value).items()}
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise FieldError(key, f"must be {TYPE_WORDS[kind]}, got {value!r}")
    return value


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for name, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat
