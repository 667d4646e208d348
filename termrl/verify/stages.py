"""The verifier's stages. Each returns a ``StageResult``; ``StageStatus.ERROR`` means the
stage could not run for a reason that is not the agent's (the evidence is then
failed-to-verify).

Stage data shapes (``StageResult.data`` is the serialized form, as stored in trajectories):

- build: ``termrl.protocols.BuildData.to_dict()``; read it with ``BuildData.of(evidence)``
- tests: ``termrl.protocols.TestsData.to_dict()``; read it with ``TestsData.of(evidence)``
  (per-test outcomes are ``Evidence.tests``)
- quality: ``{"ruff": {"count", "by_category": {prefix: n}, "findings": [...]},
  "complexity": {"max_cc", "mean_cc", "mi"}, "lines_added", "lines_removed"}``
- safety: ``{"count", "by_rule": {code: n}, "findings": [...]}``
- trace: ``{"steps": [{"command", "exit_code", "timed_out", "output_bytes", "format_error"}],
  "commands", "failed", "timeouts", "format_errors", "output_bytes"}``
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import py_compile
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from termrl.protocols import (
    BuildData,
    BuildError,
    ExecResult,
    Files,
    Sandbox,
    StageResult,
    StageStatus,
    StopReason,
    Task,
    TaskFile,
    TestCase,
    TestKind,
    TestsData,
)
from termrl.tasks import pyenv
from termrl.tasks.runtime import REWARD_DIR, judge_reward_file
from termrl.verify import taxonomy
from termrl.verify.harness.pytest_report import STARTED

HARNESS_DIR = "/.termrl-harness"
OUT_DIR = "/.termrl-out"
HARNESS = Path(__file__).with_name("harness")
PLUGIN = HARNESS / "pytest_report.py"
ISOLATE = HARNESS / "isolate.py"
CONFINE = HARNESS / "confine.py"
HARNESS_FILES = (PLUGIN, ISOLATE, CONFINE)
"""The report plugin and what it imports, copied into every verification sandbox's harness folder."""
PYTEST_ARGS = ["-q", "-rA", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning"]
PYTEST = ["python3", "-P", "-s", "-B", "-m", "pytest", *PYTEST_ARGS, "-p", "pytest_report"]
"""-P: the workdir is not on sys.path, so a planted pytest.py cannot replace pytest;
-s: no user site-packages; -B: no .pyc litter in the agent's workspace."""
C_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp")


def timed(name: str, fn, *args) -> StageResult:
    t0 = time.monotonic()
    result = fn(*args)
    result.name = name
    result.duration_s = round(time.monotonic() - t0, 4)
    return result


# --------------------------------------------------------------------------- build


def build(task: Task, box: Sandbox, after: dict[str, bytes], timeout: float | None = None) -> StageResult:
    """Byte-compile the workspace's Python files (on the host: compiling runs no code); compile
    and link C/C++ with make, cmake or gcc in the sandbox when the workspace holds C sources,
    for at most ``timeout`` seconds (default: the task's verifier time limit)."""
    py = []
    for path in sorted(after):
        if path.endswith(".py"):
            try:
                compile(after[path], path, "exec", dont_inherit=True)
            except SyntaxError as e:
                py.append(BuildError(path, e.lineno or 0, "syntax", f"{type(e).__name__}: {e.msg}"))
            except ValueError as e:  # null bytes
                py.append(BuildError(path, 0, "syntax", str(e)))
    data = BuildData(python=tuple(py))
    if any(p.endswith(C_SUFFIXES) for p in after):
        tool, command = _c_build_command(after)
        res = box.run(["/bin/bash", "-c", command], timeout=timeout or task.limits.verifier_timeout_sec)
        if res.stop is StopReason.SANDBOX_ERROR:
            return StageResult("build", StageStatus.ERROR, message=res.stderr[-500:])
        c = [BuildError.from_dict(r) for r in taxonomy.classify_compiler(res.stdout + res.stderr)]
        if res.exit_code != 0 and not c:
            c = [BuildError("", 0, "compile.other", (res.stdout + res.stderr).strip()[-300:])]
        data = replace(data, c=tuple(c), c_tool=tool, c_exit=res.exit_code)
    records = [*data.python, *data.c]
    if not any(p.endswith(".py") for p in after) and data.c_tool is None:
        return StageResult("build", StageStatus.SKIPPED, data=data.to_dict())
    classes = list(dict.fromkeys(r.error_class for r in records))
    return StageResult("build", StageStatus.FAILED if records else StageStatus.OK, data=data.to_dict(),
                       error_classes=classes, message="; ".join(f"{r.file}:{r.line}: {r.message}" for r in records[:5]))


def _c_build_command(after: dict[str, bytes]) -> tuple[str, str]:
    """Build a copy of the workspace in /tmp, so the agent's files are never changed."""
    copy = 'rm -rf /tmp/.termrl-build && cp -a . /tmp/.termrl-build && cd /tmp/.termrl-build && '
    if "Makefile" in after or "makefile" in after:
        return "make", copy + "make -k 2>&1"
    if "CMakeLists.txt" in after:
        return "cmake", copy + "cmake -S . -B _b >/dev/null && cmake --build _b 2>&1"
    sources = [p for p in after if p.endswith((".c", ".cc", ".cpp", ".cxx"))]
    cxx = any(p.endswith((".cc", ".cpp", ".cxx")) for p in sources)
    mains = [p for p in sources if re.search(rb"\bmain\s*\(", after[p])]
    quoted = " ".join(f"'{p}'" for p in sources)
    compiler = "g++" if cxx else "gcc"
    if len(mains) == 1:
        # compile and link every source into one program
        return compiler, copy + f"{compiler} -o /tmp/.termrl-build/a.out {quoted} -lm 2>&1"
    return compiler, copy + f"for f in {quoted}; do {compiler} -c \"$f\" -o /dev/null 2>&1 || st=1; done; exit ${{st:-0}}"


# --------------------------------------------------------------------------- tests


def run_tests(task: Task, box: Sandbox, per_test_timeout: float) -> tuple[StageResult, list[TestCase]]:
    spec = task.test_spec
    env = {**pyenv.environment(task), **dict(spec.env), "PYTHONDONTWRITEBYTECODE": "1"}
    cwd = spec.cwd or task.workdir
    timeout = task.limits.verifier_timeout_sec
    if spec.kind is TestKind.PYTEST:
        if not task.tests:
            return StageResult("tests", StageStatus.ERROR, message=f"task {task.id} has no hidden tests"), []
        result, tests = _pytest(task, box, task.tests, env, cwd, timeout, per_test_timeout, holdout=False)
        if task.holdout_tests and result.status is not StageStatus.ERROR:
            hold, hold_tests = _pytest(task, box, task.holdout_tests, env, cwd, timeout, per_test_timeout,
                                       holdout=True)
            if hold.status is StageStatus.ERROR:
                return hold, tests
            tests += hold_tests
            data = replace(TestsData.from_dict(result.data), holdout_passed=hold.status is StageStatus.OK)
            result.data = data.to_dict()
        return result, tests
    script = f"{spec.tests_dir}/{spec.script}"
    # the task's own script may edit its tests, as under Docker (un-@Disabled Java tests)
    outputs = [spec.tests_dir] + ([REWARD_DIR] if spec.kind is TestKind.REWARD_FILE else [])
    res = box.run(["/bin/bash", script], timeout=timeout, cwd=cwd, env={**env, **script_env(env, spec.tests_dir)},
                  mounts={spec.tests_dir: task.tests, HARNESS_DIR: _harness_files(), **_user_site(task)},
                  outputs=outputs)
    data = _run_data(spec.kind.value, res)
    if spec.kind is TestKind.REWARD_FILE:
        judged = judge_reward_file(box, res)
        if judged.verify_error:
            return StageResult("tests", StageStatus.ERROR, data=data.to_dict(), message=judged.verify_error), []
        data = replace(data, reward_file=judged.reward)
        passed = judged.passed
    else:
        passed = res.ok
    classes = _run_classes(res) or ([] if passed else ["wrong_answer"])
    status = StageStatus.OK if passed else StageStatus.FAILED
    return StageResult("tests", status, data=data.to_dict(), error_classes=classes), []


USER_BASE = "/.termrl-user"
"""``PYTHONUSERBASE`` of a task's own test script: its user site holds a .pth that puts the harness
and the task's Python environment on every interpreter's path, so a script that sets its own
``PYTHONPATH`` (``export PYTHONPATH=$(pwd)``) still finds them, as it would find packages
installed into an image's site-packages."""


def _user_site(task: Task) -> dict[str, dict[str, TaskFile]]:
    version = ".".join(pyenv.interpreter().split()[1].split(".")[:2])
    lines = [HARNESS_DIR] + ([pyenv.MOUNT] if task.python_requirements else [])
    return {f"{USER_BASE}/lib/python{version}/site-packages": {"termrl.pth": TaskFile.text("\n".join(lines) + "\n")}}


def script_env(env: dict[str, str], tests_dir: str) -> dict[str, str]:
    """For a task's own test script: any pytest it starts loads the report plugin
    (``PYTEST_PLUGINS``), so the agent's modules its tests import run out of process there too
    (``termrl.verify.harness.isolate``). The script still decides pass or fail; no report is written."""
    path = env.get("PYTHONPATH")
    return {"PYTEST_PLUGINS": "pytest_report", "PYTHONPATH": f"{HARNESS_DIR}:{path}" if path else HARNESS_DIR,
            "PYTHONUSERBASE": USER_BASE, "TERMRL_SCRIPT_TESTS": "1",
            "TERMRL_TESTS": tests_dir, "TERMRL_HIDDEN": REWARD_DIR, "TERMRL_ISOLATE": _isolate_flag(),
            "TERMRL_CONFINE": _confine_flag()}


def _run_data(kind: str, res: ExecResult) -> TestsData:
    return TestsData(kind, res.exit_code, res.stop.value, (res.stdout + res.stderr)[-2000:])


def _run_classes(res: ExecResult) -> list[str]:
    if res.stop is StopReason.TIMEOUT:
        return ["timeout"]
    if res.stop is StopReason.MEMORY:
        return ["memory"]
    return []


@dataclass(frozen=True)
class Canary:
    """Two tests run in the same pytest session as a task's own, under names drawn afresh for
    each run: one must pass and one must fail. Code under test that forges the session's
    outcomes (patching pytest's reports, or the report plugin) turns the failing one into a
    pass, or makes the tests reported differ from those collected: ``grader_tampering``.
    A cheap net, not a wall: code that reads the canary file can spare it."""

    file: str
    passing: str
    failing: str

    @classmethod
    def draw(cls) -> "Canary":
        return cls(f"test_{secrets.token_hex(6)}.py", f"test_{secrets.token_hex(6)}", f"test_{secrets.token_hex(6)}")

    def source(self) -> bytes:
        a, b = 1000 + secrets.randbelow(9000), 1000 + secrets.randbelow(9000)
        # PYTEST_DONT_REWRITE: no assertion rewriting (a compile per run) for two plain asserts
        return (f'"""PYTEST_DONT_REWRITE"""\n\n\ndef {self.passing}():\n    assert {a} + {b} == {a + b}\n\n\n'
                f"def {self.failing}():\n    assert {a} * {b} == {a * b + 1}\n").encode()

    def add_to(self, tests: Files, tests_dir: str, targets: list[str]) -> tuple[dict, list[str]]:
        """``tests`` with the canary file, and ``targets`` with it last (it runs after the task's
        tests, once the code under test has been imported by them) unless they hold the whole
        directory, which collects it."""
        named = [] if tests_dir in targets else [f"{tests_dir}/{self.file}"]
        return {**tests, self.file: TaskFile(self.source())}, [*targets, *named]

    def owns(self, nodeid: str) -> bool:
        return nodeid.split("::", 1)[0].rsplit("/", 1)[-1] == self.file

    def outcome(self, report: dict, name: str) -> str | None:
        """The reported outcome of canary test ``name`` (None when it is not in the report)."""
        return next((t["outcome"] for t in report["tests"]
                     if self.owns(t["nodeid"]) and t["nodeid"].rsplit("::", 1)[-1] == name), None)

    def verdict(self, report: dict) -> str:
        """``forged``: the failing canary was reported passed. ``miscounted``: a session that
        finished normally reported more or fewer tests than it collected (results added or
        removed). ``absent``: neither canary was collected, and nothing is missing (a task's
        configuration that collects other file names). ``ok``: one failed and one passed, as
        planned. ``inconclusive``: anything else that proves nothing (a task's fixture that
        errored or skipped them, a crash or a timeout mid-run)."""
        failing, passing = self.outcome(report, self.failing), self.outcome(report, self.passing)
        if failing in ("passed", "xpassed") or report.get("forged"):
            return "forged"
        ran, items = report.get("ran"), report.get("items")
        if report.get("complete") and report.get("exitstatus") in (0, 1) and not report.get("collect_errors") \
                and ran is not None and ran != items:
            return "miscounted"
        if failing is None and passing is None:
            return "absent"
        return "ok" if (failing, passing) == ("failed", "passed") else "inconclusive"


def _pytest(task: Task, box: Sandbox, files, env, cwd, timeout, per_test_timeout, holdout: bool
            ) -> tuple[StageResult, list[TestCase]]:
    spec = task.test_spec
    targets = [f"{spec.tests_dir}/{f}" for f in spec.pytest_files] or [spec.tests_dir]
    canary = Canary.draw()
    files, targets = canary.add_to(files, spec.tests_dir, targets)
    key = secrets.token_hex(32)
    path = ":".join([HARNESS_DIR, *([pyenv.MOUNT] if task.python_requirements else [])])
    run_env = {**env, "PYTHONPATH": path, **report_env(key, spec.tests_dir, per_test_timeout)}
    res = box.run([*PYTEST, *targets], timeout=timeout, cwd=cwd, env=run_env,
                  mounts={spec.tests_dir: files, HARNESS_DIR: _harness_files()}, outputs=[OUT_DIR])
    try:
        raw = box.read_file(f"{OUT_DIR}/report.json")
    except (FileNotFoundError, PermissionError):
        raw = None
    return pytest_result(res, read_report(raw, key), started=STARTED in res.stdout, holdout=holdout, canary=canary)


def report_env(key: str, tests_dir: str, per_test_timeout: float) -> dict[str, str]:
    """The report plugin's environment: where to write, the key to sign with, the test folder
    (it runs in the test process, the agent's modules in a worker), the per-test alarm."""
    return {"TERMRL_REPORT": f"{OUT_DIR}/report.json", "TERMRL_REPORT_KEY": key, "TERMRL_TESTS": tests_dir,
            "TERMRL_HIDDEN": OUT_DIR, "TERMRL_TEST_TIMEOUT": str(per_test_timeout),
            "TERMRL_ISOLATE": _isolate_flag(), "TERMRL_CONFINE": _confine_flag()}


def _isolate_flag() -> str:
    """"0" when the harness's own environment says TERMRL_ISOLATE=0: the agent's code then runs in
    the test process, for measuring what the isolation costs, never for training."""
    return "0" if os.environ.get("TERMRL_ISOLATE") == "0" else "1"


def _confine_flag() -> str:
    """"0" when the harness's own environment says TERMRL_CONFINE=0: the hidden tests are then in
    reach of the code under test (``termrl.verify.harness.confine``), for measuring what hiding them costs
    and showing what it stops, never for training."""
    return "0" if os.environ.get("TERMRL_CONFINE") == "0" else "1"


FORGED = {"version": 1, "complete": False, "tests": [], "forged": True}
"""What a report that fails its key's check reads as: nothing ran, and someone forged the file."""


def read_report(raw: bytes | str | None, key: str) -> dict | None:
    """The plugin's report from the file's bytes: None when there is none (or it is not JSON:
    a run cut off mid-write), ``FORGED`` when its signature is not the key's."""
    if raw is None:
        return None
    try:
        outer = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(outer, dict) or not isinstance(outer.get("body"), str) or not isinstance(outer.get("mac"), str):
        return dict(FORGED)
    expected = hmac.new(key.encode(), outer["body"].encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, outer["mac"]):
        return dict(FORGED)
    try:
        report = json.loads(outer["body"])
    except ValueError:
        return dict(FORGED)
    return report if isinstance(report, dict) and isinstance(report.get("tests"), list) else dict(FORGED)


def pytest_result(res: ExecResult, report: dict | None, started: bool, holdout: bool = False,
                  canary: Canary | None = None) -> tuple[StageResult, list[TestCase]]:
    """The tests stage from a pytest run and the JSON report its plugin wrote (or None).

    ``started``: pytest signalled it was up before the agent's code was imported. No
    report after that means the code under test ended the run (``os._exit``, a signal,
    a hang): the agent's failure (``runtime.crash``, ``timeout`` or ``memory``). No
    report and no start means pytest itself could not run: failed-to-verify.

    ``canary``: the canary tests the run included (``Canary``). They are left out of the
    tests; their verdict is ``TestsData.canary``, and a run whose canaries show forged
    outcomes fails (``grader_tampering``, which the hack detectors report as high).
    """
    data = _run_data("pytest", res)
    if report is None:
        classes = _run_classes(res) or (["runtime.crash"] if started else [])
        if classes:
            return StageResult("tests", StageStatus.FAILED, data=data.to_dict(), error_classes=classes), []
        return StageResult("tests", StageStatus.ERROR, data=data.to_dict(),
                           message=f"pytest wrote no report (exit {res.exit_code}): "
                                   f"{(res.stdout + res.stderr).strip()[-500:]}"), []
    verdict = canary.verdict(report) if canary else None
    rows = [t for t in report["tests"] if not (canary and canary.owns(t["nodeid"]))]
    tests = [_test_case(t, holdout) for t in rows]
    if res.stop is StopReason.MEMORY:  # the isolation's worker was the one the kernel killed
        tests = [replace(t, error_class="memory") if t.exc_type == "CodeUnderTestDied" and "signal 9" in t.message
                 else t for t in tests]
    counted = [t for t in tests if t.outcome not in ("skipped",)]
    complete = report.get("complete", True)
    # a failing canary that failed makes a session whose own tests all pass exit with 1
    expected_exit = 1 if canary and canary.outcome(report, canary.failing) in ("failed", "error") else 0
    passed = (res.exit_code == expected_exit and res.stop is StopReason.EXITED and complete
              and report.get("exitstatus") == expected_exit and bool(counted)
              and verdict not in ("forged", "miscounted")
              and all(t.outcome in ("passed", "xfailed", "xpassed") for t in counted))
    data = replace(data, collected=report.get("collected", len(report["tests"])) - (len(report["tests"]) - len(rows)),
                   passed=sum(t.outcome == "passed" for t in tests),
                   failed=sum(t.outcome in ("failed", "error") for t in tests), canary=verdict,
                   tests_hidden=report.get("tests_hidden"))
    if data.tests_hidden is False:
        warnings.warn("the hidden tests were in reach of the code under test: Landlock is missing (Linux "
                      "5.13+) or refused (a container's seccomp profile), or TERMRL_CONFINE=0; only the "
                      "detectors stop a solution that reads them (termrl.verify.harness.confine)", RuntimeWarning,
                      stacklevel=2)
    ended = _run_classes(res)  # the tests a hang or the memory limit cut short are that run's failure
    if ended:
        tests = [replace(t, error_class=ended[0]) if t.exc_type in ("Interrupted", "NotRun") else t for t in tests]
    classes = [t.error_class for t in tests if t.error_class] + ended
    interrupted = report.get("exitstatus") == 2 and not report.get("collect_errors")  # not collection's exit 2
    if (not complete or interrupted) and not _run_classes(res):
        classes.append("runtime.crash")  # the run ended mid-way (or was interrupted) without hanging or blowing memory
    if not passed and not classes:
        classes = ["wrong_answer"]  # e.g. no test collected, or the run was cut short
    return StageResult("tests", StageStatus.OK if passed else StageStatus.FAILED, data=data.to_dict(),
                       error_classes=list(dict.fromkeys(classes))), tests


def _test_case(t: dict, holdout: bool) -> TestCase:
    failed = t["outcome"] in ("failed", "error")
    return TestCase(
        nodeid=t["nodeid"], outcome=t["outcome"], duration_s=round(t["duration_s"], 4),
        tags=tuple(t["tags"]), exc_type=t["exc_type"], message=t["message"],
        error_class=taxonomy.classify_python(t["exc_type"], f"{t['message']} {t['detail']}") if failed else None,
        holdout=holdout)


_HARNESS: dict | None = None


def _harness_files() -> dict:
    global _HARNESS
    if _HARNESS is None:
        harness = {}  # whole before it is shared: episode threads mount it as soon as it is set
        for source in HARNESS_FILES:
            harness[source.name] = TaskFile(source.read_bytes())
            harness[f"__pycache__/{source.stem}.{sys.implementation.cache_tag}.pyc"] = TaskFile(_compiled(source))
        _HARNESS = harness
    return _HARNESS


def _compiled(source: Path) -> bytes:
    """``source``'s bytecode as a hash-checked .pyc: the sandbox's interpreter (when it has this
    one's cache tag) loads it instead of compiling the harness in every test process and
    worker, and compiles the source itself should the two ever differ."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out.pyc"
        py_compile.compile(str(source), cfile=str(target), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        return target.read_bytes()


# --------------------------------------------------------------------------- quality and safety

RUFF_QUALITY = "E,W,F,B,C4,SIM,PL,RET,ARG,BLE,TRY"


def static_analysis(after: dict[str, bytes], changed: list[str]) -> tuple[StageResult, StageResult]:
    """ruff (by rule category) and radon (complexity, maintainability) on the changed Python
    files, and ruff's security rules (bandit's S rules). Runs on the host over copies of the
    files: analysing code never executes it."""
    py = [p for p in changed if p.endswith(".py")]
    if not py:
        return (StageResult("quality", StageStatus.SKIPPED, data=_empty_quality()),
                StageResult("safety", StageStatus.SKIPPED, data={"count": 0, "by_rule": {}, "findings": []}))
    ruff = shutil.which("ruff") or str(Path(os.sys.executable).with_name("ruff"))
    with tempfile.TemporaryDirectory(prefix="termrl-ruff-") as tmp:
        for p in py:
            target = Path(tmp) / p
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(after[p])
        try:
            res = subprocess.run([ruff, "check", "--isolated", "--no-cache", "--exit-zero",
                                  "--output-format", "json", "--select", RUFF_QUALITY + ",S", "."],
                                 cwd=tmp, capture_output=True, text=True, timeout=60)
            findings = json.loads(res.stdout or "[]")
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            err = StageResult("quality", StageStatus.ERROR, message=f"ruff could not run: {e}")
            return err, StageResult("safety", StageStatus.ERROR, message=err.message)
    quality = [f for f in findings if not (f.get("code") or "").startswith("S")]
    security = [f for f in findings if (f.get("code") or "").startswith("S")]

    def short(f: dict) -> dict:
        return {"code": f.get("code"), "message": f.get("message"), "file": f.get("filename", "").replace(tmp + "/", ""),
                "line": (f.get("location") or {}).get("row", 0)}

    by_cat: dict[str, int] = {}
    for f in quality:
        cat = "".join(ch for ch in (f.get("code") or "?") if ch.isalpha())
        by_cat[cat] = by_cat.get(cat, 0) + 1
    by_rule: dict[str, int] = {}
    for f in security:
        by_rule[f["code"]] = by_rule.get(f["code"], 0) + 1
    q_data = {"ruff": {"count": len(quality), "by_category": by_cat, "findings": [short(f) for f in quality[:50]]},
              "complexity": _complexity([after[p].decode(errors="replace") for p in py])}
    s_data = {"count": len(security), "by_rule": by_rule, "findings": [short(f) for f in security[:50]]}
    return (StageResult("quality", StageStatus.OK, data=q_data),
            StageResult("safety", StageStatus.FAILED if security else StageStatus.OK, data=s_data))


def _empty_quality() -> dict:
    return {"ruff": {"count": 0, "by_category": {}, "findings": []},
            "complexity": {"max_cc": 0, "mean_cc": 0.0, "mi": 100.0}}


def _complexity(sources: list[str]) -> dict:
    from radon.complexity import cc_visit  # heavy: radon
    from radon.metrics import mi_visit  # heavy: radon

    ccs, mis = [], []
    for src in sources:
        try:
            ccs += [b.complexity for b in cc_visit(src)]
            mis.append(mi_visit(src, multi=True))
        except (SyntaxError, ValueError):
            continue
    return {"max_cc": max(ccs, default=0), "mean_cc": round(sum(ccs) / len(ccs), 3) if ccs else 0.0,
            "mi": round(min(mis), 2) if mis else 100.0}


# --------------------------------------------------------------------------- trace


def trace(steps: list[dict]) -> StageResult:
    """Every command the agent ran, as the environment recorded it."""
    data = {"steps": steps, "commands": len(steps),
            "failed": sum(1 for s in steps if s.get("exit_code") not in (0, None)),
            "timeouts": sum(1 for s in steps if s.get("timed_out")),
            "format_errors": sum(1 for s in steps if s.get("format_error")),
            "output_bytes": sum(int(s.get("output_bytes") or 0) for s in steps)}
    return StageResult("trace", StageStatus.OK, data=data)
