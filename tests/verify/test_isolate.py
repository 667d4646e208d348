"""Out-of-process grading (termrl.verify.harness.isolate): the agent's modules run in a worker interpreter;
the test process only sees plain data and handles. Every test verifies a planted workspace in a real
sandbox, through the same ``verify`` path an episode takes (and the warm pool where it differs)."""

from __future__ import annotations

import pytest

from termrl.protocols import TestsData
from termrl.verify.pool import VerifierPool
from termrl.verify.stages import read_report
from tests.verify.conftest import by_name, describe, make_task, planted

pytestmark = pytest.mark.sandbox

SEMANTICS_TESTS = """
import pytest
import shapes
from shapes import Stack, StackEmpty, area, squares, scale_all, apply_twice, Point, Color, total

def test_plain_values_cross_as_data():
    assert area(2, 3) == 6 and area(2.5, 2) == 5.0
    assert shapes.area(1, 1) == 1
    assert total({"a": 1, "b": 2}) == 3
    assert shapes.TABLE == {"x": (1, 2), "y": [3, {4}]}

def test_objects_methods_dunders_and_isinstance():
    s = Stack()
    s.push(1)
    s.push(2)
    assert len(s) == 2 and list(s) == [1, 2] and 2 in s and s.peek() == 2 and s.items == [1, 2]
    assert isinstance(s, Stack) and repr(s) == "Stack([1, 2])"
    assert Stack.LIMIT == 10

def test_exceptions_keep_their_class():
    with pytest.raises(StackEmpty):
        Stack().pop()
    with pytest.raises(IndexError):
        Stack().pop()
    with pytest.raises(ZeroDivisionError):
        area(1, 0, divide=True)

def test_generators_callbacks_and_in_place_changes():
    assert list(squares(4)) == [0, 1, 4, 9]
    assert apply_twice(lambda v: v + 3, 1) == 7
    data = [1, 2, 3]
    assert scale_all(data, 10) is None
    assert data == [10, 20, 30]

def test_subclasses_of_builtins_keep_their_values_and_attributes():
    p = Point(1, 2)
    assert p == (1, 2) and p.x == 1 and Point(3, 4).y == 4
    assert Color.RED == 1 and Color.RED.name == "RED"

def test_prints_reach_the_tests_capture(capsys):
    shapes.shout("hello")
    assert capsys.readouterr().out == "HELLO\\n"

def test_stateful_subclasses_of_builtins_show_their_current_state():
    c = shapes.LRU(2)
    c.put(1, "a")
    c.put(2, "b")
    assert c.get(1) == "a" and c.hits == 1
    c.put(3, "c")
    assert list(c) == [1, 3] and len(c) == 2 and 2 not in c and c == {1: "a", 3: "c"}
    assert isinstance(c, dict) and c.get(2) is None

def test_exception_attributes_hierarchy_and_argument_changes_survive_a_raise():
    graph = {"a": ["b"]}
    with pytest.raises(shapes.CycleError) as caught:
        shapes.toposort(graph)
    assert type(caught.value).__name__ == "SubCycle" and caught.value.cycle == ["a", "b", "a"]
    assert isinstance(caught.value, ValueError) and graph == {"a": ["b"], "touched": True}

def test_stdlib_values_cross_by_value_both_ways():
    import collections, pathlib
    assert shapes.first_line(pathlib.Path("/etc/hostname")) == pathlib.Path("/etc/hostname").read_text().split("\\n")[0]
    counts = shapes.counts("abca")
    assert type(counts) is collections.Counter and counts == collections.Counter("abca")
    assert shapes.where() == pathlib.PurePosixPath("/data/x.csv")

def test_more_stdlib_values_cross_by_value_and_a_look_alike_does_not():
    import datetime, decimal, fractions, uuid
    values = shapes.stdlib_values()
    assert values == [decimal.Decimal("1.10"), fractions.Fraction(1, 3), datetime.date(2024, 2, 29),
                      datetime.datetime(2024, 2, 29, 12, 30), datetime.time(23, 59), datetime.timedelta(days=2, seconds=5),
                      uuid.UUID(int=7)]
    assert [type(v) for v in values] == [decimal.Decimal, fractions.Fraction, datetime.date, datetime.datetime,
                                          datetime.time, datetime.timedelta, uuid.UUID]
    assert shapes.echo(decimal.Decimal("2.5")) == decimal.Decimal("2.5")
    assert type(shapes.echo(datetime.date(2020, 1, 1))) is datetime.date
    assert shapes.echo(range(2, 9, 3)) == range(2, 9, 3)
    grid = shapes.echo({(0, 1): "a", (2, 3): ["b", 1.5]})
    assert grid == {(0, 1): "a", (2, 3): ["b", 1.5]} and type(next(iter(grid))) is tuple
    assert shapes.echo([range(3), {1: None}]) == [range(3), {1: None}]
    fake = shapes.look_alike()
    assert type(fake) is not decimal.Decimal and fake != decimal.Decimal("1")

def test_a_generator_argument_is_iterated_in_the_worker():
    assert shapes.consume(x for x in range(3)) == [0, 2, 4]

def test_module_state_persists_between_calls():
    before = shapes.CALLS
    area(1, 1)
    assert shapes.CALLS == before + 1

def test_changes_inside_plain_containers_come_back_and_unchanged_arguments_stay_as_they_were():
    grid, marks = [[1, 2], [3]], {"a": 1, "b": None}
    shapes.touch(grid, marks)
    assert grid == [[1, 2, 0], [3]] and marks == {"a": 1, "b": None, "c": True}
    words, counts, tags = ["x", "y"], {"x": 1}, {"t"}
    assert shapes.read_only(words, counts, tags) == 4
    assert words == ["x", "y"] and counts == {"x": 1} and tags == {"t"}
    chain = {"v%06d" % i: ["v%06d" % (i + 1)] for i in range(20000)}
    assert shapes.longest(chain) == 20000 and len(chain) == 20000 and chain["v000000"] == ["v000001"]
"""

