"""Code-generation data sets (HumanEval, MBPP) as tasks.

Each problem becomes a task whose workspace holds ``solution.py`` and whose
hidden tests are the data set's own checks, run by pytest. The reference
solution writes the data set's canonical solution into ``solution.py``.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from termrl.protocols import Limits, Task, TaskFile, TaskMeta
from termrl.tasks.formats.common import TaskFormatError

REPO_SHARED = Path(__file__).resolve().parents[4] / "shared" / "datasets"
HUMANEVAL = "humaneval/HumanEval.jsonl.gz"
MBPP = "mbpp/sanitized-mbpp.json"
LIMITS = Limits(agent_timeout_sec=300, verifier_timeout_sec=60, max_steps=1, memory_mb=1024)
"""One reply, as HumanEval and MBPP define the task: its action (the function written to
``solution.py``) is the answer. ``--max-steps`` / ``EnvConfig.max_steps`` gives the multi-turn
variant. Measured on Qwen2.5-Coder-0.5B, HumanEval 0-39, greedy: one reply passes 30 of 40 against
29 in a plain prompt-and-run harness; three replies pass 15, because the model reads the
observation "wrote 714 bytes to /workspace/solution.py" as a request and overwrites its answer
(README, parity)."""

_IMPORT_CWD = "import os\nimport sys\n\nsys.path.insert(0, os.getcwd())\n"
_MBPP_BIND = '''import solution as _solution_module

# every name of the solution, private helpers included (import * would skip them);
# the solution's own test_* helpers must not be collected as tests
for _name, _value in vars(_solution_module).items():
    if not _name.startswith("__"):
        if _name.lower().startswith("test"):
            try:
                _value.__test__ = False
            except (AttributeError, TypeError):
                pass
        globals()[_name] = _value
'''


def dataset_path(name: str) -> Path:
    """Find a data set file: $TERMRL_DATASETS, else the shared/datasets folder beside the checkout."""
    roots = [Path(os.environ["TERMRL_DATASETS"])] if os.environ.get("TERMRL_DATASETS") else []
    roots += [REPO_SHARED, Path.cwd().parent / "shared" / "datasets"]
    for root in roots:
        if (root / name).is_file():
            return root / name
    raise TaskFormatError(roots[0] / name, None, "is missing: set TERMRL_DATASETS to the directory "
                                                 f"holding {name} (e.g. the shared/datasets folder)")


def _write_solution_script(source: str) -> str:
    # a quoted heredoc keeps the source byte-for-byte
    marker = "TERMRL_SOLUTION_EOF"
    return f"cat > solution.py <<'{marker}'\n{source.rstrip()}\n{marker}\n"


def humaneval_task(problem: dict, file: Path) -> Task:
    for key in ("task_id", "prompt", "canonical_solution", "test", "entry_point"):
        if not isinstance(problem.get(key), str):
            raise TaskFormatError(file, f"{problem.get('task_id', '?')}.{key}", "expected a string")
    number = problem["task_id"].split("/")[-1]
    entry = problem["entry_point"]
    # The checks may use names the prompt defines (poly, encode_cyclic) or call the entry
    # point by name: define the trusted prompt first, then bind the agent's entry point.
    test = (f"{_IMPORT_CWD}import solution as _solution_module\n\n{problem['prompt']}\n"
            f"{entry} = _solution_module.{entry}\n\n{problem['test']}\n\n\n"
            f"def test_{entry}():\n    check(_solution_module.{entry})\n")
    instruction = (f"Complete the Python function `{entry}` in `solution.py` so that it behaves as its "
                   f"docstring describes. Keep its name and signature. solution.py currently holds:\n\n"
                   f"```python\n{problem['prompt'].rstrip()}\n```\n")
    return Task(
        id=f"humaneval-{number}",
        instruction=instruction,
        workspace={"solution.py": TaskFile(problem["prompt"].encode())},
        tests={"test_humaneval.py": TaskFile(test.encode())},
        solution=_write_solution_script(problem["prompt"] + problem["canonical_solution"]),
        limits=LIMITS,
        meta=TaskMeta(category="codegen", difficulty="medium", tags=("humaneval", "python"),
                      source="humaneval", family="humaneval"),
    )


def load_humaneval() -> list[Task]:
    path = dataset_path(HUMANEVAL)
    tasks = []
    with gzip.open(path, "rt") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                try:
                    tasks.append(humaneval_task(json.loads(line), path))
                except json.JSONDecodeError as e:
                    raise TaskFormatError(path, f"line {lineno}", f"is not valid JSON ({e})") from None
    return tasks


def mbpp_task(problem: dict, file: Path) -> Task:
    pid = problem.get("task_id")
    tests = problem.get("test_list")
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
        raise TaskFormatError(file, f"{pid}.test_list", "expected a non-empty list of assert strings")
    for key in ("prompt", "code"):
        if not isinstance(problem.get(key), str):
            raise TaskFormatError(file, f"{pid}.{key}", "expected a string")
    imports = "\n".join(problem.get("test_imports") or [])
    body = [f"{_IMPORT_CWD}{imports}\n{_MBPP_BIND}"]
    for i, assertion in enumerate(tests):
        body.append(f"\ndef test_{i}():\n    {assertion}\n")
    instruction = (f"{problem['prompt'].strip()}\n\nWrite the function in `solution.py` in the current "
                   f"directory. Your code should pass tests like this one:\n\n```python\n{tests[0]}\n```\n")
    return Task(
        id=f"mbpp-{pid}",
        instruction=instruction,
        workspace={"solution.py": TaskFile(b"")},
        tests={"test_mbpp.py": TaskFile("".join(body).encode())},
        solution=_write_solution_script(problem["code"]),
        limits=LIMITS,
        meta=TaskMeta(category="codegen", difficulty="easy", tags=("mbpp", "python"),
                      source="mbpp", family="mbpp"),
    )


def load_mbpp() -> list[Task]:
    path = dataset_path(MBPP)
    try:
        problems = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise TaskFormatError(path, None, f"is not valid JSON ({e})") from None
    if not isinstance(problems, list):
        raise TaskFormatError(path, None, "expected a JSON list of problems")
    return [mbpp_task(p, path) for p in problems]
