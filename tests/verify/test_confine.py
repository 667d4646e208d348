"""The hidden tests out of reach of the code under test while they run (termrl.verify.harness.confine).

The attack: the agent's module reads the test files when the tests import or run it, and answers
every call with the expected value it finds there. It worked through every road the agent's code
takes at verification time: a family's harness program, the isolation's worker, the warm pool.
Each test shows the attack passing with hiding turned off (``TERMRL_CONFINE=0``, a measurement
switch), then failing with it on.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from termrl.checks.strength import reference_workspace
from termrl.protocols import TestsData
from termrl.tasks.suites import find_task
from termrl.verify.harness import confine
from termrl.verify.pool import VerifierPool
from tests.verify.conftest import describe, make_task, planted

LANDLOCK = confine.abi() > 0
needs_landlock = pytest.mark.skipif(not LANDLOCK, reason="this kernel has no Landlock (Linux 5.13+)")

PEEK = '''
import ast, os

def _answers():
    root = os.sep + "stset"[::-1]  # the hidden tests' folder, spelt so that no text search finds it
    table = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".py"):
                continue
            for node in ast.walk(ast.parse(open(os.path.join(folder, name)).read())):
                try:
                    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
                        given = [ast.literal_eval(a) for a in node.left.args]
                        table[repr(given)] = ast.literal_eval(node.comparators[0])
                    elif isinstance(node, ast.List) and len(node.elts) == 2:
                        given, want = ast.literal_eval(node)
                        table[repr(list(given))] = ast.literal_eval(want) if isinstance(want, str) else want
                except Exception:
                    pass
    return table

def {name}(*args):
    return _answers().get(repr(list(args)))
'''


def peek(name: str) -> str:
    """The agent's module: ``name`` answers from the hidden tests, read at call time."""
    return PEEK.replace("{name}", name)


ADD_TESTS = """
from impl import add

def test_add():
    assert add(2, 3) == 5
    assert add(40, 2) == 42
"""


def _confine(monkeypatch, on: bool) -> None:
    if on:
        monkeypatch.delenv("TERMRL_CONFINE", raising=False)
    else:
        monkeypatch.setenv("TERMRL_CONFINE", "0")


@pytest.mark.sandbox
@needs_landlock
def test_a_family_harness_program_cannot_read_the_tests(monkeypatch):
    """py-function's tests run the agent's module in a harness program they start."""
    task = find_task("py-function-1000400")
    agent = {"mylib.py": peek("run_length_encode")}
    _confine(monkeypatch, False)
    open_ = planted(task, agent)
    _confine(monkeypatch, True)
    hidden = planted(task, agent)
    assert open_.passed, describe(open_)
    assert not hidden.passed and TestsData.of(hidden).tests_hidden is True, describe(hidden)
    assert "-> None (expected" in hidden.stages["tests"].data["output_tail"], describe(hidden)  # found nothing
    with VerifierPool(workers=1, static=False) as pool:
        reference = pool.verify_files(task, reference_workspace(task))
    assert reference.passed and TestsData.of(reference).tests_hidden is True, describe(reference)


@pytest.mark.sandbox
@needs_landlock
def test_the_isolation_worker_cannot_read_the_tests(monkeypatch):
    """A pytest task that imports the agent's module: it runs in the isolation's worker."""
    task = make_task("confine-worker", {"test_add.py": ADD_TESTS})
    _confine(monkeypatch, False)
    open_ = planted(task, {"impl.py": peek("add")})
    _confine(monkeypatch, True)
    hidden = planted(task, {"impl.py": peek("add")})
    honest = planted(task, {"impl.py": "def add(a, b):\n    return a + b\n"})
    assert open_.passed, describe(open_)
    assert not hidden.passed and TestsData.of(hidden).tests_hidden is True, describe(hidden)
    assert honest.passed and TestsData.of(honest).tests_hidden is True, describe(honest)


