"""py-function's held-out templates: ``heldout`` seeds draw only from them, train seeds never do,
and each one makes valid tasks at every level (the reference passes, doing nothing fails, and
level 3's earlier version is not a solution)."""

from __future__ import annotations

import copy
import json
from functools import cache

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.base import HELDOUT_SEEDS, HELDOUT_V1_SEEDS, LEVELS
from termrl.tasks.families.py_function import HELDOUT_TEMPLATES, TEMPLATES, canon

pytestmark = pytest.mark.filterwarnings("ignore")
FAMILY = FAMILIES["py-function"]
HELDOUT = sorted(FAMILY.heldout_templates)


@cache
def seeds_of(template: str, n: int = 2) -> tuple[int, ...]:
    """The first ``n`` heldout seeds that draw ``template``."""
    found = []
    for seed in HELDOUT_SEEDS:
        if FAMILY.generate(seed).meta.template == template:
            found.append(seed)
            if len(found) == n:
                return tuple(found)
    raise AssertionError(f"no heldout seed draws {template}")


def test_template_names_are_the_template_lists_and_disjoint():
    assert FAMILY.train_templates == tuple(t.__name__[2:] for t in TEMPLATES)
    assert FAMILY.heldout_templates == tuple(t.__name__[2:] for t in HELDOUT_TEMPLATES)
    assert len(FAMILY.train_templates) == 18 and len(FAMILY.heldout_templates) >= 14
    assert set(FAMILY.train_templates).isdisjoint(FAMILY.heldout_templates)


def test_heldout_seeds_draw_every_heldout_template_and_nothing_else():
    drawn = {FAMILY.generate(seed).meta.template for seed in HELDOUT_SEEDS[:200]}
    assert drawn == set(FAMILY.heldout_templates)


def test_train_and_heldout_v1_seeds_draw_train_templates_only():
    for seeds in (range(200), HELDOUT_V1_SEEDS[:50]):
        drawn = {FAMILY.generate(seed).meta.template for seed in seeds}
        assert drawn <= set(FAMILY.train_templates), drawn & set(FAMILY.heldout_templates)
    assert FAMILY.generate(7).meta.template in FAMILY.train_templates


def _function(source: str, name: str):
    namespace: dict = {}
    exec(source, namespace)  # noqa: S102 - the task's own reference and earlier version
    return namespace[name]


def _results(func, cases) -> list[str]:
    out = []
    for args, _ in cases:
        try:
            out.append(canon(func(*copy.deepcopy(json.loads(json.dumps(args))))))
        except Exception as e:  # noqa: BLE001
            out.append(f"<exception {type(e).__name__}>")
    return out


@pytest.mark.parametrize("template", HELDOUT)
def test_reference_gives_the_hidden_values_and_level_3s_earlier_version_does_not(template):
    """What the harness would see, in-process: the arguments go through JSON as they do there."""
    for seed in seeds_of(template):
        for level in LEVELS:
            task = FAMILY.generate(seed, level)
            assert task.meta.template == template and template in task.meta.tags
            config = hidden_config(task)
            cases = config["core"] + config["edge"]
            assert len(config["core"]) >= 12 and (level == 1) == (not config["edge"])
            source = task.solution.split("<<'TERMRL_EOF'\n", 1)[1].rsplit("TERMRL_EOF", 1)[0]
            assert _results(_function(source, config["function"]), cases) == [w for _, w in cases]
            assert len({w for _, w in config["core"]}) > 1, "a constant passes the ordinary inputs"
            if level == 3:
                (kept,) = task.workspace
                old = _function(task.workspace[kept].data.decode(), config["function"])
                assert _results(old, cases) != [w for _, w in cases]


@pytest.mark.parametrize("template", HELDOUT)
def test_each_heldout_template_validates(template):
    """One sandboxed check per template, the level rotating (the full grid is the slow test)."""
    level = LEVELS[HELDOUT.index(template) % len(LEVELS)]
    task = FAMILY.generate(seeds_of(template)[0], level)
    row = check_task(task)
    assert row.valid, (task.id, row.reason)


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("template", HELDOUT)
def test_each_heldout_template_validates_at_every_level(template, level):
    for seed in seeds_of(template):
        task = FAMILY.generate(seed, level)
        row = check_task(task)
        assert row.valid, (task.id, row.reason)
