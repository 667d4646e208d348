"""shell-files levels: level 1 is smaller, plainer and starts from a skeleton; level 3 is larger,
hides more edge cases, has a look-alike tree to leave alone and a bad-ROOT step."""

from __future__ import annotations

import dataclasses
import random

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.shell_files import EXTS, FAMILY, make_rule, solver_source

pytestmark = pytest.mark.filterwarnings("ignore")

SEEDS = [*range(8), 1_000_000, 1_000_001]
"""Train seeds and two of the heldout-v1 split, which draw the train rules as they always did
(the held-out rules have their own tests in test_heldout_shell_files.py)."""


@pytest.fixture(params=[FAMILY], ids=[FAMILY.name])
def family(request):
    """The family under test; its id puts the family's name in every test id (``-k shell-files``)."""
    return request.param


config = hidden_config


def rule_of(seed: int) -> dict:
    """The seed's rule: the family's first draw."""
    return make_rule(random.Random(f"{FAMILY.name}:{seed}"))


def test_tree_sizes_grow_with_the_level(family):
    for seed in SEEDS:
        sizes = [len(config(family.generate(seed, level))["original"]) for level in (1, 2, 3)]
        assert sizes[0] < sizes[1] < sizes[2], (seed, sizes)


def test_same_scenario_at_every_level(family):
    for seed in SEEDS:
        tasks = [family.generate(seed, level) for level in (1, 2, 3)]
        assert len({t.meta.tags[3] for t in tasks}) == 1
        assert len({config(t)["root"] for t in tasks}) == 1


def test_level_1_starts_from_a_skeleton_and_hides_only_plain_cases(family):
    for seed in SEEDS:
        task = family.generate(seed, 1)
        cfg = config(task)
        skeleton = task.workspace[cfg["script"]]
        assert skeleton.mode == 0o755 and not cfg["script"].endswith(".sh")
        assert b"# TODO" in skeleton.data and b"os.walk" in skeleton.data
        assert "skeleton" in task.instruction and "empty ROOT" in task.instruction
        assert [c["id"] for c in cfg["cases"]] == ["random0", "random1", "empty_root"]
        names = [p.rpartition("/")[2] for c in cfg["cases"] for p in
                 [f["path"] for f in c["manifest"]] + list(cfg["original"])]
        if rule_of(seed).get("exts") != ["gz"]:
            assert all("." not in n or n.rpartition(".")[2] in EXTS for n in names), seed
        assert "test_script_rejects_a_bad_root" not in task.tests["test_tree.py"].data.decode()


def test_level_3_hides_awkward_deep_trees_a_lookalike_and_a_root_check(family):
    for seed in SEEDS:
        task = family.generate(seed, 3)
        cfg = config(task)
        ids = [c["id"] for c in cfg["cases"]]
        assert {"awkward_names_and_root_with_space", "random2", "quotes_dashes_and_deep_dirs"} <= set(ids)
        awkward = next(c for c in cfg["cases"] if c["id"] == "quotes_dashes_and_deep_dirs")
        names = [f["path"].rpartition("/")[2] for f in awkward["manifest"]]
        assert sum(n.startswith("-") or "'" in n or "[" in n or "$" in n or "&" in n or "  " in n
                   or "(" in n for n in names) >= 4
        assert any(f["path"].count("/") >= 4 for f in awkward["manifest"])
        other = cfg["lookalike"]
        decoy = {p.removeprefix(other + "/"): f.data.decode() for p, f in task.workspace.items()
                 if p.startswith(other + "/")}
        assert decoy and decoy == cfg["lookalike_files"]
        source = task.tests["test_tree.py"].data.decode()
        assert "def test_lookalike_tree_left_alone" in source
        assert "def test_script_rejects_a_bad_root" in source
        assert f"`{other}/`" in task.instruction and "non-zero status" in task.instruction
        if rule_of(seed)["kind"] == "delete_age":
            assert any(other in line for line in task.setup)


@pytest.mark.parametrize("seed, level", [(64, 1), (1_000_003, 1), (14, 3), (1, 3)])
def test_more_levels_are_valid(family, seed, level):
    row = check_task(family.generate(seed, level))
    assert row.valid, row.reason


def test_a_script_fit_for_level_1_fails_level_3(family):
    seed = 3
    easy, hard = family.generate(seed, 1), family.generate(seed, 3)
    assert solver_source(rule_of(seed)) in easy.solution and check_task(easy).valid
    script, root = config(hard)["script"], config(hard)["root"]
    no_root_check = hard.solution.replace(solver_source(rule_of(seed), check_root=True),
                                          solver_source(rule_of(seed)))
    assert no_root_check != hard.solution
    row = check_task(dataclasses.replace(hard, solution=no_root_check))
    assert row.reference_passed is False and "rejects_a_bad_root" in row.reason
    also_the_copy = hard.solution + f"./'{script}' '{config(hard)['lookalike']}'\n"
    row = check_task(dataclasses.replace(hard, solution=also_the_copy))
    assert row.reference_passed is False and "lookalike_tree_left_alone" in row.reason
    assert root != config(hard)["lookalike"]