@pytest.mark.sandbox
@needs_landlock
def test_the_warm_pool_hides_the_tests(monkeypatch):
    """The pool's fork server forks the worker before it reads a run's job; HumanEval's check()."""
    task = find_task("humaneval-0")
    entry = "has_close_elements"
    _confine(monkeypatch, True)
    with VerifierPool(workers=1, static=False) as pool:
        attack = pool.verify_files(task, {"solution.py": peek(entry).encode()})
        honest = pool.verify_files(task, reference_workspace(task))
    assert not attack.passed and TestsData.of(attack).tests_hidden is True, describe(attack)
    assert honest.passed, describe(honest)
    _confine(monkeypatch, False)
    with VerifierPool(workers=1, static=False) as pool:
        open_ = pool.verify_files(task, {"solution.py": peek(entry).encode()})
    assert open_.passed and TestsData.of(open_).tests_hidden is False, describe(open_)


# ---------------------------------------------------------------- confine itself, on this host


@pytest.fixture
def hidden_folder(tmp_path, monkeypatch):
    """A folder of 'tests' (a secret, a script of the tests' own, an input file), and
    ``subprocess`` restored after the test (``confine_children`` patches it)."""
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "secret.txt").write_text("SECRET\n")
    (folder / "input.txt").write_text("INPUT\n")
    (folder / "own.sh").write_text(f"cat {folder}/secret.txt\n")
    monkeypatch.setattr(subprocess.Popen, "_execute_child", subprocess.Popen._execute_child)
    monkeypatch.setattr(os, "system", os.system)
    return folder


def _run(*argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, **kwargs)


@needs_landlock
def test_children_cannot_read_list_or_write_a_hidden_folder(hidden_folder, tmp_path):
    assert confine.confine_children([str(hidden_folder)])
    read = _run(sys.executable, "-c", f"print(open('{hidden_folder}/secret.txt').read())")
    listing = _run(sys.executable, "-c", f"import os; print(os.listdir('{hidden_folder}'))")
    write = _run(sys.executable, "-c", f"open('{hidden_folder}/new.txt', 'w')")
    shell = subprocess.run(f"cat {hidden_folder}/secret.txt >/dev/null; cat {hidden_folder}/*.txt", shell=True,
                           capture_output=True, text=True)
    elsewhere = _run(sys.executable, "-c", "print(open('/etc/hostname').read() != '')")
    status = os.system(f"{sys.executable} -c \"open('{hidden_folder}/secret.txt')\" 2>/dev/null")
    assert status == 1 << 8, status
    assert os.system("exit 3") == 3 << 8 and os.system("true") == 0
    assert read.returncode != 0 and "Permission denied" in read.stderr, read
    assert listing.returncode != 0 and "Permission denied" in listing.stderr, listing
    assert write.returncode != 0 and not (hidden_folder / "new.txt").exists(), write
    assert "SECRET" not in shell.stdout, shell
    assert elsewhere.returncode == 0 and "True" in elsewhere.stdout, elsewhere


@needs_landlock
def test_the_tests_own_programs_run_free_and_a_named_input_is_all_a_child_sees(hidden_folder):
    assert confine.confine_children([str(hidden_folder)])
    own = _run("bash", str(hidden_folder / "own.sh"))
    given = _run(sys.executable, "-c", "import sys; print(open(sys.argv[1]).read());"
                 f"print(open('{hidden_folder}/secret.txt').read())", str(hidden_folder / "input.txt"))
    assert own.returncode == 0 and own.stdout == "SECRET\n", own
    assert "INPUT" in given.stdout and "SECRET" not in given.stdout and "Permission denied" in given.stderr, given


@needs_landlock
def test_a_link_to_a_hidden_folder_or_into_it_is_hidden_too(hidden_folder, tmp_path):
    (tmp_path / "elsewhere").symlink_to(hidden_folder)
    (tmp_path / "inside").symlink_to(hidden_folder / "secret.txt")
    assert confine.confine_children([str(hidden_folder)])
    for path in (tmp_path / "elsewhere" / "secret.txt", tmp_path / "inside"):
        read = _run(sys.executable, "-c", f"print(open('{path}').read())")
        assert read.returncode != 0 and "SECRET" not in read.stdout, read


