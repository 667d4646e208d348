"""json-transform's levels: level 1 narrows the rule, shrinks the input, hands over a skeleton and
drops the tricky hidden case; level 3 fills the rule out, grows the input, adds keys outside the
schema, more edge cases and look-alike files that the hidden tests check were left alone."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.json_transform import THEMES

pytestmark = pytest.mark.filterwarnings("ignore")

FAMILY = FAMILIES["json-transform"]
SEEDS = (0, 1, 2, 3, 1_000_000, 1_000_004)
"""Seeds of the train template: train ones and ``heldout-v1`` ones (generated as train seeds);
the held-out templates' levels are tested in ``test_heldout_json_transform.py``."""


config_of = hidden_config


def input_path(task) -> str:
    return task.instruction.split("`", 2)[1]


def records_in(task, path: str) -> list[dict]:
    text = task.workspace[path].data.decode()
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines()]
    data = json.loads(text)
    return data if isinstance(data, list) else next(v for v in data.values() if isinstance(v, list))


def case_ids(task) -> list[str]:
    return [c["id"] for c in config_of(task)["cases"]]


@pytest.mark.parametrize("seed", SEEDS)
def test_level_1_narrows_the_rule_and_hands_over_a_skeleton(seed):
    task = FAMILY.generate(seed, 1)
    config = config_of(task)
    assert " AND " not in task.instruction
    assert "computed key" not in task.instruction and "Keep only the first" not in task.instruction
    assert "JSON array of record objects" in task.instruction
    assert "OUTPUT is a JSON array" in task.instruction
    skeleton = task.workspace[config["program"]]
    assert skeleton.mode == 0o755 and b"def transform(records):" in skeleton.data
    assert b"NotImplementedError" in skeleton.data and not config["program"].endswith(".sh")
    assert "only its\nfunction `transform(records)` is not written yet" in task.instruction
    assert "nulls_missing_and_ties" not in case_ids(task) and "no_records" in case_ids(task)
    assert len(case_ids(task)) < len(case_ids(FAMILY.generate(seed)))


@pytest.mark.parametrize("seed", SEEDS)
def test_level_3_has_two_conditions_a_derived_key_and_more_edge_cases(seed):
    task = FAMILY.generate(seed, 3)
    assert task.instruction.count(" AND ") == 1
    assert "plus the computed key" in task.instruction
    assert "keys outside this schema" in task.instruction
    schema = {"id", *next(THEMES[t] for t in THEMES if f"/{t}." in input_path(task))}
    assert any(set(r) - schema for r in records_in(task, input_path(task)))
    ids = case_ids(task)
    assert {"nulls_missing_and_ties", "many_ties_and_nulls", "nullable_never_set",
            "nothing_passes_the_filter", "no_records"} <= set(ids)
    assert len(ids) > len(case_ids(FAMILY.generate(seed)))


@pytest.mark.parametrize("seed", SEEDS)
def test_input_size_grows_with_the_level(seed):
    sizes = [len(records_in(t, input_path(t))) for t in (FAMILY.generate(seed, lv) for lv in (1, 2, 3))]
    assert sizes == sorted(sizes) and sizes[0] < sizes[1] < sizes[2], sizes


@pytest.mark.parametrize("seed", SEEDS)
def test_a_seed_keeps_its_files_and_theme_across_levels(seed):
    tasks = [FAMILY.generate(seed, lv) for lv in (1, 2, 3)]
    stems = {input_path(t).rsplit(".", 1)[0] for t in tasks}
    outputs = {config_of(t)["output"] for t in tasks}
    assert len(stems) == 1 and len(outputs) == 1


@pytest.mark.parametrize("seed", SEEDS)
def test_level_3_look_alikes_are_in_the_workspace_and_checked(seed):
    task = FAMILY.generate(seed, 3)
    config = config_of(task)
    untouched = config["left_alone"]
    stem = input_path(task).rsplit("/", 1)[1]
    assert len(untouched) == 2 and input_path(task) not in untouched
    assert all(p.rsplit("/", 1)[1].startswith(stem.split(".")[0]) for p in untouched)
    assert all(hashlib.sha256(task.workspace[p].data).hexdigest() == digest for p, digest in untouched.items())
    assert "def test_files_left_alone" in task.tests["test_json_transform.py"].data.decode()
    stale = json.loads(task.workspace[config["output"]].data)
    assert stale != config["expected"]
    assert "left_alone" not in config_of(FAMILY.generate(seed))


def with_solution(task, solution: str):
    return dataclasses.replace(task, solution=solution)


def cleans_up_old_exports(task) -> str:
    """Wrong: the reference, then removes the data files that look like old exports."""
    in_dir, name = input_path(task).split("/")
    stem, ext = name.split(".")
    return task.solution + f"rm -f {in_dir}/{stem}_archive.{ext}\n"


def leaks_extra_keys(task) -> str:
    """Wrong: copies the keys outside the schema (``note``, ``meta``) into every output object."""
    leak = 'map(with_entries(select(.key == "note" or .key == "meta")) + {"id": .id'
    assert task.solution.count('map({"id": .id') == 1
    return task.solution.replace('map({"id": .id', leak)


@pytest.mark.parametrize("wrong", [cleans_up_old_exports, leaks_extra_keys])
def test_a_wrong_solution_that_passes_level_1_fails_level_3(wrong):
    easy, hard = FAMILY.generate(0, 1), FAMILY.generate(0, 3)
    assert check_task(with_solution(easy, wrong(easy))).reference_passed
    assert check_task(with_solution(hard, wrong(hard))).reference_passed is False


@pytest.mark.parametrize("level", [1, 3])
def test_levels_are_valid_on_another_seed(level):
    row = check_task(FAMILY.generate(3, level))
    assert row.valid, row.reason