SHAPES = """
import enum
from collections import OrderedDict, namedtuple

Point = namedtuple("Point", "x y")
TABLE = {"x": (1, 2), "y": [3, {4}]}
CALLS = 0


class Color(enum.IntEnum):
    RED = 1


class StackEmpty(IndexError):
    pass


class Stack:
    LIMIT = 10

    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def pop(self):
        if not self.items:
            raise StackEmpty("empty")
        return self.items.pop()

    def peek(self):
        return self.items[-1]

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __contains__(self, x):
        return x in self.items

    def __repr__(self):
        return "Stack(%r)" % (self.items,)


def area(w, h, divide=False):
    global CALLS
    CALLS += 1
    return w / h if divide else w * h


def total(d):
    return sum(d.values())


def squares(n):
    for i in range(n):
        yield i * i


def apply_twice(f, x):
    return f(f(x))


def shout(text):
    print(text.upper())


class LRU(OrderedDict):
    def __init__(self, cap):
        super().__init__()
        self.cap, self.hits = cap, 0

    def get(self, k, default=None):
        if k in self:
            self.move_to_end(k)
            self.hits += 1
            return self[k]
        return default

    def put(self, k, v):
        self[k] = v
        self.move_to_end(k)
        if len(self) > self.cap:
            self.popitem(last=False)


class CycleError(ValueError):
    def __init__(self, cycle):
        super().__init__("cycle")
        self.cycle = cycle


class SubCycle(CycleError):
    pass


def toposort(graph):
    graph["touched"] = True
    raise SubCycle(["a", "b", "a"])


def first_line(path):
    return path.read_text().split("\\n")[0]


def counts(text):
    import collections
    return collections.Counter(text)


def where():
    import pathlib
    return pathlib.PurePosixPath("/data/x.csv")


def consume(items):
    return [x * 2 for x in items]


def scale_all(values, k):
    for i, v in enumerate(values):
        values[i] = v * k


def touch(grid, marks):
    grid[0].append(0)
    marks["c"] = True


def stdlib_values():
    import datetime, decimal, fractions, uuid
    return [decimal.Decimal("1.10"), fractions.Fraction(1, 3), datetime.date(2024, 2, 29),
            datetime.datetime(2024, 2, 29, 12, 30), datetime.time(23, 59), datetime.timedelta(days=2, seconds=5),
            uuid.UUID(int=7)]


def echo(value):
    return value


class Decimal:
    # claims to be the stdlib's Decimal, and to equal anything
    def __eq__(self, other):
        return True


Decimal.__module__ = "decimal"


def look_alike():
    return Decimal()


def read_only(words, counts, tags):
    return len(words) + len(counts) + len(tags)


def longest(graph):
    node, n = "v000000", 0
    while node in graph:
        node, n = graph[node][0], n + 1
    return n
"""

