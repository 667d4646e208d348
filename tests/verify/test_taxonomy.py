"""The verifier's error taxonomy, from real compiler, interpreter and test-runner output.

Planted workspaces: small tasks built here whose "agent" files are written into a real
sandbox and verified with ``verify()``. Every class of ``taxonomy.CLASSES`` is produced by at
least one of them (``test_every_class_is_planted``). Unit tests run the host's gcc/g++/ld
and Python to feed ``classify_compiler`` and ``classify_python`` genuine output.

Tests named ``test_BUG_*`` show a bug in the verifier or taxonomy: they fail until it is fixed
(their docstrings say where). ``xfail`` marks a known limitation, not a bug.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from termrl.protocols import Limits, SandboxError, StopReason, Task, TaskFile
from termrl.tasks.runtime import open_sandbox
from termrl.verify import stages, taxonomy, verify
from termrl.verify.taxonomy import CLASSES, classify_compiler, classify_python, dominant, group_of

from .conftest import by_name, describe, files, make_task, planted, requires_gcc, requires_sandbox


def gcc_major() -> int:
    out = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True, check=False).stdout
    return int(out.split(".")[0] or 0)


# =========================================================================== Python: one task, many failures

PY_SOLUTION = """\
    import os
    import sys


    def name_error():
        return undefined_helper(3)


    def unbound_local(flag=False):
        if flag:
            total = 1
        return total


    def lazy_import():
        import numpyy_not_installed
        return numpyy_not_installed


    def type_error():
        return 1 + "1"


    def attribute_error():
        return (5).bit_size()


    def index_error():
        return [1, 2, 3][3]


    def key_error():
        return {"a": 1}["b"]


    def value_error():
        return int("twelve")


    def zero_division(n=0):
        return 10 // n


    def recursion(n):
        return recursion(n + 1)


    class ParseFailure(Exception):
        pass


    def custom_exception():
        raise ParseFailure("unexpected token")


    def memory_error():
        return bytearray(1 << 62)


    def wrong_answer(xs):
        return sum(xs) + 1


    def endless_loop():
        n = 0
        while True:
            n += 1


    def correct(xs):
        return sum(xs)
"""

PY_TESTS = """\
    import solution


    @pytest.mark.core
    def test_name_error():
        assert solution.name_error() == 3


    def test_unbound_local():
        assert solution.unbound_local() == 0


    def test_lazy_import():
        assert solution.lazy_import()


    def test_type():
        assert solution.type_error() == 2


    def test_attribute():
        assert solution.attribute_error() == 3


    def test_index():
        assert solution.index_error() == 3


    def test_key():
        assert solution.key_error() == 1


    def test_value():
        assert solution.value_error() == 12


    def test_zero_division():
        assert solution.zero_division() == 0


    def test_recursion():
        assert solution.recursion(0) == 0


    def test_custom_exception():
        assert solution.custom_exception() is None


    def test_memory_error():
        assert solution.memory_error()


    @pytest.mark.boundary
    def test_wrong_answer():
        assert solution.wrong_answer([1, 2]) == 3


    def test_endless_loop():
        solution.endless_loop()


    @pytest.mark.core
    def test_correct():
        assert solution.correct([1, 2]) == 3
