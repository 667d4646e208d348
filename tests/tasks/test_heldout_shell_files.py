"""shell-files' held-out rules: heldout seeds draw only rule kinds no train seed draws, each
kind means what its instruction says, and its tasks are valid at every level."""

from __future__ import annotations

import ast
import dataclasses
import functools

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.base import HELDOUT_SEEDS, HELDOUT_V1_SEEDS
from termrl.tasks.families.shell_files import (
    FAMILY,
    HELDOUT_KINDS,
    HELDOUT_SOLVERS,
    TRAIN_KINDS,
    apply_rule,
    describe_rule,
    solver_source,
)

pytestmark = pytest.mark.filterwarnings("ignore")


@functools.cache
def seeds_of(kind: str, count: int = 1) -> tuple[int, ...]:
    """The first ``count`` heldout seeds that draw ``kind`` (the template is a seed's, not a
    level's, so any level finds the same ones)."""
    found = []
    for seed in HELDOUT_SEEDS:
        if FAMILY.generate(seed).meta.template == kind:
            found.append(seed)
            if len(found) == count:
                return tuple(found)
    raise AssertionError(kind)


def tree(*entries) -> list[dict]:
    """A manifest from ``(path, content)`` or ``(path, content, age)`` tuples."""
    return [{"path": e[0], "content": e[1], "age": e[2] if len(e) > 2 else 0} for e in entries]


def cfg_rule(task) -> dict:
    """The rule a task's reference script embeds."""
    line = next(x for x in task.solution.splitlines() if x.startswith("RULE = "))
    return ast.literal_eval(line.removeprefix("RULE = "))


def test_the_templates_are_the_rule_kinds_and_disjoint():
    assert FAMILY.train_templates == TRAIN_KINDS and FAMILY.heldout_templates == HELDOUT_KINDS
    assert len(HELDOUT_KINDS) >= 4 and not set(TRAIN_KINDS) & set(HELDOUT_KINDS)
    assert set(HELDOUT_SOLVERS) == set(HELDOUT_KINDS)


def test_heldout_seeds_draw_only_heldout_kinds_and_train_seeds_only_train_kinds():
    drawn = {split: set() for split in ("train", "heldout", "heldout-v1")}
    for seeds in (range(200), HELDOUT_SEEDS[:200], HELDOUT_V1_SEEDS[:50]):
        for seed in seeds:
            task = FAMILY.generate(seed)
            assert task.meta.template == task.meta.tags[3]
            drawn[task.meta.split].add(task.meta.template)
    assert drawn["heldout"] == set(HELDOUT_KINDS)
    assert drawn["train"] == set(TRAIN_KINDS)
    assert drawn["heldout-v1"] <= set(TRAIN_KINDS)


def test_a_heldout_reference_holds_only_its_own_rule():
    for kind in HELDOUT_KINDS:
        task = FAMILY.generate(seeds_of(kind)[0])
        assert HELDOUT_SOLVERS[kind] in task.solution
        assert not any(other in task.solution for other in TRAIN_KINDS + HELDOUT_KINDS if other != kind)


QUICK = {(kind, i % 3 + 1) for i, kind in enumerate(HELDOUT_KINDS)}
"""The (kind, level) pairs the default tier validates: every kind and every level once."""


@pytest.mark.parametrize("kind, level", [
    pytest.param(kind, level, marks=() if (kind, level) in QUICK else pytest.mark.slow)
    for kind in HELDOUT_KINDS for level in (1, 2, 3)])
def test_every_heldout_kind_is_valid_at_every_level(kind, level):
    task = FAMILY.generate(seeds_of(kind)[0], level)
    assert task.meta.template == kind and task.meta.split == "heldout"
    row = check_task(task)
    assert row.valid, row.reason


