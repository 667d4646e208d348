"""How strong a task's hidden tests are: the share of small bugs in its reference solution they catch.

``termrl tasks strength SUITE``. For every task with a reference solution: run it in a fresh
sandbox, take the code files it wrote or changed (Python, C, shell, JavaScript, Makefiles and
CMakeLists.txt, told by name or ``#!`` line: ``termrl.checks.shell_mutants.language``), make
mutants of them (``termrl.checks.mutants`` and ``termrl.checks.shell_mutants``: operator swaps,
boundary shifts, constants, test flags, redirections, pipeline stages, removed statements,
commands, prerequisites and returns), and verify each mutated workspace, permission bits kept,
with the task's hidden tests through the warm verifier pool, exactly as an episode's reward is
verified. A mutant the tests fail is killed; one they pass survives, and is a concrete wrong
solution that would earn the full reward: a candidate exploit, listed as a diff.

Where the reference writes no code file with a mutant (its work is the commands: ``sort``,
``git``, ``chmod``), its own script is mutated instead (``mutated: "solution"``; here-documents
left whole), and each mutant script is run in a fresh sandbox and verified there.

The mutation score is killed / mutants verified (a mutant the harness could not verify counts in
neither). A task scoring below ``WEAK`` is weak. Mutants per task are bounded (``max_mutants``,
spread evenly over the files' mutants in source order). Some mutants are equivalent to the
original (a removed statement with no effect): the score is a lower bound of the tests' strength.

A single fixed example kills most mutants yet is passed by a solution that returns its one
answer, so the distinct inputs the tests give each tested function or command are also counted
(``termrl.checks.inputs``): functions given too few, or only the instruction's examples, make a
task weak too (``few_inputs``).

For a task whose workspace holds tests the agent sees, the same mutants are also verified
against those (``visible_score``), and their coverage measured (``visible_line_coverage``): a
task whose visible tests are weaker than its hidden ones shows it.

Line and branch coverage (``coverage_of``): the reference's solved workspace runs its hidden tests
once more in a fresh sandbox under coverage.py (the sandbox's ``python3 -m coverage``, Debian's
python3-coverage), plain pytest without termrl's report plugin (a trusted reference needs no
isolation, and coverage must see the code run in the test process), child Python processes
measured too (``COVERAGE_PROCESS_START`` and a .pth file in the run's own user site-packages,
which a test that clears ``PYTHONPATH`` for its child keeps), over the Python files the reference
wrote. C files: gcov, every ``gcc``/``cc`` the tests run wrapped to add ``--coverage``, each build's
``.gcda`` data read back after the tests (a build with ``/usr/bin/gcc`` spelt out, or in a folder
outside /tmp and the working folder, is not seen). A task is weak when its mutation score or its
line coverage is below ``WEAK``, or its tests give too few inputs.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

from termrl.checks.inputs import inputs_of
from termrl.checks.mutants import C_SUFFIXES, spread
from termrl.checks.shell_mutants import SOLUTION, language, mutants_for, shell_mutants
from termrl.protocols import Evidence, HarnessError, Task, TaskFile
from termrl.sandbox.bwrap import DEFAULT_PATH
from termrl.sandbox.workspace import exact_files, snapshot
from termrl.tasks import pyenv
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.verify import unverified, verify
from termrl.verify.pool import VerifierPool

WEAK = 0.8
"""A task whose tests kill fewer than this share of its mutants is weak."""
GENERATED = frozenset({"CMakeFiles", ".git", "__pycache__"})
"""Folders of files a build writes (CMake's compiler probes), never the solution's code: not mutated."""
MAX_MUTANTS = 30
"""Mutants verified per task (spread over all of its reference solution's mutants)."""


@dataclass
class Strength:
    """One task's figures (``to_dict`` is its JSON row)."""

    id: str
    category: str
    status: str
    """measured | no_reference | no_code (neither the files the solution writes nor the solution
    script itself has a mutant) | reference_fails | unsupported | error (the harness could not run
    the reference)"""
    mutants: int = 0
    """Mutants verified."""
    candidates: int = 0
    """Mutants the reference solution's code files have in all (``mutants`` of them were verified)."""
    killed: int = 0
    unverified: int = 0
    score: float | None = None
    seconds: float = 0.0
    survivors: list[dict] = field(default_factory=list)
    """{"path", "line", "operator", "diff"} of each surviving mutant."""
    reason: str = ""
    mutated: str = "files"
    """files (the code files the reference wrote, in any language ``language`` knows) or solution
    (the reference's own shell script, run in a fresh sandbox for each mutant: the task's work is
    the commands themselves)."""
    verified_in: str = "pool"
    """pool (the warm verifiers, as rewards are) or sandbox (``in_sandbox``: the solved state is more than files)."""
    visible_score: float | None = None
    """The same mutants against the tests the agent sees (``visible_tests``), where the task has
    any, its mutants are verified on the pool and the reference passes them when they run as
    hidden tests do: below ``score``, its visible tests are weaker than its hidden ones."""
    visible_killed: int = 0
    line_coverage: float | None = None
    """Share of the reference's statements (Python; C lines with code) the hidden tests run (``coverage_of``); None
    where it could not be measured (``coverage_note`` says why)."""
    branch_coverage: float | None = None
    """Share of its branches (both ways of each ``if``/loop) they take; None without branches."""
    coverage_note: str = ""
    inputs: dict = field(default_factory=dict)
    """Distinct inputs the hidden tests give each tested thing (``termrl.checks.inputs``):
    ``{"functions": {name: n}, "commands": {name: n}}``."""
    shared_inputs: float | None = None
    """Share of the tested functions' inputs that the instruction shows (its examples)."""
    few_inputs: bool = False
    """Every tested function gets fewer than ``termrl.checks.inputs.FEW`` inputs, or only the
    instruction's (commands are counted, not judged)."""
    inputs_note: str = ""
    visible_line_coverage: float | None = None
    """``line_coverage`` by the visible tests, where ``visible_score`` was measured."""
    visible_branch_coverage: float | None = None

    @property
    def weak(self) -> bool:
        return (self.score is not None and self.score < WEAK) or \
            (self.line_coverage is not None and self.line_coverage < WEAK) or self.few_inputs

    def to_dict(self) -> dict:
        return {**asdict(self), "weak": self.weak}


def visible_tests(task: Task) -> dict[str, TaskFile]:
    """The test files of the task's workspace (``test_*.py``, ``*_test.py``: the tests the agent
    sees), by their workspace paths; {} when it has none or its hidden tests are not pytest's."""
    if task.test_spec.kind.value != "pytest":
        return {}
    return {path: file for path, file in task.workspace.items()
            if path.endswith(".py") and (PurePosixPath(path).name.startswith("test_") or path.endswith("_test.py"))}


def reference_workspace(task: Task, backend: str = "bwrap") -> dict[str, bytes]:
    """The workspace after the task's reference solution ran in a fresh sandbox (path -> bytes;
    links left out: a copy written into another sandbox, which makes its own).

    Raises:
        HarnessError: the sandbox failed, or the reference solution itself exited non-zero.
    """
    return reference_state(task, backend)[0]


def reference_state(task: Task, backend: str = "bwrap") -> tuple[dict[str, bytes], dict[str, int], dict[str, int]]:
    """The workspace after the reference solution, as ``reference_workspace``, with the permission
    bits of its files and folders where the backend can give them (``exact_files``: a script the
    tests run keeps its execute bit in the pool's copy); ({}, {}) for those where it cannot.

    Raises:
        HarnessError: the sandbox failed, or the reference solution itself exited non-zero.
    """
    with open_sandbox(task, backend) as box:
        res = run_solution(box, task)
        if not res.ok:
            raise HarnessError(f"the reference solution failed ({res.stop.value}, exit {res.exit_code}): "
                               f"{(res.stdout + res.stderr)[-300:]}")
        files = snapshot(box, links=False)  # written back into other sandboxes, which have their own links
        exact = exact_files(box)
    if exact is None:
        return files, {}, {}
    return files, {p: m for p, m in exact[1].items() if p in files}, exact[2]


def in_sandbox(task: Task, replace: dict[str, bytes], backend: str = "bwrap", modes: dict[str, int] | None = None,
               solution: str | None = None) -> Evidence:
    """Full verification of the reference solution's own sandbox with the files of ``replace``
    written over what it left (keeping ``modes``, their permission bits): for tasks whose solved
    state is more than files (a git history, links, permission bits), which the warm pool's copy
    of a workspace does not carry. With ``solution``, that script is run instead of the
    reference, and its exit status does not matter: the tests judge what it left."""
    try:
        box = open_sandbox(task, backend)
    except HarnessError as e:
        return unverified(task.id, e)
    try:
        before = snapshot(box)
        res = run_solution(box, task if solution is None else dataclasses.replace(task, solution=solution))
        if solution is None and not res.ok:
            return unverified(task.id, HarnessError(f"the reference solution failed ({res.stop.value}, "
                                                    f"exit {res.exit_code})"))
        box.put_files(task.workdir, {path: TaskFile(data, (modes or {}).get(
            path, 0o755 if data.startswith(b"#!") else 0o644)) for path, data in replace.items()})
        return verify(task, box, before=before, static=False)
    except HarnessError as e:
        return unverified(task.id, e)
    finally:
        box.close()


COVERAGE_DIR = "/opt/termrl-coverage"
"""Where the coverage run's configuration, start-up hook and compiler wrappers are mounted inside
the sandbox (its data go to the run's own /tmp)."""
_TOTALS = "TERMRL_COVERAGE_TOTALS "
COMPILERS = ("gcc", "cc")
"""The C compilers the coverage run wraps to add ``--coverage`` (found on ``PATH`` after the wrappers)."""
_WRAPPER = """#!/bin/sh
# termrl's coverage run: the real {name}, with gcov's instrumentation
PATH=$(printf %s "$PATH" | tr ':' '\\n' | grep -vx '{bin}' | paste -sd: -)
exec {name} --coverage "$@"
"""
_GCOV_TOTALS = r'''
import json, os, subprocess, sys
wanted = set(sys.argv[1:])
lines, branches = {}, {}
for root in ("/tmp", os.getcwd()):
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".gcda"):
                continue
            out = subprocess.run(["gcov", "-b", "-t", "--json-format", os.path.join(folder, name)],
                                 capture_output=True, text=True, cwd=folder)
            try:
                report = json.loads(out.stdout)
            except ValueError:
                continue
            for f in report.get("files", []):
                base = os.path.basename(f["file"])
                if base not in wanted:
                    continue
                for line in f.get("lines", []):
                    key = (base, line["line_number"])
                    lines[key] = lines.get(key, False) or line["count"] > 0
                    for i, b in enumerate(line.get("branches", [])):
                        branches[key + (i,)] = branches.get(key + (i,), False) or b["count"] > 0
if lines:
    print("TERMRL_COVERAGE_TOTALS " + json.dumps({
        "num_statements": len(lines), "covered_lines": sum(lines.values()),
        "num_branches": len(branches), "covered_branches": sum(branches.values())}))
'''
"""Run in the sandbox after the tests: gcov's JSON of every ``.gcda`` the tests' programs left
(under /tmp and the working folder), the lines and branches of the reference's C files (matched by
file name: a test that copies ``mywc.c`` to a build folder measures the same source), merged
over every build of them (a line is covered when any build ran it)."""


def coverage_of(task: Task, solved: dict[str, bytes], written: list[str], backend: str = "bwrap") -> dict:
    """Line and branch coverage of ``written`` (workspace paths of Python and C files) by the
    task's hidden tests, the workspace being ``solved``: ``{"lines", "branches", "statements",
    "branch_count"}``, or ``{"note": why not}``. Python through coverage.py in the test process and
    its children; C through gcov, every ``gcc``/``cc`` the tests run given ``--coverage``
    (``COMPILERS``): both in one run when the reference wrote both."""
    spec = task.test_spec
    workdir = PurePosixPath(task.workdir)
    python = [p for p in written if p.endswith(".py")]
    c = [p for p in written if p.endswith(C_SUFFIXES)]
    files: dict[str, TaskFile] = {}
    before, after = [], []
    base = pyenv.environment(task)
    env = {**base, **dict(spec.env), "PYTHONDONTWRITEBYTECODE": "1"}
    if python:
        include = ",".join(str(workdir / p) for p in python)
        files[".coveragerc"] = TaskFile((f"[run]\nbranch = True\nparallel = True\n"
                                         f"data_file = /tmp/.termrl-coverage/data\ninclude = {include}\n").encode())
        rcfile = f"--rcfile={COVERAGE_DIR}/.coveragerc"
        # a .pth file in the user's site-packages starts coverage in every Python process, also in
        # children whose tests clear PYTHONPATH (a per-run HOME: it dies with the run)
        before.append("mkdir -p /tmp/.termrl-coverage; "
                      "site=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p \"$site\" && "
                      "echo 'import site, sys; sys.path.extend(p for p in site.getsitepackages() if p not in sys.path); "
                      "import coverage; coverage.process_startup()' > \"$site/termrl-coverage.pth\"; ")
        after.append(f"python3 -m coverage combine -q {rcfile} >/dev/null 2>&1; "
                     f"python3 -m coverage json -q {rcfile} -o /tmp/.termrl-coverage/report.json >/dev/null 2>&1 && "
                     "python3 -c 'import json; print(\"" + _TOTALS + "\" + json.dumps(json.load("
                     "open(\"/tmp/.termrl-coverage/report.json\"))[\"totals\"]))'; ")
        env["COVERAGE_PROCESS_START"] = f"{COVERAGE_DIR}/.coveragerc"
    if c:
        bin_dir = f"{COVERAGE_DIR}/bin"
        for name in COMPILERS:
            files[f"bin/{name}"] = TaskFile.text(_WRAPPER.format(name=name, bin=bin_dir), executable=True)
        files["gcov_totals.py"] = TaskFile(_GCOV_TOTALS.encode())
        env["PATH"] = f"{bin_dir}:{env.get('PATH', DEFAULT_PATH)}"
        after.append(f"python3 {COVERAGE_DIR}/gcov_totals.py {shlex.join(sorted({PurePosixPath(p).name for p in c}))}; ")
    if not files:
        return {"note": "the reference wrote no Python or C file"}
    if spec.kind.value == "pytest":
        targets = [f"{spec.tests_dir}/{f}" for f in spec.pytest_files] or [spec.tests_dir]
        tests = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets]
    else:
        tests = ["/bin/bash", f"{spec.tests_dir}/{spec.script}"]
    script = "".join(before) + f"{shlex.join(tests)} >/dev/null 2>&1; " + "".join(after)
    try:
        with open_sandbox(task, backend) as box:
            if python and not box.run(["python3", "-c", "import coverage"], timeout=60).ok:
                return {"note": "the sandbox's python3 has no coverage.py (apt-get install python3-coverage)"}
            if c and not box.run(["/bin/sh", "-c", "command -v gcov"], timeout=60).ok:
                return {"note": "the sandbox has no gcov (it comes with gcc)"}
            box.put_files(task.workdir, {p: TaskFile(d) for p, d in solved.items()})
            res = box.run(["/bin/bash", "-c", script], timeout=task.limits.verifier_timeout_sec + 120,
                          cwd=spec.cwd or task.workdir, env=env,
                          mounts={spec.tests_dir: task.tests, COVERAGE_DIR: files})
    except HarnessError as e:
        return {"note": f"coverage could not run: {e}"}
    found = [json.loads(x[len(_TOTALS):]) for x in res.stdout.splitlines() if x.startswith(_TOTALS)]
    if not found:
        return {"note": "the hidden tests ran none of the reference's code (no coverage data)"}
    totals = {k: sum(t.get(k, 0) for t in found)
              for k in ("num_statements", "covered_lines", "num_branches", "covered_branches")}
    statements, branches = totals["num_statements"], totals["num_branches"]
    return {"lines": round(totals["covered_lines"] / statements, 4) if statements else None,
            "branches": round(totals["covered_branches"] / branches, 4) if branches else None,
            "statements": statements, "branch_count": branches}


def measure(task: Task, pool, max_mutants: int = MAX_MUTANTS, backend: str = "bwrap") -> Strength:
    """``task``'s mutation score on ``pool`` (a ``termrl.verify.pool.VerifierPool``)."""
    row = Strength(task.id, task.meta.category or "", "measured")
    started = time.monotonic()
    try:
        if task.unsupported:
            row.status, row.reason = "unsupported", task.unsupported
        elif task.solution is None:
            row.status, row.reason = "no_reference", "no reference solution to mutate"
        else:
            _mutate(task, pool, max_mutants, backend, row)
    except HarnessError as e:
        row.status, row.reason = "error", f"{type(e).__name__}: {e}"
    row.seconds = round(time.monotonic() - started, 2)
    return row


def _mutate(task: Task, pool, max_mutants: int, backend: str, row: Strength) -> None:
    solved, modes, folders = reference_state(task, backend)
    initial = {p: f.data for p, f in task.workspace.items()}
    builds = {PurePosixPath(p).parent for p in solved if PurePosixPath(p).name == "CMakeCache.txt"}
    kinds = {p: language(p, data) for p, data in solved.items()
             if initial.get(p) != data and not GENERATED.intersection(PurePosixPath(p).parts)
             and not builds.intersection(PurePosixPath(p).parents)}  # what CMake generated is no one's code
    written = sorted(p for p, kind in kinds.items() if kind)
    texts = {p: solved[p].decode("utf-8", "replace") for p in written}
    candidates = [(path, m) for path in written
                  for m in _compiling(path, kinds[path], texts[path], mutants_for(path, texts[path], kinds[path]),
                                      solved)]
    if not candidates:
        _mutate_solution(task, pool, max_mutants, backend, row)
        return
    reference = pool.verify_files(task, solved, modes=modes, folders=folders)
    if not (reference.verified and reference.passed):  # more than files: a git history, links, modes
        row.verified_in = "sandbox"
        reference = in_sandbox(task, {}, backend)
    if not reference.verified or not reference.passed:
        row.status = "reference_fails" if reference.verified else "error"
        row.reason = "the reference solution does not pass its own hidden tests" \
            if reference.verified else f"the harness could not verify the reference: {reference.verify_error}"
        return
    measured = [p for p in written if kinds[p] in ("python", "c")]
    covered = coverage_of(task, solved, measured, backend) if measured else \
        {"note": "coverage is measured for Python and C code only"}
    row.line_coverage, row.branch_coverage = covered.get("lines"), covered.get("branches")
    row.coverage_note = covered.get("note", "")
    programs = [p for p in kinds if kinds[p] in ("shell", "javascript") or modes.get(p, 0) & 0o111
                or solved[p].startswith(b"#!")]
    _inputs(task, solved, [p for p in written if p.endswith(".py")], programs, backend, row)
    chosen = spread(candidates, max_mutants)
    if row.verified_in == "pool":
        evidence = pool.map([(task, {**solved, path: m.source.encode()}, None, modes, folders) for path, m in chosen])
        _against_visible(task, pool, solved, chosen, row, measured, backend)
    else:
        with ThreadPoolExecutor(pool.workers) as threads:
            evidence = list(threads.map(lambda job: in_sandbox(task, {job[0]: job[1].source.encode()}, backend,
                                                               modes), chosen))
    _count(row, candidates, chosen, evidence, texts)


def _inputs(task: Task, solved: dict[str, bytes], code: list[str], programs: list[str], backend: str,
            row: Strength) -> None:
    found = inputs_of(task, solved, code, programs, backend)
    row.inputs = {"functions": found.functions, "commands": found.commands}
    row.shared_inputs, row.few_inputs, row.inputs_note = found.shared, found.few, found.note


def _mutate_solution(task: Task, pool, max_mutants: int, backend: str, row: Strength) -> None:
    """Mutants of the reference's own script (``shell_mutants``: its here-documents left whole),
    each run in a fresh sandbox and verified there, for a task whose work is the commands."""
    row.mutated, row.verified_in = "solution", "sandbox"
    script = task.solution or ""
    candidates = [(SOLUTION, m) for m in _compiling(SOLUTION, "shell", script, shell_mutants(script), {})]
    if not candidates:
        row.status, row.reason = "no_code", "neither the files the reference writes nor its script have a mutant"
        return
    reference = in_sandbox(task, {}, backend, solution=script)
    if not reference.verified or not reference.passed:
        row.status = "reference_fails" if reference.verified else "error"
        row.reason = "the reference solution does not pass its own hidden tests" \
            if reference.verified else f"the harness could not verify the reference: {reference.verify_error}"
        return
    row.coverage_note = "the reference's work is its commands: no code to measure coverage of"
    chosen = spread(candidates, max_mutants)
    with ThreadPoolExecutor(pool.workers) as threads:
        evidence = list(threads.map(lambda job: in_sandbox(task, {}, backend, solution=job[1].source), chosen))
    _count(row, candidates, chosen, evidence, {SOLUTION: script})


def _count(row: Strength, candidates: list, chosen: list, evidence: list[Evidence], texts: dict[str, str]) -> None:
    row.candidates = len(candidates)
    for (path, mutant), ev in zip(chosen, evidence):
        if not ev.verified:
            row.unverified += 1
        elif ev.passed:
            row.survivors.append({"path": path, "line": mutant.line, "operator": mutant.operator,
                                  "diff": mutant.diff(texts[path], path)})
        else:
            row.killed += 1
    row.mutants = row.killed + len(row.survivors)
    row.score = round(row.killed / row.mutants, 4) if row.mutants else None


def _compiling(path: str, kind: str, text: str, found: list, solved: dict[str, bytes]) -> list:
    """``found`` less the mutants that do not parse: shell's by ``bash -n``, JavaScript's by
    ``node --check``, C's by ``cc -fsyntax-only`` (the solved workspace's folders on the include
    path: the lexer cannot tell ``return t;`` of a struct or ``s - start`` of two pointers from a
    number's, and a mutant that fails the build would count as killed). Python's are compiled
    already; without the tool here, or when the original does not parse alone (a header made by the
    build), all are kept."""
    if kind == "shell":
        return _parsing(found, text, ["bash", "-n"], ".sh")
    if kind == "javascript":
        return _parsing(found, text, ["node", "--check"], ".cjs" if "require(" in text else ".js")
    if kind != "c" or not found:
        return found
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return found
    with tempfile.TemporaryDirectory(prefix="termrl-mutants-") as root:
        for name, data in solved.items():
            target = PurePosixPath(root) / name
            if ".." in PurePosixPath(name).parts:
                continue
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_bytes(data)
        folders = sorted({str((PurePosixPath(root) / name).parent) for name in solved})
        command = [compiler, "-fsyntax-only", "-w", *(f"-I{f}" for f in folders), "-x",
                   "c-header" if path.endswith(".h") else "c", "-"]

        def compiles(source: str) -> bool:
            try:
                return subprocess.run(command, input=source.encode(), capture_output=True, timeout=30,
                                      cwd=str(PurePosixPath(root) / PurePosixPath(path).parent)).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                return True  # no verdict: keep it

        if not compiles(text):
            return found
        return [m for m in found if compiles(m.source)]


def _parsing(found: list, text: str, command: list[str], suffix: str) -> list:
    """``found`` less those ``command FILE`` rejects (a syntax check), all of them when the tool
    is missing here or rejects the original too."""
    if not found or shutil.which(command[0]) is None:
        return found
    with tempfile.TemporaryDirectory(prefix="termrl-mutants-") as root:
        target = Path(root) / f"source{suffix}"

        def parses(source: str) -> bool:
            target.write_text(source)
            try:
                return subprocess.run([*command, str(target)], check=False, capture_output=True,
                                      timeout=30).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                return True

        if not parses(text):
            return found
        return [m for m in found if parses(m.source)]


IN_PLACE = """\
import os
import subprocess
import sys


def test_the_visible_tests_where_the_agent_runs_them():
    env = {{k: v for k, v in os.environ.items() if not k.startswith(("TERMRL_", "PYTEST_"))}}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *{paths!r}],
                         cwd=os.getcwd(), env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
"""
"""The hidden test that runs a task's visible tests in their workspace place, as the agent would
(``python3 -m pytest PATHS`` from the working folder), in a child interpreter: one outcome for all."""


def _against_visible(task: Task, pool, solved: dict[str, bytes], chosen: list, row: Strength,
                     written: list[str], backend: str) -> None:
    """``row.visible_score``: ``chosen`` (path, mutant) against the task's visible tests, run as its
    hidden tests are, or, where the reference fails them that way (they need their workspace place:
    a conftest, a sibling module, a path from ``__file__``), in their place (``IN_PLACE``); left
    None when it has none or the reference fails them both ways. The same run gives the visible
    tests' coverage of ``written`` (``coverage_of``)."""
    visible = visible_tests(task)
    if not visible:
        return
    def tested_by(tests: dict[str, TaskFile]) -> Task:
        return dataclasses.replace(task, tests=tests, test_spec=dataclasses.replace(task.test_spec, pytest_files=()))

    seen = tested_by(visible)
    if not pool.verify_files(seen, solved).passed:
        seen = tested_by({"test_visible_in_place.py": TaskFile(IN_PLACE.format(paths=sorted(visible)).encode())})
        if not pool.verify_files(seen, solved).passed:
            return
    shown = pool.map([(seen, {**solved, path: m.source.encode()}) for path, m in chosen])
    counted = [ev for ev in shown if ev.verified]
    row.visible_killed = sum(not ev.passed for ev in counted)
    row.visible_score = round(row.visible_killed / len(counted), 4) if counted else None
    covered = coverage_of(seen, solved, written, backend)
    row.visible_line_coverage, row.visible_branch_coverage = covered.get("lines"), covered.get("branches")


def strength(tasks: Iterable[Task], workers: int = 2, max_mutants: int = MAX_MUTANTS, backend: str = "bwrap",
             on_done: Callable[[Strength], None] | None = None) -> list[Strength]:
    """``measure`` of every task, their mutants verified on one pool of ``workers`` warm sandboxes."""
    rows = []
    with VerifierPool(workers=workers) as pool:
        for task in tasks:
            rows.append(measure(task, pool, max_mutants, backend))
            if on_done:
                on_done(rows[-1])
    return rows


def summary(rows: list[Strength]) -> dict:
    """Totals over ``rows``: tasks measured, weak ones, mean score, mutants, survivors, seconds per task."""
    measured = [r for r in rows if r.score is not None]
    covered = [r for r in rows if r.line_coverage is not None]
    branched = [r for r in rows if r.branch_coverage is not None]
    return {"tasks": len(rows), "measured": len(measured), "weak": sum(r.weak for r in rows),
            "mean_score": round(sum(r.score for r in measured) / len(measured), 4) if measured else None,
            "mean_line_coverage": round(sum(r.line_coverage for r in covered) / len(covered), 4) if covered else None,
            "mean_branch_coverage": round(sum(r.branch_coverage for r in branched) / len(branched), 4)
            if branched else None,
            "low_coverage": sum(r.line_coverage < WEAK for r in covered),
            "few_inputs": sum(r.few_inputs for r in rows),
            "mutants": sum(r.mutants for r in rows), "survivors": sum(len(r.survivors) for r in rows),
            "seconds_per_task": round(sum(r.seconds for r in rows) / len(rows), 2) if rows else None}


__all__ = ["MAX_MUTANTS", "WEAK", "Strength", "coverage_of", "measure", "reference_workspace", "strength", "summary"]
