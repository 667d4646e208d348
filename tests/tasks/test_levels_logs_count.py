"""Levels of the logs-count family: level 1 is a skeleton to complete on a short log with a
one-field criterion and plain hidden logs; level 3 asks for the total over rotated files (one
gzip-compressed, one with CRLF endings) next to distractor logs, and adds hidden edge cases."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import replace

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.logs_count import gzip_stored

pytestmark = pytest.mark.filterwarnings("ignore")

FAMILY = FAMILIES["logs-count"]
SEEDS = (0, 1, 2, 3, 1_000_000, 1_000_001)
"""Train and heldout-v1 seeds: both draw the train templates these tests describe (the held-out
templates' levels are tested in test_heldout_logs_count.py)."""


config = hidden_config


def log_lines(task, path: str) -> int:
    return sum(1 for line in task.workspace[path].data.decode().splitlines() if line.strip())


def main_log(task) -> str:
    return task.instruction.split("`")[1]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_seed_keeps_its_scenario_across_levels(seed):
    tasks = [FAMILY.generate(seed, level) for level in (1, 2, 3)]
    assert len({main_log(t) for t in tasks}) == 1
    assert len({t.meta.tags[3] for t in tasks}) == 1  # the log format
    assert len({config(t)["script"] for t in tasks}) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_level_1_is_a_skeleton_with_a_one_field_criterion(seed):
    task = FAMILY.generate(seed, 1)
    script = config(task)["script"]
    stub = task.workspace[script]
    assert stub.mode == 0o755
    assert "raise NotImplementedError" in stub.data.decode()
    assert "Python skeleton" in task.instruction and "`matches(line)`" in task.instruction
    assert task.meta.tags[4] in ("level", "service")
    assert " AND " not in task.instruction and "other than" not in task.instruction
    assert script not in FAMILY.generate(seed).workspace


@pytest.mark.parametrize("seed", SEEDS)
def test_hidden_edge_cases_grow_with_the_level(seed):
    ids = [{c["id"] for c in config(FAMILY.generate(seed, level))["cases"]} for level in (1, 2, 3)]
    assert ids[0] == {"random0", "random1", "empty_log"}
    assert ids[0] < ids[1] < ids[2]
    assert {"crlf_line_endings", "lines_of_spaces", "only_blank_lines", "large_log"} <= ids[2]
    cases = {c["id"]: c for c in config(FAMILY.generate(seed, 3))["cases"]}
    assert "\r\n" in cases["crlf_line_endings"]["text"]
    assert cases["only_blank_lines"]["count"] == 0 and cases["only_blank_lines"]["text"].strip() == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_input_sizes_are_ordered_by_level(seed):
    tasks = [FAMILY.generate(seed, level) for level in (1, 2, 3)]
    sizes = [log_lines(t, main_log(t)) for t in tasks]
    assert sizes[0] < sizes[1] <= sizes[2], sizes
    longest = [max(len(c["text"].splitlines()) for c in config(t)["cases"]) for t in tasks]
    assert longest[0] < longest[1] < longest[2], longest


@pytest.mark.parametrize("seed", SEEDS)
def test_level_3_counts_rotated_logs_next_to_distractors(seed):
    task = FAMILY.generate(seed, 3)
    log, cfg = main_log(task), config(task)
    assert b"\r\n" in task.workspace[log + ".1"].data
    older = gzip.decompress(task.workspace[log + ".2.gz"].data).decode()
    assert older.count("\n") >= 150
    distractors = set(task.workspace) - {log, log + ".1", log + ".2.gz"}
    assert len(distractors) == 2 and log + ".bak" in distractors
    assert all(f"`{path}`" in task.instruction for path in distractors)
    assert "gzip-compressed" in task.instruction and "\\r\\n" in task.instruction
    assert cfg["left_alone"] == {path: hashlib.sha256(f.data).hexdigest()
                                 for path, f in task.workspace.items()}
    assert "def test_files_left_alone" in task.tests["test_logs_count.py"].data.decode()
    assert "left_alone" not in config(FAMILY.generate(seed))


@pytest.mark.parametrize("data", [b"", b"a\r\nb\n", bytes(range(256)) * 700])
def test_gzip_stored_round_trips(data):
    assert gzip.decompress(gzip_stored(data)) == data


@pytest.mark.parametrize("seed", [4, 1_000_004])
@pytest.mark.parametrize("level", [1, 3])
def test_levels_are_valid_tasks(seed, level):
    row = check_task(FAMILY.generate(seed, level))
    assert row.valid, row.reason


def test_level_3_rejects_counting_one_file_or_decompressing_in_place():
    task = FAMILY.generate(5, 3)
    log, cfg = main_log(task), config(task)
    script, output = cfg["script"], cfg["output"]
    written = task.solution.split("a=$(")[0]
    only_current = written + (f"./'{script}' '{log}' > '{output}'\n" if cfg["mode"] == "arg"
                              else f"./'{script}' < '{log}' > '{output}'\n")
    row = check_task(replace(task, solution=only_current))
    assert row.reference_passed is False, row.reason
    assert "test_output_file_has_count_of_workspace_log" in row.reason
    gunzipped = task.solution + f"gzip -d '{log}.2.gz'\n"
    row = check_task(replace(task, solution=gunzipped))
    assert row.reference_passed is False, row.reason
    assert "test_files_left_alone" in row.reason