def test_heldout_levels_keep_the_scenario_and_add_their_steps():
    for kind in HELDOUT_KINDS:
        for seed in seeds_of(kind, 2):
            easy, normal, hard = (FAMILY.generate(seed, level) for level in (1, 2, 3))
            assert easy.meta.template == normal.meta.template == hard.meta.template == kind
            cfg = hidden_config(easy)
            assert b"# TODO" in easy.workspace[cfg["script"]].data
            assert [c["id"] for c in cfg["cases"]] == ["random0", "random1", "empty_root"]
            cfg = hidden_config(hard)
            ids = {c["id"] for c in cfg["cases"]}
            assert {"awkward_names_and_root_with_space", "quotes_dashes_and_deep_dirs"} <= ids
            assert cfg["lookalike_files"] and "non-zero status" in hard.instruction
            assert solver_source(cfg_rule(hard), check_root=True) in hard.solution
            assert describe_rule(cfg_rule(hard), cfg["root"]) in hard.instruction


def test_archive_old_keeps_relative_paths_under_the_archive():
    rule = {"kind": "archive_old", "days": 10, "dest": "attic"}
    got = apply_rule(rule, tree(("a/b c/old.txt", "x", 12), ("new.md", "y", 8), ("-d.txt", "z", 400)))
    assert got == {"files": {"attic/a/b c/old.txt": "x", "new.md": "y", "attic/-d.txt": "z"}}


def test_prune_empty_keeps_markers_and_drops_emptied_folders():
    rule = {"kind": "prune_empty", "mode": "blank", "keep": ".keep"}
    got = apply_rule(rule, tree(("a/b/x.txt", " \n"), ("a/y.txt", ""), ("k/.keep", ""), ("k/z", "\t"),
                                ("k/.KEEP", ""), ("s/t.txt", " x "), ("top.txt", "")))
    assert got == {"files": {"k/.keep": "", "s/t.txt": " x "}, "dirs": ["k", "s"]}
    rule["mode"] = "empty"
    assert apply_rule(rule, tree(("a/b/x.txt", " \n"), ("a/y.txt", "")))["dirs"] == ["a", "a/b"]


def test_keep_largest_ranks_bytes_per_directory_with_a_name_tie_break():
    rule = {"kind": "keep_largest", "k": 1, "which": "largest"}
    files = tree(("d/b.txt", "xx"), ("d/a.txt", "yy"), ("d/c.txt", "é"), ("e/u.txt", "xxx"), ("r.txt", ""))
    assert set(apply_rule(rule, files)["files"]) == {"d/a.txt", "e/u.txt", "r.txt"}
    rule |= {"k": 2, "which": "smallest"}
    assert set(apply_rule(rule, files)["files"]) == {"d/a.txt", "d/b.txt", "e/u.txt", "r.txt"}


def test_size_manifest_lists_bytes_and_skips_only_itself():
    rule = {"kind": "size_manifest", "name": "SIZES", "order": "size_desc"}
    files = tree(("SIZES", "old"), ("b/SIZES", "ab"), ("a.txt", "é"), ("Z.txt", "xy"))
    assert apply_rule(rule, files)["files"]["SIZES"] == "2\tZ.txt\n2\ta.txt\n2\tb/SIZES\n"
    rule["order"] = "path"
    assert apply_rule(rule, files)["files"]["SIZES"] == "2\tZ.txt\n2\ta.txt\n2\tb/SIZES\n"
    assert apply_rule(rule, [])["files"] == {"SIZES": ""}


def test_retype_matches_the_last_extension_in_any_case():
    rule = {"kind": "retype", "src": "jpeg", "dst": "jpg"}
    got = apply_rule(rule, tree(("x/Scan 2.JPEG", "1"), ("a.b.jpeg", "2"), ("n.jpeg.bak", "3"),
                                ("JPEG", "4"), ("p.jpegs", "5")))
    assert set(got["files"]) == {"x/Scan 2.jpg", "a.b.jpg", "n.jpeg.bak", "JPEG", "p.jpegs"}


@pytest.mark.parametrize("kind, old, new", [
    ("prune_empty", "    for folder, _, _ in os.walk(root, topdown=False):", "    for folder, _, _ in []:"),
    ("retype", 'extension.lower() == RULE["src"]', 'extension == RULE["src"]'),
], ids=["prune_empty_keeps_emptied_folders", "retype_is_case_sensitive"])
def test_the_hidden_tests_catch_a_near_miss(kind, old, new):
    task = FAMILY.generate(seeds_of(kind)[0])
    assert old in task.solution
    row = check_task(dataclasses.replace(task, solution=task.solution.replace(old, new)))
    assert row.reference_passed is False
