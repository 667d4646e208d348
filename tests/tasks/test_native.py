"""The native task format: the built-in suite, malformed directories, dump/load round trips."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import CATEGORIES, DIFFICULTIES, Limits, TaskFile
from termrl.protocols import TestKind as Kind
from termrl.tasks.formats import TaskFormatError, load_task
from termrl.tasks.formats.native import dump_native, load_native
from termrl.tasks.suites import BUILTIN_DIR, builtin_entries

from .conftest import TB_DIR, assert_names

# --------------------------------------------------------------------------- the built-in suite


@pytest.fixture(scope="module")
def builtin():
    return builtin_entries()


def test_builtin_tasks_all_load(builtin):
    errors = [f"{e.id}: {e.error}" for e in builtin if e.task is None]
    assert not errors, "\n".join(errors)
    assert len(builtin) >= 40
    dirs = sorted(d.name for d in BUILTIN_DIR.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))
    assert [e.id for e in builtin] == dirs


def test_builtin_tasks_span_categories(builtin):
    categories = {e.task.meta.category for e in builtin}
    assert len(categories) >= 6, categories
    assert categories <= set(CATEGORIES)


def test_builtin_task_metadata(builtin):
    ids = [e.task.id for e in builtin]
    assert len(set(ids)) == len(ids)
    for e in builtin:
        t = e.task
        assert t.id == e.id, "the id in task.toml should match the directory name"
        assert t.meta.source == "native"
        assert t.meta.difficulty in DIFFICULTIES
        assert t.workdir.startswith("/")
        assert t.instruction.strip(), t.id
        assert t.solution and t.solution.strip(), f"{t.id} has no reference solution"
        assert t.path == str(BUILTIN_DIR / t.id)


def test_builtin_tests_are_pytest_files_with_markers(builtin):
    seen = set()
    for e in builtin:
        t = e.task
        assert t.test_spec.kind is Kind.PYTEST, t.id
        test_files = [p for p in t.tests if re.fullmatch(r"(.*/)?test_[^/]*\.py", p)]
        assert test_files, f"{t.id}: no test_*.py in tests/"
        source = "\n".join(t.tests[p].data.decode() for p in test_files)
        assert "import pytest" in source, t.id
        markers = set(re.findall(r"@pytest\.mark\.(core|boundary)\b", source))
        assert markers, f"{t.id}: no test carries pytest.mark.core or pytest.mark.boundary"
        seen |= markers
    assert seen == {"core", "boundary"}


def test_builtin_hidden_tests_are_not_in_the_workspace(builtin):
    for e in builtin:
        t = e.task
        for rel, f in t.tests.items():
            if rel.endswith(".py"):
                assert f.data not in {w.data for w in t.workspace.values()}, \
                    f"{t.id}: hidden test {rel} is also in the workspace"


# --------------------------------------------------------------------------- malformed task directories

GOOD_TOML = """\
version = 1
id = "tiny-count-lines"
category = "shell"
difficulty = "easy"
tags = ["wc"]

[limits]
agent_timeout_sec = 120
memory_mb = 512
"""

GOOD_TEST = """\
from pathlib import Path

import pytest


@pytest.mark.core
def test_count():
    assert Path("count.txt").read_text().strip() == "3"
