"""``termrl tasks strength``: mutants of a reference solution, verified against the hidden tests."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys

import pytest

from termrl.checks.mutants import c_mutants, mutants, spread
from termrl.checks.shell_mutants import mutants_for
from termrl.checks.strength import WEAK, strength, summary
from termrl.protocols import Task, TaskFile, TaskMeta

SOLUTION = '''def is_adult(age):
    """Whether someone of ``age`` years is an adult (18 or more)."""
    return age >= 18
'''
HEADER = b"import os\nimport sys\n\nsys.path.insert(0, os.getcwd())  # the workdir, where solution.py is\n\n"
WEAK_TESTS = HEADER + b"from solution import is_adult\n\n\ndef test_thirty():\n    assert is_adult(30)\n"
STRONG_TESTS = HEADER + (b"from solution import is_adult\n\n\ndef test_boundary():\n    assert is_adult(18) is True\n"
                         b"    assert is_adult(17) is False\n")


def adult_task(tests: bytes, name: str) -> Task:
    return Task(id=name, instruction="Write is_adult(age) in solution.py.", tests={"test_adult.py": TaskFile(tests)},
                solution=f"cat > solution.py <<'EOF'\n{SOLUTION}EOF\n", meta=TaskMeta(category="python"))


def test_each_operator_makes_one_small_edit_and_every_mutant_compiles():
    source = ('"""Module doc: < 1 and 2."""\n'
              "def f(xs, k):\n"
              '    """Docstring: x < 1."""\n'
              "    total = 0\n"
              "    for x in xs:\n"
              "        if x > k and not x in (None,):\n"
              "            total += x * 2\n"
              "    print(f\"total {total + 1}\")\n"
              "    return total == 3\n")
    found = mutants(source)
    edits = {(m.operator, m.line) for m in found}
    assert {("compare", 6), ("boolean", 6), ("arith", 7), ("constant", 4), ("return", 9), ("compare", 9),
            ("remove", 4)} <= edits
    for m in found:
        compile(m.source, "m", "exec")
        changed = [i for i, (a, b) in enumerate(zip(source.splitlines(), m.source.splitlines())) if a != b]
        assert len(changed) == 1 and len(m.source.splitlines()) == len(source.splitlines())  # one line edited
        assert '"""Module doc: < 1 and 2."""' in m.source and '"""Docstring: x < 1."""' in m.source
        assert 'f"total {total + 1}"' in m.source or m.operator == "remove"  # an f-string is left alone
    assert {m.operator for m in found if m.line == 8} == {"remove"}
    boundary = next(m for m in found if m.operator == "compare" and m.line == 6)
    assert "if x >= k and" in boundary.source
    assert "-    total = 0\n+    pass\n" in next(m for m in found if m.operator == "remove").diff(source, "f.py")
    assert mutants("def broken(:\n") == [] and spread(list(range(5)), 10) == [0, 1, 2, 3, 4]


C_SOURCE = """#include <stdio.h>
/* counts a < b, "quoted" */
#define LIMIT 10
static int clamp(int *values, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (values[i] > LIMIT && i != 0) total += 1;
    }
    printf("%d < %d\\n", total, n * 2);
    total = total * 3 - -1;
    int *p = &total;
    return total;
}
"""


def test_c_mutants_edit_operators_and_leave_comments_strings_and_unary_signs_alone():
    found = c_mutants(C_SOURCE)
    edits = {(m.operator, m.line) for m in found}
    assert {("constant", 5), ("compare", 6), ("compare", 7), ("boolean", 7), ("arith", 9), ("arith", 10),
            ("remove", 9), ("remove", 10), ("return", 12)} <= edits
    for m in found:
        changed = [i for i, (a, b) in enumerate(zip(C_SOURCE.splitlines(), m.source.splitlines())) if a != b]
        assert len(changed) == 1 and len(m.source.splitlines()) == len(C_SOURCE.splitlines())
        assert m.line - 1 == changed[0]
        assert "/* counts a < b, \"quoted\" */" in m.source and "#define LIMIT 10" in m.source
        assert '"%d < %d\\n"' in m.source or m.operator == "remove"  # a string literal is never mutated
    assert not [m for m in found if m.line in (1, 2, 3, 4)]  # include, comment, define, signature
    line10 = {m.source.splitlines()[9].strip() for m in found if m.line == 10}
    assert "total = total / 3 - -1;" in line10 and "total = total * 3 + -1;" in line10
    assert "total = total * 3 - +1;" not in line10  # the unary minus stays
    assert not [m for m in found if m.line == 11]  # `int *p = &total;` is a declaration, not a product
    assert "    return 0;" in next(m for m in found if m.operator == "return").source
    assert not [m for m in c_mutants("void *f(void) { return NULL; }") if m.operator == "return"]  # the same as 0
    assert "-    for (int i = 0; i < n; i++) {\n+    for (int i = 0; i <= n; i++) {" in next(
        m for m in found if m.operator == "compare" and m.line == 6).diff(C_SOURCE, "c.c")
    assert not [m for m in found if m.operator == "remove" and m.line == 6]  # a for loop's parts stay
    assert mutants_for("x.h", C_SOURCE) == found and mutants_for("x.txt", C_SOURCE) == []
    # a preprocessor line is skipped also when indented, or after an indented line
    def edits(source):
        return [(m.operator, m.line) for m in c_mutants(source)]

    assert edits("int f(int a) {\n  # define X (a/1000)\n  #if A > 2\n  return a / 3;\n}\n") == \
        edits("int f(int a) {\n\n\n  return a / 3;\n}\n") == [("arith", 4), ("constant", 4), ("return", 4)]


STRUCT_C = """#include "point.h"
struct point shift(struct point p, long *a, long *b) {
    p.x = p.x + (long)(b - a);
    return p;
}
"""


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler on the host")
def test_c_mutants_that_do_not_compile_are_left_out():
    from termrl.checks.strength import _compiling

    found = c_mutants(STRUCT_C)
    solved = {"src/shift.c": STRUCT_C.encode(), "src/point.h": b"struct point { long x; };\n"}
    kept = _compiling("src/shift.c", "c", STRUCT_C, found, solved)
    dropped = [m for m in found if m not in kept]
    # `return p;` of a struct as `return 0;`, and `b - a` of two pointers as `b + a`: not C
    assert {(m.operator, m.line) for m in dropped} == {("return", 4), ("arith", 3)}
    assert kept and all(m.operator != "return" for m in kept)
    assert _compiling("src/shift.c", "c", STRUCT_C, found, {"src/shift.c": STRUCT_C.encode()}) == found  # no header
    assert _compiling("a.py", "python", "x = 1\n", ["m"], {}) == ["m"]


COUNT_C = r"""#include <stdio.h>

