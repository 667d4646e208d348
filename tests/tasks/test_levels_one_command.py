"""one-command's levels: level 1 is one file in the current directory, level 3 chains a second
step into the one line, every level keeps the quickstart's empty workspace and single action,
and a held-out task is never a combination a train seed has."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

import pytest

from termrl.checks.validate import check_task
from termrl.episode import starts_empty
from termrl.tasks.families.one_command import FAMILY, combination, held_out

pytestmark = pytest.mark.filterwarnings("ignore")

TRAIN = range(FAMILY.train_seeds.start, FAMILY.train_seeds.start + 3000)
HELDOUT = range(FAMILY.heldout_seeds.start, FAMILY.heldout_seeds.start + 300)


def hidden(task) -> tuple[dict, list[str]]:
    """The hidden tests' CONFIG and the names of their test functions."""
    tree = ast.parse(task.tests["test_one_command.py"].data.decode())
    config = next(ast.literal_eval(node.value) for node in tree.body
                  if isinstance(node, ast.Assign) and node.targets[0].id == "CONFIG")
    return config, [node.name for node in tree.body
                    if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def command(task) -> str:
    return task.solution.splitlines()[-1]


@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_level_is_one_command_in_an_empty_workspace_with_two_hidden_tests(level):
    for seed in (*range(6), *range(FAMILY.heldout_seeds.start, FAMILY.heldout_seeds.start + 6)):
        task = FAMILY.generate(seed, level)
        assert starts_empty(task) and task.limits.max_steps == 1
        assert len(task.solution.splitlines()) == 3 and "\n" not in task.instruction
        assert len(hidden(task)[1]) == 2


def test_level_1_is_one_file_in_the_current_directory_named_by_two_values():
    for seed in range(30):
        easy, usual = FAMILY.generate(seed, 1), FAMILY.generate(seed)
        assert "mkdir" not in command(easy) and "/" not in hidden(easy)[0]["path"]
        assert len(combination(seed, 1)) == 3 and len(combination(seed)) == 4
        assert hidden(easy)[0]["kind"] == hidden(usual)[0]["kind"]
        assert hidden(easy)[1] == hidden(usual)[1]
        if hidden(easy)[0]["kind"] == "upper":
            assert "`tr a-z A-Z`" in easy.instruction and "tr a-z A-Z" not in usual.instruction


def test_level_3_chains_a_second_step_onto_the_seeds_level_2_task():
    kinds = set()
    for seed in range(30):
        hard, usual = FAMILY.generate(seed, 3), FAMILY.generate(seed)
        assert combination(seed, 3)[:4] == combination(seed)
        config, names = hidden(hard)
        kinds.add(config["kind"])
        assert len(command(hard)) > len(command(usual))
        if config["kind"] == "file":
            first, second = config["expected"].split("\n")
            assert first == hidden(usual)[0]["expected"] and second != first
            assert config["path"].count("/") == 2
        elif config["kind"] == "empty":
            assert len(config["paths"]) == 2 and config["paths"][0].count("/") == 2
            assert names == ["test_first_file_is_empty", "test_second_file_is_empty"]
        else:
            word = hidden(usual)[0]["expected"]
            assert config["expected"] == word[::-1] != word and config["path"].count("/") == 1
    assert kinds == {"file", "empty", "upper"}


@pytest.mark.parametrize("level", [1, 3])
def test_heldout_tasks_are_combinations_no_train_seed_has(level):
    """Level 1 has its own combinations, split by the hash; level 3 extends level 2's, so a
    held-out level-3 task is built on a combination no train seed has at level 2 or 3."""
    base = 3 if level == 1 else 4
    train = {combination(s, level)[:base] for s in TRAIN}
    held = {combination(s, level)[:base] for s in HELDOUT}
    assert len(held) > 50 and not train & held
    assert all(held_out(c) for c in held) and not any(held_out(c) for c in train)
    assert not {FAMILY.generate(s, level).instruction for s in TRAIN} & {
        FAMILY.generate(s, level).instruction for s in HELDOUT}
    if level == 3:
        assert not held & {combination(s) for s in TRAIN}


@pytest.mark.parametrize("level", [1, 3])
@pytest.mark.parametrize("seed", [0, 1, 2, 1000000, 1000001, 1000002])
def test_levels_are_valid_tasks(level, seed):
    task = FAMILY.generate(seed, level)
    row = check_task(task)
    assert row.valid, (task.id, row.reason)


def careless(command: str) -> str:
    """The usual answer's shape: no ``rev``, one line written, ``echo >`` in place of ``touch``."""
    command = re.sub(r" && echo \S+ >> \S+$", "", command.replace(" | rev", ""))
    head, _, paths = command.partition("touch ")
    return head + " && ".join(f"echo > {p}" for p in paths.split()) if paths else command


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_careless_answer_passes_level_1_but_fails_level_3(seed):
    easy, hard = FAMILY.generate(seed, 1), FAMILY.generate(seed, 3)
    assert check_task(replace(easy, solution=careless(command(easy)))).valid
    row = check_task(replace(hard, solution=careless(command(hard))))
    assert not row.valid and row.reference_passed is False, row.reason