def test_without_landlock_nothing_is_confined_and_it_says_so(hidden_folder, monkeypatch):
    monkeypatch.setattr(confine, "abi", lambda: 0)
    before = subprocess.Popen._execute_child
    assert confine.hide([str(hidden_folder)]) is None
    assert confine.confine_children([str(hidden_folder)]) is False
    assert subprocess.Popen._execute_child is before
    assert confine.restrict(None) is False


def test_whose_program_is_the_tests_own():
    folders = ["/tests"]
    assert confine.own_program(["/tests/run.sh"], folders)
    assert confine.own_program(["bash", "/tests/run.sh", "x"], folders)
    assert confine.own_program(["python3.11", "-B", "/tests/helper.py"], folders)
    assert confine.own_program(["python3", "-m", "pytest", "/tests"], folders)
    assert not confine.own_program(["python3", "-m", "mymodule", "/tests/in.txt"], folders)
    assert not confine.own_program(["python3", "-c", "import impl", "/tests/x.py"], folders)
    assert not confine.own_program(["python3", "/workspace/solve.py", "/tests/in.txt"], folders)
    assert not confine.own_program(["/workspace/a.out", "/tests/in.txt"], folders)
    assert not confine.own_program([], folders)
    assert confine.own_program(["env", "A=1", "python3", "/tests/helper.py"], folders)
    assert confine.own_program(["timeout", "-k", "5", "10", "nice", "-n", "3", "bash", "/tests/run.sh"], folders)
    assert not confine.own_program(["timeout", "10", "python3", "/workspace/solve.py", "/tests/in"], folders)
    assert not confine.own_program(["env", "/workspace/a.out"], folders)


def test_hidden_paths_a_command_names(tmp_path):
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "in.txt").write_text("x")
    folders = [os.path.realpath(folder)]
    named = confine.named(["prog", f"--input={folder}/in.txt", "/etc/hostname", f"{folder}/missing"], folders)
    assert named == [f"{folder}/in.txt"]
    assert confine.named(["prog", str(folder)], folders) == [str(folder)]


@pytest.mark.sandbox
def test_the_agents_own_module_named_confine_is_the_tests_to_import():
    """The harness's ``confine`` is forgotten before the tests import anything: a workspace module
    of that name is the agent's."""
    task = make_task("confine-own-name", {"test_own.py": "from confine import answer\n\n"
                                                          "def test_own():\n    assert answer() == 42\n"})
    ev = planted(task, {"confine.py": "def answer():\n    return 42\n"})
    assert ev.passed, describe(ev)


def test_a_report_without_the_wall_says_so_and_warns():
    """A run where the tests were in reach (no Landlock, or TERMRL_CONFINE=0) is marked and warned about."""
    from termrl.protocols import ExecResult, StopReason
    from termrl.verify.stages import pytest_result

    report = {"version": 1, "complete": True, "exitstatus": 0, "collected": 1,
              "tests": [{"nodeid": "/tests/test_a.py::test_a", "outcome": "passed", "duration_s": 0.0, "tags": [],
                         "exc_type": None, "message": "", "detail": ""}]}
    res = ExecResult(0, "", "", StopReason.EXITED, 0.1)
    with pytest.warns(RuntimeWarning, match="in reach of the code under test"):
        stage, _ = pytest_result(res, {**report, "tests_hidden": False}, started=True)
    assert TestsData.from_dict(stage.data).tests_hidden is False
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stage, _ = pytest_result(res, {**report, "tests_hidden": True}, started=True)
    assert TestsData.from_dict(stage.data).tests_hidden is True and stage.status == "ok"


@needs_landlock
def test_a_confined_child_cannot_read_the_memory_of_the_process_that_started_it(hidden_folder):
    """Landlock's ptrace rule: a process may not attach to one outside its domain (the test
    process, the fork server); an unconfined child of the same user may."""
    probe = f"open('/proc/{os.getpid()}/mem', 'rb').close()"
    assert _run(sys.executable, "-c", probe).returncode == 0
    assert confine.confine_children([str(hidden_folder)])
    denied = _run(sys.executable, "-c", probe)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr, denied