"""

PY_RUNTIME_CASES = [
    # hidden test, exception type pytest reports, taxonomy class
    ("test_name_error", "NameError", "name"),
    ("test_unbound_local", "UnboundLocalError", "name"),
    ("test_lazy_import", "ModuleNotFoundError", "import"),
    ("test_type", "TypeError", "type"),
    ("test_attribute", "AttributeError", "attribute"),
    ("test_index", "IndexError", "runtime.index"),
    ("test_key", "KeyError", "runtime.key"),
    ("test_value", "ValueError", "runtime.value"),
    ("test_zero_division", "ZeroDivisionError", "runtime.zero_division"),
    ("test_recursion", "RecursionError", "runtime.recursion"),
    ("test_custom_exception", "ParseFailure", "runtime.other"),
    ("test_memory_error", "MemoryError", "memory"),
    ("test_wrong_answer", "AssertionError", "wrong_answer"),
    ("test_endless_loop", "TermrlTestTimeout", "timeout"),
]


@pytest.fixture(scope="module")
def py_runtime():
    """The initial workspace is a stub that passes nothing; the agent wrote solution.py."""
    task = make_task("py-runtime", {"test_solution.py": PY_TESTS},
                     workspace={"solution.py": "def correct(xs):\n    raise NotImplementedError\n"})
    return planted(task, {"solution.py": PY_SOLUTION}, per_test_timeout=1)


@pytest.mark.parametrize("name, exc_type, cls", PY_RUNTIME_CASES, ids=[c[0] for c in PY_RUNTIME_CASES])
def test_python_failure_class(py_runtime, name, exc_type, cls):
    case = by_name(py_runtime)[name]
    assert case.outcome == "failed", describe(py_runtime)
    assert case.exc_type == exc_type, case
    assert case.error_class == cls, case
    assert cls in py_runtime.error_classes


def test_python_runtime_evidence_is_the_agents_failure(py_runtime):
    ev = py_runtime
    assert ev.verified and ev.verify_error is None, describe(ev)
    assert not ev.passed
    assert ev.stages["build"].status == "ok"  # every file compiles: the failures are all at run time
    assert by_name(ev)["test_correct"].outcome == "passed"
    assert by_name(ev)["test_correct"].error_class is None
    assert set(ev.error_classes) == {c for _, _, c in PY_RUNTIME_CASES}
    assert ev.stages["tests"].data["collected"] == len(PY_RUNTIME_CASES) + 1
    assert ev.stages["tests"].data["failed"] == len(PY_RUNTIME_CASES)
    assert ev.changed_files == ["solution.py"]
    assert ev.test_pass_ratio == pytest.approx(1 / (len(PY_RUNTIME_CASES) + 1))


def test_per_test_timeout_only_stops_the_endless_test(py_runtime):
    """per_test_timeout=1: the endless test becomes a timeout outcome after ~1 s, the run goes on."""
    case = by_name(py_runtime)["test_endless_loop"]
    assert 0.9 <= case.duration_s < 10
    assert py_runtime.stages["tests"].data["stop"] == StopReason.EXITED.value
    assert by_name(py_runtime)["test_correct"].outcome == "passed"  # ran after the endless test


def test_failures_keep_their_markers(py_runtime):
    cases = by_name(py_runtime)
    assert cases["test_wrong_answer"].tags == ("boundary",)
    assert cases["test_name_error"].tags == ("core",)
    assert cases["test_type"].tags == ()


# =========================================================================== Python: collection-time failures


@requires_sandbox
def test_python_collection_errors_syntax_indentation_and_import():
    task = make_task("py-collect", {
        "test_a.py": "import broken_indent\n\ndef test_a():\n    assert broken_indent.f() == 1\n",
        "test_b.py": "import broken_syntax\n\ndef test_b():\n    assert broken_syntax.f() == 1\n",
        "test_c.py": "import needs_missing\n\ndef test_c():\n    assert needs_missing.f() == 1\n",
    })
    ev = planted(task, {
        "broken_indent.py": "def f():\nreturn 1\n",
        "broken_syntax.py": "def f(:\n    return 1\n",
        "needs_missing.py": "import not_a_real_module_xyz\n\ndef f():\n    return 1\n",
    })
    assert ev.verified and not ev.passed, describe(ev)
    # the build stage byte-compiles the workspace: both syntax errors, with file and line
    build = ev.stages["build"]
    assert build.status == "failed" and build.error_classes == ["syntax"]
    recs = {r["file"]: r for r in build.data["python"]}
    assert set(recs) == {"broken_indent.py", "broken_syntax.py"}
    assert recs["broken_indent.py"]["message"].startswith("IndentationError")
    assert recs["broken_indent.py"]["line"] == 2
    assert recs["broken_syntax.py"]["message"].startswith("SyntaxError")
    assert recs["broken_syntax.py"]["line"] == 1
    # the tests stage sees three collection errors, each with its own class
    cases = by_name(ev)
    assert (cases["test_a.py"].outcome, cases["test_a.py"].exc_type, cases["test_a.py"].error_class) == \
        ("error", "IndentationError", "syntax")
    assert (cases["test_b.py"].exc_type, cases["test_b.py"].error_class) == ("SyntaxError", "syntax")
    assert (cases["test_c.py"].exc_type, cases["test_c.py"].error_class) == ("ModuleNotFoundError", "import")
    assert "not_a_real_module_xyz" in cases["test_c.py"].message
    assert ev.error_classes == ["syntax", "import"]
    assert dominant(ev.error_classes) == "syntax"


# =========================================================================== Python: whole-run timeout and memory


@requires_sandbox
def test_whole_run_timeout_is_the_agents_failure():
    """Tests that run the agent's source in their own process (out of the isolation's reach): the
    code ignores the per-test alarm and loops at import, so the whole run is cut."""
    task = make_task("py-hang", {"test_a.py": "exec(open('solution.py').read())\n\ndef test_a():\n    assert f() == 1\n"},
                     limits=Limits(verifier_timeout_sec=3, memory_mb=1024))
    ev = planted(task, {"solution.py": "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                                       "while True:\n    pass\n\ndef f():\n    return 1\n"})
    assert ev.verified and ev.verify_error is None, describe(ev)
    assert not ev.passed
    assert ev.stages["tests"].data["stop"] == "timeout"
    assert ev.stages["tests"].status == "failed"
    assert ev.error_classes == ["timeout"]
    assert 2.5 <= ev.stages["tests"].duration_s < 15


@requires_sandbox
def test_a_hang_at_import_costs_one_alarm_not_the_whole_run():
    """Module-level code runs while pytest collects: the alarm covers collection too."""
    task = make_task("py-import-hang", {"test_a.py": "import solution\n\ndef test_a():\n    assert solution.f() == 1\n"},
                     limits=Limits(verifier_timeout_sec=30, memory_mb=1024))
    ev = planted(task, {"solution.py": "while True:\n    pass\n"}, per_test_timeout=1)
    assert ev.verified and not ev.passed and ev.error_classes == ["timeout"], describe(ev)
    assert ev.stages["tests"].data["stop"] == "exited" and ev.stages["tests"].duration_s < 10


@requires_sandbox
def test_tests_a_whole_run_timeout_cut_short_are_failures_of_that_timeout():
    """The run is cut during the second of three tests: the first stays passed, the one running
    and the one after it are in the report as the timeout's failures (not left out, which would
    pay partial credit over the first alone)."""
    tests = ("exec(open('solution.py').read())\n\ndef test_a():\n    assert f() == 1\n\n"
             "def test_b():\n    hang()\n\ndef test_c():\n    assert f() == 1\n")
    task = make_task("py-cut", {"test_a.py": tests}, limits=Limits(verifier_timeout_sec=4, memory_mb=1024))
    ev = planted(task, {"solution.py": "import signal\n\ndef f():\n    return 1\n\ndef hang():\n"
                                       "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n        pass\n"})
    assert ev.verified and not ev.passed and ev.stages["tests"].data["stop"] == "timeout", describe(ev)
    cases = by_name(ev)
    assert cases["test_a"].outcome == "passed"
    assert [(cases[n].outcome, cases[n].exc_type, cases[n].error_class) for n in ("test_b", "test_c")] == \
        [("error", "NotRun", "timeout")] * 2
    assert ev.error_classes == ["timeout"] and ev.test_pass_ratio == 1 / 3


@requires_sandbox
def test_out_of_memory_is_the_agents_failure():
    """A huge list under Limits(memory_mb=256): the cgroup OOM-kills the test run."""
    task = make_task("py-oom", {"test_a.py": "import solution\n\ndef test_a():\n    assert solution.f() == 1\n"},
                     limits=Limits(verifier_timeout_sec=60, memory_mb=256))
    ev = planted(task, {"solution.py": "def f():\n    cells = [0] * (10 ** 9)\n    return len(cells)\n"})
    assert ev.verified and ev.verify_error is None, describe(ev)
    assert not ev.passed
    assert ev.error_classes == ["memory"]
    stop = ev.stages["tests"].data["stop"]
    # either the kernel killed pytest (no per-test report) or Python raised MemoryError in the test
    assert stop == "memory" or by_name(ev)["test_a"].exc_type == "MemoryError", describe(ev)


@requires_sandbox
def test_a_disk_the_agent_filled_fails_the_agent_not_the_harness():
    """The agent fills its sandbox's tmpfs (from /tmp) before verification has to write the tests:
    a failure it caused (``disk_full``), not an unverified episode whose reward would be None."""
    task = make_task("py-disk", {"test_a.py": "import solution\n\ndef test_a():\n    assert solution.f() == 1\n"},
                     limits=Limits(verifier_timeout_sec=60, memory_mb=1024, disk_mb=64))
    box = open_sandbox(task)
    try:
        box.put_files(task.workdir, files({"solution.py": "def f():\n    return 1\n"}))
        fill = box.exec("for bs in 1M 4k; do dd if=/dev/zero of=/tmp/fill-$bs bs=$bs 2>/dev/null; done; "
                        "df -k /tmp | tail -1", timeout=120)
        assert " 100% /tmp" in fill.stdout, fill
        ev = verify(task, box, static=False)
    finally:
        box.close()
    assert ev.verified and not ev.passed and ev.error_classes == ["disk_full"], describe(ev)
    assert "No space left on device" in ev.stages["tests"].message


# =========================================================================== per-test tags: edge case vs core

DEDUPE_TESTS = """\
    import solution


    @pytest.mark.core
    def test_sorts_and_dedupes():
        assert solution.dedupe_sorted([3, 1, 3, 2]) == [1, 2, 3]


    @pytest.mark.core
    def test_negative_numbers():
        assert solution.dedupe_sorted([0, -5, -5, 7]) == [-5, 0, 7]


    @pytest.mark.boundary
    def test_empty_input():
        assert solution.dedupe_sorted([]) == []
