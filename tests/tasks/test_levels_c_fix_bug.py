"""c-fix-bug's levels: 1 names the bug's line and shows the edge cases with a check script, 3 adds
a second bug of the other class, a sibling program to leave alone and a batch-output step."""

from __future__ import annotations

import hashlib
import re

import pytest

from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import heredoc, hidden_config
from termrl.tasks.families.c_fix_bug import COMPILE_KINDS
from termrl.tasks.runtime import open_sandbox
from termrl.verify import verify

pytestmark = pytest.mark.filterwarnings("ignore")
FAMILY = FAMILIES["c-fix-bug"]
SEEDS = [*range(12), *range(FAMILY.heldout_seeds.start, FAMILY.heldout_seeds.start + 12)]
"""Train seeds and ``heldout`` seeds: the level semantics hold for train and held-out templates alike."""


@pytest.fixture(autouse=True, params=[FAMILY.name])
def family(request):
    """Puts the family's name in every test id, so ``-k c-fix-bug`` selects these tests."""
    return FAMILIES[request.param]


_config = hidden_config


def _fixed(task) -> str:
    """The corrected program, as the reference solution writes it."""
    return task.solution.split("<<'TERMRL_EOF'\n", 1)[1].split("\nTERMRL_EOF\n", 1)[0] + "\n"


def _source(task) -> str:
    return _config(task)["source"]


@pytest.mark.parametrize("seed", SEEDS)
def test_level_1_names_the_line_and_function_of_the_bug(seed):
    task = FAMILY.generate(seed, 1)
    found = re.search(r"exactly one bug, at line (\d+) \(in the function `(\w+)`\)", task.instruction)
    assert found, task.instruction
    line, func = int(found.group(1)), found.group(2)
    buggy = task.workspace[_source(task)].data.decode().splitlines()
    fixed = _fixed(task).splitlines()
    assert buggy[line - 1] != fixed[line - 1]
    assert buggy[:line - 1] == fixed[:line - 1]
    header = next(text for text in reversed(buggy[:line]) if re.match(r"\w.*\(.*\{$", text))
    assert f"{func}(" in header
    assert "at line" not in FAMILY.generate(seed).instruction


@pytest.mark.parametrize("seed", SEEDS[::4])
def test_level_1_shows_its_edge_cases_and_checks_fewer_ordinary_inputs(seed):
    easy, default, hard = (FAMILY.generate(seed, level) for level in (1, 2, 3))
    marks = [[case["mark"] for case in _config(task)["cases"]] for task in (easy, default, hard)]
    assert marks[0].count("core") == 2 < marks[1].count("core") == marks[2].count("core") == 5
    assert marks[0].count("boundary") == marks[1].count("boundary") > 0
    shown = {easy.workspace[path].data.decode(): easy.workspace[path.replace(".in", ".out")].data.decode()
             for path in easy.workspace if path.startswith("cases/") and path.endswith(".in")}
    for case in _config(easy)["cases"]:
        if case["mark"] == "boundary":
            assert shown[case["in"]] == case["out"]
    assert easy.workspace["check.sh"].mode & 0o111
    assert "`bash check.sh`" in easy.instruction
    assert not any(path.startswith("cases/") or path == "check.sh" for path in default.workspace)


def _box_run(box, command: str):
    return box.run(["/bin/bash", "-c", command], timeout=60)


def test_level_1_check_script_flags_the_bug_and_passes_the_fix():
    task = FAMILY.generate(FAMILY.heldout_seeds.start + 3, 1)
    box = open_sandbox(task, "bwrap")
    try:
        before = _box_run(box, "bash check.sh")
        assert before.exit_code != 0 and ("FAIL" in before.stdout or "compilation failed" in before.stdout)
        after = _box_run(box, task.solution + "bash check.sh\n")
        assert after.exit_code == 0, after.stdout + after.stderr
        shown = 1 + sum(case["mark"] == "boundary" for case in _config(task)["cases"])  # the example too
        assert "FAIL" not in after.stdout and after.stdout.count("PASS") == shown
    finally:
        box.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_level_3_injects_a_compile_bug_and_a_logic_bug(seed):
    hard, default = FAMILY.generate(seed, 3), FAMILY.generate(seed)
    kinds = [tag for tag in hard.meta.tags if tag in {"off_by_one", "wrong_operator", *COMPILE_KINDS}]
    assert len(kinds) == 2 and sum(kind in COMPILE_KINDS for kind in kinds) == 1
    assert kinds[0] in default.meta.tags
    src = _source(hard)
    assert hard.workspace[src] != default.workspace[src]
    assert _fixed(hard) == _fixed(default)
    assert "exactly two bugs" in hard.instruction


@pytest.mark.parametrize("seed", SEEDS[::4])
def test_level_3_has_a_sibling_program_and_a_batch_step_that_the_tests_check(seed):
    hard = FAMILY.generate(seed, 3)
    config, tests = _config(hard), hard.tests["test_program.py"].data.decode()
    (keep,) = config["left_alone"]
    assert set(hard.workspace) == {config["source"], "example_input.txt", "batch_input.txt", keep}
    assert keep.endswith(".c") and "int main(void)" in hard.workspace[keep].data.decode()
    assert config["left_alone"][keep] == hashlib.sha256(hard.workspace[keep].data).hexdigest()
    assert f"`{keep}`" in hard.instruction and "leave it unchanged" in hard.instruction
    assert "`batch_output.txt`" in hard.instruction
    assert "def test_files_left_alone" in tests and "def test_batch_output_saved" in tests
    assert "def test_batch_output_saved" not in FAMILY.generate(seed).tests["test_program.py"].data.decode()


def _passes(task, command: str) -> bool:
    box = open_sandbox(task, "bwrap")
    try:
        _box_run(box, command)
        return verify(task, box, static=False).passed
    finally:
        box.close()


def test_level_3_rejects_what_passes_level_1():
    seed = next(s for s in SEEDS if FAMILY.generate(s).meta.tags[3] not in COMPILE_KINDS)
    easy, default, hard = (FAMILY.generate(seed, level) for level in (1, 2, 3))
    src, (keep,) = _source(hard), _config(hard)["left_alone"]
    just_fix = "#!/bin/bash\nset -e\n" + heredoc(src, _fixed(hard))
    assert _passes(easy, just_fix)
    assert _passes(hard, hard.solution)
    assert not _passes(hard, just_fix)
    # Fixing only what gcc complains about leaves level 2's (logic) bug in place.
    only_compile_fix = heredoc(src, default.workspace[src].data.decode())
    assert not _passes(hard, hard.solution + only_compile_fix)
    assert not _passes(hard, hard.solution + f"echo '/* tidied */' >> {keep}\n")
