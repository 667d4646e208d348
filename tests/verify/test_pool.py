"""The warm verifier pool gives the same evidence as a fresh sandbox, and jobs cannot see each other."""

from __future__ import annotations

import pytest

from termrl.protocols import Limits, Task, TaskFile
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import find_task
from termrl.verify import verify
from termrl.verify.pool import VerifierPool, fits_fast_path

LEAK_TEST = b'''
import os, pathlib, subprocess

def test_first_job_leaves_things_behind():
    pathlib.Path("/tmp/leak").write_text("x")
    pathlib.Path("leak.txt").write_text("x")
    subprocess.Popen(["setsid", "sleep", "300"])
    assert True
'''


def task_with(test: bytes, **kw) -> Task:
    return Task(id="pool-check", instruction="x", workspace={"solution.py": TaskFile(b"X = 1\n")},
                tests={"test_pool.py": TaskFile(test)}, **kw)


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=1) as p:
        yield p


def test_pool_matches_a_fresh_sandbox(pool):
    task = find_task("humaneval-2")
    good = b"def truncate_number(number: float) -> float:\n    return number % 1.0\n"
    bad = b"def truncate_number(number: float) -> float:\n    return number // 1.0\n"
    for code, passed in ((good, True), (bad, False)):
        fast = pool.verify_files(task, {"solution.py": code})
        box = open_sandbox(task)
        try:
            box.write_file("solution.py", code)
            slow = verify(task, box)
        finally:
            box.close()
        assert fast.passed is slow.passed is passed
        assert fast.error_classes == slow.error_classes
        assert [(t.nodeid, t.outcome, t.error_class) for t in fast.tests] == \
               [(t.nodeid, t.outcome, t.error_class) for t in slow.tests]


def test_jobs_are_isolated(pool):
    task = task_with(LEAK_TEST)
    first = pool.verify_files(task, {})
    assert first.passed
    box = pool._all[0]
    assert box._members() - box._shell_pids == set()  # the setsid sleep was killed
    second = pool.verify_files(task_with(b"import pathlib\n\ndef test_clean():\n"
                                         b"    assert not pathlib.Path('/tmp/leak').exists()\n"
                                         b"    assert not pathlib.Path('leak.txt').exists()\n"), {})
    assert second.passed, second.tests


def test_timeouts_and_crashes_are_the_agents_failure(pool):
    hang = task_with(b"def test_hang():\n    while True:\n        pass\n",
                     limits=Limits(verifier_timeout_sec=20))
    ev = pool.verify_files(hang, {})
    assert ev.verified and not ev.passed and "timeout" in ev.error_classes
    for code in (0, 3):  # exiting before the asserts run is a crash of the run, never a pass or a None
        crash = task_with(f"import os\n\ndef test_exit():\n    os._exit({code})\n".encode())
        ev = pool.verify_files(crash, {})
        assert ev.verified and not ev.passed and ev.error_classes == ["runtime.crash"]


def test_tasks_off_the_fast_path_use_a_fresh_sandbox(pool):
    task = task_with(b"import pathlib\n\ndef test_setup_ran():\n    assert pathlib.Path('made').read_text() == 'yes'\n",
                     setup=("echo -n yes > made",))
    assert not fits_fast_path(task, "/workspace")
    assert pool.verify_files(task, {}).passed


def test_trace_stage_records_the_agents_commands(pool):
    steps = [{"command": "ls", "exit_code": 0, "timed_out": False, "output_bytes": 10, "format_error": False},
             {"command": "make", "exit_code": 2, "timed_out": False, "output_bytes": 99, "format_error": False},
             {"command": "", "exit_code": None, "timed_out": False, "output_bytes": 0, "format_error": True}]
    ev = pool.verify_files(task_with(b"def test_ok():\n    pass\n"), {}, trace=steps)
    data = ev.stages["trace"].data
    assert (data["commands"], data["failed"], data["format_errors"], data["output_bytes"]) == (3, 1, 1, 109)


class Recording:
    """A pool that says which verifications reached it."""

    workdir = "/workspace"

    def __init__(self, pool):
        self.pool, self.calls = pool, []

    def verify_files(self, task, files, trace=None, modes=None, folders=None):
        self.calls.append((dict(files), dict(modes or {}), dict(folders or {})))
        return self.pool.verify_files(task, files, trace=trace, modes=modes, folders=folders)