"""
DEDUPE_STUB = {"solution.py": "def dedupe_sorted(xs):\n    raise NotImplementedError\n"}


def dedupe_task(task_id: str) -> Task:
    return make_task(task_id, {"test_dedupe.py": DEDUPE_TESTS}, workspace=DEDUPE_STUB)


@requires_sandbox
def test_wrong_edge_case_is_told_apart_from_wrong_core():
    edge = planted(dedupe_task("dedupe-edge"),
                   {"solution.py": "def dedupe_sorted(xs):\n    return sorted(set(xs)) if xs else None\n"})
    core = planted(dedupe_task("dedupe-core"),
                   {"solution.py": "def dedupe_sorted(xs):\n    return list(dict.fromkeys(xs))\n"})
    for ev in (edge, core):
        assert ev.verified and not ev.passed, describe(ev)
        assert ev.error_classes == ["wrong_answer"]

    def failing(ev):
        return {(t.nodeid.rsplit("::", 1)[-1], t.tags, t.error_class) for t in ev.tests if t.outcome == "failed"}

    def passing_tags(ev):
        return {tag for t in ev.tests if t.outcome == "passed" for tag in t.tags}

    # wrong edge case: only the boundary test fails, every core test passes
    assert failing(edge) == {("test_empty_input", ("boundary",), "wrong_answer")}
    assert passing_tags(edge) == {"core"}
    assert by_name(edge)["test_empty_input"].message == "assert None == []"
    # wrong core algorithm: the core tests fail, the edge case passes
    assert failing(core) == {("test_sorts_and_dedupes", ("core",), "wrong_answer"),
                             ("test_negative_numbers", ("core",), "wrong_answer")}
    assert passing_tags(core) == {"boundary"}


@requires_sandbox
def test_correct_workspace_passes_with_no_error_class():
    ev = planted(dedupe_task("dedupe-ok"), {"solution.py": "def dedupe_sorted(xs):\n    return sorted(set(xs))\n"},
                 static=True)
    assert ev.verified and ev.verify_error is None, describe(ev)
    assert ev.passed
    assert ev.error_classes == []
    assert all(t.outcome == "passed" and t.error_class is None for t in ev.tests)
    assert len(ev.tests) == 3 and ev.test_pass_ratio == 1.0
    assert {s: ev.stages[s].status for s in ("build", "tests", "quality", "safety")} == \
        {"build": "ok", "tests": "ok", "quality": "ok", "safety": "ok"}
    assert ev.stages["build"].error_classes == [] and ev.stages["tests"].error_classes == []


# =========================================================================== failed to verify (harness, not agent)

OK_TASK_TESTS = {"test_a.py": "import solution\n\ndef test_a():\n    assert solution.f() == 1\n"}
OK_SOLUTION = {"solution.py": "def f():\n    return 1\n"}


def assert_failed_to_verify(ev, fragment: str) -> None:
    assert ev.verified is False, describe(ev)
    assert ev.verify_error and fragment in ev.verify_error, ev.verify_error
    assert not ev.passed
    assert ev.error_classes == []  # no agent class: the reward is None, never 0


@requires_sandbox
def test_python_missing_from_path_is_failed_to_verify():
    """The task's env breaks PATH, so python3 (and pytest) cannot even start."""
    task = make_task("no-python", OK_TASK_TESTS, env={"PATH": "/nonexistent"})
    ev = planted(task, OK_SOLUTION)
    assert_failed_to_verify(ev, "pytest wrote no report")
    assert "python3" in ev.verify_error
    assert ev.stages["tests"].status == "error"


