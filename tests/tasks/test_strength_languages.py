"""Test strength beyond Python and C: shell scripts, a reference that is only commands,
JavaScript, Makefiles and CMake, and the count of inputs the tests give what they test."""

from __future__ import annotations

import difflib
import subprocess
import tempfile
from pathlib import Path

import pytest

from termrl.checks.exploits.base import ExploitContext
from termrl.checks.inputs import Inputs, shown_in, summarise
from termrl.checks.shell_mutants import (
    SOLUTION,
    build_mutants,
    js_mutants,
    language,
    mutants_for,
    shell_mutants,
)
from termrl.checks.strength import strength
from termrl.checks.survivors import replay_survivor
from termrl.protocols import Task, TaskFile, TaskMeta
from termrl.sandbox.workspace import snapshot
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import find_task
from termrl.verify import verify

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SCRIPT = """#!/bin/bash
# count lines with ERROR in each log of a folder, quietest first
dir="${1:-.}"  # a comment: -eq 3 > x
[ -d "$dir" ] || exit 2
for f in "$dir"/*.log; do
  n=$(grep -c 'ERROR' "$f")
  if [ "$n" -gt 0 ] && [ -s "$f" ]; then
    echo "$(basename "$f") $((n * 2 - 1))" >> report.txt
  fi
done
sort -k2,2n report.txt | head -n 10 > top.txt
cat > notes.txt <<'EOF'
if [ 1 -eq 2 ]; then echo never; fi
EOF
"""


