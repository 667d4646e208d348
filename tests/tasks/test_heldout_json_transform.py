"""json-transform's held-out templates: heldout seeds draw only them, train seeds never do; each
is a valid task at every level; the expected outputs follow the stated rules on hand-made
records; the jq reference agrees with them on every hidden input; and the instructions are
not train instructions renamed."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.json_transform import (
    HELDOUT_TEMPLATES,
    dedupe_versions,
    explode_list,
    group_aggregate,
    group_count,
    heldout_result,
    jq_heldout,
    top_per_group,
)
from termrl.tasks.overlap import overlap

pytestmark = pytest.mark.filterwarnings("ignore")

FAMILY = FAMILIES["json-transform"]
HELDOUT = FAMILY.heldout_seeds.start


@functools.cache
def seed_of(template: str) -> int:
    """The first heldout seed that draws ``template`` (the draw does not depend on the level)."""
    return next(s for s in range(HELDOUT, HELDOUT + 500) if FAMILY.generate(s).meta.template == template)


def test_templates_are_named_and_disjoint():
    assert FAMILY.train_templates == ("filter_project",)
    assert set(FAMILY.heldout_templates) == set(HELDOUT_TEMPLATES)
    assert len(HELDOUT_TEMPLATES) >= 4 and not set(FAMILY.train_templates) & set(HELDOUT_TEMPLATES)


def test_each_split_draws_only_its_own_templates():
    heldout = {FAMILY.generate(s).meta.template for s in range(HELDOUT, HELDOUT + 200)}
    assert heldout == set(FAMILY.heldout_templates)
    assert {FAMILY.generate(s).meta.template for s in range(200)} == {"filter_project"}
    v1 = FAMILY.heldout_v1_seeds.start
    assert {FAMILY.generate(s).meta.template for s in range(v1, v1 + 50)} == {"filter_project"}


@pytest.mark.parametrize("template", HELDOUT_TEMPLATES)
@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_heldout_template_is_valid_at_every_level(template, level):
    task = FAMILY.generate(seed_of(template), level)
    assert task.meta.template == template and task.meta.split == "heldout"
    row = check_task(task)
    assert row.valid, (task.id, row.reason)


@pytest.mark.parametrize("template", HELDOUT_TEMPLATES)
def test_levels_of_a_heldout_task(template):
    easy, mid, hard = (FAMILY.generate(seed_of(template), lv) for lv in (1, 2, 3))
    config = hidden_config(easy)
    skeleton = easy.workspace[config["program"]]
    assert skeleton.mode == 0o755 and b"def compute(records):" in skeleton.data
    assert "First discard" not in easy.instruction and "JSON array of objects" in easy.instruction
    assert "nulls_missing_and_ties" not in [c["id"] for c in config["cases"]]
    hard_config = hidden_config(hard)
    assert "discard every record" in hard.instruction or "kept version does not satisfy" in hard.instruction
    assert "not part of this schema" in hard.instruction
    assert {"many_ties_and_nulls", "nullable_never_set", "nothing_passes_the_filter", "one_record",
            "no_records"} <= {c["id"] for c in hard_config["cases"]}
    assert len(hard_config["left_alone"]) == 2
    assert json.loads(hard.workspace[hard_config["output"]].data) != hard_config["expected"]
    assert len({hidden_config(t)["output"] for t in (easy, mid, hard)}) == 1


def test_heldout_instructions_are_not_train_instructions_renamed():
    held = [FAMILY.generate(s) for s in range(HELDOUT, HELDOUT + 30)]
    train = [FAMILY.generate(s) for s in range(100)]
    result = overlap(held, train)
    assert result.near == 0 and result.summary()["max_similarity_max"] < 0.4


# --------------------------------------------------------------------------- the rules, by hand

BOOKS = [
    {"id": 5, "genre": "crime", "pages": 300, "shelved": "2022-01-01", "subjects": ["award", "classic"]},
    {"id": 2, "genre": "Crime", "pages": 120, "shelved": None, "subjects": []},
    {"id": 9, "genre": "crime", "pages": 300, "shelved": "2023-05-05", "subjects": None},
    {"id": 4, "pages": 80, "shelved": "2021-02-02", "subjects": ["classic"]},
    {"id": 7, "genre": "poetry", "pages": None, "shelved": "2020-03-03"},
]


def test_group_count_keeps_case_and_buckets_or_drops_missing_groups():
    spec = {"group": "genre", "missing": None, "form": "counts", "count_key": "n"}
    assert group_count(spec, BOOKS) == {"crime": 2, "Crime": 1, "poetry": 1}
    assert group_count({**spec, "missing": "(none)", "form": "ids"}, BOOKS) == {
        "crime": [5, 9], "Crime": [2], "poetry": [7], "(none)": [4]}
    assert group_count({**spec, "form": "ranked"}, BOOKS) == [
        {"genre": "crime", "n": 2}, {"genre": "Crime", "n": 1}, {"genre": "poetry", "n": 1}]


def test_group_aggregate_skips_unset_values_and_orders_ties_by_group():
    spec = {"group": "genre", "value": "pages", "agg": "sum", "out_key": "sum_pages", "n_key": "n",
            "desc": True}
    assert group_aggregate(spec, BOOKS) == [{"genre": "crime", "sum_pages": 600, "n": 2},
                                            {"genre": "Crime", "sum_pages": 120, "n": 1}]
    avg = group_aggregate({**spec, "agg": "avg", "out_key": "avg_pages", "desc": False},
                          BOOKS + [{"id": 1, "genre": "Crime", "pages": 480}])
    assert avg == [{"genre": "Crime", "avg_pages": 300.0, "n": 2}, {"genre": "crime", "avg_pages": 300.0, "n": 2}]


def test_top_per_group_breaks_ties_by_the_smaller_id():
    spec = {"group": "genre", "value": "pages", "k": 1, "highest": True, "form": "ids"}
    assert top_per_group(spec, BOOKS) == {"Crime": [2], "crime": [5]}
    assert top_per_group({**spec, "k": 2, "highest": False, "form": "rows"}, BOOKS) == [
        {"genre": "Crime", "rank": 1, "id": 2, "pages": 120},
        {"genre": "crime", "rank": 1, "id": 5, "pages": 300},
        {"genre": "crime", "rank": 2, "id": 9, "pages": 300}]


def test_explode_list_gives_a_row_per_element_in_either_order():
    spec = {"list": "subjects", "elem_key": "subject", "carry": "genre", "position": "pos", "order": "element"}
    assert explode_list(spec, BOOKS) == [
        {"id": 5, "subject": "award", "pos": 1, "genre": "crime"},
        {"id": 4, "subject": "classic", "pos": 1, "genre": None},
        {"id": 5, "subject": "classic", "pos": 2, "genre": "crime"}]
    by_id = explode_list({**spec, "position": None, "order": "id"}, BOOKS)
    assert [(r["id"], r["subject"]) for r in by_id] == [(4, "classic"), (5, "award"), (5, "classic")]


def test_dedupe_versions_keeps_one_version_per_id():
    log = [{"id": 3, "pages": 1, "shelved": "2022-01-01"}, {"id": 3, "pages": 2, "shelved": None},
           {"id": 3, "pages": 3, "shelved": "2022-01-01"}, {"id": 1, "pages": 4},
           {"id": 1, "pages": 5, "shelved": None}]
    spec = {"date": "shelved", "newest": True, "keep": ["id", "pages"], "versions_key": "v", "filter": None}
    assert dedupe_versions(spec, log) == [{"id": 1, "pages": 5, "v": 2}, {"id": 3, "pages": 3, "v": 3}]
    assert dedupe_versions({**spec, "newest": False, "versions_key": None}, log) == [
        {"id": 1, "pages": 4}, {"id": 3, "pages": 2}]
    kept_small = {**spec, "filter": {"field": "pages", "op": "<", "value": 4}}
    assert dedupe_versions(kept_small, log) == [{"id": 3, "pages": 3, "v": 3}]


@pytest.mark.skipif(shutil.which("jq") is None, reason="the reference solutions are jq programs")
@pytest.mark.parametrize("template", HELDOUT_TEMPLATES)
def test_the_jq_reference_computes_the_rules(template):
    base = {"input_shape": "array", "input_key": "records", "filter": None}
    specs = {
        "group_count": {"group": "genre", "missing": "(none)", "form": "ranked", "count_key": "n"},
        "group_aggregate": {"group": "genre", "value": "pages", "agg": "max", "out_key": "max_pages",
                            "n_key": "n", "desc": False},
        "top_per_group": {"group": "genre", "value": "pages", "k": 2, "highest": True, "form": "rows"},
        "explode_list": {"list": "subjects", "elem_key": "subject", "carry": "genre", "position": None,
                         "order": "id"},
        "dedupe_versions": {"date": "shelved", "newest": True, "keep": ["id", "genre"],
                            "versions_key": "n", "filter": {"field": "pages", "op": ">=", "value": 100}},
    }
    spec = {**base, "template": template, **specs[template]}
    records = BOOKS + [{**BOOKS[0], "pages": 99, "shelved": "2024-01-01"}, {**BOOKS[2], "shelved": None}]
    out = subprocess.run(["jq", "-c", jq_heldout(spec)], input=json.dumps(records), capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == heldout_result(spec, records)