@requires_sandbox
def test_missing_report_plugin_is_failed_to_verify(monkeypatch):
    """The harness mount lacks pytest_report.py: pytest refuses the -p plugin and stops."""
    monkeypatch.setattr(stages, "_harness_files", dict)
    ev = planted(make_task("no-plugin", OK_TASK_TESTS), OK_SOLUTION)
    assert_failed_to_verify(ev, "pytest wrote no report")
    assert "pytest_report" in ev.verify_error


@requires_sandbox
def test_sandbox_error_is_failed_to_verify(monkeypatch):
    task = make_task("box-dies", OK_TASK_TESTS)
    box = open_sandbox(task)
    try:
        box.put_files(task.workdir, {"solution.py": TaskFile.text(OK_SOLUTION["solution.py"])})

        def broken(*args, **kwargs):
            raise SandboxError("the sandbox went away")

        monkeypatch.setattr(box, "run", broken)
        ev = verify(task, box, static=False)
    finally:
        box.close()
    assert_failed_to_verify(ev, "SandboxError: the sandbox went away")


@requires_sandbox
def test_agent_failures_are_not_failed_to_verify():
    """Contrast: the same correct task with an agent bug is verified (reward 0, not None)."""
    ev = planted(make_task("agent-bug", OK_TASK_TESTS), {"solution.py": "def f():\n    return 2\n"})
    assert ev.verified and ev.verify_error is None and ev.error_classes == ["wrong_answer"]


@requires_sandbox
def test_BUG_empty_hidden_tests_mount_is_failed_to_verify():
    """A pytest task whose hidden-tests mount holds no files: pytest collects nothing (exit 5).
    That is the task's defect, not the agent's, yet verify() reports verified=True with
    wrong_answer (stages.pytest_result: ``if not passed and not classes: classes = ["wrong_answer"]``)."""
    ev = planted(make_task("no-tests", {}), OK_SOLUTION)
    assert ev.verified is False, describe(ev)
    assert ev.error_classes == []


@requires_sandbox
def test_agent_code_segfaulting_the_interpreter_is_a_crash_not_failed_to_verify():
    """The agent's own code segfaults its interpreter: the agent's runtime.crash."""
    ev = planted(make_task("py-segv", OK_TASK_TESTS),
                 {"solution.py": "import ctypes\n\ndef f():\n    return ctypes.string_at(0)\n"})
    # the agent's code runs in the isolation's worker: the worker dies, the test that called it fails
    assert "signal 11" in by_name(ev)["test_a"].message, describe(ev)
    assert ev.verified and ev.verify_error is None, describe(ev)
    assert not ev.passed
    assert ev.error_classes == ["runtime.crash"]


@requires_sandbox
def test_agent_code_exiting_early_is_a_crash_not_failed_to_verify():
    """os._exit(0) in the agent's code ends its process mid-test: it must neither pass nor turn
    its reward into None."""
    ev = planted(make_task("py-exit", OK_TASK_TESTS),
                 {"solution.py": "import os\n\ndef f():\n    os._exit(0)\n"})
    assert "exit code 0" in by_name(ev)["test_a"].message, describe(ev)
    assert ev.verified and ev.verify_error is None, describe(ev)
    assert not ev.passed
    assert ev.error_classes == ["runtime.crash"]


@requires_sandbox
def test_BUG_default_per_test_timeout_can_never_fire_before_the_run_timeout():
    """verify() defaults the per-test alarm to min(30, verifier_timeout_sec): with a budget of
    30 s or less the alarm equals the whole-run limit, so one endless test always gets the whole
    run killed first, and every other test's outcome (the report) is lost."""
    task = make_task("py-hang-one", {"test_a.py": """\
        import solution

        def test_fine():
            assert solution.f() == 1

        def test_hangs():
            while True:
                pass
    """}, limits=Limits(verifier_timeout_sec=4, memory_mb=1024))
    ev = planted(task, OK_SOLUTION)
    assert ev.verified and ev.error_classes == ["timeout"], describe(ev)
    cases = by_name(ev)
    assert cases.get("test_fine") is not None and cases["test_fine"].outcome == "passed", describe(ev)
    assert cases["test_hangs"].error_class == "timeout"


# =========================================================================== C: build-stage classes

MAKEFILE = "CFLAGS ?= -O0\nprog: main.c\n\t$(CC) $(CFLAGS) -o prog main.c $(LDLIBS)\n"
MAKEFILE_WERROR = MAKEFILE.replace("CFLAGS ?= -O0", "CFLAGS = -O0 -Werror=implicit-function-declaration")
MAKEFILE_LIB = MAKEFILE.replace("CFLAGS ?= -O0", "CFLAGS ?= -O0\nLDLIBS = -lnot_a_real_library")
MAIN_OK = """\
#include <stdio.h>
#include <stdlib.h>

int divide(int a, int b) { return a / b; }

int main(int argc, char **argv) {
    int a = atoi(argv[1]), b = atoi(argv[2]);
    printf("%d\\n", divide(a, b));
    return 0;
}
"""

C_TESTS = """\
import os
import shutil
import subprocess
import tempfile

import pytest


@pytest.fixture(scope="module")
def binary():
    work = tempfile.mkdtemp()
    for name in os.listdir(os.getcwd()):
        shutil.copy(os.path.join(os.getcwd(), name), work)
    if os.path.exists(os.path.join(work, "Makefile")):
        r = subprocess.run(["make", "-s"], cwd=work, capture_output=True, text=True)
    else:
        sources = sorted(f for f in os.listdir(work) if f.endswith(".c"))
        r = subprocess.run(["gcc", "-O0", "-o", "prog", *sources], cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, "build failed: " + r.stdout + r.stderr
    return os.path.join(work, "prog")


@pytest.mark.core
def test_exit_status(binary):
    p = subprocess.run([binary, "6", "3"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0


@pytest.mark.core
def test_output(binary):
    p = subprocess.run([binary, "6", "3"], capture_output=True, text=True, timeout=10)
    assert p.stdout == "2\\n"


def test_check_true(binary):
    subprocess.run([binary, "6", "3"], capture_output=True, check=True, timeout=10)


def test_call_status(binary):
    rc = subprocess.call([binary, "6", "3"], stdout=subprocess.DEVNULL, timeout=10)
    assert rc == 0
"""