def both_ways(pool, task: Task, commands: list[str]):
    """(the recording pool, its evidence, the episode sandbox's own) for ``task`` after ``commands``."""
    from termrl.episode import PoolVerifier, SandboxVerifier

    box, before = finished(task, commands)
    try:
        recording = Recording(pool)
        pooled = PoolVerifier(recording)(task, box, before, None, [])
        in_place = SandboxVerifier()(task, box, before, None, [])
    finally:
        box.close()
    return recording, pooled, in_place


def finished(task: Task, commands: list[str]):
    box = open_sandbox(task)
    before = {p: f.data for p, f in task.workspace.items()}
    for command in commands:
        assert box.run(["/bin/sh", "-c", command], timeout=60).exit_code == 0
    return box, before


def test_a_pool_verifier_carries_permission_bits_and_gives_the_sandboxs_evidence(pool):

    task = find_task("logs-count-3")  # its tests run ./logcount: the executable bit matters
    recording, pooled, in_place = both_ways(pool, task, [task.solution])
    assert len(recording.calls) == 1 and recording.calls[0][1]["logcount"] & 0o111
    assert pooled.passed and in_place.passed


@pytest.mark.parametrize("command", ["ln -s /etc/passwd link", "mkfifo pipe", "mkdir -m 500 shut"])
def test_a_workspace_that_is_more_than_files_is_verified_in_its_own_sandbox(pool, command):
    from termrl.episode import PoolVerifier

    task = find_task("logs-count-3")
    box, before = finished(task, [task.solution, command])
    try:
        recording = Recording(pool)
        evidence = PoolVerifier(recording)(task, box, before, None, [])
    finally:
        box.close()
    assert recording.calls == [], "the pool never saw it"
    assert evidence.verified and evidence.passed


FOLDERS_TEST = b'''
import os, stat


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_folders_are_there_as_made():
    assert os.listdir("build") == []
    assert os.listdir("out/deep") == []
    assert mode("private") == 0o700 and os.listdir("private") == ["key.txt"]
    assert mode("out") == 0o750
'''


def test_empty_folders_and_folder_modes_reach_the_pool_and_give_the_sandboxs_evidence(pool):
    """A workspace with empty folders (``mkdir -p build``, what real models type) and a folder
    whose bits are not the default is still all files and folders: the pool verifies it, with
    the same outcome as the episode's own sandbox."""

    task = task_with(FOLDERS_TEST)
    commands = ["mkdir -p build out/deep private && echo k > private/key.txt && chmod 700 private && chmod 750 out"]
    results = {}
    for made in (commands, ["mkdir -p out/deep private && echo k > private/key.txt"]):
        recording, pooled, in_place = both_ways(pool, task, made)
        assert len(recording.calls) == 1, "verified on the pool"
        assert pooled.passed is in_place.passed
        assert [(t.nodeid, t.outcome) for t in pooled.tests] == [(t.nodeid, t.outcome) for t in in_place.tests]
        results[len(made[0])] = (pooled.passed, recording.calls[0][2])
    (good, folders), (bad, _) = results[len(commands[0])], results[min(results)]
    assert good and not bad
    assert folders == {"build": 0o755, "out": 0o750, "out/deep": 0o755, "private": 0o700}


def test_a_folder_the_owner_cannot_write_is_refused_by_the_pool(pool):
    with pytest.raises(ValueError, match="owner rwx"):
        pool._all[0].reset({}, {}, {"shut": 0o500})


SHADOW_TEST = b'''
import os, sys
sys.path.insert(0, os.getcwd())


def test_the_agents_module_named_like_the_stdlibs():
    from solution import VALUE, WHERE
    assert VALUE == 42
    assert WHERE.endswith("/workspace/cmd.py")
'''


def test_the_agents_code_imports_its_own_module_where_the_warm_up_imported_the_stdlibs(pool):
    """The fork server's warm-up imports ``cmd`` (pdb's), but the worker that runs the agent's code
    drops what the warm-up added: the agent's own ``cmd.py`` is the one its solution imports,
    in the pool as in a fresh sandbox."""
    task = Task(id="pool-shadow", instruction="x", tests={"test_shadow.py": TaskFile(SHADOW_TEST)},
                workspace={"solution.py": TaskFile(b"import cmd\nVALUE = cmd.VALUE\nWHERE = cmd.__file__\n"),
                           "cmd.py": TaskFile(b"VALUE = 42\n")})
    fast = pool.verify_files(task, {})
    box = open_sandbox(task)
    try:
        slow = verify(task, box)
    finally:
        box.close()
    assert fast.passed and slow.passed, (fast.tests, slow.tests)


