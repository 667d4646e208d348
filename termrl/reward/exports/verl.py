"""A reward spec as a veRL custom reward function.

    custom_reward_function.path=$(python -c "import termrl.reward.exports.verl as m; print(m.__file__)")
    custom_reward_function.name=compute_score

veRL's per-response reward managers (``NaiveRewardManager``, ``DAPORewardManager``)
call ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``
once per response (``BatchRewardManager``'s lists in, list out is not supported).
Each row of the parquet names a termrl code-generation task (its workspace
holds ``solution.py``: humaneval-N, mbpp-N, py-function-SEED) in
``extra_info["task_id"]`` or else in ``reward_model.ground_truth``. The code of
the response (its last python fenced block, or all of it) is written as
``solution.py`` in a fresh sandbox and verified. ``extra_info`` may also carry
``spec`` (a preset name or TOML path; default ``coderl``), ``progress`` (the
fraction of training done, for scheduled weights; veRL does not pass the step,
so default 0.0) and ``sandbox`` (the backend; default ``bwrap``). Length and
group terms see no length and no group: veRL passes one decoded response at a
time, without its token ids or its siblings.

It returns ``{"score": total, <component>: contribution, ..., "passed": 0/1,
"verified": 0/1}``, the same keys on every call (veRL collects each key into
``reward_extra_info``, one value per response, and logs them); ``score`` is the
reward it trains on. A component without a value
counts 0.0.

Failed verification: veRL cannot drop a sample
----------------------------------------------
When the sandbox or the verifier fails (not the policy), termrl's reward is
None. veRL's reward managers need a number for every response and cannot leave
one out, so ``compute_score`` returns ``score`` 0.0 with ``verified`` 0 and logs
a warning. Such a response still takes part in its group's baseline: watch the
``verified`` metric and filter or re-run on it (e.g. drop batches or prompts
where it is below 1). TRL's export (``termrl.reward.exports.trl``) returns None
instead, which TRL leaves out of training.

A task id that cannot be resolved, or a task that is not single-file code,
raises ``ValueError``: a data error, never a reward.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any

from termrl.protocols import Task
from termrl.reward.exports.codegen import check_code_task, evaluate_code
from termrl.reward.spec import load_spec
from termrl.tasks.suites import SuiteError, find_task

logger = logging.getLogger(__name__)

DEFAULT_SPEC = "coderl"
FIXED_KEYS = ("score", "passed", "verified")


@functools.lru_cache(maxsize=4096)
def _task(ref: str) -> Task:
    try:
        task = find_task(ref)
    except (SuiteError, ValueError) as e:  # TaskFormatError is a ValueError too
        raise ValueError(f"compute_score: cannot resolve task {ref!r}: {e}") from None
    check_code_task(task)
    return task


@functools.lru_cache(maxsize=32)
def _spec(name: str):
    spec = load_spec(name)
    clash = set(spec.component_names) & set(FIXED_KEYS)
    if clash:
        raise ValueError(f"spec {name!r}: component names {sorted(clash)} clash with compute_score's own "
                         f"keys {FIXED_KEYS}; rename them")
    return spec


def _task_ref(ground_truth: Any, extra_info: Mapping) -> str:
    ref = extra_info.get("task_id") or ground_truth
    if not isinstance(ref, str) or not ref:
        raise ValueError(f"compute_score: no termrl task id: put one (e.g. 'humaneval-0') in "
                         f"extra_info['task_id'] or reward_model.ground_truth; got ground_truth={ground_truth!r}, "
                         f"extra_info task_id={extra_info.get('task_id')!r}")
    return ref


def compute_score(data_source: str | None = None, solution_str: str = "", ground_truth: Any = None,
                  extra_info: Mapping | None = None, **kwargs: Any) -> dict[str, float]:
    """veRL's ``compute_score``: one response -> ``{"score", <components>, "passed", "verified"}``."""
    extra_info = extra_info or {}
    task = _task(_task_ref(ground_truth, extra_info))
    spec = _spec(str(extra_info.get("spec") or DEFAULT_SPEC))
    progress = float(extra_info.get("progress") or 0.0)
    evidence = evaluate_code(task, solution_str, backend=str(extra_info.get("sandbox") or "bwrap"))
    reward = spec.score(evidence, progress=progress)
    if reward.total is None:
        logger.warning("compute_score: task %s (data_source %s) could not be verified (%s); score 0.0 with "
                       "verified=0: veRL cannot drop a sample, filter on the 'verified' metric",
                       task.id, data_source, evidence.verify_error)
    out = {"score": 0.0 if reward.total is None else float(reward.total)}
    for name in spec.component_names:
        component = reward.components.get(name)
        contribution = component.contribution if component is not None else None
        out[name] = 0.0 if reward.total is None or contribution is None else float(contribution)
    out["passed"] = int(bool(evidence.verified and evidence.passed))
    out["verified"] = int(bool(evidence.verified))
    return out


__all__ = ["compute_score"]