C_BUILD_CASES = [
    # class, build tool, (file, line) of the first record or None for a linker record, workspace
    ("compile.undeclared", "make", ("main.c", 8), {
        "Makefile": MAKEFILE, "main.c": MAIN_OK.replace("atoi(argv[2]);", "atoi(argv[2]);\n    a += offset;")}),
    ("compile.implicit_declaration", "make", ("main.c", 8), {
        "Makefile": MAKEFILE_WERROR, "main.c": MAIN_OK.replace("divide(a, b)", "divide_ints(a, b)")}),
    ("compile.type", "make", ("main.c", 5), {
        "Makefile": MAKEFILE, "main.c": MAIN_OK.replace("int divide(int a, int b) { return a / b; }",
                                                     "int divide(int a, int b);\ndouble divide(int a, int b) "
                                                     "{ return a / b; }")}),
    ("compile.syntax", "make", ("main.c", 8), {
        "Makefile": MAKEFILE, "main.c": MAIN_OK.replace("divide(a, b));", "divide(a, b))")}),
    ("compile.other", "make", ("main.c", 3), {
        "Makefile": MAKEFILE, "main.c": MAIN_OK.replace("#include <stdlib.h>",
                                                     '#include <stdlib.h>\n#include "no_such_header.h"')}),
    ("link.undefined_reference", "gcc", None, {
        "main.c": MAIN_OK.replace("int divide(int a, int b) { return a / b; }", "int divide(int a, int b);")}),
    ("link.multiple_definition", "gcc", None, {
        "main.c": MAIN_OK, "divide.c": "int divide(int a, int b) { return a / b; }\n"}),
    ("link.other", "make", None, {"Makefile": MAKEFILE_LIB, "main.c": MAIN_OK}),
]


def c_task(task_id: str) -> Task:
    return make_task(task_id, {"test_prog.py": C_TESTS}, header="")


@requires_sandbox
@requires_gcc
@pytest.mark.parametrize("cls, tool, where, workspace", C_BUILD_CASES, ids=[c[0] for c in C_BUILD_CASES])
def test_c_build_class(cls, tool, where, workspace):
    ev = planted(c_task(f"c-{cls}"), workspace)
    assert ev.verified and not ev.passed, describe(ev)
    build = ev.stages["build"]
    assert build.status == "failed", describe(ev)
    assert build.data["c_tool"] == tool and build.data["c_exit"] != 0
    assert build.error_classes == [cls], build.data["c"]
    first = build.data["c"][0]
    if where is not None:
        assert (first["file"], first["line"]) == where, first
    assert group_of(cls) == "compile"
    assert ev.error_classes[0] == cls and dominant(ev.error_classes) == cls


@requires_sandbox
@requires_gcc
def test_c_implicit_declaration_under_gcc_defaults():
    """What gcc does with no flags: up to gcc 13 an implicit declaration is only a warning (so a
    function defined in another file links and runs: no class at all); gcc 14 made it an error."""
    workspace = {"main.c": MAIN_OK.replace("int divide(int a, int b) { return a / b; }\n", ""),
                 "divide.c": "int divide(int a, int b) { return a / b; }\n"}
    ev = planted(c_task("c-implicit-default"), workspace)
    build = ev.stages["build"]
    assert build.data["c_tool"] == "gcc"
    if gcc_major() >= 14:
        assert build.error_classes == ["compile.implicit_declaration"], build.data
    else:
        assert build.status == "ok" and build.error_classes == [], build.data
        assert ev.passed and ev.error_classes == [], describe(ev)


@requires_sandbox
@requires_gcc
def test_BUG_a_function_named_like_main_hides_link_errors():
    """stages._c_build_command counts every source containing b"main(" as a program's main, so a
    helper named ``domain(`` makes two "mains"; the sources are then only compiled (-c), never
    linked, and the undefined reference goes unreported by the build stage."""
    workspace = {"main.c": MAIN_OK.replace("int divide(int a, int b) { return a / b; }", "int divide(int a, int b);"),
                 "util.c": "int domain(int x) { return x > 0; }\n"}
    ev = planted(c_task("c-domain"), workspace)
    assert ev.stages["build"].error_classes == ["link.undefined_reference"], describe(ev)


# =========================================================================== C: run-time classes

C_RUNTIME_CASES = {
    "runtime.crash": MAIN_OK.replace("int a = atoi(argv[1])", "int *volatile p = 0;\n    *p = argc;\n    int a = atoi(argv[1])"),
    "runtime.zero_division": MAIN_OK.replace("divide(a, b)", "divide(a, b - 3)"),
}


@pytest.fixture(scope="module", params=sorted(C_RUNTIME_CASES))
def c_runtime(request):
    cls = request.param
    return cls, planted(c_task(f"c-{cls}"), {"Makefile": MAKEFILE, "main.c": C_RUNTIME_CASES[cls]})


def test_c_runtime_evidence(c_runtime):
    cls, ev = c_runtime
    assert ev.verified and not ev.passed, describe(ev)
    assert ev.stages["build"].status == "ok"  # it compiles; it dies when run
    assert ev.stages["build"].error_classes == []
    assert ev.error_classes[0] == cls
    assert group_of(cls) == "runtime"


@pytest.mark.parametrize("form", ["test_exit_status", "test_check_true"])
def test_c_runtime_class_per_assertion_form(c_runtime, form):
    """``assert subprocess.run(...).returncode == 0`` (pytest explains it with the
    CompletedProcess repr, returncode=-11 / -8) and ``check=True`` (CalledProcessError: died with
    <Signals.SIGSEGV: 11>) both carry the signal into the failure text."""
    cls, ev = c_runtime
    case = by_name(ev)[form]
    assert case.outcome == "failed" and case.error_class == cls, case


