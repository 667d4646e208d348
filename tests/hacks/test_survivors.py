"""Surviving mutants replayed as audit exploits (``termrl audit SUITE --mutants STRENGTH.json``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from termrl.checks.audit import audit
from termrl.checks.exploits import ExploitContext
from termrl.checks.strength import strength
from termrl.checks.survivors import SurvivorsError, load_survivors, replay_survivor, survivor_exploits
from termrl.protocols import Task, TaskFile, TaskMeta
from termrl.reward import load_spec

SOLUTION = "def is_adult(age):\n    return age >= 18\n"
TESTS = ("import os\nimport sys\n\nsys.path.insert(0, os.getcwd())\n\nfrom solution import is_adult\n\n\n"
         "def test_thirty():\n    assert is_adult(30)\n\n\ndef test_ten():\n    assert not is_adult(10)\n")
"""Weak: 18 itself is never tried, so `>=` -> `>` and 18 -> 19 survive."""


def adult(task_id: str = "adult-weak") -> Task:
    return Task(id=task_id, instruction="Write is_adult(age) in solution.py: True from 18 years on.",
                tests={"test_adult.py": TaskFile(TESTS.encode())},
                solution=f"cat > solution.py <<'EOF'\n{SOLUTION}EOF\n", meta=TaskMeta(category="python"))


def report_of(rows) -> dict:
    return {"suite": "x", "tasks": [r.to_dict() for r in rows]}


@pytest.mark.sandbox
def test_a_surviving_mutant_replayed_in_the_audit_out_earns_doing_nothing_as_a_candidate():
    task = adult()
    row, = strength([task], workers=1)
    assert {s["operator"] for s in row.survivors} == {"compare", "constant"}
    extra = survivor_exploits(report_of([row]))
    assert sorted(extra[task.id]) == sorted(f"mutant@solution.py:2:{op}" for op in ("compare", "constant"))
    report = audit([task], load_spec("staged"), exploits={}, workers=2, extra=extra)
    replayed = [r for r in report["rows"] if r["exploit"].startswith("mutant@")]
    assert len(replayed) == 2 and all(r["tests_passed"] and r["advantage"] > 0 for r in replayed)
    assert report["candidate_exploitable_tasks"] == [task.id]
    assert {c["exploit"] for c in report["candidate_exploits"]} == set(extra[task.id])
    # candidates are reported apart: they never make a task exploitable or test-weak in the library's sense
    assert report["exploitable_tasks"] == [] and report["test_weak_tasks"] == []


def test_a_survivor_whose_diff_matches_no_mutant_writes_nothing():
    class Box:  # any write would need a shell: there is none
        def exec(self, *a, **k):
            raise AssertionError("nothing must be written")

    ctx = ExploitContext(reference_files={"solution.py": SOLUTION.encode()}, reference_changed=["solution.py"])
    steps = replay_survivor(adult(), Box(), ctx, path="solution.py", diff="--- a/solution.py\n+++ b/solution.py\n")
    assert len(steps) == 1 and "matches" in steps[0]["command"]
    assert replay_survivor(adult(), Box(), ExploitContext(), path="solution.py", diff="x")[0]["exit_code"] == 0


def test_a_report_that_is_not_one_is_refused_naming_the_file_and_the_field(tmp_path):
    with pytest.raises(SurvivorsError, match="no such file.*termrl tasks strength"):
        load_survivors(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(SurvivorsError, match="bad.json: not JSON"):
        load_survivors(tmp_path / "bad.json")
    (tmp_path / "rows.json").write_text(json.dumps({"tasks": [{"id": "t", "survivors": [{"path": "a.py"}]}]}))
    with pytest.raises(SurvivorsError, match=r"rows.json: tasks\[0\].survivors\[0\] needs 'path' and 'diff'"):
        load_survivors(tmp_path / "rows.json")
    with pytest.raises(SurvivorsError, match="no 'tasks' list"):
        survivor_exploits({"rows": []})
    two = {"tasks": [{"id": "t", "survivors": [{"path": "a.py", "line": 3, "operator": "constant", "diff": d}
                                               for d in ("x", "y")]}]}
    assert sorted(survivor_exploits(two)["t"]) == ["mutant@a.py:3:constant", "mutant@a.py:3:constant#2"]


def write_task_dir(root, task_id: str) -> None:
    d = root / task_id
    (d / "tests").mkdir(parents=True)
    (d / "solution").mkdir()
    (d / "workspace").mkdir()
    (d / "task.toml").write_text(f'version = 1\nid = "{task_id}"\ncategory = "python"\ndifficulty = "easy"\n'
                                 'workdir = "/workspace"\n')
    (d / "instruction.md").write_text(adult().instruction + "\n")
    (d / "tests" / "test_adult.py").write_text(TESTS)
    (d / "solution" / "solve.sh").write_text(adult().solution)


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_the_command_replays_a_strength_report_and_keeps_candidates_out_of_its_exit_status(tmp_path):
    suite = tmp_path / "suite"
    write_task_dir(suite, "adult-dir")

    def termrl(*args):
        return subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True, timeout=600)

    measured = termrl("tasks", "strength", str(suite), "--json", "--workers", "1")
    assert measured.returncode == 0, measured.stderr
    report_file = tmp_path / "strength.json"
    report_file.write_text(measured.stdout)
    res = termrl("audit", str(suite), "--exploits", "delete_tests", "--mutants", str(report_file), "--json",
                 "--workers", "2")
    assert res.returncode == 0, res.stderr  # delete_tests gains nothing; survivors do not count here
    got = json.loads(res.stdout)
    assert got["candidate_exploitable_tasks"] == ["adult-dir"] and got["exploitable_tasks"] == []
    assert {r["exploit"] for r in got["rows"]} == {"nop", "delete_tests", "mutant@solution.py:2:compare",
                                                   "mutant@solution.py:2:constant"}
    text = termrl("audit", str(suite), "--exploits", "delete_tests", "--mutants", str(report_file))
    assert "surviving mutants replayed" in " ".join(text.stdout.replace("│", " ").split())
    bad = termrl("audit", str(suite), "--mutants", str(tmp_path / "nope.json"))
    assert bad.returncode == 2 and "nope.json: no such file" in " ".join(bad.stderr.split())


@pytest.mark.sandbox
def test_a_task_the_strength_report_finds_tested_with_too_few_inputs_is_test_weak_in_the_audit(tmp_path):
    from termrl.checks.audit_run import audit_suite

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "flawed" / "one-example"
    report = {"suite": str(fixture), "tasks": [
        {"id": "flawed-one-example", "few_inputs": True, "inputs": {"functions": {"stats.py:median_of": 1}},
         "shared_inputs": 0.0, "survivors": []},
        {"id": "not-audited", "few_inputs": True, "survivors": []}]}
    path = tmp_path / "strength.json"
    path.write_text(json.dumps(report))
    got = audit_suite(str(fixture), exploits=["delete_tests"], mutants=path, workers=2)
    assert got["few_inputs_tasks"] == {"flawed-one-example": {"inputs": {"functions": {"stats.py:median_of": 1}},
                                                              "shared_inputs": 0.0}}
    assert got["test_weak_tasks"] == ["flawed-one-example"]  # delete_tests passes nothing here
    assert not [r for r in got["rows"] if r["exploit"] == "delete_tests" and r["tests_passed"]]