"""


def make_native(root: Path, toml: str = GOOD_TOML, tests: dict[str, str] | None = None,
                instruction: str | None = "Write the number of lines of `input.txt` to `count.txt`.\n",
                solution: str | None = "wc -l < input.txt > count.txt\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(toml)
    if instruction is not None:
        (root / "instruction.md").write_text(instruction)
    (root / "workspace").mkdir()
    (root / "workspace" / "input.txt").write_text("a\nb\nc\n")
    (root / "tests").mkdir()
    for name, text in (tests if tests is not None else {"test_count.py": GOOD_TEST}).items():
        (root / "tests" / name).write_text(text)
    if solution is not None:
        (root / "solution").mkdir()
        (root / "solution" / "solve.sh").write_text(solution)
    return root


def with_line(toml: str, key: str, value: str) -> str:
    """``toml`` with top-level ``key`` set to ``value`` (raw TOML), replacing any existing line."""
    lines = [l for l in toml.splitlines() if not l.startswith(f"{key} =")]
    return "\n".join([f"{key} = {value}", *lines]) + "\n"


def without_line(toml: str, key: str) -> str:
    return "\n".join(l for l in toml.splitlines() if not l.startswith(f"{key} =")) + "\n"


def test_minimal_native_task_loads_and_validates(tmp_path):
    task = load_task(make_native(tmp_path / "tiny-count-lines"))
    assert task.id == "tiny-count-lines"
    assert task.meta.category == "shell" and task.meta.difficulty == "easy"
    assert task.meta.tags == ("wc",)
    assert task.limits == Limits(agent_timeout_sec=120.0, memory_mb=512)
    assert task.workspace == {"input.txt": TaskFile(b"a\nb\nc\n")}
    assert set(task.tests) == {"test_count.py"}
    assert task.test_spec.kind is Kind.PYTEST
    row = check_task(task)
    assert row.valid, row.reason


def test_native_script_kind_validates(tmp_path):
    toml = GOOD_TOML + '\n[tests]\nkind = "script"\nscript = "check.sh"\n'
    root = make_native(tmp_path / "tiny-script", toml=toml,
                       tests={"check.sh": '#!/bin/bash\n[ "$(cat count.txt)" = 3 ]\n'})
    task = load_task(root)
    assert task.test_spec.kind is Kind.SCRIPT and task.test_spec.script == "check.sh"
    row = check_task(task)
    assert row.valid, row.reason
    assert row.reference_passed is True and row.nop_passed is False


MALFORMED = [
    # id, how to break the task, file named, field named
    ("invalid-toml", {"toml": 'version = 1\ncategory = "shell\n'}, "task.toml", None),
    ("missing-version", {"toml": without_line(GOOD_TOML, "version")}, "task.toml", "version"),
    ("version-2", {"toml": with_line(GOOD_TOML, "version", "2")}, "task.toml", "version"),
    ("version-string", {"toml": with_line(GOOD_TOML, "version", '"1"')}, "task.toml", "version"),
    ("difficulty-int", {"toml": with_line(GOOD_TOML, "difficulty", "7")}, "task.toml", "difficulty"),
    ("difficulty-extreme", {"toml": with_line(GOOD_TOML, "difficulty", '"extreme"')}, "task.toml", "difficulty"),
    ("category-unknown", {"toml": with_line(GOOD_TOML, "category", '"gaming"')}, "task.toml", "category"),
    ("tags-string", {"toml": with_line(GOOD_TOML, "tags", '"wc"')}, "task.toml", "tags"),
    ("split-unknown", {"toml": with_line(GOOD_TOML, "split", '"validation"')}, "task.toml", "split"),
    ("relative-workdir", {"toml": with_line(GOOD_TOML, "workdir", '"workspace"')}, "task.toml", "workdir"),
    ("bad-id", {"toml": with_line(GOOD_TOML, "id", '"../escape"')}, "task.toml", "id"),
    ("memory-negative", {"toml": GOOD_TOML.replace("memory_mb = 512", "memory_mb = -1")},
     "task.toml", "limits.memory_mb"),
    ("memory-float", {"toml": GOOD_TOML.replace("memory_mb = 512", "memory_mb = 512.5")},
     "task.toml", "limits.memory_mb"),
    ("timeout-nan", {"toml": GOOD_TOML.replace("agent_timeout_sec = 120", "agent_timeout_sec = nan")},
     "task.toml", "limits.agent_timeout_sec"),
    ("unknown-limit", {"toml": GOOD_TOML + "cpus = 2\n"}, "task.toml", "limits.cpus"),
    ("setup-not-list", {"toml": GOOD_TOML + '\n[setup]\ncommands = "git init"\n'}, "task.toml", "setup.commands"),
    ("setup-not-table", {"toml": with_line(GOOD_TOML, "setup", '["git init"]')}, "task.toml", "setup"),
    ("missing-instruction", {"instruction": None}, "instruction.md", None),
    ("empty-tests", {"tests": {}}, "tests", None),
    ("pytest-kind-without-test-file", {"tests": {"helpers.py": "X = 1\n"}}, "tests", None),
    ("script-missing", {"toml": GOOD_TOML + '\n[tests]\nkind = "script"\nscript = "check.sh"\n'},
     "task.toml", "tests.script"),
    ("script-unnamed", {"toml": GOOD_TOML + '\n[tests]\nkind = "script"\n'}, "task.toml", "tests.script"),
    ("tests-kind-unknown", {"toml": GOOD_TOML + '\n[tests]\nkind = "junit"\n'}, "task.toml", "tests.kind"),
]


@pytest.mark.parametrize("how,file_name,field", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_native_task_names_file_and_field(tmp_path, how, file_name, field):
    root = make_native(tmp_path / "tiny-count-lines", **how)
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, file_name, field)
    assert str(tmp_path) in e.value.file, "the error should give the full path of the file"


def test_invalid_toml_says_so(tmp_path):
    root = make_native(tmp_path / "t", toml='version = 1\ncategory = "shell\n')
    with pytest.raises(TaskFormatError, match="not valid TOML"):
        load_native(root)


# --------------------------------------------------------------------------- dump_native round trips


def test_dump_then_load_round_trips_every_builtin(builtin, tmp_path):
    for e in builtin:
        original = e.task
        out = dump_native(original, tmp_path / original.id)
        again = load_native(out)
        assert again.id == original.id
        assert again.instruction == original.instruction
        assert again.workspace == original.workspace, original.id
        assert again.tests == original.tests, original.id
        assert again.holdout_tests == original.holdout_tests, original.id
        assert again.solution == original.solution, original.id
        assert again.setup == original.setup, original.id
        assert again.workdir == original.workdir
        assert again.limits == original.limits, original.id
        assert again.test_spec == original.test_spec, original.id
        assert again.meta == original.meta, original.id


def test_dump_round_trips_script_kind_and_executable_bits(tmp_path):
    toml = GOOD_TOML + '\n[tests]\nkind = "script"\nscript = "check.sh"\n'
    root = make_native(tmp_path / "src" / "tiny-script", toml=toml,
                       tests={"check.sh": '#!/bin/bash\n[ "$(cat count.txt)" = 3 ]\n'})
    (root / "workspace" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "workspace" / "run.sh").chmod(0o755)
    original = load_native(root)
    again = load_native(dump_native(original, tmp_path / "out" / "tiny-script"))
    assert again.test_spec == original.test_spec
    assert again.workspace["run.sh"].mode == 0o755
    assert again.workspace["input.txt"].mode == 0o644
    assert again.workspace == original.workspace and again.tests == original.tests


def test_dump_round_trips_non_bmp_text_in_setup(tmp_path):
    """BUG: dump_native writes TOML strings with json.dumps (ensure_ascii=True), which turns a
    character outside the Basic Multilingual Plane into a surrogate pair like "\\ud83c\\udf89";
    TOML rejects surrogate escapes, so the dumped task.toml does not load."""
    base = load_native(make_native(tmp_path / "src" / "tiny-count-lines"))
    original = replace(base, setup=("printf 'build ok \U0001F389\\n' > banner.txt",),
                       meta=replace(base.meta, tags=("emoji-\U0001F600",)))
    again = load_native(dump_native(original, tmp_path / "out" / "tiny-count-lines"))
    assert again.setup == original.setup
    assert again.meta.tags == original.meta.tags


def test_dump_refuses_tasks_the_native_format_cannot_express(tmp_path):
    """BUG: dump_native is documented for 'families and imported tasks', but an imported
    Terminal-Bench task's extra_files (/data/...), env and TestSpec.env/pytest_files are
    silently dropped, so the dumped task is a different (broken) task. It should refuse."""
    task = load_task(TB_DIR / "fix-inventory-valuation")
    assert task.extra_files  # /data/stock.csv
    with pytest.raises(ValueError):
        dump_native(task, tmp_path / "out")
