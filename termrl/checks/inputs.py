"""How many distinct inputs a task's hidden tests give each function or command they test, and
how many of those the instruction already shows.

Mutation misses one kind of weak test: a test of a single fixed example kills most mutants (any
bug changes that one answer), yet a solution that returns the one expected answer passes it. So
``termrl tasks strength`` also runs the hidden tests once on the reference's solved workspace
with a recorder in every Python process they start (a ``.pth`` file in the run's own user
site-packages, as the coverage run does) and counts, per tested thing:

- a **function** of the reference's Python files, called directly from test code: the distinct
  argument values it was called with (``repr``, ``self`` and ``cls`` left out), however the tests
  built them (literals, variables, fixtures, parametrize, loops);
- a **command**, a program the reference wrote that a test starts (``subprocess``; Python's audit
  events): the distinct command lines, each with the input it was fed, where the test fed one.

A task whose every tested function gets fewer than ``FEW`` distinct inputs, or whose functions'
tested inputs all appear in the instruction (its examples: a table of them passes), has tests
that exercise too few inputs (``few_inputs``). Commands are counted but not judged: one run can
feed a program a whole batch of cases through a file or its input, which no command line shows.
Tests the recorder cannot see (a shell test script that runs the program itself, no Python)
give no figure, with a note why.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from termrl.protocols import HarnessError, Task, TaskFile
from termrl.tasks import pyenv
from termrl.tasks.runtime import open_sandbox

FEW = 2
"""A tested thing with fewer distinct inputs than this is exercised by too few: one fixed example
(two, at a boundary, can be a strong test of a yes/no function)."""
INPUTS_DIR = "/opt/termrl-inputs"
_LINE = "TERMRL_INPUTS "

_RECORDER = r'''
import atexit, hashlib, json, os, sys, threading
WANTED = set(json.loads(os.environ.get("TERMRL_INPUTS_FILES", "[]")))
NAMES = set(os.path.basename(p) for p in WANTED)
TESTS = os.environ.get("TERMRL_INPUTS_TESTS", "/tests")
seen = {}
def _repr(value):
    try:
        text = repr(value)
    except Exception:
        text = type(value).__name__
    return text if len(text) <= 300 else text[:200] + hashlib.sha1(text.encode()).hexdigest()
def _note(name, key, shown):
    seen.setdefault(name, {})[key] = shown
def _profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    if code.co_filename in WANTED:
        back = frame.f_back
        if back is None or not back.f_code.co_filename.startswith(TESTS):
            return
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount
                                 + bool(code.co_flags & 4) + bool(code.co_flags & 8)]
        values = [frame.f_locals.get(n) for n in names if n not in ("self", "cls")]
        shown = [_repr(v) for v in values]
        _note(os.path.basename(code.co_filename) + ":" + code.co_name, json.dumps(shown), shown)
    elif code.co_name == "communicate" and code.co_filename.endswith("subprocess.py"):
        popen, data = frame.f_locals.get("self"), frame.f_locals.get("input")
        argv = _command(getattr(popen, "args", None))
        if argv:
            shown = [*argv[1:], _repr(data)] if data is not None else argv[1:]
            _note(os.path.basename(argv[0]), json.dumps(shown), shown)
def _command(args):
    if isinstance(args, (str, bytes)):
        args = [args]
    try:
        argv = [os.fsdecode(a) for a in args]
    except TypeError:
        return None
    for i, a in enumerate(argv[:3]):
        if os.path.basename(a) in NAMES:
            return argv[i:]
    return None
def _audit(event, args):
    if event == "subprocess.Popen":
        argv = _command(args[1])
        if argv:
            _note(os.path.basename(argv[0]), json.dumps(argv[1:]), argv[1:])
def _dump():
    if seen:
        with open(os.path.join(os.environ.get("TERMRL_INPUTS_OUT", "/tmp"), f"{os.getpid()}.json"), "w") as fh:
            json.dump({k: list(v.values()) for k, v in seen.items()}, fh)
sys.setprofile(_profile)
threading.setprofile(_profile)
sys.addaudithook(_audit)
atexit.register(_dump)
'''
"""Started in every Python process of the run (by the ``.pth`` file): records the calls test code
makes into the reference's files and the commands it starts, written out at the process's exit."""


@dataclass
class Inputs:
    """What ``inputs_of`` found: per tested thing, its distinct inputs."""

    functions: dict[str, int] = field(default_factory=dict)
    """``file.py:function`` -> distinct argument lists it was called with from test code."""
    commands: dict[str, int] = field(default_factory=dict)
    """Program name -> distinct (command line, input) it was run with."""
    shared: float | None = None
    """Share of the functions' distinct inputs whose every argument appears in the instruction."""
    note: str = ""

    @property
    def most(self) -> int | None:
        counts = [*self.functions.values(), *self.commands.values()]
        return max(counts) if counts else None

    @property
    def few(self) -> bool:
        """Every tested function has fewer than ``FEW`` inputs, or all of their inputs are the
        instruction's. Commands are counted, not judged: one run can feed a program many cases
        through a file or its input (a batch of lines), which its command line does not show."""
        most = max(self.functions.values(), default=None)
        return most is not None and (most < FEW or self.shared == 1.0)