@pytest.mark.xfail(strict=True, reason="limitation, not a regex bug: a test that checks only the output of a "
                   "killed program fails with \"assert '' == '2\\n'\" and no returncode in the text, so "
                   "the crash is invisible to classify_python")
def test_c_runtime_class_when_only_the_output_is_checked(c_runtime):
    cls, ev = c_runtime
    assert by_name(ev)["test_output"].error_class == cls


def test_BUG_c_runtime_class_from_subprocess_call(c_runtime):
    """``rc = subprocess.call(...); assert rc == 0`` fails with the text "assert -11 == 0" (or
    -8): taxonomy._CRASH's ``\\b-(?:6|11) [!=]= 0\\b`` and _SIGFPE's ``\\b-8 [!=]= 0\\b`` can never
    match after a space (\\b between two non-word characters), so it is classed wrong_answer."""
    cls, ev = c_runtime
    case = by_name(ev)["test_call_status"]
    assert case.message in ("assert -11 == 0", "assert -8 == 0"), case
    assert case.error_class == cls, case


@requires_sandbox
@requires_gcc
def test_c_wrong_output_and_correct_program():
    wrong = planted(c_task("c-wrong"), {"Makefile": MAKEFILE, "main.c": MAIN_OK.replace("a / b", "a * b")})
    assert wrong.verified and not wrong.passed, describe(wrong)
    assert wrong.stages["build"].status == "ok"
    assert wrong.error_classes == ["wrong_answer"]
    cases = by_name(wrong)
    assert cases["test_output"].error_class == "wrong_answer"
    assert cases["test_output"].message == "assert '18\\n' == '2\\n'"
    assert cases["test_exit_status"].outcome == "passed"  # it ran fine, it just computed the wrong thing

    right = planted(c_task("c-ok"), {"Makefile": MAKEFILE, "main.c": MAIN_OK})
    assert right.verified and right.passed, describe(right)
    assert right.error_classes == [] and right.stages["build"].status == "ok"
    assert right.stages["build"].data["c_tool"] == "make" and right.stages["build"].data["c_exit"] == 0


# =========================================================================== every class is planted

PLANTED_CLASSES = (
    {c for _, _, c in PY_RUNTIME_CASES}
    | {"syntax", "import"}  # test_python_collection_errors_syntax_indentation_and_import
    | {"timeout", "memory"}  # whole-run timeout, OOM kill
    | {"disk_full"}  # test_a_disk_the_agent_filled_fails_the_agent_not_the_harness
    | {c for c, *_ in C_BUILD_CASES}
    | set(C_RUNTIME_CASES)
    | {"wrong_answer"}  # test_c_wrong_output_and_correct_program, tags
)


def test_every_class_is_planted():
    assert PLANTED_CLASSES == set(CLASSES)
    assert set(CLASSES.values()) == set(taxonomy.GROUPS)


# =========================================================================== classify_compiler on real gcc/g++/ld output


def compile_output(tmp_path, name: str, source: str, compiler: str = "gcc", flags=(), link: bool = False,
                   extra: dict[str, str] | None = None) -> str:
    """Compile (``link``: and link) real sources with the host's compiler; its whole output."""
    sources = {name: source, **(extra or {})}
    for fname, text in sources.items():
        (tmp_path / fname).write_text(text)
    if link:
        cmd = [compiler, *flags, *sources, "-o", "prog"]
    else:
        cmd = [compiler, "-c", *flags, name, "-o", "/dev/null"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=False)
    return r.stdout + r.stderr


COMPILE_UNITS = [
    # id, file, source, compiler, flags, expected [(class, line)]
    ("undeclared", "u.c", "int main(void) {\n    return missing;\n}\n", "gcc", [],
     [("compile.undeclared", 2)]),
    ("unknown-type", "k.c", "int main(void) {\n    foo_t x = 0;\n    return 0;\n}\n", "gcc", [],
     [("compile.undeclared", 2)]),
    ("implicit-werror", "i.c", "int main(void) {\n    return helper(1);\n}\n", "gcc",
     ["-Werror=implicit-function-declaration"], [("compile.implicit_declaration", 2)]),
    ("implicit-c99-pedantic", "i.c", "int main(void) {\n    return helper(1);\n}\n", "gcc",
     ["-std=c99", "-pedantic-errors"], [("compile.implicit_declaration", 2)]),
    ("conflicting-types", "t.c", "int f(int);\ndouble f(int x) { return x; }\nint main(void) { return 0; }\n",
     "gcc", [], [("compile.type", 2)]),
    ("too-few-args", "a.c", "int f(int a, int b);\nint main(void) {\n    return f(1);\n}\n", "gcc", [],
     [("compile.type", 3)]),
    ("incompatible-struct", "s.c", ("struct s { int a; };\nint main(void) {\n    struct s v = {1};\n"
                                    "    int x = v;\n    return x;\n}\n"), "gcc", [], [("compile.type", 4)]),
    ("missing-semicolon", "m.c", "int main(void) {\n    int x = 1\n    return x;\n}\n", "gcc", [],
     [("compile.syntax", 3)]),
    ("stray-char", "y.c", "int main(void) {\n    int x = 1 @ 2;\n    return x;\n}\n", "gcc", [],
     [("compile.syntax", 2), ("compile.syntax", 2)]),
    ("missing-header", "h.c", '#include "no_such_header.h"\nint main(void) { return 0; }\n', "gcc", [],
     [("compile.other", 1)]),
    ("cxx-not-declared", "u.cpp", "int main() {\n    return missing;\n}\n", "g++", [],
     [("compile.undeclared", 2)]),
    ("cxx-invalid-conversion", "c.cpp", "int main() {\n    const char *s = \"a\";\n    int x = s;\n    return x;\n}\n",
     "g++", [], [("compile.type", 3)]),
    ("cxx-no-matching-function", "n.cpp", "void f(int);\nvoid f(double);\nint main() {\n    f(\"a\");\n    return 0;\n}\n",
     "g++", [], [("compile.type", 4)]),
    ("cxx-expected", "e.cpp", "int main() {\n    int x = 1\n    return x;\n}\n", "g++", [],
     [("compile.syntax", 3)]),
]