ADD_TESTS = """
from impl import add

def reference(a, b):
    return a + b

def test_add():
    expected = reference(2, 3)
    assert add(2, 3) == expected

def test_add_more():
    for a, b in [(1, 1), (-2, 5), (10, 20)]:
        expected = reference(a, b)
        assert add(a, b) == expected
"""

CALLER_FRAME = """
import inspect
import sys

def add(a, b):
    for frame in inspect.stack()[1:]:
        g = frame.frame.f_globals
        if "reference" in g:
            return g["reference"](a, b)
        if "expected" in frame.frame.f_locals:
            return frame.frame.f_locals["expected"]
    return None
"""

ALWAYS_EQUAL = """
class Anything:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

def add(a, b):
    return Anything()
"""

ALWAYS_EQUAL_INT = """
class Anything(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

def add(a, b):
    return Anything(0)
"""

SKIPPER = """
import pytest

def add(a, b):
    raise pytest.skip.Exception("not today")
"""

KEY_HUNT = """
import glob
import os

def _hunt():
    found = any(k.startswith("TERMRL_REPORT_KEY") for k in os.environ)
    for path in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                found = found or b"TERMRL_REPORT_KEY" in f.read()
        except OSError:
            pass
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open("/proc/%s/mem" % pid, "rb") as f:
                    f.read(1)
                found = True  # any other process's memory is readable: the key would be too
            except OSError:
                pass
    return found

FOUND = _hunt()

def add(a, b):
    return 0 if FOUND else a + b
"""
"""An honest ``add`` that turns wrong if it can see the report's key anywhere the sandbox exposes it."""

REPORT_FORGER = """
import json
import os
import subprocess
import sys

FAKE = json.dumps({"version": 1, "complete": True, "exitstatus": 0, "tests": [
    {"nodeid": "test_add.py::test_add", "outcome": "passed", "duration_s": 0.0, "tags": [], "exc_type": "",
     "message": "", "detail": ""}]})
LOOP = "import time, sys\\nend = time.time() + 4\\nwhile time.time() < end:\\n" \\
       "    try:\\n        open(sys.argv[1], 'w').write(sys.argv[2])\\n    except OSError:\\n        pass\\n" \\
       "    time.sleep(0.001)\\n"
for out in ("/.termrl-out/report.json",):
    for body in (json.dumps({"body": FAKE, "mac": "0" * 64}), FAKE):
        subprocess.Popen([sys.executable, "-c", LOOP, out, body], start_new_session=True)

def add(a, b):
    return 0
"""
"""Keeps rewriting the report file, signed with a wrong key or not at all, while pytest runs and
after it ends, from processes outside pytest's session."""


def verified(impl: str, tests: str = ADD_TESTS):
    task = make_task("isolate", {"test_add.py": tests})
    return task, planted(task, {"impl.py": impl})


def test_honest_modules_behave_as_if_imported_in_the_test_process():
    task = make_task("isolate-semantics", {"test_shapes.py": SEMANTICS_TESTS})
    ev = planted(task, {"shapes.py": SHAPES})
    assert ev.passed, describe(ev)
    assert len(ev.tests) == 13


