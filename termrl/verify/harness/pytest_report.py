"""A pytest plugin, loaded inside the sandbox, that writes a JSON report of every test.

Loaded with ``-p pytest_report`` (its directory on PYTHONPATH). It reads
pytest's own report objects (no text scraping) and writes, to the file named
by ``TERMRL_REPORT``: per test the node id, outcome, duration, markers, and for
a failure the exception type and its one-line message; plus collection errors.
``TERMRL_TEST_TIMEOUT`` (seconds) arms a per-test alarm, so one endless test
becomes a ``timeout`` outcome instead of eating the whole run.

The agent's code never runs in this process: at ``pytest_configure`` the plugin installs
``isolate``'s import hook (the agent's modules load as proxies, their code runs in a worker
interpreter), takes the report's key out of the environment (``TERMRL_REPORT_KEY``) and makes
this process non-dumpable, and hides the test folders and the report's folder from every
process that runs the agent's code (``confine``: the worker, and the programs tests start).
Every report it writes is signed with that key (HMAC-SHA256), so a
report written by anyone else, the worker included, fails the harness's check.
``TERMRL_ISOLATE=0`` turns the hook off (for measurements); ``TERMRL_TESTS`` names the test
folders, which run here and stay off the worker's path.

This file must run on the sandbox's Python and pytest (3.11 / 7.x): stdlib only.
"""

import hashlib
import hmac
import json
import os
import re
import signal
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import confine  # noqa: E402  (beside this file in the harness folder)
import isolate  # noqa: E402

del sys.path[0]
for _own in ("isolate", "confine"):  # kept here by reference: the agent's own modules of these names are the tests'
    del sys.modules[_own]

_results = {}
_collect_errors = []
_collected = []
"""The node ids the session collected: one that never reports is a test that never finished."""


class TermrlTestTimeout(Exception):
    """A test ran past TERMRL_TEST_TIMEOUT."""


def _on_alarm(signum, frame):
    raise TermrlTestTimeout("test exceeded %s s" % os.environ.get("TERMRL_TEST_TIMEOUT"))


_ERROR_LINE = re.compile(r"^(?:E |[^\s:][^:]*:\d+: \w)")
"""Lines of a failure that are evidence: pytest's "E   ..." lines and "file.py:12: ErrorType"
locations. Not the source listing, whose words (subprocess.py's ``except TimeoutExpired``) are
no evidence of what happened."""


def _exception(report, child=""):
    """(exception type, one-line message, detail) of a failed report. ``detail``: the failure's
    evidence lines, then ``child``, the output of a program the test ran that failed."""
    longrepr = report.longrepr
    crash = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    text = str(longrepr) if longrepr is not None else ""
    if crash is None:
        # collection errors carry plain text: take the last "E   Xxx: msg" line
        lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
        crash = lines[-1] if lines else text.strip().splitlines()[-1] if text.strip() else ""
    m = re.match(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Timeout|Expired|Warning|"
                 r"Fault|Iteration|Failed)?)\s*:\s*(.*)$", crash, re.S)
    if m and (m.group(1)[0].isupper() or "." in m.group(1)):
        exc, msg = m.group(1), m.group(2)
    elif crash.startswith("assert ") or "AssertionError" in text:
        exc, msg = "AssertionError", crash
    else:
        exc, msg = (crash.split(":", 1)[0] if ":" in crash else crash), crash
    # keep the evidence a classifier needs (crash signals, timeouts, a child's traceback), briefly
    lines = [ln for ln in text.splitlines() if _ERROR_LINE.match(ln)] or text.strip().splitlines()
    tail = "\n".join(lines)[-1500:] + ("\n" + child[-1500:] if child else "")
    return exc.rsplit(".", 1)[-1], (msg.strip().splitlines() or [""])[0][:300], tail


STARTED = "TERMRL_PYTEST_STARTED"
_key = [b""]
_finder = []
_hidden = [False]
"""Whether the tests (and the report's folder) are hidden from the code under test (``confine``)."""


def pytest_configure(config):
    """Before any test module (and so any of the agent's code) is imported: take the key, close
    this process to the others of the sandbox, and route the agent's modules to a worker."""
    _key[0] = os.environ.pop("TERMRL_REPORT_KEY", "").encode()
    tests = [p for p in os.environ.pop("TERMRL_TESTS", "").split(os.pathsep) if p]
    hidden = tests + [p for p in os.environ.pop("TERMRL_HIDDEN", "").split(os.pathsep) if p]
    if os.environ.pop("TERMRL_CONFINE", "1") == "0":
        hidden = []
    _hidden[0] = confine.confine_children(hidden)
    script = os.environ.pop("TERMRL_SCRIPT_TESTS", "") == "1"
    if os.environ.pop("TERMRL_ISOLATE", "1") != "0" and not (script and _workdir_tests(config, tests)):
        _finder[:] = [isolate.install(trusted=[os.path.dirname(os.path.abspath(__file__))], tests=tests,
                                      hidden=hidden, test_files=script)]
    else:
        isolate.close_dumps()


def _workdir_tests(config, hidden_tests):
    """Whether a task's own script runs tests that none of the hidden test folders hold (the
    tests of the workdir, which the agent can edit as it likes): isolating the agent's code from
    them protects nothing, and would break what they do in-process as under Docker (mock.patch
    of the agent's module). The hidden folders stay out of reach (``confine``)."""
    args = [a for a in getattr(config, "args", []) if not a.startswith("-")] or [os.getcwd()]
    roots = [os.path.realpath(t) for t in hidden_tests]
    for arg in args:
        real = os.path.realpath(arg.split("::")[0])
        if any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
            return False
    return True