def changed(source: str, mutated: str) -> list[str]:
    return [line for line in difflib.unified_diff(source.splitlines(), mutated.splitlines(), n=0, lineterm="")
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_shell_mutants_cover_every_operator_and_leave_comments_quotes_and_heredocs_alone():
    found = shell_mutants(SCRIPT)
    assert {m.operator for m in found} == {"test", "arith", "boolean", "constant", "redirect", "pipe", "remove"}
    for m in found:
        edit = changed(SCRIPT, m.source)
        assert len(edit) == 2, (m.operator, edit)  # one line changed
        assert "# a comment: -eq 3 > x" in m.source and "'ERROR'" in m.source
        assert "if [ 1 -eq 2 ]; then echo never; fi\n" in m.source  # the heredoc's body is another file's
    edits = {tuple(changed(SCRIPT, m.source)) for m in found}
    assert ('-  if [ "$n" -gt 0 ] && [ -s "$f" ]; then', '+  if [ "$n" -ge 0 ] && [ -s "$f" ]; then') in edits
    assert ('-  if [ "$n" -gt 0 ] && [ -s "$f" ]; then', '+  if [ "$n" -gt 0 ] && [ ! -s "$f" ]; then') in edits
    assert ('-    echo "$(basename "$f") $((n * 2 - 1))" >> report.txt',
            '+    echo "$(basename "$f") $((n / 2 - 1))" >> report.txt') in edits
    assert ('-    echo "$(basename "$f") $((n * 2 - 1))" >> report.txt',
            '+    echo "$(basename "$f") $((n * 2 - 1))" > report.txt') in edits
    assert ('-sort -k2,2n report.txt | head -n 10 > top.txt', '+sort -k2,2n report.txt > top.txt') in edits
    assert ('-sort -k2,2n report.txt | head -n 10 > top.txt', '+sort -k2,2n report.txt | head -n 11 > top.txt') in edits
    assert ('-[ -d "$dir" ] || exit 2', '+[ -d "$dir" ] && exit 2') in edits
    assert not any("-n 10" in e[0] and "-z 10" in e[1] for e in edits)  # head's -n is no test flag
    here_string = 'grep -c x <<< "word"\nsort -n f | head -n 2 > out\n'  # <<< starts no here-document
    assert {m.line for m in shell_mutants(here_string) if m.operator == "constant"} == {2}
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as fh:  # most mutants are still shell
        parsed = 0
        for m in found:
            fh.seek(0), fh.truncate(), fh.write(m.source), fh.flush()
            parsed += subprocess.run(["bash", "-n", fh.name], capture_output=True, check=False).returncode == 0
        assert parsed >= len(found) - 2


def test_javascript_mutants_skip_strings_templates_and_regular_expressions_and_parse():
    source = ("const re = /a\\/b[/]c/g; // 1 < 2\n"
              "function count(text, n = 2) {\n"
              "  if (!text || text.length === 0) return 0;\n"
              "  const s = `${n * 3} items < 4`;\n"
              "  return text.split(' ').length / n;\n"
              "}\n"
              "module.exports = { count };\n")
    found = js_mutants(source)
    edits = [changed(source, m.source) for m in found]
    assert {m.operator for m in found} == {"constant", "boolean", "compare", "return", "arith"}
    assert ["-  if (!text || text.length === 0) return 0;", "+  if (!text || text.length !== 0) return 0;"] in edits
    assert ["-  return text.split(' ').length / n;", "+  return undefined;"] in edits
    assert all("/a\\/b[/]c/g; // 1 < 2" in m.source and "`${n * 3} items < 4`" in m.source for m in found)
    with tempfile.TemporaryDirectory() as root:
        target = Path(root) / "m.js"
        for m in found:
            target.write_text(m.source)
            assert subprocess.run(["node", "--check", str(target)], capture_output=True, check=False).returncode == 0, m.source


def test_build_file_mutants_drop_prerequisites_recipes_and_cmake_commands():
    make = "CC ?= gcc\napp: main.o util.o\n\t$(CC) -o app main.o util.o\n%.o: %.c util.h\n\t$(CC) -c $<\n"
    edits = [changed(make, m.source) for m in build_mutants(make, "make")]
    assert ["-app: main.o util.o", "+app: util.o"] in edits and ["-%.o: %.c util.h", "+%.o: %.c"] in edits
    assert ["-\t$(CC) -c $<", "+\t@:"] in edits and not any("CC ?=" in e[0] for e in edits)
    cmake = "cmake_minimum_required(VERSION 3.10)\nproject(x C)\nadd_library(geom STATIC a.c b.c)\n" \
            "target_link_libraries(app PRIVATE geom m)\n"
    edits = [changed(cmake, m.source) for m in build_mutants(cmake, "cmake")]
    assert ["-add_library(geom STATIC a.c b.c)", "+add_library(geom STATIC b.c)"] in edits
    assert ["-target_link_libraries(app PRIVATE geom m)", "+target_link_libraries(app PRIVATE m)"] in edits
    assert ["-add_library(geom STATIC a.c b.c)", "+# add_library(geom STATIC a.c b.c)"] in edits
    assert not any("project" in e[0] or "STATIC" not in "".join(e) and "add_library" in e[0] for e in edits)


@pytest.mark.parametrize("path, data, kind", [
    ("run.sh", b"echo", "shell"), ("tool", b"#!/usr/bin/env bash\necho", "shell"), ("tool", b"#!/bin/sh\n", "shell"),
    ("csvjoin", b"#!/usr/bin/env python3\n", "python"), ("app.mjs", b"", "javascript"),
    ("cli", b"#!/usr/bin/node\n", "javascript"), ("Makefile", b"all:\n", "make"), ("CMakeLists.txt", b"", "cmake"),
    ("x.h", b"", "c"), ("notes.txt", b"#!not a program", None), ("data.csv", b"a,b\n", None),
])
def test_language_by_name_or_shebang(path, data, kind):
    assert language(path, data) == kind
    samples = {"python": "x = 1\n", "shell": "head -n 3 f\n", "javascript": "const a = 1;\n", "c": "int a = 1;\n",
               "make": "all: a b\n", "cmake": "add_library(g STATIC a.c b.c)\n", None: "x = 1\n"}
    assert bool(mutants_for(path, samples[kind], kind)) == (kind is not None)  # the mutator of its language


def test_inputs_are_counted_per_tested_thing_and_matched_against_the_instruction():
    recorded = [{"stats.py:median_of": [["[7, 1, 5, 3]"]]}, {"stats.py:median_of": [["[7, 1, 5, 3]"]]}]
    one = summarise(recorded, set(), "Implement median_of(values).")
    assert one.functions == {"stats.py:median_of": 1} and one.few and one.shared == 0.0
    many = summarise([{"f.py:f": [["1"], ["2"], ["30"]]}], set(), "f(2) is 4")
    assert many.functions == {"f.py:f": 3} and not many.few and many.shared == round(1 / 3, 4)
    shown = summarise([{"f.py:f": [["'abc'"], ["'xyz'"]]}], set(), "f('abc') gives 3 and f('xyz') gives 3")
    assert shown.shared == 1.0 and shown.few  # the tests check only the instruction's own examples
    # a command line recorded bare (the process start) and with its input fed is one run
    runs = summarise([{"wc.sh": [["-l"], ["-l", "'a\\n'"], ["-w"], ["-w", "'b c'"]]}], {"wc.sh"}, "")
    assert runs.commands == {"wc.sh": 2} and not runs.few
    once = summarise([{"wc.sh": [["-l"]]}], {"wc.sh"}, "")  # one run may feed a batch of cases: not judged
    assert once.commands == {"wc.sh": 1} and not once.few and once.shared is None
    assert Inputs().most is None and not Inputs().few
    assert not shown_in("1", "10 items") and shown_in("1", "f(1) = 2") and shown_in("'a b'", "given a b")


SHELL_TESTS = {
    "weak": b"import subprocess\n\n\ndef test_one():\n    out = subprocess.run(['bash', 'grade.sh', '95'],"
            b" capture_output=True, text=True).stdout\n    assert out == 'A\\n'\n",
    "strong": b"import subprocess\nimport pytest\n\n\n@pytest.mark.parametrize('score, grade', [('95', 'A'), "
              b"('90', 'A'), ('89', 'B'), ('80', 'B'), ('79', 'C'), ('0', 'C')])\ndef test_grades(score, grade):\n"
              b"    out = subprocess.run(['./grade.sh', score], capture_output=True, text=True).stdout\n"
              b"    assert out == grade + '\\n'\n",
}
GRADE = """#!/bin/bash
s="$1"
if [ "$s" -ge 90 ]; then
  echo A
elif [ "$s" -ge 80 ]; then
  echo B
else
  echo C
fi
"""


def grade_task(strength_of: str) -> Task:
    return Task(id=f"grade-{strength_of}", instruction="Write grade.sh SCORE: A from 90, B from 80, else C.",
                tests={"test_grade.py": TaskFile(SHELL_TESTS[strength_of])}, meta=TaskMeta(category="shell"),
                solution=f"cat > grade.sh <<'SH'\n{GRADE}SH\nchmod +x grade.sh\n")


@pytest.mark.sandbox
def test_a_shell_script_reference_is_mutated_with_its_execute_bit_and_its_inputs_counted():
    weak, strong = strength([grade_task("weak"), grade_task("strong")], workers=2)
    assert strong.status == weak.status == "measured" and strong.mutated == weak.mutated == "files"
    assert strong.mutants == weak.mutants > 4 and strong.unverified == weak.unverified == 0
    # the strong tests run ./grade.sh: a mutant that lost its execute bit would fail them all
    assert strong.score == 1.0 and not strong.weak and strong.inputs["commands"] == {"grade.sh": 6}
    assert weak.score < strong.score and weak.weak and not weak.few_inputs  # commands are counted, not judged
    assert weak.inputs["commands"] == {"grade.sh": 1}
    assert any("-if [ \"$s\" -ge 90 ]; then\n+if [ \"$s\" -gt 90 ]; then" in s["diff"] for s in weak.survivors)


@pytest.mark.sandbox
def test_a_reference_that_is_only_commands_has_its_script_mutated_and_survivors_replay_in_the_audit():
    commands = Task(id="top-words", instruction="Write the 3 most frequent words of book.txt to top.txt, one "
                    "'COUNT WORD' a line, most frequent first.",
                    workspace={"book.txt": TaskFile(b"b a c a b a d\n")}, meta=TaskMeta(category="shell"),
                    tests={"test_top.py": TaskFile(b"def test_top():\n    lines = open('top.txt').read().split('\\n')\n"
                                                   b"    assert lines[0] == '3 a'\n")},
                    solution="tr ' ' '\\n' < book.txt | sort | uniq -c | sort -k1,1nr -k2,2 | head -n 3 \\\n"
                             "  | awk '{ print $1, $2 }' > top.txt\n")
    row, = strength([commands], workers=2)
    assert row.status == "measured" and row.mutated == "solution" and row.verified_in == "sandbox"
    assert row.mutants >= 6 and row.unverified == 0 and 0 < row.score < 1  # only the first line is checked
    survivor = next(s for s in row.survivors if s["operator"] == "constant")  # head -n 4: line 1 still '3 a'
    assert survivor["path"] == SOLUTION and "+tr ' ' '\\n' < book.txt | sort | uniq -c | sort -k1,1nr -k2,2 | " \
        "head -n 4 \\" in survivor["diff"]
    with open_sandbox(commands) as box:  # the audit replays it: the mutant script, run by the agent's shell
        before = snapshot(box)
        steps = replay_survivor(commands, box, ExploitContext(), path=SOLUTION, diff=survivor["diff"])
        assert steps[-1]["command"].startswith("bash /tmp/.mutant.sh") and steps[-1]["exit_code"] == 0
        assert box.read_file(f"{commands.workdir}/top.txt").decode().splitlines()[3:] == ["1 d"]
        assert verify(commands, box, before=before, static=False).passed


JS_TESTS = b"""import json
import subprocess


def test_clamp():
    for value, lo, hi, want in [(5, 0, 10, 5), (-3, 0, 10, 0), (12, 0, 10, 10), (10, 0, 10, 10), (0, 0, 10, 0)]:
        out = subprocess.run(['node', '-e', f'console.log(require("./clamp.js").clamp({value}, {lo}, {hi}))'],
                             capture_output=True, text=True)
        assert json.loads(out.stdout) == want, (value, out.stderr)
"""
CLAMP = """function clamp(value, lo, hi) {
  if (value < lo) return lo;
  if (value > hi) return hi;
  return value;
}
module.exports = { clamp };
"""


@pytest.mark.sandbox
def test_a_javascript_reference_is_mutated_and_verified():
    task = Task(id="js-clamp", instruction="Write clamp(value, lo, hi) in clamp.js (CommonJS).",
                tests={"test_clamp.py": TaskFile(JS_TESTS)}, meta=TaskMeta(category="javascript"),
                solution=f"cat > clamp.js <<'JS'\n{CLAMP}JS\n")
    row, = strength([task], workers=2)
    assert row.status == "measured" and row.mutated == "files" and row.unverified == 0
    # the two comparisons, three returns -> `return undefined;`: every return is killed, and the
    # two boundary shifts survive because they are equivalent (`value <= lo` returns lo: the same)
    assert row.mutants == 5 and row.killed == 3 and row.score == 0.6
    assert sorted(s["diff"].splitlines()[-2] for s in row.survivors) == \
        ["+  if (value <= lo) return lo;", "+  if (value >= hi) return hi;"]


@pytest.mark.sandbox
def test_the_one_example_fixture_has_too_few_inputs_and_a_built_in_task_does_not():
    flawed, roman = strength([find_task(str(FIXTURES / "flawed" / "one-example")), find_task("py-roman-numerals")],
                             workers=2, max_mutants=8)
    assert flawed.inputs["functions"] == {"stats.py:median_of": 1} and flawed.few_inputs and flawed.weak
    assert min(roman.inputs["functions"].values()) > 100 and not roman.few_inputs and roman.shared_inputs < 0.1