@pytest.mark.parametrize("impl", [CALLER_FRAME, ALWAYS_EQUAL, ALWAYS_EQUAL_INT, SKIPPER],
                         ids=["caller_frame", "always_equal", "always_equal_int", "skip_from_code"])
def test_hacks_that_need_the_test_process_fail(impl):
    _, ev = verified(impl)
    assert not ev.passed, describe(ev)
    assert TestsData.of(ev).failed == 2 and TestsData.of(ev).canary == "ok"


def test_the_report_key_is_nowhere_the_code_under_test_can_read():
    _, ev = verified(KEY_HUNT)
    assert ev.passed, describe(ev)


def test_a_report_rewritten_from_outside_pytest_is_caught():
    _, ev = verified(REPORT_FORGER)
    assert not ev.passed, describe(ev)
    # the harness read the plugin's signed report, a forged one (unsigned or wrongly signed), or a
    # file cut mid-write (no report): never a pass
    assert TestsData.of(ev).canary in ("ok", "forged", None)


def test_a_report_that_fails_its_key_check_reads_as_forged():
    from termrl.verify.stages import FORGED

    good = read_report('{"body": "{\\"tests\\": []}", "mac": "x"}', "k")
    assert good == FORGED
    assert read_report('{"version": 1, "tests": []}', "k") == FORGED
    assert read_report(None, "k") is None and read_report("{not json", "k") is None


def test_a_hang_in_one_test_leaves_the_next_test_a_fresh_worker():
    tests = """
    from impl import add, spin

    def test_spin():
        spin()

    def test_add_after():
        assert add(2, 3) == 5
    """
    impl = "def add(a, b):\n    return a + b\n\ndef spin():\n    while True:\n        pass\n"
    task = make_task("isolate-hang", {"test_add.py": tests})
    ev = planted(task, {"impl.py": impl}, per_test_timeout=2)
    tests_by_name = by_name(ev)
    assert tests_by_name["test_spin"].error_class == "timeout", describe(ev)
    assert tests_by_name["test_add_after"].outcome == "passed", describe(ev)


def test_a_module_whose_import_hangs_costs_one_time_limit_not_one_per_test():
    """Tests that import the agent's module afresh each time (every built-in Python task's do):
    the first import that runs out its test's alarm is a timeout, the later ones are timeouts at
    once. Same outcomes, one time limit instead of five."""
    tests = """
    import importlib, sys

    def load():
        if "impl" in sys.modules:
            return importlib.reload(sys.modules["impl"])
        return importlib.import_module("impl")

    def test_0():
        assert load().add(1, 1) == 2

    def test_1():
        assert load().add(1, 2) == 3

    def test_2():
        assert load().add(1, 3) == 4

    def test_3():
        assert load().add(1, 4) == 5

    def test_4():
        assert load().add(1, 5) == 6
    """
    impl = "import time\ntime.sleep(10**6)\n\ndef add(a, b):\n    return a + b\n"
    task = make_task("isolate-import-hang", {"test_load.py": tests})
    ev = planted(task, {"impl.py": impl}, per_test_timeout=2)
    assert [t.error_class for t in ev.tests] == ["timeout"] * 5, describe(ev)
    assert sum(t.duration_s for t in ev.tests) < 2 * 2 + 2, describe(ev)  # one alarm, not five
    assert ev.tests[1].exc_type == "ImportTimedOut" and "earlier test" in ev.tests[1].message


def test_a_fixture_that_runs_a_hanging_program_is_stopped_by_the_alarm():
    """The alarm covers setup (fixtures) and teardown, not only the test's body."""
    tests = """
    import subprocess, pytest

    @pytest.fixture
    def built():
        subprocess.run(["sh", "./build.sh"], timeout=120)
        return True

    def test_0(built):
        assert built

    def test_1(built):
        assert built
    """
    task = make_task("isolate-fixture-hang", {"test_build.py": tests})
    ev = planted(task, {"build.sh": "sleep 100000\n"}, per_test_timeout=2)
    assert [(t.outcome, t.error_class) for t in ev.tests] == [("error", "timeout")] * 2, describe(ev)
    assert sum(t.duration_s for t in ev.tests) < 10, describe(ev)


