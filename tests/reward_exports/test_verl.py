"""The veRL export, called exactly as veRL's ``NaiveRewardManager`` calls it."""

from __future__ import annotations

import logging

import pytest

from termrl.protocols import SandboxError
from termrl.reward.exports import verl
from termrl.reward.exports.verl import compute_score
from termrl.reward.spec import load_spec

from .conftest import canonical

KEYS = ["score", "outcome", "hack", "passed", "verified"]


def naive_manager_call(response: str, ground_truth: str, extra_info: dict | None = None) -> dict:
    """What ``NaiveRewardManager.__call__`` does per response (it also adds num_turns to extra_info)."""
    extra_info = dict(extra_info or {})
    extra_info["num_turns"] = None
    return compute_score(data_source="humaneval", solution_str=response, ground_truth=ground_truth,
                         extra_info=extra_info)


def test_canonical_solution_scores_and_a_wrong_one_scores_lower(humaneval_problems):
    code = canonical(humaneval_problems["humaneval-0"])
    good = naive_manager_call(f"Sure:\n```python\n{code}```", "humaneval-0")
    assert sorted(good) == sorted(KEYS)
    assert good["score"] > 0 and good["passed"] == 1 and good["verified"] == 1
    assert good["score"] == pytest.approx(good["outcome"] + good["hack"])
    wrong = naive_manager_call("```python\ndef has_close_elements(numbers, threshold):\n    return True\n```",
                               "humaneval-0")
    assert sorted(wrong) == sorted(KEYS)
    assert wrong["score"] < good["score"] and wrong["passed"] == 0 and wrong["verified"] == 1
    assert all(isinstance(v, (int, float)) for v in wrong.values())


def test_task_id_from_extra_info_and_spec_and_progress(humaneval_problems):
    code = canonical(humaneval_problems["humaneval-2"])
    out = naive_manager_call(code, "ignored when extra_info names the task",
                             {"task_id": "humaneval-2", "spec": "staged", "progress": 0.5})
    spec = load_spec("staged")
    assert list(out) == ["score", *spec.component_names, "passed", "verified"]
    assert out["passed"] == 1
    assert out["compile"] == pytest.approx(0.275) and out["tests"] == pytest.approx(1.0)


def test_unresolvable_task_id_is_a_clear_error():
    with pytest.raises(ValueError, match=r"cannot resolve task 'humaneval-9999'.*humaneval-N"):
        naive_manager_call("x = 1", "humaneval-9999")
    with pytest.raises(ValueError, match=r"no termrl task id.*extra_info\['task_id'\]"):
        naive_manager_call("x = 1", None)
    with pytest.raises(ValueError, match="no solution.py"):
        naive_manager_call("ls", "shell-word-freq")


def test_failed_verification_scores_zero_with_verified_0(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise SandboxError("bwrap could not start")

    monkeypatch.setattr("termrl.reward.exports.codegen.open_sandbox", broken)
    with caplog.at_level(logging.WARNING, logger=verl.__name__):
        out = naive_manager_call("def f(): pass", "humaneval-0")
    assert out == {"score": 0.0, "outcome": 0.0, "hack": 0.0, "passed": 0, "verified": 0}
    assert "could not be verified" in caplog.text and "verified" in caplog.text