WARM_CHECK = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
import pytest, pytest_report, forkserver
path, modules = list(sys.path), set(sys.modules)
forkserver._warm(pytest, pytest_report.isolate)
assert sys.path == path, (path, sys.path)
assert not [m for m in sys.modules if "termrl_warm" in m], "the warm-up's test module stayed"
assert not hasattr(sys, "last_value"), "the warm-up's failure stayed in sys.last_value"
added = set(sys.modules) - modules
assert "_pytest.junitxml" in added and "pdb" in added, sorted(added)  # it ran pytest's configure
assert "fractions" in added  # isolate's stdlib-first modules
sys.stdout.write("only this line\n")
'''


def test_the_fork_servers_warm_up_runs_pytest_and_puts_back_what_a_run_changes(tmp_path):
    """``_warm`` runs pytest in the server's own process before the server says it is ready: it
    must import what every run needs, write nothing to the protocol's stdout, and leave
    ``sys.path`` and ``sys.modules`` without its test module."""
    res = run_beside_the_harness(tmp_path, WARM_CHECK)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "only this line\n"


def run_beside_the_harness(tmp_path, script: str, python: str | None = None):
    """Run ``script`` with the fork server's harness files (copied to a folder, its ``argv[1]``),
    on ``python`` (default: this interpreter)."""
    import subprocess
    import sys

    from termrl.verify import stages

    harness = tmp_path / "harness"
    harness.mkdir()
    for src in (*stages.HARNESS_FILES, stages.PLUGIN.with_name("forkserver.py")):
        (harness / src.name).write_bytes(src.read_bytes())
    path = tmp_path / "check.py"
    path.write_text(script)
    return subprocess.run([python or sys.executable, "-P", "-s", "-B", str(path), str(harness)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)


CONFIG_TEST = b'''
import os, pathlib
import _pytest.config


def test_the_run_has_its_own_invocation(request, marker):
    params = request.config.invocation_params
    assert params.dir == pathlib.Path.cwd() == pathlib.Path("/workspace")
    assert tuple(params.args[:2]) == ("-q", "-rA") and pathlib.Path(params.args[-1]).exists(), params.args
    assert request.config.pluginmanager.has_plugin("python")
    assert request.config.pluginmanager.is_blocked("cacheprovider")
    assert marker == "from the tests' conftest"
    assert _pytest.config.get_config.__module__ == "_pytest.config"  # put back after its one use
'''


def test_a_run_on_the_servers_prebuilt_config_is_configured_as_its_own(pool):
    """The fork server builds pytest's config once and every child starts from a copy: a run must
    still see its own arguments and directory, its tests' conftest, and the blocked plugins."""
    task = Task(id="pool-config", instruction="x", workspace={"solution.py": TaskFile(b"X = 1\n")},
                tests={"test_config.py": TaskFile(CONFIG_TEST),
                       "conftest.py": TaskFile(b"import pytest\n\n\n@pytest.fixture\ndef marker():\n"
                                               b"    return \"from the tests' conftest\"\n")})
    fast = pool.verify_files(task, {})
    assert fast.passed, [(t.nodeid, t.outcome, t.message) for t in fast.tests]


PREBUILT_CHECK = r'''
import sys
sys.path.insert(0, sys.argv[1])
import forkserver
from _pytest import config as pytest_config

args = ["-q", "-p", "no:cacheprovider", "-pno:stepwise", "-p", "xdist"]
assert forkserver._blocked(args) == ["no:cacheprovider", "no:stepwise"]
prebuilt = forkserver._preconfigure(args)
assert prebuilt is not None and prebuilt[1].pluginmanager.is_blocked("stepwise")
built = pytest_config.get_config

forkserver._use_prebuilt(prebuilt, ["-q", "-p", "no:cacheprovider", "tests"])  # another -p no: set
assert pytest_config.get_config is built

forkserver._use_prebuilt(prebuilt, ["-p", "no:cacheprovider", "-p", "no:stepwise", "tests/test_x.py"])
config = pytest_config.get_config(["-p", "no:cacheprovider", "-p", "no:stepwise", "tests/test_x.py"], None)
assert config is prebuilt[1]
assert tuple(config.invocation_params.args) == ("-p", "no:cacheprovider", "-p", "no:stepwise", "tests/test_x.py")
assert pytest_config.get_config is built  # one use
print("ok")
'''


def test_the_prebuilt_config_serves_only_runs_with_its_blocked_plugins(tmp_path):
    """``_use_prebuilt`` hands the server's config to one ``pytest.main`` only when the run blocks
    the same plugins (``-p no:``, the one argument a fresh config depends on), and then puts
    pytest's own ``get_config`` back."""
    res = run_beside_the_harness(tmp_path, PREBUILT_CHECK)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "ok\n"


ARGPARSER_CHECK = r'''
import sys
sys.path.insert(0, sys.argv[1])
import forkserver
import pytest