def test_code_under_test_that_ends_its_process_is_a_crash_of_that_test_only():
    tests = """
    from impl import add, leave

    def test_leave():
        leave()

    def test_add_after():
        assert add(2, 3) == 5
    """
    impl = "import os\n\ndef add(a, b):\n    return a + b\n\ndef leave():\n    os._exit(0)\n"
    task = make_task("isolate-exit", {"test_add.py": tests})
    ev = planted(task, {"impl.py": impl})
    tests_by_name = by_name(ev)
    assert tests_by_name["test_leave"].error_class == "runtime.crash", describe(ev)
    assert tests_by_name["test_add_after"].outcome == "passed", describe(ev)


def test_the_warm_pool_isolates_too():
    """The pool's fork server hands each run a worker it forked before reading the run's job."""
    task = make_task("isolate-pool", {"test_add.py": ADD_TESTS})
    semantics = make_task("isolate-pool-semantics", {"test_shapes.py": SEMANTICS_TESTS})
    leave = "import os\n\ndef add(a, b):\n    os._exit(3)\n"
    with VerifierPool(workers=1, static=False) as pool:
        honest = pool.verify_files(task, {"impl.py": b"def add(a, b):\n    return a + b\n"})
        frame = pool.verify_files(task, {"impl.py": CALLER_FRAME.encode()})
        hunt = pool.verify_files(task, {"impl.py": KEY_HUNT.encode()})
        exits = pool.verify_files(task, {"impl.py": leave.encode()})
        shapes = pool.verify_files(semantics, {"shapes.py": SHAPES.encode()})
        again = pool.verify_files(task, {"impl.py": b"def add(a, b):\n    return a + b\n"})
    assert honest.passed and not frame.passed and hunt.passed, (describe(honest), describe(frame), describe(hunt))
    assert shapes.passed and again.passed, (describe(shapes), describe(again))
    assert by_name(exits)["test_add"].error_class == "runtime.crash", describe(exits)
    assert "exit code 3" in by_name(exits)["test_add"].message, describe(exits)


def test_a_tasks_own_test_script_runs_its_pytest_with_the_isolation():
    """Terminal-Bench/Harbor scripts that are not the standard template run as they are; any pytest
    they start loads the report plugin (PYTEST_PLUGINS), so imported code is out of process there too."""
    from dataclasses import replace

    from termrl.protocols import TaskFile, TestKind, TestSpec

    base = make_task("isolate-script", {"test_add.py": ADD_TESTS})
    script = "#!/bin/bash\npython3 -m pytest -q -p no:cacheprovider /tests/test_add.py\n"
    task = replace(base, tests={**base.tests, "run.sh": TaskFile(script.encode(), 0o755)},
                   test_spec=TestSpec(kind=TestKind.SCRIPT, script="run.sh"))
    honest = planted(task, {"impl.py": "def add(a, b):\n    return a + b\n"})
    frame = planted(task, {"impl.py": CALLER_FRAME})
    always = planted(task, {"impl.py": ALWAYS_EQUAL})
    assert honest.passed, describe(honest)
    assert not frame.passed and not always.passed, (describe(frame), describe(always))
    assert "TERMRL_PYTEST_STARTED" not in honest.stages["tests"].data["output_tail"]
    assert "1 passed" in honest.stages["tests"].data["output_tail"] or "2 passed" in honest.stages["tests"].data["output_tail"]


def test_code_loaded_by_path_is_isolated_too():
    """Terminal-Bench tests often load the agent's file by path instead of importing it by name."""
    tests = """
    import importlib.util

    def load():
        spec = importlib.util.spec_from_file_location("impl_by_path", os.path.join(os.getcwd(), "impl.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def reference(a, b):
        return a + b

    def test_add():
        expected = reference(2, 3)
        assert load().add(2, 3) == expected
    """
    task = make_task("isolate-by-path", {"test_add.py": tests})
    honest = planted(task, {"impl.py": "def add(a, b):\n    return a + b\n"})
    cheats = [planted(task, {"impl.py": impl}) for impl in (CALLER_FRAME, ALWAYS_EQUAL)]
    assert honest.passed, describe(honest)
    assert not any(c.passed for c in cheats), [describe(c) for c in cheats]


