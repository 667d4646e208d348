"""Every family's held-out split is content-disjoint from its train split: held-out seeds draw only
from templates no train seed draws, and ``termrl tasks overlap`` finds no held-out task that is a
training task renamed."""

from __future__ import annotations

import pytest

from termrl.tasks.families import FAMILIES
from termrl.tasks.families.base import HELDOUT_SEEDS, HELDOUT_V1_SEEDS, LEVELS, TRAIN_SEEDS, split_of
from termrl.tasks.overlap import overlap

DISJOINT = sorted(name for name, f in FAMILIES.items() if f.heldout_templates)


def test_every_family_but_one_command_has_held_out_templates():
    assert DISJOINT == sorted(set(FAMILIES) - {"one-command"})


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_train_and_held_out_templates_are_disjoint_names(name):
    f = FAMILIES[name]
    assert f.train_templates and len(set(f.train_templates)) == len(f.train_templates)
    assert not set(f.train_templates) & set(f.heldout_templates)


@pytest.mark.parametrize("name", DISJOINT)
def test_each_split_draws_only_its_own_templates(name):
    f = FAMILIES[name]
    for level in LEVELS:
        held = {f.generate(HELDOUT_SEEDS.start + i, level).meta.template for i in range(60)}
        train = {f.generate(TRAIN_SEEDS.start + i, level).meta.template for i in range(60)}
        old = {f.generate(HELDOUT_V1_SEEDS.start + i, level).meta.template for i in range(20)}
        assert held <= set(f.heldout_templates), (level, held)
        assert train | old <= set(f.train_templates), (level, train | old)
    # within a few hundred seeds every held-out template is drawn
    drawn = {f.generate(HELDOUT_SEEDS.start + i).meta.template for i in range(300)}
    assert drawn == set(f.heldout_templates)


@pytest.mark.parametrize("name", DISJOINT)
def test_no_held_out_task_is_a_training_task_renamed(name):
    f = FAMILIES[name]
    train = [f.generate(seed) for seed in range(300)]
    held = [f.generate(HELDOUT_SEEDS.start + i) for i in range(60)]
    result = overlap(held, train)
    assert result.exact == 0, [m for m in result.matches if m.exact][:3]
    assert result.near == 0, sorted(result.matches, key=lambda m: -m.similarity)[:3]
    # while the old held-out range, drawn from the train templates, shares a great deal
    old = overlap([f.generate(HELDOUT_V1_SEEDS.start + i) for i in range(60)], train)
    assert old.near > result.near


def test_one_command_holds_out_combinations_and_its_two_held_out_ranges_agree():
    f = FAMILIES["one-command"]
    for i in range(12):
        new, old = f.generate(HELDOUT_SEEDS.start + i), f.generate(HELDOUT_V1_SEEDS.start + i)
        assert (new.instruction, new.solution) == (old.instruction, old.solution)
        assert split_of(new.meta.seed) == "heldout" and old.meta.split == "heldout-v1"