config = forkserver._preconfigure(["-q", "-p", "no:cacheprovider"])[1]
parser = config._parser
if int(pytest.__version__.split(".")[0]) >= 9:
    assert "_getparser" not in vars(parser)  # pytest 9 keeps one parser itself: nothing to reuse
    print("pytest 9")
    raise SystemExit(0)
first = parser._getparser()
assert parser._getparser() is first
assert parser.parse_known_args(["-q", "x.py"]).file_or_dir == ["x.py"]
parser.addoption("--extra-x", dest="extra_x", default="d")  # as a plugin or a conftest would
second = parser._getparser()
assert second is not first and parser.parse_known_args(["--extra-x=5"]).extra_x == "5"
parser.getgroup("new group").addoption("--y1", dest="y1")
assert parser._getparser() is not second and parser.parse_known_args(["--y1=2"]).y1 == "2"
print("reused")
'''


def test_the_servers_argparse_parser_is_built_again_only_when_options_change(tmp_path):
    """Before pytest 9, each of a run's six command-line parses built a new argparse parser; the
    server's config reuses one until a plugin or conftest adds an option. Run with the sandbox's
    Python (Debian's pytest 7, where the reuse applies), not this virtualenv's."""
    res = run_beside_the_harness(tmp_path, ARGPARSER_CHECK, python="/usr/bin/python3")
    assert res.returncode == 0, res.stderr
    assert res.stdout in ("reused\n", "pytest 9\n")


FIXTURE_SCAN_CHECK = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
import forkserver
import pytest

os.makedirs("suite", exist_ok=True)
with open("suite/conftest.py", "w") as f:
    f.write("import pytest\n\n@pytest.fixture(autouse=True)\ndef always():\n    return 1\n\n"
            "@pytest.fixture\ndef tmp_path():\n    return 'overridden'\n")
with open("suite/test_dump.py", "w") as f:
    f.write("import json\n\ndef test_dump(request, capsys, monkeypatch, tmp_path, always):\n"
            "    fm = request._fixturemanager\n"
            "    defs = {k: [(d.baseid, d.func.__module__, d.func.__name__, d.scope) for d in v]\n"
            "            for k, v in sorted(fm._arg2fixturedefs.items())}\n"
            "    fast = sum(type(h).__name__ == '_FixturesOnly' for h in fm._holderobjseen)\n"
            "    assert tmp_path == 'overridden' and always == 1\n"
            "    json.dump({'defs': defs, 'autouse': fm._nodeid_autousenames, 'fast': fast},\n"
            "              open(request.config.getoption('basetemp') or 'dump.json', 'w'))\n")
args = ["-q", "-p", "no:cacheprovider"]
prebuilt = forkserver._preconfigure(args)
if int(pytest.__version__.split(".")[0]) != 7:
    print("not pytest 7")
    raise SystemExit(0)
results = []
for scan in (False, True):
    pid = os.fork()
    if pid == 0:
        if scan:
            forkserver._scan_fixtures_once(prebuilt[1].pluginmanager.get_plugins())
        forkserver._use_prebuilt(prebuilt, args)
        os._exit(int(pytest.main(args + ["--basetemp", "dump-%d.json" % scan, "suite"])))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    results.append(json.load(open("dump-%d.json" % scan)))
plain, fast = results
assert plain["fast"] == 0 and fast["fast"] > 10, (plain["fast"], fast["fast"])
assert plain["defs"] == fast["defs"] and plain["autouse"] == fast["autouse"]
assert len(plain["defs"]) > 10 and len(plain["defs"]["tmp_path"]) == 2
print("same")
'''


def test_the_plugins_fixtures_scanned_once_are_the_fixtures_a_run_finds_itself(tmp_path):
    """Under pytest 7 the server scans the plugin modules for fixtures once; a run that uses the
    scan registers the same fixtures (names, order, scopes, autouse) as one that scans itself,
    and a conftest still overrides a builtin one. Run with the sandbox's Python (Debian's pytest 7)."""
    res = run_beside_the_harness(tmp_path, FIXTURE_SCAN_CHECK, python="/usr/bin/python3")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.endswith(("\nsame\n", "not pytest 7\n")), res.stdout