@requires_gcc
@pytest.mark.parametrize("name, source, compiler, flags, expected", [c[1:] for c in COMPILE_UNITS],
                         ids=[c[0] for c in COMPILE_UNITS])
def test_classify_compiler_on_real_output(tmp_path, name, source, compiler, flags, expected):
    out = compile_output(tmp_path, name, source, compiler, flags)
    records = classify_compiler(out)
    assert [(r["class"], r["line"]) for r in records] == expected, out
    assert all(r["file"] == name and r["message"] for r in records)


@requires_gcc
def test_classify_compiler_ignores_warnings(tmp_path):
    """Warnings are no errors: gcc 12's default for an implicit declaration, -Wall noise."""
    src = "int main(void) {\n    int unused;\n    return helper(1);\n}\n"
    out = compile_output(tmp_path, "w.c", src, flags=["-Wall"])
    assert "warning:" in out
    expected = [("compile.implicit_declaration", 3)] if gcc_major() >= 14 else []
    assert [(r["class"], r["line"]) for r in classify_compiler(out)] == expected, out


@requires_gcc
def test_classify_linker_undefined_reference(tmp_path):
    out = compile_output(tmp_path, "main.c", "int helper(void);\nint main(void) { return helper(); }\n", link=True)
    recs = classify_compiler(out)
    assert [r["class"] for r in recs] == ["link.undefined_reference"], out
    assert "helper" in recs[0]["message"] and recs[0]["line"] == 0


@requires_gcc
def test_classify_linker_multiple_definition(tmp_path):
    out = compile_output(tmp_path, "main.c", "int helper(void) { return 1; }\nint main(void) { return helper(); }\n",
                         link=True, extra={"other.c": "int helper(void) { return 2; }\n"})
    recs = classify_compiler(out)
    assert [r["class"] for r in recs] == ["link.multiple_definition"], out
    assert "helper" in recs[0]["message"]


@requires_gcc
def test_classify_linker_other(tmp_path):
    out = compile_output(tmp_path, "main.c", "int main(void) { return 0; }\n", flags=["-lnot_a_real_library"],
                         link=True)
    recs = classify_compiler(out)
    assert [r["class"] for r in recs] == ["link.other"], out
    assert recs[0]["file"] == "" and recs[0]["line"] == 0 and recs[0]["message"]


@requires_gcc
def test_classify_gold_linker_undefined_reference(tmp_path):
    if shutil.which("ld.gold") is None:
        pytest.skip("ld.gold is not installed")
    out = compile_output(tmp_path, "main.c", "int helper(void);\nint main(void) { return helper(); }\n",
                         flags=["-fuse-ld=gold"], link=True)
    assert [r["class"] for r in classify_compiler(out)] == ["link.undefined_reference"], out


def test_classify_compiler_clean_output():
    assert classify_compiler("") == []
    assert classify_compiler("make: Nothing to be done for 'all'.\n") == []


# =========================================================================== classify_python


@pytest.mark.parametrize("exc, cls", [
    ("SyntaxError", "syntax"), ("IndentationError", "syntax"), ("TabError", "syntax"),
    ("NameError", "name"), ("UnboundLocalError", "name"),
    ("ImportError", "import"), ("ModuleNotFoundError", "import"),
    ("TypeError", "type"), ("AttributeError", "attribute"),
    ("IndexError", "runtime.index"), ("KeyError", "runtime.key"), ("ValueError", "runtime.value"),
    ("UnicodeDecodeError", "runtime.value"),
    ("ZeroDivisionError", "runtime.zero_division"), ("FloatingPointError", "runtime.zero_division"),
    ("RecursionError", "runtime.recursion"),
    ("AssertionError", "wrong_answer"), ("Failed", "wrong_answer"), ("NotImplementedError", "wrong_answer"),
    ("CodeUnderTestDied", "runtime.crash"),
    ("TimeoutError", "timeout"), ("TermrlTestTimeout", "timeout"), ("subprocess.TimeoutExpired", "timeout"),
    ("MemoryError", "memory"),
    ("ParseFailure", "runtime.other"), ("OSError", "runtime.other"), ("StopIteration", "runtime.other"),
    ("builtins.KeyError", "runtime.key"), ("solution.ParseFailure", "runtime.other"),
])
def test_classify_python_names(exc, cls):
    assert classify_python(exc) == cls
    assert classify_python(exc, "some message") == cls


def test_classify_python_real_exceptions():
    """Raise the real thing on this interpreter and classify its type name and message."""
    snippets = {
        "def f():\nreturn 1\n": "syntax",  # IndentationError
        "if True:\n\tx = 1\n        y = 2\n": "syntax",  # TabError
        "x = (1,\n": "syntax",
    }
    for src, cls in snippets.items():
        with pytest.raises(SyntaxError) as info:
            compile(src, "s.py", "exec")
        assert classify_python(type(info.value).__name__, str(info.value)) == cls
    def unbound():
        if False:
            v = 1
        return v
    for fn, cls in [(lambda: undefined_name, "name"), (unbound, "name"),  # noqa: F821
                    (lambda: __import__("no_such_module_q"), "import"), (lambda: [][1], "runtime.index"),  # noqa: PLE0643
                    (lambda: {}["k"], "runtime.key"), (lambda: int("x"), "runtime.value"),
                    (lambda: 1 / 0, "runtime.zero_division"), (lambda: None.x, "attribute"),
                    (lambda: len(5), "type")]:
        with pytest.raises(Exception) as info:
            fn()
        assert classify_python(type(info.value).__name__, str(info.value)) == cls, info.value