def pytest_unconfigure(config):
    isolate.shutdown()


def pytest_collection(session):
    if _finder:
        isolate.first(_finder[0])  # ahead of pytest's assertion rewriter


def pytest_sessionstart(session):
    """Tell the harness pytest is up, before any of the agent's code is imported: a run that
    dies after this without a report was killed by the code under test, not by the harness."""
    fd = os.environ.get("TERMRL_STARTED_FD")
    if fd:
        os.write(int(fd), b"1")
    elif os.environ.get("TERMRL_REPORT"):  # not in a task's own test script, whose output is its own
        os.write(1, ("\n%s\n" % STARTED).encode())


def _arm():
    seconds = float(os.environ.get("TERMRL_TEST_TIMEOUT") or 0)
    if seconds > 0 and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)


def _disarm():
    if threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)


import pytest  # noqa: E402  (after the stdlib: this plugin only runs inside pytest)


def _bounded():
    """Each phase of a test (setup with its fixtures, the call, teardown) has its own alarm: a
    fixture that runs the agent's program hangs as surely as the test's body."""
    _arm()
    try:
        yield
    finally:
        _disarm()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _bounded()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _bounded()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield from _bounded()


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # importing a test module runs the agent's module-level code: a hang there is a timeout too
    yield from _bounded()


_children = {}
"""nodeid -> the output of a failed program the test ran (``CalledProcessError``/``TimeoutExpired``
carry it when captured; a program writing to the inherited stderr lands in pytest's capture)."""


def _text(data):
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else (data or "")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    exc = call.excinfo.value if call.excinfo is not None else None
    if not report.failed or not hasattr(exc, "cmd"):  # only a subprocess error speaks for a program
        return
    child = "\n".join(t for t in (_text(getattr(exc, "stderr", None)), _text(getattr(exc, "output", None)),
                                  report.capstderr) if t)
    if child:
        _children[report.nodeid] = child


def pytest_runtest_logreport(report):
    # "pending" until its call reports: a test whose run was interrupted or killed mid-call has
    # passed its setup, and must not read as passed (the report writes it as an error)
    entry = _results.setdefault(report.nodeid, {
        "nodeid": report.nodeid, "outcome": "pending", "duration_s": 0.0,
        "tags": sorted(set(_markers.get(report.nodeid, ())) - _BUILTIN_MARKS),
        "exc_type": "", "message": "", "detail": "",
    })
    entry["duration_s"] += report.duration
    if report.when == "call" and hasattr(report, "wasxfail"):
        entry["outcome"] = "xfailed" if report.skipped else "xpassed"
    elif report.skipped and entry["outcome"] in ("pending", "passed"):
        entry["outcome"] = "skipped"
    elif report.failed:
        entry["outcome"] = "failed" if report.when == "call" else "error"
        if not entry["exc_type"]:
            entry["exc_type"], entry["message"], entry["detail"] = _exception(report, _children.pop(report.nodeid, ""))
    elif report.when == "call" and entry["outcome"] == "pending":
        entry["outcome"] = "passed"


_markers = {}
_BUILTIN_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings", "timeout"}


def pytest_itemcollected(item):
    _markers[item.nodeid] = [m.name for m in item.iter_markers()]


def pytest_collectreport(report):
    if report.failed:
        exc, msg, detail = _exception(report)
        _collect_errors.append({"nodeid": report.nodeid or "<collection>", "outcome": "error",
                                "duration_s": 0.0, "tags": [], "exc_type": exc, "message": msg,
                                "detail": detail})


def pytest_collection_finish(session):
    _collected[:] = [item.nodeid for item in session.items]


def _unfinished():
    """A test that started and never reported its call, and one collected that never ran, are
    errors: the run ended under them (the code under test interrupted or killed it)."""
    out = []
    for entry in _results.values():
        if entry["outcome"] == "pending":
            out.append(dict(entry, outcome="error", exc_type="Interrupted",
                            message="the test never finished: the run was interrupted or killed during it"))
        else:
            out.append(entry)
    for nodeid in _collected:
        if nodeid not in _results:
            out.append({"nodeid": nodeid, "outcome": "error", "duration_s": 0.0,
                        "tags": sorted(set(_markers.get(nodeid, ())) - _BUILTIN_MARKS), "exc_type": "NotRun",
                        "message": "the test never ran: the run ended before it", "detail": ""})
    return out


def _write(complete, **extra):
    path = os.environ.get("TERMRL_REPORT")
    if not path:
        return
    data = dict({"version": 1, "complete": complete, "tests": _unfinished() + _collect_errors,
                 "tests_hidden": _hidden[0]}, **extra)
    body = json.dumps(data)
    mac = hmac.new(_key[0], body.encode(), hashlib.sha256).hexdigest() if _key[0] else ""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"body": body, "mac": mac}, f)
    os.replace(tmp, path)


def pytest_runtest_logfinish(nodeid, location):
    # after every test: a run killed later (a hang, the memory limit) keeps what it found
    _write(False)


def pytest_sessionfinish(session, exitstatus):
    _write(True, exitstatus=int(exitstatus), collected=session.testscollected, ran=len(_results),
           items=len({item.nodeid for item in getattr(session, "items", ())}), collect_errors=len(_collect_errors))
