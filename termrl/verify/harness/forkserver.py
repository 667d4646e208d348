"""A pytest fork server that runs INSIDE a verification sandbox.

Started once per warm sandbox, it imports pytest and the report plugin, then
reads one JSON job per line on stdin: ``{"cwd", "args", "env", "timeout",
"output"}``. For every job it forks a fresh child, which runs ``pytest.main``
in-process and exits; so a verification pays neither the interpreter's nor
pytest's start-up. The child starts a new session and its output goes to the
file ``output``; the server answers one JSON line ``{"code", "timed_out",
"started"}`` (``started``: the report plugin signalled, through a pipe the
child cannot take back, that pytest was up before the agent's code ran).
The harness kills whatever the child left behind (it sees the sandbox's
cgroup) and wipes the workspace between jobs.

Before it says it is ready, the server runs pytest once in its own process on a passing and a
failing test of its own (``_warm``): what every run would otherwise import or compute again in
its child (pytest's plugins and the stdlib modules they load lazily, the failure report's
source lookups, ``sysconfig``'s paths, the stdlib modules the isolation imports before any
agent file is on the path) is then already in the memory each child starts from: a HumanEval
verification's CPU went from about 116 ms to 91 ms (README, Verification). The worker
for the agent's code is forked from the same process but drops every module the warm-up added,
so the agent's imports resolve as they did before.

The server also builds, once, the pytest ``Config`` that ``pytest.main`` would make first in every
child (``_preconfigure``: the default plugins imported and registered, their options added). A
config is used by one run only, but every child gets its own copy of the server's unused one, so
no run builds it again (a sixth of a child's profile; its CPU per HumanEval run went from 41-48
to 38-44 ms). It is only used for jobs whose ``-p no:``
options are those it was built with (``sys.argv[1]``, a JSON list of pytest's arguments). Its
argparse parser is built once too, where pytest before 9 built a new one for each of a run's
six parses (``_reuse_argparser``), and under pytest 7 the plugin modules are scanned for
fixtures once, not in every run (``_scan_fixtures_once``).

Stdlib and pytest only: this runs on the sandbox's Python.
"""

import gc
import json
import os
import pathlib
import select
import signal
import sys