def shown_in(value: str, instruction: str) -> bool:
    """Whether an argument (its ``repr``) appears in the instruction: a string's text or a
    number, matched as a whole token (``1`` is not found in ``10``).

    >>> shown_in("'abc'", "call f('abc')"), shown_in("12", "gives 120"), shown_in("[1, 2]", "f([1, 2]) is 3")
    (True, False, True)
    """
    text = value
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    if not text.strip():
        return True  # an empty string or blank says nothing
    return re.search(r"(?<![\w.])" + re.escape(text) + r"(?![\w.])", instruction) is not None \
        or (text in instruction and not re.fullmatch(r"[\w.+-]+", text))


def summarise(recorded: list[dict], programs: set[str], instruction: str) -> Inputs:
    """``Inputs`` of the recorder's per-process outputs (name -> list of argument lists)."""
    merged: dict[str, dict[str, list]] = {}
    for part in recorded:
        for name, calls in part.items():
            for shown in calls:
                merged.setdefault(name, {})[json.dumps(shown)] = shown
    found = Inputs()
    called = []
    for name, calls in merged.items():
        target = found.commands if name in programs else found.functions
        distinct = list(calls.values())
        if name in programs:  # a command line seen bare (its start) and with the input fed is one run
            distinct = [c for c in distinct if not any(len(o) == len(c) + 1 and o[:len(c)] == c for o in distinct)]
        else:
            called.extend(distinct)
        target[name] = len(distinct)
    if called:
        found.shared = round(sum(all(shown_in(a, instruction) for a in call) for call in called) / len(called), 4)
    return found


def inputs_of(task: Task, solved: dict[str, bytes], code: list[str], programs: list[str],
                  backend: str = "bwrap") -> Inputs:
    """The distinct inputs the hidden tests give the functions of ``code`` (workspace paths of
    Python files) and the ``programs`` (workspace paths of scripts the reference wrote), the
    workspace being ``solved``; an ``Inputs`` with a note when nothing could be recorded."""
    spec = task.test_spec
    if spec.kind.value != "pytest":
        return Inputs(note="the hidden tests are a script, not pytest's: inputs are recorded for pytest tests")
    workdir = PurePosixPath(task.workdir)
    out = "/tmp/.termrl-inputs"
    env = {**pyenv.environment(task), **dict(spec.env), "PYTHONDONTWRITEBYTECODE": "1",
           "TERMRL_INPUTS_FILES": json.dumps([str(workdir / p) for p in code] + [str(workdir / p) for p in programs]),
           "TERMRL_INPUTS_TESTS": spec.tests_dir, "TERMRL_INPUTS_OUT": out}
    start = (f"mkdir -p {out}; site=$(python3 -c 'import site; print(site.getusersitepackages())') && "
             f"mkdir -p \"$site\" && cp {INPUTS_DIR}/recorder.py \"$site/termrl_inputs_recorder.py\" && "
             "echo 'import termrl_inputs_recorder' > \"$site/termrl-inputs.pth\"; ")
    targets = [f"{spec.tests_dir}/{f}" for f in spec.pytest_files] or [spec.tests_dir]
    tests = shlex.join(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", *targets])
    script = (start + f"{tests} >/dev/null 2>&1; rm -f \"$site/termrl-inputs.pth\"; "
              f"for f in {out}/*.json; do [ -e \"$f\" ] && printf '{_LINE}%s\\n' \"$(cat \"$f\")\"; done; true")
    try:
        with open_sandbox(task, backend) as box:
            box.put_files(task.workdir, {p: TaskFile(d) for p, d in solved.items()})
            res = box.run(["/bin/bash", "-c", script], timeout=task.limits.verifier_timeout_sec + 120,
                          cwd=spec.cwd or task.workdir, env=env,
                          mounts={spec.tests_dir: task.tests,
                                  INPUTS_DIR: {"recorder.py": TaskFile(_RECORDER.encode())}})
    except HarnessError as e:
        return Inputs(note=f"the inputs could not be recorded: {e}")
    recorded = []
    for line in res.stdout.splitlines():
        if line.startswith(_LINE):
            try:
                recorded.append(json.loads(line[len(_LINE):]))
            except ValueError:
                continue
    found = summarise(recorded, {PurePosixPath(p).name for p in programs}, task.instruction)
    if found.most is None:
        found.note = "the hidden tests called none of the reference's functions and ran none of its programs"
    return found


__all__ = ["FEW", "Inputs", "inputs_of", "shown_in", "summarise"]
