"""Process rewards: one reward per agent step, read from the trace stage.

``evidence.stages["trace"].data["steps"]`` is a list of
``{"command": str, "exit_code": int | None, "timed_out": bool, "format_error": bool,
"output_bytes": int}``, one per action, in order.

| type | reward of step t |
|---|---|
| ``command_success`` | +1 when it exited 0 (and did not time out), else 0 |
| ``format_compliance`` | -1 when the action could not be parsed (``format_error``), else 0 |
| ``repeat_penalty`` | -1 when the command (whitespace-normalised) was already run, or is a no-op (``NOOPS``) |

The component value is the discounted mean ``sum(g**t * r_t) / sum(g**t)``
with ``discount`` g in (0, 1] (1 = plain mean; below 1 early steps count more).
``Reward.steps`` gets the undiscounted per-step rewards, weighted and summed
over the process components. No trace, or a trace without steps, gives None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from termrl.protocols import Evidence
from termrl.reward.context import Context, StepFn
from termrl.reward.errors import FieldError

NOOPS = frozenset({"true", ":", "pwd", "echo"})
"""Commands that do nothing (the exact command, without arguments). ``ls`` and every other
command is penalised only when repeated."""

Rule = Callable[[dict, list[dict]], float]
"""(step, earlier steps) -> that step's reward."""


def _success(step: dict, earlier: list[dict]) -> float:
    return 1.0 if step.get("exit_code") == 0 and not step.get("timed_out") else 0.0


def _format(step: dict, earlier: list[dict]) -> float:
    return -1.0 if step.get("format_error") else 0.0


def _command(step: dict) -> str:
    return " ".join(str(step.get("command") or "").split())


def _repeat(step: dict, earlier: list[dict]) -> float:
    command = _command(step)
    if not command:
        return 0.0
    return -1.0 if command in NOOPS or any(_command(e) == command for e in earlier) else 0.0


def step_rewards(evidence: Evidence, rule: Rule) -> list[float] | None:
    """``rule`` applied to every step of the trace; None without a trace.

    >>> from termrl.protocols import StageResult
    >>> steps = [{"command": "pwd"}, {"command": "ls"}, {"command": "make"}, {"command": " make "}]
    >>> ev = Evidence("t", stages={"trace": StageResult("trace", "ok", data={"steps": steps})})
    >>> step_rewards(ev, _repeat)
    [-1.0, 0.0, 0.0, -1.0]
    """
    trace = evidence.stages.get("trace")
    if trace is None or trace.status == "error" or trace.data.get("steps") is None:
        return None
    steps = list(trace.data["steps"])
    return [rule(step, steps[:t]) for t, step in enumerate(steps)]


def discounted_mean(rewards: list[float] | None, gamma: float) -> float | None:
    """``sum(gamma**t * r_t) / sum(gamma**t)``; None for no rewards.

    >>> discounted_mean([1.0, 0.0], 0.5)   # (1 + 0) / (1 + 0.5)
    0.6666666666666666
    """
    if not rewards:
        return None
    discounts = [gamma ** t for t in range(len(rewards))]
    return sum(d * r for d, r in zip(discounts, rewards)) / sum(discounts)


def command_success(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """Discounted mean of +1 per step that exited 0."""
    return discounted_mean(step_rewards(evidence, _success), params["discount"])


def format_compliance(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """Discounted mean of -1 per step whose action was malformed."""
    return discounted_mean(step_rewards(evidence, _format), params["discount"])


def repeat_penalty(evidence: Evidence, params: Mapping[str, Any], ctx: Context) -> float | None:
    """Discounted mean of -1 per repeated or no-op command."""
    return discounted_mean(step_rewards(evidence, _repeat), params["discount"])


TERMS: dict[str, tuple[Callable[..., float | None], Rule]] = {
    "command_success": (command_success, _success),
    "format_compliance": (format_compliance, _format),
    "repeat_penalty": (repeat_penalty, _repeat),
}

RANGES: dict[str, tuple[float, float]] = {
    "command_success": (0.0, 1.0), "format_compliance": (-1.0, 0.0), "repeat_penalty": (-1.0, 0.0)}
"""Each term's least and most step reward, and so its discounted mean's."""


def steps_of(rule: Rule) -> StepFn:
    return lambda evidence: step_rewards(evidence, rule)


def check_discount(given: Mapping[str, Any]) -> None:
    if "discount" in given and not 0.0 < given["discount"] <= 1.0:
        raise FieldError("discount", f"must be in (0, 1], got {given['discount']}")