SHADOWED_TESTS = """
def test_output_matches():
    import filecmp  # lazily, after the workdir went first on sys.path (the header)
    assert filecmp.cmp("out.txt", "expected.txt", shallow=False)

def test_rows_in_the_database():
    import sqlite3
    rows = sqlite3.connect("data.db").execute("select count(*) from t").fetchall()
    assert rows == [(3,)]

def test_own_module_still_isolated():
    from impl import add
    assert add(2, 3) == 5
"""
SHADOWS = {
    "filecmp.py": "def cmp(*args, **kwargs):\n    return True\n",
    "sqlite3/__init__.py": "class _C:\n    def execute(self, *a):\n        return self\n\n"
                           "    def fetchall(self):\n        return [(3,)]\n\n\ndef connect(*a, **k):\n    return _C()\n",
}


def test_a_planted_module_named_like_the_standard_librarys_is_not_what_the_tests_import():
    """The tests' own lazy imports of the standard library (``filecmp``, the ``sqlite3`` package)
    get the real modules, not the agent's files of the same names that would answer their checks;
    the agent's other modules still load as proxies. Through ``verify`` and the warm pool."""
    task = make_task("isolate-shadow", {"test_shadow.py": SHADOWED_TESTS},
                     workspace={"expected.txt": "right\n"})
    cheat = {"out.txt": "wrong\n", "impl.py": "def add(a, b):\n    return a + b\n", **SHADOWS}
    ev = planted(task, cheat)
    outcomes = {name: t.outcome for name, t in by_name(ev).items()}
    assert outcomes == {"test_output_matches": "failed", "test_rows_in_the_database": "failed",
                        "test_own_module_still_isolated": "passed"}, describe(ev)
    with VerifierPool(workers=1, static=False) as pool:
        pooled = pool.verify_files(task, {k: v.encode() for k, v in cheat.items()})
    assert {name: t.outcome for name, t in by_name(pooled).items()} == outcomes, describe(pooled)


def test_a_module_named_like_an_installed_package_is_still_the_agents():
    """Installed packages differ between machines, so only the standard library's names are kept
    from the agent: a task's own ``coverage.py`` (python3-coverage is installed for the sandbox's
    Python by scripts/setup.sh) is what its tests import, through the proxy."""
    tests = """
    def test_own_module():
        import importlib.machinery
        installed = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
        assert importlib.machinery.PathFinder.find_spec("coverage", installed) is not None
        import coverage
        assert coverage.ratio(1, 4) == 0.25 and coverage.__file__.startswith(os.getcwd())
    """
    task = make_task("isolate-installed-name", {"test_cov.py": tests})
    ev = planted(task, {"coverage.py": "def ratio(a, b):\n    return a / b\n"})
    assert ev.passed, describe(ev)


def test_a_task_whose_solution_module_is_named_like_the_standard_librarys_fails_validation_with_a_hint():
    """Such a task cannot pass: its tests get the standard library's module. ``tasks validate``
    says why instead of only showing the failed assertion."""
    from dataclasses import replace

    from termrl.checks.validate import check_task

    tests = """
    def test_spread():
        import statistics
        assert statistics.spread([3, 1, 4]) == 3
    """
    task = replace(make_task("stdlib-named", {"test_spread.py": tests}),
                   instruction="Write statistics.py with spread(xs): the largest minus the smallest.",
                   solution="printf 'def spread(xs):\\n    return max(xs) - min(xs)\\n' > statistics.py\n")
    row = check_task(task)
    assert row.status == "invalid" and row.reference_passed is False, row
    assert "hint: the tests import `statistics`" in row.reason, row.reason
