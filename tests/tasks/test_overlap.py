"""``termrl tasks overlap``: exact and near-duplicate specifications between two suites."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from termrl.cli import app
from termrl.protocols import Task, TaskFile
from termrl.tasks.families import FAMILIES
from termrl.tasks.overlap import Fingerprint, overlap, prose, task_names

PY = FAMILIES["py-function"]


def _task(id: str, instruction: str, solution: str, workspace=()) -> Task:
    return Task(id=id, instruction=instruction, solution=solution,
                workspace={p: TaskFile.text("") for p in workspace})


def test_a_held_out_seed_of_a_train_template_is_an_exact_duplicate_of_its_train_task():
    # seed 1000402 (held out until 2026-12-07) is train seed 5's run-length encoding renamed
    held, train = PY.generate(1000402), PY.generate(5)
    assert held.instruction != train.instruction and held.solution != train.solution
    result = overlap([held], [train, PY.generate(6)])
    assert (result.exact, result.near, result.disjoint) == (1, 1, 0)
    assert result.matches[0].nearest == train.id and result.matches[0].similarity == 1.0


def test_names_are_masked_and_examples_dropped_but_numbers_kept():
    text = ("Write `count_big` in `lib.py`: return how many values exceed {n}.\n\nExamples:\n\n"
            "    >>> count_big([{e}])\n    1\n")
    ref = "cat > 'lib.py' <<'EOF'\ndef count_big(values):\n    return sum(v > {n} for v in values)\nEOF\n"
    a = _task("a", text.format(n=3, e=4), ref.format(n=3))
    renamed = _task("b", text.format(n=3, e=9).replace("count_big", "n_large").replace("lib.py", "m.py"),
                    ref.format(n=3).replace("count_big", "n_large").replace("lib.py", "m.py"))
    other_parameter = _task("c", text.format(n=5, e=4), ref.format(n=5))
    assert {"count_big", "lib.py", "values"} <= task_names(a)
    assert Fingerprint.of(a).key == Fingerprint.of(renamed).key
    assert ">>>" not in prose(a.instruction) and "exceed 3" in Fingerprint.of(a).prose
    result = overlap([renamed, other_parameter], [a], threshold=0.5)
    assert [m.exact for m in result.matches] == [True, False]
    assert 0.5 <= result.matches[1].similarity < 1.0 and result.near == 2


def test_different_work_is_neither_exact_nor_near():
    rle = PY.generate(5)
    other = next(t for t in map(PY.generate, range(40)) if "Run-length" not in t.instruction
                 and Fingerprint.of(t).reference.split("\n")[0] != Fingerprint.of(rle).reference.split("\n")[0])
    result = overlap([other], [rle])
    assert result.exact == 0 and result.near == 0 and result.matches[0].similarity < 0.8


def test_language_words_are_never_names():
    task = _task("t", "Return `None` when `values` is empty.", "def f(values: list) -> int:\n    return None\n")
    assert task_names(task) == {"f", "values"}


def test_a_bad_threshold_is_refused():
    with pytest.raises(ValueError, match="Jaccard"):
        overlap([], [], threshold=1.5)


def test_cli_reports_the_figures_and_every_match(tmp_path):
    runner = CliRunner()
    out = runner.invoke(app, ["tasks", "overlap", "py-function:0-9", "py-function:heldout-v1:0-19", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["tasks"] == 20 and data["against_tasks"] == 10 and len(data["matches"]) == 20
    assert data["exact"] <= data["near"] and data["disjoint"] == 20 - data["near"]
    assert "3-shingles" in data["method"]
    exact = [m for m in data["matches"] if m["exact"]]
    for m in exact:  # each exact match is what the fingerprints say
        held = PY.generate(int(m["id"].rsplit("-", 1)[1]))
        train = PY.generate(int(m["nearest"].rsplit("-", 1)[1]))
        assert Fingerprint.of(held).key == Fingerprint.of(train).key
    text = runner.invoke(app, ["tasks", "overlap", "py-function:0-9", "py-function:heldout-v1:0-19"])
    assert text.exit_code == 0 and f"exact duplicates {data['exact']}" in text.stdout


def test_cli_errors_name_the_argument():
    runner = CliRunner()
    out = runner.invoke(app, ["tasks", "overlap", "py-function:0-3", "py-function:0-3", "--threshold", "0"])
    assert out.exit_code == 2 and "--threshold" in out.output
    out = runner.invoke(app, ["tasks", "overlap", "no-such-family:0-3", "py-function:0-3"])
    assert out.exit_code == 2 and "unknown task family 'no-such-family'" in out.output


def test_a_suite_against_itself_is_all_exact():
    tasks = [FAMILIES[name].generate(seed) for name in ("logs-count", "csv-aggregate", "shell-files") for seed in (0, 1)]
    result = overlap(tasks, [replace(t, id=t.id + "-copy") for t in tasks])
    assert result.exact == len(tasks) and all(m.nearest == m.id + "-copy" for m in result.matches)
