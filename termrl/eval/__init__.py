"""Evaluation: what a run's trajectories say about the policy.

- ``metrics``: ``pass_at_k`` (the unbiased estimator of Chen et al. 2021) and
  ``summarize``, a JSON-ready summary: pass@1 and pass@k per split, rewards and
  their components, reward-hack findings, error classes, one entry per task.
- ``badcases``: failed episodes grouped by what went wrong first, largest group
  first, and ``rich`` renderings of both for the terminal.

A harness failure (sandbox crash, verifier that could not run) is never the
agent's failure: it is counted, and left out of every rate.

>>> summarize([])["pass@1"] is None
True
"""

from termrl.eval.badcases import bad_cases, render_bad_cases, render_summary
from termrl.eval.metrics import is_harness_failure, main_class, pass_at_k, summarize

__all__ = ["bad_cases", "is_harness_failure", "main_class", "pass_at_k", "render_bad_cases", "render_summary",
           "summarize"]