def _child_failure(code: str) -> str:
    """The stderr of a real Python child process that died of ``code``."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode != 0
    return r.stderr


PROGRAM_TESTS = """
import subprocess
def test_check_true_captured():
    subprocess.run([sys.executable, "prog.py"], capture_output=True, text=True, check=True, timeout=20)
def test_check_true_inherited_stderr():
    subprocess.run([sys.executable, "prog.py"], check=True, timeout=20)
def test_check_output():
    assert subprocess.check_output([sys.executable, "prog.py"], timeout=20) == b"3\\n"
"""


@requires_sandbox
@pytest.mark.parametrize("program, cls", [
    ("print(undefined_name)\n", "name"),
    ("import json\nprint(json.loads('{'))\n", "runtime.value"),
    ("print(1 // 0)\n", "runtime.zero_division"),
])
def test_a_program_the_tests_run_is_classified_by_its_own_error(program, cls):
    """A test that runs the agent's program and fails with CalledProcessError gets the program's
    error class (its traceback on stderr, captured or inherited), not words from the source
    listing of subprocess.py (which mentions TimeoutExpired: this was classified timeout)."""
    ev = planted(make_task("program-error", {"test_prog.py": PROGRAM_TESTS}), {"prog.py": program})
    cases = by_name(ev)
    assert set(cases) == {"test_check_true_captured", "test_check_true_inherited_stderr", "test_check_output"}
    for case in cases.values():
        assert case.exc_type == "CalledProcessError" and case.error_class == cls, case


@pytest.mark.parametrize("code, cls", [
    ("int('twelve')", "runtime.value"),
    ("{}['missing']", "runtime.key"),
    ("import no_such_module_z", "import"),
    ("1 // 0", "runtime.zero_division"),
    ("assert 1 == 2", "wrong_answer"),  # the child's own AssertionError stays a wrong answer
])
def test_classify_python_assertion_about_a_crashed_child(code, cls):
    """A hidden test asserting a child Python program's exit status: the child's traceback,
    in the assertion text, names the real class."""
    stderr = _child_failure(code)
    assert classify_python("AssertionError", f"assert 1 == 0 {stderr}") == cls


def test_BUG_classify_python_child_custom_exception_is_runtime_other():
    """A child process that died of an exception outside the table (a custom class) is a crashed
    program, i.e. runtime.other as it would be in-process; classify_python returns wrong_answer
    because the child match is used only when the child's class is in PYTHON_EXCEPTIONS."""
    custom = _child_failure("class InvalidInputError(Exception): pass\nraise InvalidInputError('bad token')")
    assert classify_python("InvalidInputError", "bad token") == "runtime.other"  # in-process: fine
    assert classify_python("AssertionError", f"assert 1 == 0 {custom}") == "runtime.other"
    stdlib = _child_failure("import json; json.loads('{')")  # json.decoder.JSONDecodeError
    assert classify_python("AssertionError", f"assert 1 == 0 {stdlib}") != "wrong_answer"


@requires_gcc
@pytest.mark.parametrize("body, cls", [
    ("int *volatile p = 0; *p = 1; return 0;", "runtime.crash"),
    ("volatile int z = 0; return 10 / z;", "runtime.zero_division"),
    ("__builtin_trap();", "runtime.crash"),  # SIGILL
])
def test_classify_python_on_real_signal_deaths(tmp_path, body, cls):
    """A hidden test running the program with check=True, or asserting on its returncode."""
    (tmp_path / "p.c").write_text(f"int main(void) {{ {body} }}\n")
    subprocess.run(["gcc", "-O0", "-o", "p", "p.c"], cwd=tmp_path, check=True)
    with pytest.raises(subprocess.CalledProcessError) as info:
        subprocess.run([str(tmp_path / "p")], capture_output=True, check=True)
    assert classify_python(type(info.value).__name__, str(info.value)) == cls, str(info.value)
    done = subprocess.run([str(tmp_path / "p")], capture_output=True, check=False)
    rc = done.returncode
    assert classify_python("AssertionError", f"assert {rc} == 0\n +  where {rc} = {done!r}.returncode") == cls
    # the same death seen through a shell: 128 + signal
    sh = subprocess.run(["/bin/sh", "-c", str(tmp_path / "p")], capture_output=True, check=False).returncode
    if sh in (134, 136, 139):
        assert classify_python("AssertionError", f"assert {sh} == 0") == cls


def test_classify_python_timeouts_from_real_subprocess():
    with pytest.raises(subprocess.TimeoutExpired) as info:
        subprocess.run(["sleep", "5"], timeout=0.2, check=False)
    assert classify_python(type(info.value).__name__, str(info.value)) == "timeout"
    assert classify_python("AssertionError", f"assert False\n{info.value}") == "timeout"


@pytest.mark.parametrize("message, cls", [
    ("assert -11 == 0", "runtime.crash"),
    ("assert -6 == 0", "runtime.crash"),
    ("assert -8 == 0", "runtime.zero_division"),
])
def test_BUG_classify_python_bare_negative_returncode(message, cls):
    """The text pytest gives for ``rc = subprocess.call(...); assert rc == 0`` on a killed child.
    taxonomy.py's ``\\b-(?:6|11) [!=]= 0\\b`` (_CRASH) and ``\\b-8 [!=]= 0\\b`` (_SIGFPE) need a
    word character before the minus sign, so they never match this text."""
    assert classify_python("AssertionError", message) == cls


def test_dominant_picks_the_class_furthest_from_correct():
    assert dominant([]) is None
    assert dominant(["wrong_answer", "runtime.key", "compile.syntax"]) == "compile.syntax"
    assert dominant(["wrong_answer", "timeout"]) == "timeout"
    assert dominant(["wrong_answer", "runtime.index"]) == "runtime.index"
    with pytest.raises(KeyError):
        group_of("not-a-class")
