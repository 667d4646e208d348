"""Hack detectors: plain callables ``(HackInput) -> list[Finding]``.

``code`` reads the agent's changed code (early exits, always-equal objects, skips,
hard-coded answers, swallowed exceptions, defensive bloat, empty work); ``env`` reads the
environment the tests run in and the agent's commands. ``run_detectors`` runs them all.
"""

from __future__ import annotations

from collections.abc import Mapping

from termrl.hacks.detectors import code, env, holdout
from termrl.protocols import Finding, HackDetector, HackInput


def all_detectors() -> dict[str, HackDetector]:
    """Finding kind -> detector, from ``code``, ``env`` and the holdout-gap detector."""
    return {**code.DETECTORS, **env.DETECTORS, **holdout.DETECTORS}


def run_detectors(inp: HackInput, detectors: Mapping[str, HackDetector] | None = None) -> list[Finding]:
    """Every finding of ``detectors`` (default: ``all_detectors()``) on one episode.

    A detector that raises never stops the others: its exception becomes a low finding
    of kind ``detector_error`` naming it.
    """
    findings: list[Finding] = []
    for name, detector in (all_detectors() if detectors is None else detectors).items():
        try:
            findings.extend(detector(inp))
        except Exception as e:  # noqa: BLE001 - one broken detector must not hide the others' findings
            findings.append(Finding("detector_error", "low",
                                    f"detector {name} failed: {type(e).__name__}: {e}"))
    return findings


__all__ = ["all_detectors", "code", "env", "holdout", "run_detectors"]
