"""Seeded task families: deterministic, distinct, disjoint train and held-out seeds, valid tasks."""

from __future__ import annotations

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import TaskFamily
from termrl.tasks.families import FAMILIES, get_family
from termrl.tasks.suites import SuiteError, parse_seeds, resolve

pytestmark = pytest.mark.filterwarnings("ignore")


def test_at_least_five_families_in_several_categories():
    assert len(FAMILIES) >= 5
    assert len({f.category for f in FAMILIES.values()}) >= 3
    for family in FAMILIES.values():
        assert isinstance(family, TaskFamily)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_generation_is_deterministic_and_varied(name):
    family = FAMILIES[name]
    assert family.generate(7) == family.generate(7)
    tasks = [family.generate(s) for s in range(60)]
    assert len({t.instruction for t in tasks}) == 60
    files = [tuple(sorted((p, f.data) for p, f in {**t.workspace, **t.tests}.items())) for t in tasks]
    assert len(set(files)) == 60
    assert all(t.meta.family == name and t.meta.split == "train" for t in tasks)
    held = family.generate(family.heldout_seeds.start + 3)
    assert held.meta.split == "heldout" and held.id == f"{name}-{family.heldout_seeds.start + 3}"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_train_and_heldout_seed_ranges_are_disjoint(name):
    family = FAMILIES[name]
    assert set(family.train_seeds).isdisjoint(family.heldout_seeds)
    assert set(family.heldout_v1_seeds).isdisjoint(family.heldout_seeds)
    assert set(family.heldout_v1_seeds).isdisjoint(family.train_seeds)
    assert family.generate(family.heldout_v1_seeds.start).meta.split == "heldout-v1"
    with pytest.raises(ValueError, match="outside every family's seed ranges"):
        family.generate(family.heldout_seeds.stop + 1)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_variants_are_valid(name):
    family = FAMILIES[name]
    for seed in (0, 1, family.heldout_seeds.start):
        row = check_task(family.generate(seed))
        assert row.valid, (seed, row.reason)


def test_family_suite_syntax():
    family = get_family("logs-count")
    assert parse_seeds("0-3,10", family) == [0, 1, 2, 3, 10]
    assert parse_seeds("heldout:0-1", family) == [family.heldout_seeds.start, family.heldout_seeds.start + 1]
    assert parse_seeds("heldout-v1:2", family) == [family.heldout_v1_seeds.start + 2]
    assert [e.id for e in resolve("logs-count:5-6")] == ["logs-count-5", "logs-count-6"]
    with pytest.raises(SuiteError, match="expected ranges"):
        parse_seeds("a-b", family)
    with pytest.raises(SuiteError, match="unknown task family 'nope'"):
        resolve("nope:0-9")
