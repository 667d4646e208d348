"""Policies: scripted (oracle, nop, reference[:FORMAT], script:FILE), a local Hugging Face model run by transformers
(hf:PATH), by CTranslate2 (ct2:PATH, the same directory converted once, int8 by default) or by
llama.cpp (llamacpp:PATH, converted once to GGUF q8_0 and served by llama-server), or any
OpenAI-compatible endpoint (openai:BASE_URL). ``make_policy`` builds one from a spec string.

Importing this package is cheap: torch, transformers, ctranslate2 and openai load only when an
hf, ct2, llamacpp or openai policy is made.
"""

from __future__ import annotations

from pathlib import Path

from termrl.policies.base import PolicyError, configure, is_local_path
from termrl.policies.ct2 import CT2Policy
from termrl.policies.hf import HFPolicy
from termrl.policies.llamacpp import LlamaCppPolicy
from termrl.policies.openai_api import OpenAIPolicy
from termrl.policies.scripted import make_scripted
from termrl.protocols import Policy

SPECS = "oracle, nop, reference[:FORMAT], script:FILE, hf:PATH, ct2:PATH, llamacpp:PATH or openai:BASE_URL"


def make_policy(spec: str, *, model: str | None = None, **options) -> Policy:
    """A policy from ``spec``. ``options`` go to ``HFConfig`` / ``CT2Config`` / ``LlamaCppConfig`` /
    ``OpenAIConfig``; ``model`` is
    the model name an openai endpoint serves (required there, and only there).

    >>> make_policy("openai:http://localhost:8000/v1")
    Traceback (most recent call last):
    ...
    ValueError: openai:http://localhost:8000/v1 needs model=NAME, the model the endpoint serves
    """
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        if not rest:
            raise ValueError(f"policy {spec!r} needs a base URL: openai:http://HOST:PORT/v1")
        if not model:
            raise ValueError(f"{spec} needs model=NAME, the model the endpoint serves")

        return OpenAIPolicy(rest, model, **options)
    if model is not None:
        raise ValueError(f"model= is only for openai:BASE_URL policies, not {spec!r}")
    if kind in ("hf", "ct2", "llamacpp"):
        if not rest:
            raise ValueError(f"policy {spec!r} needs a model directory: {kind}:PATH")
        if (is_local_path(rest) or kind != "hf") and not (Path(rest).expanduser() / "config.json").is_file():
            raise ValueError(f"policy {spec}: {rest} holds no model (no config.json): build one there, e.g. "
                             f"../shared/tools/qwen2.5-coder-0.5b.sh {rest}, or name another directory")

        return {"hf": HFPolicy, "ct2": CT2Policy, "llamacpp": LlamaCppPolicy}[kind](rest, **options)
    if spec in ("oracle", "nop") or kind == "reference" or (kind == "script" and rest):
        if options:
            raise ValueError(f"policy {spec!r} takes no options, got {sorted(options)}")

        return make_scripted(spec)
    raise ValueError(f"unknown policy {spec!r}; use {SPECS}")


__all__ = ["SPECS", "CT2Policy", "HFPolicy", "LlamaCppPolicy", "OpenAIPolicy", "PolicyError", "configure", "is_local_path", "make_policy"]