def main():
    harness = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, harness)
    import _pytest.config  # noqa: F401
    import pytest  # noqa: F401  (imported once, inherited by every child)
    import pytest_report

    pytest_report.isolate.close_dumps()  # jobs carry report keys: no other process may read this one
    base_env = dict(os.environ)
    pristine = set(sys.modules)
    _warm(pytest, pytest_report.isolate)
    prebuilt = _preconfigure(json.loads(sys.argv[1]) if len(sys.argv) > 1 else [])
    if prebuilt is not None:
        _scan_fixtures_once(prebuilt[1].pluginmanager.get_plugins() | {pytest_report})
    gc.collect()
    gc.freeze()  # what every child inherits: its collections skip it and leave its pages shared
    out = sys.stdout
    out.write('{"ready": true}\n')
    out.flush()
    while True:
        select.select([0], [], [])  # a job is waiting: its bytes (and key) are still the kernel's
        worker_pid, worker_fds = _prefork_worker(pytest_report.isolate, pristine)
        line = _read_line()
        if not line:
            os.killpg(worker_pid, signal.SIGKILL)
            break
        job = json.loads(line)
        started_r, started_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(started_r)
            _child(dict(job, started_fd=started_w, worker=(worker_pid, *worker_fds)), base_env, pytest_report, prebuilt)
        os.close(started_w)
        for fd in worker_fds:
            os.close(fd)
        timed_out = False
        fd = os.pidfd_open(pid)
        ready, _, _ = select.select([fd], [], [], job["timeout"])
        if not ready:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
        os.close(fd)
        try:
            os.killpg(pid, signal.SIGKILL)  # anything the child started in its session
        except ProcessLookupError:
            pass
        for kill in (os.killpg, os.kill):  # the worker's session: it is not in the child's
            try:
                kill(worker_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap(worker_pid)
        code = os.waitstatus_to_exitcode(status)
        os.set_blocking(started_r, False)
        try:
            started = bool(os.read(started_r, 1))
        except BlockingIOError:
            started = False
        os.close(started_r)
        out.write(json.dumps({"code": code, "timed_out": timed_out, "started": started}) + "\n")
        out.flush()


def _read_line():
    """One job line from stdin (the harness sends the next job only after this one's answer)."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            break
        data += chunk
    return data.decode()


WARM_TESTS = """\
def test_passes():
    assert [1, 2] == [1, 2]


def test_fails():
    assert {"a": 1} == {"a": 2}
"""
"""What ``_warm`` runs: a pass, and a failure whose report shows source lines and a diff."""


def _warm(pytest, isolate):
    """Run pytest once in this process (output to /dev/null; a failure here is only a cold
    start), then put back what a run changes: ``sys.path``, the test module, ``sys.last_*``."""
    import importlib
    import shutil
    import sysconfig
    import tempfile

    for module in isolate.STDLIB_FIRST:
        importlib.import_module(module)
    sysconfig.get_paths()
    folder = tempfile.mkdtemp(prefix="termrl-warm-")
    path, modules, stdout = list(sys.path), set(sys.modules), sys.stdout
    saved = os.dup(1)
    try:
        with open(os.path.join(folder, "test_termrl_warm.py"), "w") as f:
            f.write(WARM_TESTS)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        sys.stdout = open(os.devnull, "w")
        pytest.main(["-q", "-rA", "-p", "no:cacheprovider", folder])
    except Exception:  # noqa: BLE001  (a warm-up that fails leaves the runs slower, not wrong)
        pass
    finally:
        if sys.stdout is not stdout:
            sys.stdout.close()
        sys.stdout = stdout
        os.dup2(saved, 1)
        os.close(saved)
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            if os.path.abspath(getattr(sys.modules[name], "__file__", None) or "/").startswith(folder + os.sep):
                del sys.modules[name]
        for name in ("last_type", "last_value", "last_traceback", "last_exc"):
            sys.__dict__.pop(name, None)
        shutil.rmtree(folder, ignore_errors=True)


def _blocked(args):
    """The plugins that ``-p no:NAME`` arguments block, as pytest's ``consider_preparse`` reads
    them before it imports the default plugins: the only arguments a config depends on when built."""
    blocked, i = [], 0
    while i < len(args):
        opt, i = args[i], i + 1
        if opt == "-p" and i < len(args):
            name, i = args[i], i + 1
        elif opt.startswith("-p") and opt != "-p":
            name = opt[2:]
        else:
            continue
        if name.strip().startswith("no:"):
            blocked.append(name.strip())
    return blocked


def _preconfigure(args):
    """(the ``-p no:`` options, a fresh pytest Config built for them), or None where this pytest
    has no ``get_config`` of the known shape (the children then build their own)."""
    try:
        from _pytest import config as pytest_config

        config = pytest_config.get_config(list(args), None)
    except Exception:  # noqa: BLE001  (another pytest: slower runs, the same results)
        return None
    _reuse_argparser(config._parser)
    return _blocked(args), config


def _reuse_argparser(parser):
    """Before pytest 9, every parse of the command line (six a run) built a new argparse parser
    of all ~80 options; build one here, and again only when the options changed (a plugin or a
    conftest added some). Reusing an argparse parser across parses is argparse's usual use."""
    build = getattr(type(parser), "_getparser", None)
    if build is None:  # pytest 9 keeps one parser itself
        return
    cache = {}

    def _getparser():
        groups = parser._groups + [parser._anonymous]
        key = (parser.prog, tuple((id(g), g.name, g.description, len(g.options)) for g in groups))
        if cache.get("key") != key:
            cache["key"], cache["parser"] = key, build(parser)
        return cache["parser"]

    parser._getparser = _getparser
    try:
        _getparser()
    except Exception:  # noqa: BLE001  (built again, and failing the same way, in the run)
        cache.clear()


class _FixturesOnly:
    """A plugin module as ``parsefactories`` sees it: ``dir()`` lists only its fixtures, every
    attribute is the module's own."""

    __slots__ = ("module", "names")

    def __init__(self, module, names):
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "names", names)

    def __dir__(self):
        return list(self.names)

    def __getattr__(self, name):
        return getattr(self.module, name)


