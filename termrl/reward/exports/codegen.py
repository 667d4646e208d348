"""Score a code completion: the code goes into ``solution.py`` of a fresh sandbox, then ``verify``.

For single-file code-generation tasks (HumanEval, MBPP, the ``py-function``
family): tasks whose workspace holds ``solution.py``. Multi-step terminal tasks
need an agent loop, not one completion.

>>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```\\nDone.")
'def f():\\n    return 1\\n'
>>> extract_code("def f():\\n    return 1")
'def f():\\n    return 1'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence

from termrl.protocols import Evidence, Finding, HarnessError, Task
from termrl.tasks.runtime import open_sandbox
from termrl.verify import unverified, verify

logger = logging.getLogger(__name__)

SOLUTION_FILE = "solution.py"

_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = ("python", "py", "python3")


def extract_code(text: str) -> str:
    """The last fenced block tagged python (or py, python3), else the last untagged block, else the text."""
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(text)]
    for wanted in (_PYTHON_TAGS, ("",)):
        found = [body for tag, body in blocks if tag in wanted]
        if found:
            return found[-1]
    return text


def check_code_task(task: Task) -> None:
    """Raise ``ValueError`` unless ``task`` is a single-file code task this module can score."""
    if SOLUTION_FILE not in task.workspace:
        raise ValueError(f"task {task.id} has no {SOLUTION_FILE} in its workspace: a completion can only be "
                         f"scored on code-generation tasks (humaneval-N, mbpp-N, py-function-SEED); "
                         f"terminal tasks need an agent loop (termrl's environment)")


def evaluate_code(task: Task, text: str, backend: str = "bwrap") -> Evidence:
    """Write the code of ``text`` as the task's ``solution.py`` in a fresh sandbox and verify it.

    A sandbox that cannot be started or set up gives ``Evidence(verified=False)``:
    the harness failed, not the completion, so its reward is None.
    """
    check_code_task(task)
    code = extract_code(text)
    try:
        with open_sandbox(task, backend=backend) as box:
            box.write_file(SOLUTION_FILE, code.encode())
            return verify(task, box)
    except HarnessError as e:
        logger.warning("task %s: could not verify a completion: %s: %s", task.id, type(e).__name__, e)
        return unverified(task.id, e)


class CodeTaskEvaluator:
    """``evaluate(prompt, completion, row)`` for ``trl_reward_funcs``: the row's ``task_id`` names the task.

    A callable class, not a closure, so it pickles (TRL's async rollout worker
    sends reward functions to another process).
    """

    def __init__(self, tasks: Mapping[str, Task], backend: str = "bwrap"):
        self.tasks = dict(tasks)
        self.backend = backend

    def __call__(self, prompt: object, completion: str, row: Mapping) -> tuple[Evidence, Sequence[Finding]]:
        if "task_id" not in row:
            raise KeyError(f"the dataset has no 'task_id' column (columns: {', '.join(row) or 'none'}): "
                           f"add one naming each row's task, e.g. humaneval-0")
        task_id = row["task_id"]
        try:
            task = self.tasks[task_id]
        except KeyError:
            raise KeyError(f"task_id {task_id!r} is not among the {len(self.tasks)} tasks given to "
                           f"code_task_evaluator; pass every task the dataset names") from None
        return evaluate_code(task, completion, self.backend), ()


def code_task_evaluator(tasks_by_id: Mapping[str, Task] | Iterable[Task],
                        backend: str = "bwrap") -> CodeTaskEvaluator:
    """An ``evaluate`` for code-generation tasks, e.g. ``code_task_evaluator(load_humaneval())``.

    ``tasks_by_id``: task id -> ``Task`` (or an iterable of tasks). Every task must
    hold ``solution.py`` in its workspace (checked here, once). ``backend``: the
    sandbox backend (``bwrap``, ``docker``, ``local``).
    """
    tasks = dict(tasks_by_id) if isinstance(tasks_by_id, Mapping) else {t.id: t for t in tasks_by_id}
    for task in tasks.values():
        check_code_task(task)
    return CodeTaskEvaluator(tasks, backend)
