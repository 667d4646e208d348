"""Code-generation data sets (HumanEval, MBPP) as tasks."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import TestKind as Kind
from termrl.tasks import suites
from termrl.tasks.formats import codegen
from termrl.tasks.formats.codegen import load_humaneval, load_mbpp
from termrl.tasks.formats.common import TaskFormatError

from .conftest import assert_names

HUMANEVAL_SAMPLE = ["humaneval-0", "humaneval-41", "humaneval-101", "humaneval-163"]
MBPP_SAMPLE = ["mbpp-2", "mbpp-100", "mbpp-412", "mbpp-809"]


@pytest.fixture(scope="module")
def humaneval():
    return {t.id: t for t in load_humaneval()}


@pytest.fixture(scope="module")
def mbpp():
    return {t.id: t for t in load_mbpp()}


@pytest.fixture(scope="module")
def humaneval_problems():
    with gzip.open(codegen.dataset_path(codegen.HUMANEVAL), "rt") as f:
        return {f"humaneval-{p['task_id'].split('/')[-1]}": p for p in map(json.loads, f) if p}


# --------------------------------------------------------------------------- loading


def test_humaneval_has_164_unique_tasks():
    tasks = load_humaneval()
    assert len(tasks) == 164
    assert len({t.id for t in tasks}) == 164
    assert {t.id for t in tasks} == {f"humaneval-{i}" for i in range(164)}


def test_mbpp_has_427_unique_tasks():
    tasks = load_mbpp()
    assert len(tasks) == 427
    assert len({t.id for t in tasks}) == 427
    assert all(t.id.startswith("mbpp-") and t.id[5:].isdigit() for t in tasks)


def test_humaneval_task_shape(humaneval, humaneval_problems):
    for tid, task in humaneval.items():
        problem = humaneval_problems[tid]
        assert task.workspace["solution.py"].data == problem["prompt"].encode()
        assert list(task.tests) == ["test_humaneval.py"]
        test_src = task.tests["test_humaneval.py"].data.decode()
        assert problem["test"] in test_src  # the data set's own check()
        assert f"def test_{problem['entry_point']}(" in test_src
        assert problem["canonical_solution"] not in task.instruction  # the answer is not given away
        assert f"`{problem['entry_point']}`" in task.instruction
        assert task.test_spec.kind is Kind.PYTEST
        assert task.meta.category == "codegen" and task.meta.source == "humaneval"
        assert "solution.py" in task.solution


def test_mbpp_task_shape(mbpp):
    problems = {f"mbpp-{p['task_id']}": p
                for p in json.loads(codegen.dataset_path(codegen.MBPP).read_text())}
    assert set(problems) == set(mbpp)
    for tid, task in mbpp.items():
        problem = problems[tid]
        assert list(task.workspace) == ["solution.py"]
        assert task.workspace["solution.py"].data == b""
        test_src = task.tests["test_mbpp.py"].data.decode()
        for i, assertion in enumerate(problem["test_list"]):
            assert f"def test_{i}():\n    {assertion}" in test_src, tid
        assert problem["code"].strip() not in task.instruction  # the answer is not given away
        assert problem["test_list"][0] in task.instruction
        assert task.meta.category == "codegen" and task.meta.source == "mbpp"


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("tid", HUMANEVAL_SAMPLE)
def test_humaneval_sample_validates(humaneval, tid):
    row = check_task(humaneval[tid])
    assert row.valid, row.reason
    assert row.reference_passed is True and row.nop_passed is False


@pytest.mark.parametrize("tid", MBPP_SAMPLE)
def test_mbpp_sample_validates(mbpp, tid):
    row = check_task(mbpp[tid])
    assert row.valid, row.reason
    assert row.reference_passed is True and row.nop_passed is False


@pytest.mark.parametrize("tid", ["humaneval-0", "humaneval-101"])
def test_truncated_humaneval_solution_is_invalid(humaneval, humaneval_problems, tid):
    problem = humaneval_problems[tid]
    lines = (problem["prompt"] + problem["canonical_solution"]).splitlines()
    half = "\n".join(lines[: len(lines) // 2]) + "\n"
    truncated = replace(humaneval[tid], solution=f"cat > solution.py <<'EOF'\n{half}EOF\n")
    row = check_task(truncated)
    assert not row.valid
    assert row.status == "invalid"
    assert row.reference_passed is False
    assert "reference solution fails" in row.reason


@pytest.mark.parametrize("tid", ["humaneval-32", "humaneval-33", "humaneval-38", "humaneval-50"])
def test_humaneval_checks_that_use_names_from_the_prompt(humaneval, tid):
    """BUG: HumanEval's checks run in the namespace of prompt + completion: HumanEval/32 calls
    poly(), /38 encode_cyclic(), /50 encode_shift() (helpers defined in the prompt) and /33 calls
    sort_third() by name. codegen.humaneval_task runs problem['test'] in a module that only did
    `import solution`, so these names are undefined and the canonical solution fails (NameError)."""
    row = check_task(humaneval[tid])
    assert row.valid, row.reason


@pytest.mark.parametrize("tid", ["mbpp-19", "mbpp-798", "mbpp-801"])
def test_mbpp_solutions_whose_names_clash_with_pytest_or_import_star(mbpp, tid):
    """BUG: codegen.mbpp_task's test module does `from solution import *`. MBPP/19 defines
    test_duplicate() and MBPP/801 test_three_equal(): imported into the test module, pytest
    collects them as tests and they error (fixture 'arraynums'/'x' not found). MBPP/798 calls the
    helper _sum(), which `import *` skips (leading underscore): NameError. The canonical
    solutions of these problems therefore fail their own hidden tests."""
    row = check_task(mbpp[tid])
    assert row.valid, row.reason


def test_wrong_mbpp_solution_is_invalid(mbpp):
    task = mbpp["mbpp-2"]
    row = check_task(replace(task, solution="cat > solution.py <<'EOF'\ndef similar_elements(a, b):\n"
                                            "    return ()\nEOF\n"))
    assert row.status == "invalid" and row.reference_passed is False


# --------------------------------------------------------------------------- data set files


@pytest.fixture
def no_datasets(tmp_path, monkeypatch):
    empty = tmp_path / "datasets"
    empty.mkdir()
    monkeypatch.setenv("TERMRL_DATASETS", str(empty))
    monkeypatch.setattr(codegen, "REPO_SHARED", tmp_path / "no-shared" / "datasets")
    monkeypatch.chdir(tmp_path)  # the cwd-relative ../shared/datasets fallback finds nothing either
    return empty


def test_missing_humaneval_names_the_file(no_datasets):
    with pytest.raises(TaskFormatError, match="TERMRL_DATASETS") as e:
        load_humaneval()
    assert_names(e.value, "humaneval/HumanEval.jsonl.gz", None)
    assert e.value.file == str(no_datasets / "humaneval" / "HumanEval.jsonl.gz")


def test_missing_mbpp_names_the_file(no_datasets):
    with pytest.raises(TaskFormatError, match="TERMRL_DATASETS") as e:
        load_mbpp()
    assert_names(e.value, "mbpp/sanitized-mbpp.json", None)


def test_missing_dataset_is_a_suite_error(no_datasets):
    with pytest.raises(suites.SuiteError, match="HumanEval.jsonl.gz"):
        suites.resolve("humaneval")


def test_termrl_datasets_takes_precedence(tmp_path, monkeypatch):
    (tmp_path / "mbpp").mkdir()
    problem = {"task_id": 9001, "prompt": "Write a function to add two numbers.",
               "code": "def add(a, b):\n    return a + b\n", "test_imports": [],
               "test_list": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]}
    (tmp_path / "mbpp" / "sanitized-mbpp.json").write_text(json.dumps([problem]))
    monkeypatch.setenv("TERMRL_DATASETS", str(tmp_path))
    tasks = load_mbpp()
    assert [t.id for t in tasks] == ["mbpp-9001"]
    assert "def test_1():\n    assert add(-1, 1) == 0" in tasks[0].tests["test_mbpp.py"].data.decode()
    row = check_task(tasks[0])
    assert row.valid, row.reason


def test_corrupt_humaneval_line_names_file_and_line(tmp_path, monkeypatch):
    (tmp_path / "humaneval").mkdir()
    good = {"task_id": "HumanEval/0", "prompt": "def f():\n", "canonical_solution": "    return 1\n",
            "test": "def check(c):\n    assert c() == 1\n", "entry_point": "f"}
    with gzip.open(tmp_path / "humaneval" / "HumanEval.jsonl.gz", "wt") as f:
        f.write(json.dumps(good) + "\n" + '{"task_id": "HumanEval/1", "prompt": \n')
    monkeypatch.setenv("TERMRL_DATASETS", str(tmp_path))
    with pytest.raises(TaskFormatError, match="not valid JSON") as e:
        load_humaneval()
    assert_names(e.value, "HumanEval.jsonl.gz", "line 2")


def test_mbpp_problem_without_tests_names_the_field(tmp_path, monkeypatch):
    (tmp_path / "mbpp").mkdir()
    (tmp_path / "mbpp" / "sanitized-mbpp.json").write_text(json.dumps(
        [{"task_id": 7, "prompt": "p", "code": "x = 1", "test_list": []}]))
    monkeypatch.setenv("TERMRL_DATASETS", str(tmp_path))
    with pytest.raises(TaskFormatError) as e:
        load_mbpp()
    assert_names(e.value, "sanitized-mbpp.json", "7.test_list")


@pytest.mark.sandbox
def test_codegen_tasks_allow_one_reply_and_the_oracle_passes_in_it(humaneval, mbpp):
    from termrl.policies.scripted import NopPolicy, OraclePolicy
    from termrl.rollout.runner import RolloutConfig, run_rollouts

    tasks = [next(iter(humaneval.values())), next(iter(mbpp.values()))]
    assert all(t.limits.max_steps == 1 for t in tasks)  # as HumanEval and MBPP define the task
    played = run_rollouts(tasks, OraclePolicy(), RolloutConfig(workers=2))
    assert all(t.passed and len(t.steps) == 1 and t.ending == "step_limit" for t in played), \
        [(t.task_id, t.ending, t.error) for t in played]
    assert not any(t.passed for t in run_rollouts(tasks, NopPolicy(), RolloutConfig(workers=2)))
