"""py-function's levels: 1 drops the hidden edge cases, 3 removes the stub and adds an earlier
version of the function that must stay unchanged."""

from __future__ import annotations

import pytest

from termrl.tasks.families import FAMILIES
from termrl.tasks.runtime import open_sandbox
from termrl.verify import verify

pytestmark = pytest.mark.filterwarnings("ignore")
FAMILY = FAMILIES["py-function"]
SEED = FAMILY.heldout_seeds.start + 2


def _tests(task) -> str:
    return task.tests["test_function.py"].data.decode()


def test_level_1_checks_ordinary_inputs_only():
    easy, default = FAMILY.generate(SEED, 1), FAMILY.generate(SEED)
    assert "def test_edge_cases" in _tests(default) and "def test_edge_cases" not in _tests(easy)
    assert "including edge cases" in default.instruction and "ordinary inputs" in easy.instruction
    assert easy.workspace == default.workspace


def test_level_3_has_no_stub_and_a_distractor_to_keep():
    hard, default = FAMILY.generate(SEED, 3), FAMILY.generate(SEED)
    (stub,) = default.workspace
    (kept,) = hard.workspace
    assert kept == stub.replace(".py", "_v1.py")
    assert "def test_files_left_alone" in _tests(hard)
    assert f"`{kept}`" in hard.instruction and "create the file" in hard.instruction
    name = default.instruction.split("`")[1]
    assert f"def {name}(" in hard.workspace[kept].data.decode()


def _passes(task, command: str) -> bool:
    box = open_sandbox(task)
    try:
        box.exec(command)
        return verify(task, box).passed
    finally:
        box.close()


def test_level_3_fails_an_edit_of_the_earlier_version_and_a_copy_of_it():
    hard = FAMILY.generate(SEED, 3)
    (kept,) = hard.workspace
    module = kept.replace("_v1.py", ".py")
    assert _passes(hard, hard.solution)
    assert not _passes(hard, f"cp {kept} {module}")
    assert not _passes(hard, f"{hard.solution}\necho '# touched' >> {kept}")