def _scan_fixtures_once(plugins):
    """Every run's fixture manager scans each of ~40 plugin modules, every attribute of each,
    for fixtures (a quarter of a run's pytest time under pytest 7); the modules are the same
    in every run. Scan them here once, and let a run's scan of one of these modules see only
    the fixtures found (``_FixturesOnly``): the same fixtures, registered the same way, in the
    same order. pytest 7's ``parsefactories`` only: later versions look at the holder's type."""
    try:
        import pytest
        from _pytest import fixtures
        from _pytest.compat import safe_getattr

        if int(pytest.__version__.split(".")[0]) != 7:
            return
        original = fixtures.FixtureManager.parsefactories
        table = {}
        for plugin in plugins:
            if isinstance(plugin, type(sys)):
                names = [n for n in dir(plugin) if isinstance(
                    fixtures.getfixturemarker(safe_getattr(plugin, n, None)), fixtures.FixtureFunctionMarker)]
                table[id(plugin)] = (plugin, _FixturesOnly(plugin, names))
    except Exception:  # noqa: BLE001  (another pytest: each run scans them itself)
        return

    def parsefactories(self, node_or_obj, nodeid=fixtures.NOTSET, unittest=False):
        known = table.get(id(node_or_obj))
        if known is not None and known[0] is node_or_obj and nodeid is not fixtures.NOTSET:
            node_or_obj = known[1]
        return original(self, node_or_obj, nodeid, unittest)

    fixtures.FixtureManager.parsefactories = parsefactories


def _use_prebuilt(prebuilt, args):
    """Make this child's ``pytest.main`` take the server's prebuilt config instead of building
    one, when it was built for ``args``' ``-p no:`` options. The config's invocation parameters
    (arguments, plugins, directory) are set to this run's, as ``get_config`` would set them."""
    if prebuilt is None or prebuilt[0] != _blocked(args):
        return
    from _pytest import config as pytest_config

    built, config = pytest_config.get_config, prebuilt[1]

    def get_config(args=None, plugins=None):
        pytest_config.get_config = built  # one config, for one run
        params = type(config.invocation_params)
        config.invocation_params = params(args=args or (), plugins=plugins, dir=pathlib.Path.cwd())
        return config

    pytest_config.get_config = get_config


def _prefork_worker(isolate, pristine):
    """Fork the next run's worker for ``isolate`` (its code-under-test interpreter) now, before the
    run's job is read: a fork costs about a millisecond where a new interpreter costs tens, and the
    worker's memory holds no key. It keeps only its two pipe ends, and of the modules only those
    in ``pristine`` (what the server had before ``_warm``), so the agent's imports find what they
    found before the warm-up."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            for name in [m for m in sys.modules if m not in pristine]:
                del sys.modules[name]
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            keep = {0, 1, 2, to_r, from_w}
            for fd in range(3, max(keep) + 64):
                if fd not in keep:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            isolate.serve(to_r, from_w)
        finally:
            os._exit(70)
    os.close(to_r)
    os.close(from_w)
    return pid, (to_w, from_r)


def _reap(pid):
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _child(job, base_env, plugin, prebuilt=None):
    try:
        os.setsid()
        fd = os.open(job["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.environ.clear()
        os.environ.update(base_env)
        os.environ.update(job["env"])
        os.environ["TERMRL_STARTED_FD"] = str(job["started_fd"])
        os.set_inheritable(job["started_fd"], False)
        os.environ["TERMRL_WORKER"] = ",".join(str(v) for v in job["worker"])
        os.chdir(job["cwd"])
        import pytest

        _use_prebuilt(prebuilt, job["args"])
        code = pytest.main(job["args"], plugins=[plugin])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(code))
    except BaseException as e:  # never return into the server loop
        try:
            os.write(2, ("forkserver child failed: %r\n" % (e,)).encode())
        finally:
            os._exit(70)


if __name__ == "__main__":
    main()
