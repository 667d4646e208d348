"""Difficulty levels of the seeded families: level 2 is each family as it always was, levels 1
and 3 are valid tasks with their own ids, and the suite syntax reaches them."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families.base import LEVELS
from termrl.tasks.suites import SuiteError, find_task, resolve

pytestmark = pytest.mark.filterwarnings("ignore")

DIGESTS = json.loads((Path(__file__).parent / "fixtures" / "family_level2_digests.json").read_text())
"""sha256 of ``repr(task)`` for some seeds of every family, taken before levels existed."""


def test_level_2_is_every_family_as_it_always_was():
    for key, digest in DIGESTS.items():
        name, _, seed = key.rpartition("-")
        family = FAMILIES[name]
        for task in (family.generate(int(seed)), family.generate(int(seed), 2)):
            # fields added to Task since then, at their defaults, are not a change of the task
            text = re.sub(r", template='[^']*'", "", repr(task), count=1)
            # the seeds held out then are the heldout-v1 split now, generated as they were
            text = text.replace("split='heldout-v1'", "split='heldout'", 1)
            for added in (", python_requirements=()", ", system_packages=()", ", system_files={}", ", node_project={}",
                          ", substitutions=()"):
                text = text.replace(added, "", 1)
            assert hashlib.sha256(text.encode()).hexdigest() == digest, key


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_describes_its_levels(name):
    family = FAMILIES[name]
    assert sorted(family.levels) == list(LEVELS)
    assert all(len(text) > 20 for text in family.levels.values())


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("level", [1, 3])
def test_other_levels_are_valid_and_differ(name, level):
    family = FAMILIES[name]
    for seed in (family.heldout_seeds.start + 1,):  # each family's own level tests check train seeds
        task = family.generate(seed, level)
        assert task.id == f"{name}@{level}-{seed}"
        assert f"level:{level}" in task.meta.tags
        assert task == family.generate(seed, level)
        assert task.instruction != family.generate(seed).instruction or task.tests != family.generate(seed).tests
        row = check_task(task)
        assert row.valid, (task.id, row.reason)


def test_levels_order_the_meta_difficulty():
    family = FAMILIES["py-function"]
    order = ("easy", "medium", "hard")
    ranks = [order.index(family.generate(0, level).meta.difficulty) for level in LEVELS]
    assert ranks == sorted(ranks) and ranks[0] < ranks[-1]


def test_suite_and_task_ids_reach_a_level():
    entries = resolve("logs-count@1:heldout:0-1+logs-count:heldout:0+logs-count@3:heldout-v1:0")
    assert [e.id for e in entries] == ["logs-count@1-2000000", "logs-count@1-2000001", "logs-count-2000000",
                                       "logs-count@3-1000000"]
    assert find_task("logs-count@3-5") == FAMILIES["logs-count"].generate(5, 3)
    assert find_task("logs-count-5") == FAMILIES["logs-count"].generate(5)
    with pytest.raises(SuiteError, match="level '7' does not exist"):
        resolve("logs-count@7:0-3")
    with pytest.raises(SuiteError, match="unknown task family 'nope'"):
        resolve("nope@1:0-3")
    with pytest.raises(ValueError, match="level 0 does not exist"):
        FAMILIES["logs-count"].generate(0, 0)


def test_a_join_longer_than_a_file_name_still_resolves():
    suite = "+".join(f"{name}@{level}:heldout:0-1" for name in sorted(FAMILIES) for level in LEVELS)
    assert len(suite) > 255
    entries = resolve(suite)
    assert len(entries) == len(FAMILIES) * len(LEVELS) * 2
    assert all(e.task is not None for e in entries)
