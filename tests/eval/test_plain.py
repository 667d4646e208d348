"""The plain prompt-and-run harness: one message, the first python block, the task's hidden tests."""

from __future__ import annotations

import pytest

from termrl.eval.plain import extract_code, plain_messages, run_plain, target_file
from termrl.protocols import Reply
from termrl.tasks.suites import resolve


class Answers:
    """Replies with a fixed text per task id; records the messages it was sent."""

    name = "answers"

    def __init__(self, texts):
        self.texts, self.seen = texts, []

    def generate(self, turns):
        self.seen += [t.messages for t in turns]
        return [Reply(self.texts[t.task.id]) for t in turns]


def test_messages_ask_for_the_one_python_file_and_extraction_takes_the_first_block():
    task = resolve("humaneval:0")[0].task
    (message,) = plain_messages(task)
    assert message["role"] == "user" and task.instruction.strip() in message["content"]
    assert "`solution.py` in one ```python block" in message["content"] and target_file(task) == "solution.py"
    assert extract_code("a\n```python\nx = 1\n```\nb\n```python\ny = 2\n```") == "x = 1\n"
    assert extract_code("x = 1") == "x = 1"


@pytest.mark.sandbox
def test_the_canonical_solution_passes_and_a_wrong_one_fails():
    tasks = [e.task for e in resolve("humaneval:0-1")]
    right, wrong = tasks
    reference = right.solution.split("<<'TERMRL_SOLUTION_EOF'\n", 1)[1].rsplit("TERMRL_SOLUTION_EOF", 1)[0]
    policy = Answers({right.id: f"Here it is:\n```python\n{reference}```\nDone.",
                      wrong.id: "```python\ndef separate_paren_groups(s):\n    return []\n```"})
    got = run_plain(tasks, policy)
    assert [(r.task_id, r.passed) for r in got] == [(right.id, True), (wrong.id, False)]
    assert got[0].code == reference and len(policy.seen) == 2


@pytest.mark.sandbox
def test_a_results_directory_keeps_finished_work_and_a_second_call_does_only_the_rest(tmp_path):
    from termrl.env import EnvConfig
    from termrl.eval.plain import parity

    tasks = [e.task for e in resolve("humaneval:0-2")]
    answers = {t.id: "```python\ndef f():\n    return 0\n```" for t in tasks}
    first = Answers(answers)
    got = run_plain(tasks[:2], first, out=tmp_path, batch=1)
    assert [r.task_id for r in got] == [t.id for t in tasks[:2]] and len(first.seen) == 2
    with (tmp_path / "plain.jsonl").open("a") as fh:
        fh.write('{"task_id": "cut mid-wri')  # a kill during the append
    second = Answers(answers)
    got = run_plain(tasks, second, out=tmp_path)
    assert [r.task_id for r in got] == [t.id for t in tasks] and len(second.seen) == 1
    assert not any(r.passed for r in got)

    env = EnvConfig(max_steps=1, backend="local")
    third = Answers(answers)
    whole = parity(tasks, third, env, workers=2, out=tmp_path)
    assert len(third.seen) == 3 and [t.task_id for t in whole.episodes] == [t.id for t in tasks]
    fourth = Answers(answers)
    again = parity(tasks, fourth, env, workers=2, out=tmp_path)
    assert fourth.seen == [] and (again.plain_passed, again.termrl_passed) == (0, 0)
    assert [t.task_id for t in again.episodes] == [t.id for t in tasks]
