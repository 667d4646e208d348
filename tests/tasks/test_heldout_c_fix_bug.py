"""c-fix-bug's held-out templates: ``heldout`` seeds draw only programs no train seed draws, each
validates at every level, and every one of its bug sites really breaks the program."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from functools import cache

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config
from termrl.tasks.families.base import HELDOUT_SEEDS, LEVELS
from termrl.tasks.families.c_fix_bug import (
    BUG_KINDS,
    COMPILE_KINDS,
    HELDOUT_TEMPLATES,
    TEMPLATES,
    render,
    typo,
)

pytestmark = pytest.mark.filterwarnings("ignore")
FAMILY = FAMILIES["c-fix-bug"]
HELDOUT = {t.key: t for t in HELDOUT_TEMPLATES}


@pytest.fixture(autouse=True, params=[FAMILY.name])
def family(request):
    """Puts the family's name in every test id, so ``-k c-fix-bug`` selects these tests."""
    return FAMILIES[request.param]


@cache
def heldout_seed(template: str) -> int:
    """The first ``heldout`` seed that draws ``template`` (the draw is the same at every level)."""
    return next(s for s in HELDOUT_SEEDS if FAMILY.generate(s).meta.template == template)


def test_template_names_are_declared_and_disjoint():
    assert FAMILY.train_templates == tuple(t.key for t in TEMPLATES)
    assert FAMILY.heldout_templates == tuple(HELDOUT)
    assert len(HELDOUT) >= 5
    assert not set(FAMILY.train_templates) & set(FAMILY.heldout_templates)
    assert not {t.source for t in TEMPLATES} & {t.source for t in HELDOUT_TEMPLATES}


def test_heldout_seeds_draw_only_heldout_templates_and_train_seeds_only_train_ones():
    start = HELDOUT_SEEDS.start
    held = {FAMILY.generate(s).meta.template for s in range(start, start + 200)}
    assert held == set(FAMILY.heldout_templates)
    train = {FAMILY.generate(s).meta.template for s in range(200)}
    assert train == set(FAMILY.train_templates)
    v1 = {FAMILY.generate(s).meta.template for s in range(1_000_000, 1_000_040)}
    assert v1 <= set(FAMILY.train_templates)


@pytest.mark.parametrize("template", sorted(HELDOUT))
def test_every_heldout_template_has_every_bug_kind(template):
    assert {site[0] for site in HELDOUT[template].sites} == set(BUG_KINDS)


@pytest.mark.parametrize("level", LEVELS)
def test_heldout_level_3_siblings_are_heldout_programs(level):
    for template in sorted(HELDOUT):
        task = FAMILY.generate(heldout_seed(template), level)
        sources = [f.data.decode() for path, f in task.workspace.items() if path.endswith(".c")]
        assert len(sources) == (2 if level == 3 else 1)
        assert all("int main(void)" in text for text in sources)
        train_files = {f"{name}.c" for t in TEMPLATES for name in t.files}
        assert not set(task.workspace) & train_files, task.workspace.keys()


def _variant(tmpl, rng):
    names = {ph: rng.choice(pool) for ph, pool in tmpl.names.items()}
    used = set(names.values())
    for ph, name in list(names.items()):
        t = typo(name)
        names[ph + "_typo"] = t + "_x" if t in used else t
    return names, tmpl.consts(rng)


def _build(tmp_path, src: str, tag: str):
    path = tmp_path / f"{tag}.c"
    path.write_text(src)
    exe = tmp_path / tag
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-O2", "-o", str(exe), str(path)],
                       capture_output=True, timeout=120, check=False)
    return exe if r.returncode == 0 else None


def _output(exe, stdin: str) -> str:
    try:
        r = subprocess.run([str(exe)], input=stdin.encode(), capture_output=True, timeout=5, check=False)
    except subprocess.TimeoutExpired:
        return "(timed out)"
    return r.stdout.decode() if r.returncode == 0 else f"(exit {r.returncode})"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("template", sorted(HELDOUT))
def test_heldout_reference_is_right_and_every_bug_site_breaks_it(template, tmp_path):
    """The reference compiles cleanly and matches the Python reference on every hidden input; each
    compile-kind site alone stops gcc; each wrong-result site alone compiles and fails an edge
    case (edge cases are checked at every level), without hanging."""
    tmpl = HELDOUT[template]
    names, consts = _variant(tmpl, random.Random(f"test:{template}"))
    core, edge = tmpl.gen(random.Random(template), consts)
    exe = _build(tmp_path, render(tmpl, names, consts), "ref")
    assert exe is not None
    for stdin in core + edge:
        assert _output(exe, stdin) == tmpl.run(consts, stdin), stdin
    for site, (kind, _good, _bad) in enumerate(tmpl.sites):
        broken = _build(tmp_path, render(tmpl, names, consts, (site,)), f"bug{site}")
        if kind in COMPILE_KINDS:
            assert broken is None, (site, kind)
            continue
        assert broken is not None, (site, kind)
        outputs = [_output(broken, stdin) for stdin in edge]
        assert "(timed out)" not in outputs, (site, kind)
        assert any(out != tmpl.run(consts, stdin) for out, stdin in zip(outputs, edge)), (site, kind)


@pytest.mark.parametrize("template", sorted(HELDOUT))
def test_every_heldout_template_validates(template):
    """Reference passes, do-nothing fails: one level per template here (all levels get covered),
    every level of every template in the slow test below."""
    level = LEVELS[sorted(HELDOUT).index(template) % len(LEVELS)]
    task = FAMILY.generate(heldout_seed(template), level)
    assert task.meta.template == template and task.meta.split == "heldout"
    row = check_task(task)
    assert row.valid, (template, level, row.reason)


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("template", sorted(HELDOUT))
def test_every_heldout_template_validates_at_every_level(template, level):
    row = check_task(FAMILY.generate(heldout_seed(template), level))
    assert row.valid, (template, level, row.reason)


@pytest.mark.parametrize("template", sorted(HELDOUT))
def test_heldout_levels_keep_their_meaning(template):
    """Level 1 points at the line where the buggy program departs from the fix, inside the named
    function; level 3 adds a bug of the other class (compile error vs wrong result)."""
    seed = heldout_seed(template)
    easy, hard = FAMILY.generate(seed, 1), FAMILY.generate(seed, 3)
    found = re.search(r"exactly one bug, at line (\d+) \(in the function `(\w+)`\)", easy.instruction)
    assert found, easy.instruction
    line, func = int(found.group(1)), found.group(2)
    src = hidden_config(easy)["source"]
    buggy = easy.workspace[src].data.decode().splitlines()
    fixed = easy.solution.split("<<'TERMRL_EOF'\n", 1)[1].split("\nTERMRL_EOF\n", 1)[0].splitlines()
    assert buggy[:line - 1] == fixed[:line - 1] and buggy[line - 1] != fixed[line - 1]
    assert any(text.startswith(("static", "int main")) and f"{func}(" in text for text in buggy[:line])
    kinds = [tag for tag in hard.meta.tags if tag in BUG_KINDS]
    assert len(kinds) == 2 and sum(kind in COMPILE_KINDS for kind in kinds) == 1
