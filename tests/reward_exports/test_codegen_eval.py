"""``code_task_evaluator`` and ``extract_code`` on real HumanEval tasks in the bwrap sandbox."""

from __future__ import annotations

import pytest

from termrl.protocols import SandboxError
from termrl.reward.exports import codegen
from termrl.reward.exports.codegen import code_task_evaluator, extract_code
from termrl.reward.exports.trl import trl_reward_funcs
from termrl.reward.spec import load_spec
from termrl.tasks.formats.codegen import load_humaneval
from termrl.tasks.suites import find_task

from .conftest import canonical

TASK_IDS = ["humaneval-0", "humaneval-2"]


@pytest.fixture(scope="module")
def tasks():
    return {t.id: t for t in load_humaneval() if t.id in TASK_IDS}


def test_canonical_completion_passes_and_truncated_fails(tasks, humaneval_problems):
    evaluate = code_task_evaluator(tasks)
    for task_id in TASK_IDS:
        code = canonical(humaneval_problems[task_id])
        completion = f"Here is the solution:\n```python\n{code}```\nIt loops over the pairs."
        good, findings = evaluate("prompt", completion, {"task_id": task_id})
        assert good.task_id == task_id and good.verified and good.passed, good.verify_error
        assert findings == ()
        truncated = code[:len(code) - len(humaneval_problems[task_id]["canonical_solution"]) // 2]
        bad, _ = evaluate("prompt", truncated, {"task_id": task_id})
        assert bad.verified and not bad.passed
        assert bad.error_classes


def test_evaluator_in_trl_reward_funcs_with_threads(tasks, humaneval_problems):
    funcs = trl_reward_funcs(load_spec("coderl"), code_task_evaluator(tasks.values()), workers=2)
    completions, task_ids = [], []
    for task_id in TASK_IDS:
        code = canonical(humaneval_problems[task_id])
        entry = humaneval_problems[task_id]["entry_point"]
        completions += [[{"role": "assistant", "content": f"```python\n{code}```"}],
                        [{"role": "assistant", "content": f"def {entry}(*args):\n    return 0.5\n"}]]
        task_ids += [task_id] * 2
    out = funcs[0](prompts=["p"] * 4, completions=completions, task_id=task_ids,
                   completion_ids=[[1, 2], [3]] * 2, trainer_state=None)
    assert out == [1.0, -0.3, 1.0, -0.3]


def test_sandbox_failure_is_unverified_not_a_failure(tasks, monkeypatch):
    def broken(*args, **kwargs):
        raise SandboxError("bwrap could not start")

    monkeypatch.setattr("termrl.reward.exports.codegen.open_sandbox", broken)
    evidence = codegen.evaluate_code(tasks["humaneval-0"], "def f(): pass")
    assert not evidence.verified and "bwrap could not start" in evidence.verify_error
    assert load_spec("coderl").score(evidence).total is None


def test_evaluator_rejects_what_it_cannot_score(tasks):
    evaluate = code_task_evaluator(tasks)
    with pytest.raises(KeyError, match="no 'task_id' column"):
        evaluate("p", "x = 1", {"prompt": "p"})
    with pytest.raises(KeyError, match="humaneval-99"):
        evaluate("p", "x = 1", {"task_id": "humaneval-99"})
    with pytest.raises(ValueError, match="no solution.py"):
        code_task_evaluator([find_task("shell-word-freq")])


def test_extract_code():
    assert extract_code("a\n```python\nx = 1\n```\nb\n```py\ny = 2\n```\n") == "y = 2\n"
    assert extract_code("```bash\nls\n```\n```\nz = 3\n```") == "z = 3\n"
    assert extract_code("```python\nx = 1\n```\n```bash\nls\n```") == "x = 1\n"
    assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"
