"""csv-aggregate's levels: level 1 drops the filter, shrinks the inputs and keeps one edge case;
level 3 grows the inputs, adds a spreadsheet export to process, more edge cases and look-alike
files that must be left alone."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config

pytestmark = pytest.mark.filterwarnings("ignore")

FAMILY = FAMILIES["csv-aggregate"]
SEEDS = (0, 1, 2, 3, 1_000_000, 1_000_001)
"""Train and ``heldout-v1`` seeds: the train aggregates, whose tasks these tests pin (the held-out
aggregates' levels are tested in test_heldout_csv_aggregate.py)."""


config = hidden_config


def data_rows(text: str) -> int:
    return len(text.splitlines()) - 1


@pytest.mark.parametrize("seed", SEEDS)
def test_inputs_grow_and_edge_cases_multiply_with_the_level(seed):
    tasks = {level: FAMILY.generate(seed, level) for level in (1, 2, 3)}
    configs = {level: config(task) for level, task in tasks.items()}
    ids = {level: [c["id"] for c in cfg["cases"]] for level, cfg in configs.items()}
    assert ids[1] == ["random0", "random1", "header_only"]
    assert [c["mark"] for c in configs[1]["cases"]] == ["core", "core", "boundary"]
    assert set(ids[1]) < set(ids[2]) < set(ids[3])
    assert {"random2", "multiline_fields", "bom_crlf", "lookalike"} <= set(ids[3]) - set(ids[2])
    sizes = [data_rows(next(iter(tasks[level].workspace.values())).data.decode())
             for level in (1, 2, 3)]
    assert sizes[0] <= 15 and 25 <= sizes[1] <= 60 and sizes[2] >= 200, sizes
    fresh = {level: [data_rows(c["text"]) for c in cfg["cases"] if c["mark"] == "core"]
             for level, cfg in configs.items()}
    assert max(fresh[1]) <= 15 and min(fresh[3]) >= 100, fresh


def test_level_1_drops_the_filter_and_gives_a_tip():
    filtered = [s for s in range(30) if "Only rows whose" in FAMILY.generate(s).instruction]
    assert filtered
    for seed in filtered[:3]:
        easy = FAMILY.generate(seed, 1)
        assert "Only rows whose" not in easy.instruction
        assert "csv.DictReader" in easy.instruction
        assert "everything_filtered_out" not in [c["id"] for c in config(easy)["cases"]]


@pytest.mark.parametrize("seed", SEEDS)
def test_level_3_adds_a_second_run_and_lookalike_files_the_tests_guard(seed):
    task = FAMILY.generate(seed, 3)
    cfg = config(task)
    src, dst = next(iter(task.workspace)), cfg["output"]
    stem, ext = src.rsplit(".", 1)
    second = task.workspace[f"{stem}_excel.{ext}"].data
    assert second.startswith("\ufeff".encode()) and b"\r\n" in second
    assert cfg["second_output"] in task.instruction and f"{stem}_excel.{ext}" in task.instruction
    assert cfg["second_output"] in task.solution
    distractors = {f"{stem}_old.{ext}", dst.rsplit(".", 1)[0] + "_last_year." + dst.rsplit(".", 1)[1]}
    assert set(cfg["left_alone"]) == distractors
    for path, digest in cfg["left_alone"].items():
        assert hashlib.sha256(task.workspace[path].data).hexdigest() == digest
    assert "leave them exactly as they are" in task.instruction
    assert "def test_files_left_alone" in task.tests["test_csv_aggregate.py"].data.decode()
    lookalike = next(c for c in cfg["cases"] if c["id"] == "lookalike")
    header = lookalike["text"].splitlines()[0]
    value = re.search(r"^VALUE = '(.+)'$", task.solution, re.MULTILINE).group(1)
    assert header.startswith(f"{value}_est") and f"old_{cfg['header'][0]}" in header


@pytest.mark.parametrize("level", [1, 3])
@pytest.mark.parametrize("seed", [0, 1_000_001])
def test_levels_1_and_3_are_valid(level, seed):
    row = check_task(FAMILY.generate(seed, level))
    assert row.valid, row.reason


@pytest.mark.parametrize("seed", [4, 1_000_002])
def test_wrong_solutions_that_pass_level_1_fail_level_3(seed):
    easy, hard = FAMILY.generate(seed, 1), FAMILY.generate(seed, 3)
    # A plain UTF-8 reader is level 1's own reference; at level 3 it crashes on the BOM (and
    # the agent shrugs it off), so the export's output and the bom_crlf case fail.
    assert 'encoding="utf-8-sig"' not in easy.solution and check_task(easy).valid
    no_bom = hard.solution.replace("utf-8-sig", "utf-8").replace("set -e\n", "") + "exit 0\n"
    row = check_task(dataclasses.replace(hard, solution=no_bom))
    assert not row.valid and row.reference_passed is False, row.reason
    assert "FAILED" in row.reason and "bom_crlf" in row.reason, row.reason
    # Right answers, but it "tidies up" the older export it was told to leave alone.
    old = next(path for path in hard.workspace if "_old." in path)
    tidy = dataclasses.replace(hard, solution=hard.solution + f"rm '{old}'\n")
    row = check_task(tidy)
    assert not row.valid and row.reference_passed is False, row.reason
    assert "test_files_left_alone" in row.reason
