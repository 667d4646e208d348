"""Typed shapes of the stage data other modules read: ``BuildData`` and ``TestsData`` round-trip the
dicts the stages store (the serialized form in trajectories) and name every field."""

from __future__ import annotations

import dataclasses

import pytest

from termrl.protocols import BuildData, BuildError, Evidence, StageResult, StageStatus, Task, TaskFile, TestsData
from termrl.tasks.runtime import open_sandbox
from termrl.verify import verify

TEST = b"""
import os
import sys

sys.path.insert(0, os.getcwd())
from greet import hello  # noqa: E402

def test_hello():
    assert hello() == "hi"

def test_two():
    assert hello() * 2 == "hihi"
"""


def test_tests_data_round_trips_and_leaves_out_what_a_run_did_not_produce():
    data = TestsData("pytest", 1, "exited", "tail", collected=2, passed=1, failed=1)
    assert data.to_dict() == {"kind": "pytest", "exit_code": 1, "stop": "exited", "output_tail": "tail",
                              "collected": 2, "passed": 1, "failed": 1}
    assert TestsData.from_dict(data.to_dict()) == data
    script = TestsData("reward-file", 0, "exited", reward_file=0.5)
    assert "collected" not in script.to_dict() and TestsData.from_dict(script.to_dict()).reward_file == 0.5
    assert TestsData.of(Evidence("t")) is None
    assert TestsData.of(Evidence("t", stages={"tests": StageResult("tests", "error")})) == TestsData()
    older = StageResult("tests", "ok", data={"collected": 3})  # evidence stored before a field existed
    partial = Evidence("t", stages={"tests": older})
    assert TestsData.of(partial).collected == 3 and TestsData.of(partial).holdout_passed is None


def test_build_data_round_trips_with_the_serialized_class_key():
    data = BuildData(python=(BuildError("a.py", 3, "syntax", "SyntaxError: x"),), c_tool="gcc", c_exit=1)
    raw = data.to_dict()
    assert raw["python"] == [{"file": "a.py", "line": 3, "class": "syntax", "message": "SyntaxError: x"}]
    assert BuildData.from_dict(raw) == data


@pytest.mark.sandbox
def test_the_stages_store_the_typed_shapes():
    task = Task(id="greet-typed", instruction="x", workspace={"greet.py": TaskFile(b"def hello(:\n")},
                tests={"test_greet.py": TaskFile(TEST)})
    with open_sandbox(task) as box:
        broken = verify(task, box, static=False)
        box.write_file("greet.py", b"def hello():\n    return 'hi'\n")
        fixed = verify(task, box, static=False)
    build = BuildData.of(broken)
    assert build.python[0].file == "greet.py" and build.python[0].error_class == "syntax"
    assert BuildData.of(fixed).python == () and BuildData.of(fixed).c_tool is None
    tests = TestsData.of(fixed)
    assert (tests.kind, tests.collected, tests.passed, tests.failed) == ("pytest", 2, 2, 0)
    assert tests.holdout_passed is None and fixed.stages["tests"].data == tests.to_dict()
    assert Evidence.from_dict(fixed.to_dict()).stages["tests"].data == tests.to_dict()


def test_a_stage_status_is_an_enum_equal_to_its_old_string_and_an_unknown_one_is_refused():
    stage = StageResult("tests", "ok")
    assert stage.status is StageStatus.OK and stage.status == "ok" and f"{stage.status}" == "ok"
    with pytest.raises(ValueError):
        StageResult("tests", "passed")  # a test's outcome, not a stage's status


def test_evidence_cannot_be_changed_once_built():
    evidence = Evidence("t", passed=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        evidence.passed = False
    judged = dataclasses.replace(evidence, stages={**evidence.stages, "judge": StageResult("judge", "ok")})
    assert list(judged.stages) == ["judge"] and evidence.stages == {}
