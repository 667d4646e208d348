"""Which harness produced a result: the termrl commit (or version) a store or a training run records,
so that two halves of a comparison can be shown to have run the same code."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@functools.cache
def harness() -> str:
    """``git:<commit>`` of the checkout termrl is imported from, with ``+modified`` when its
    ``termrl/`` differs from that commit; ``termrl <version>`` for an installed package outside git.

    >>> harness().startswith(("git:", "termrl "))
    True
    """
    try:
        commit = _git("rev-parse", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no", "--", str(PACKAGE))
        return f"git:{commit}" + ("+modified" if changed else "")
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        try:
            return f"termrl {metadata.version('termrl')}"
        except metadata.PackageNotFoundError:
            return "termrl (unknown version)"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(PACKAGE), *args], capture_output=True, text=True, check=True,
                          timeout=20).stdout.strip()


def backend(policy) -> dict:
    """The engine and number format a policy generates with, as stores record them:
    ``{"backend": "transformers", "dtype": ...}``, ``{"backend": "ctranslate2", "compute_type": ...}``,
    ``{"backend": "llama.cpp", "quantization": ...}``, else ``{"backend": <class name>}`` (scripted
    policies, endpoints)."""
    config, model = getattr(policy, "config", None), getattr(policy, "model", None)
    if hasattr(policy, "generator") and hasattr(config, "compute_type"):
        return {"backend": "ctranslate2", "compute_type": config.compute_type}
    if type(policy).__name__ == "LlamaCppPolicy":
        return {"backend": "llama.cpp", "quantization": config.quantization, "threads": config.threads}
    if model is not None and hasattr(model, "dtype"):
        return {"backend": "transformers", "dtype": str(model.dtype).removeprefix("torch."),
                "device": str(getattr(policy, "device", ""))}
    return {"backend": type(policy).__name__}


__all__ = ["backend", "harness"]