int main(int argc, char **argv) {
    int n = 0, c;
    while ((c = getchar()) != EOF) {
        if (c == '\n') n += 1;
    }
    if (argc > 1) {
        printf("lines: %d\n", n);
        return 0;
    }
    printf("%d\n", n);
    return 0;
}
"""
C_TESTS = HEADER + b"""import pathlib
import subprocess


def build(tmp_path):
    (tmp_path / "count.c").write_bytes((pathlib.Path.cwd() / "count.c").read_bytes())
    subprocess.run(["gcc", "-O1", "count.c", "-o", "count"], cwd=tmp_path, check=True)
    return tmp_path / "count"


def test_counts_lines(tmp_path):
    out = subprocess.run([build(tmp_path)], input=b"a\\nb\\n", capture_output=True)
    assert out.stdout == b"2\\n"
"""


@pytest.mark.sandbox
def test_a_c_reference_gets_mutants_and_gcov_line_and_branch_coverage():
    task = Task(id="c-count", instruction="Write count.c: print the number of lines on stdin.",
                tests={"test_count.py": TaskFile(C_TESTS)},
                solution=f"cat > count.c <<'EOF'\n{COUNT_C}EOF\n", meta=TaskMeta(category="c"))
    row, = strength([task], workers=2, max_mutants=40)
    assert row.status == "measured" and row.candidates == len(c_mutants(COUNT_C)) and row.mutants > 5
    # the tests never pass an argument: the `argc > 1` branch is never taken, its lines never run
    assert row.line_coverage is not None and 0.5 < row.line_coverage < 1.0, row.coverage_note
    assert row.branch_coverage is not None and row.branch_coverage < 1.0
    assert any(s["line"] in (8, 9, 10) for s in row.survivors)  # a bug in the untested branch survives
    assert not any(s["operator"] == "compare" and s["line"] == 5 for s in row.survivors)  # `!= EOF` -> `== EOF` dies
    assert row.weak and 0 < row.score < 1


@pytest.mark.sandbox
def test_weak_tests_let_boundary_mutants_survive_and_strong_ones_kill_them(tmp_path):
    weak, strong = strength([adult_task(WEAK_TESTS, "adult-weak"), adult_task(STRONG_TESTS, "adult-strong")],
                            workers=2)
    assert strong.status == weak.status == "measured" and strong.mutants == weak.mutants == 3
    assert strong.score == 1.0 and not strong.weak and not strong.survivors
    # `>=` -> `>` and 18 -> 19 both still say 30 is an adult; `return None` fails `assert is_adult(30)`
    assert weak.killed == 1 and weak.score == round(1 / 3, 4) and weak.weak and weak.score < WEAK
    assert {s["operator"] for s in weak.survivors} == {"compare", "constant"}
    assert any("-    return age >= 18\n+    return age > 18" in s["diff"] for s in weak.survivors)
    total = summary([weak, strong])
    assert total["measured"] == 2 and total["weak"] == 1 and total["survivors"] == 2


GRADES = '''def grade(score):
    """A for 90 and up, B for 80 and up, else C."""
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    return "C"


def unused(x):
    return x * 2
'''
CHILD_TESTS = HEADER + (b"import subprocess\n\n\ndef test_a_child_process():\n"
                        b"    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTHON')}\n"
                        b"    out = subprocess.run([sys.executable, '-c', 'from solution import grade; print(grade(95))'],\n"
                        b"                         capture_output=True, text=True, env={**env, 'PYTHONPATH': os.getcwd()})\n"
                        b"    assert out.stdout.strip() == 'A'\n")


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_line_and_branch_coverage_see_the_test_process_and_its_children():
    def grades(tests: bytes, name: str) -> Task:
        return Task(id=name, instruction="Write grade(score) in solution.py.", tests={"test_grade.py": TaskFile(tests)},
                    solution=f"cat > solution.py <<'EOF'\n{GRADES}EOF\n", meta=TaskMeta(category="python"))

    full = HEADER + b"from solution import grade, unused\n\n\ndef test_all():\n" + \
        b"    assert [grade(95), grade(85), grade(10), unused(2)] == ['A', 'B', 'C', 4]\n"
    shown = dataclasses.replace(grades(full, "grades-shown"), workspace={"tests_visible/test_one.py": TaskFile(
        HEADER + b"from solution import grade\n\n\ndef test_one():\n    assert grade(95) == 'A'\n")})
    rows = {r.id: r for r in strength([grades(full, "grades-full"), grades(CHILD_TESTS, "grades-child"), shown],
                                      workers=1)}
    assert rows["grades-full"].line_coverage == 1.0 and rows["grades-full"].branch_coverage == 1.0
    # the visible test runs one grade of three: its coverage says so beside the hidden tests' 1.0
    shown = rows["grades-shown"]
    assert shown.line_coverage == 1.0 and shown.visible_line_coverage is not None
    assert shown.visible_line_coverage < 0.8 and shown.visible_branch_coverage < shown.branch_coverage
    child = rows["grades-child"]  # only grade(95) runs, in a child whose PYTHONPATH the test replaced
    assert child.line_coverage is not None and 0.3 < child.line_coverage < 0.8 and child.weak
    assert child.branch_coverage is not None and child.branch_coverage < 0.5
    total = summary([rows["grades-full"], rows["grades-child"]])
    assert total["low_coverage"] == 1 and 0.6 < total["mean_line_coverage"] < 0.9


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_visible_tests_weaker_than_the_hidden_ones_show_in_the_visible_score():
    task = dataclasses.replace(adult_task(STRONG_TESTS, "adult-visible"),
                               workspace={"tests_visible/test_example.py": TaskFile(WEAK_TESTS)})
    row, = strength([task], workers=2)
    assert row.score == 1.0 and row.visible_score == round(1 / 3, 4) and row.visible_killed == 1
    assert row.line_coverage == 1.0 and row.visible_line_coverage == 1.0  # one line, run by both
    assert row.branch_coverage is None and row.visible_branch_coverage is None  # and no branch
    plain, broken, placed = strength([
        adult_task(STRONG_TESTS, "adult-hidden-only"),
        dataclasses.replace(adult_task(STRONG_TESTS, "adult-broken-visible"), workspace={
            "tests/test_here.py": TaskFile(b"from helper import X\n\n\ndef test_x():\n    assert X\n")}),
        dataclasses.replace(adult_task(STRONG_TESTS, "adult-placed"), workspace={
            "tests/test_placed.py": TaskFile(PLACED_TESTS)})], workers=1)
    assert plain.visible_score is None  # no tests in its workspace
    assert broken.score == 1.0 and broken.visible_score is None  # its module is nowhere: it fails in place too
    # visible tests that find the code from their own place (like the debug-* tasks') fail when moved
    # among the hidden tests, and run where the agent runs them: as weak as WEAK_TESTS there
    assert placed.score == 1.0 and placed.visible_score == round(1 / 3, 4) and placed.visible_killed == 1
    assert placed.visible_line_coverage == 1.0  # measured in the child pytest the wrapper starts
    assert plain.visible_line_coverage is None and broken.visible_line_coverage is None


PLACED_TESTS = (b"import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
                b"from solution import is_adult\n\n\ndef test_thirty():\n    assert is_adult(30)\n")


@pytest.mark.sandbox
def test_tasks_without_a_code_reference_say_why(tmp_path):
    commands = Task(id="commands", instruction="x", tests={"test_x.py": TaskFile(b"def test_x():\n    pass\n")},
                    solution="echo hi > out.txt\n")
    nothing = Task(id="nothing", instruction="x", tests={"test_x.py": TaskFile(b"def test_x():\n    pass\n")},
                   solution=":\n")
    none = Task(id="no-ref", instruction="x", tests={"test_x.py": TaskFile(b"def test_x():\n    pass\n")})
    failing = adult_task(b"def test_never():\n    assert False\n", "adult-broken")
    rows = {r.id: r for r in strength([commands, nothing, none, failing], workers=1)}
    # a reference that is only commands has its script mutated: here the one command left out
    assert rows["commands"].status == "measured" and rows["commands"].mutated == "solution"
    assert rows["commands"].mutants == 1 and rows["commands"].score == 0.0 and rows["commands"].weak
    assert rows["nothing"].status == "no_code" and rows["no-ref"].status == "no_reference"
    assert rows["adult-broken"].status == "reference_fails" and rows["adult-broken"].score is None


@pytest.mark.sandbox
def test_the_command_measures_humaneval_and_prints_json():
    res = subprocess.run([sys.executable, "-m", "termrl", "tasks", "strength", "humaneval:0-1", "--mutants", "6",
                          "--json"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    assert [t["id"] for t in out["tasks"]] == ["humaneval-0", "humaneval-1"]
    assert all(t["status"] == "measured" and 0 < t["mutants"] <= 6 for t in out["tasks"])
    assert out["summary"]["measured"] == 2 and out["summary"]["seconds_per_task"] > 0


def write_native(root, name: str, tests: bytes):
    """A native task directory: instruction, hidden tests, reference solution."""
    task = root / name
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "task.toml").write_text(f'version = 1\nid = "{name}"\ncategory = "python"\n')
    (task / "instruction.md").write_text("Write is_adult(age) in solution.py.\n")
    (task / "tests" / "test_adult.py").write_bytes(tests)
    (task / "solution" / "solve.sh").write_text(f"cat > solution.py <<'EOF'\n{SOLUTION}EOF\n")
    return task


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_validate_flags_a_weak_task_with_its_surviving_mutant(tmp_path):
    write_native(tmp_path / "suite", "adult-weak", WEAK_TESTS)
    write_native(tmp_path / "suite", "adult-strong", STRONG_TESTS)
    res = subprocess.run([sys.executable, "-m", "termrl", "tasks", "validate", str(tmp_path / "suite"), "--strength",
                          "--json"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout)
    rows = {t["id"]: t for t in out["tasks"]}
    assert rows["adult-weak"]["valid"] and rows["adult-weak"]["strength"]["weak"]
    assert rows["adult-strong"]["strength"]["score"] == 1.0 and not rows["adult-strong"]["strength"]["weak"]
    assert out["summary"]["weak"] == 1
    table = subprocess.run([sys.executable, "-m", "termrl", "tasks", "validate", str(tmp_path / "suite"),
                            "--strength"], capture_output=True, text=True, timeout=600)
    said = " ".join(table.stdout.replace("\u2502", " ").split())  # the table's columns fold side by side
    assert "0.33 weak" in said and "surviving" in said and "age > 18" in said and "1 weak" in said
