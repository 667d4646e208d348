"""What every policy module shares: the harness's error for a policy that cannot reply, options
applied to a policy's config, and telling a local model folder from a hub id."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

from termrl.protocols import HarnessError


class PolicyError(HarnessError):
    """A policy could not produce a reply (endpoint unreachable, retries spent): the harness's
    failure, never the agent's."""


def configure(cls, config, options: dict):
    """``config`` (or ``cls()``) with ``options`` applied; unknown names list the known ones."""
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} option(s) {unknown}; known: {', '.join(known)}")
    return replace(config or cls(), **options)


def is_local_path(name: str) -> bool:
    """Whether a model ``name`` is meant as a folder on this machine rather than a hub id (``org/name``):
    it starts with ``/``, ``~`` or ``.``, has more than one ``/``, or exists here.

    >>> [is_local_path(n) for n in ("/m", "./m", "results/run/final", "Qwen/Qwen2.5-Coder-0.5B-Instruct", "")]
    [True, True, True, False, False]
    """
    if not name:
        return False
    return name.startswith(("/", "~", ".")) or name.count("/") > 1 or Path(name).expanduser().exists()


__all__ = ["PolicyError", "configure", "is_local_path"]
