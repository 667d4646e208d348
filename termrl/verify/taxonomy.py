"""The error taxonomy: a fixed set of classes, each assigned from real compiler,
interpreter or test-runner output.

Every class belongs to one *group*, which is what graded rewards price by
default (CodeRL: compile error -1, runtime error -0.6, failed tests -0.3):

| class | group | assigned when |
|---|---|---|
| ``syntax`` | compile | Python SyntaxError, IndentationError, TabError |
| ``name`` | runtime | NameError / UnboundLocalError (undefined name) |
| ``import`` | runtime | ImportError / ModuleNotFoundError |
| ``type`` | runtime | TypeError |
| ``attribute`` | runtime | AttributeError |
| ``compile.undeclared`` | compile | C/C++: use of an undeclared identifier |
| ``compile.implicit_declaration`` | compile | C: implicit declaration of a function (an error under -Werror or C99+) |
| ``compile.type`` | compile | C/C++: incompatible or conflicting types, wrong arguments |
| ``compile.syntax`` | compile | C/C++: expected token, stray characters |
| ``compile.other`` | compile | any other compiler error |
| ``link.undefined_reference`` | compile | linker: undefined reference |
| ``link.multiple_definition`` | compile | linker: multiple definition |
| ``link.other`` | compile | any other linker error |
| ``runtime.index`` | runtime | IndexError |
| ``runtime.key`` | runtime | KeyError |
| ``runtime.value`` | runtime | ValueError |
| ``runtime.zero_division`` | runtime | ZeroDivisionError (or SIGFPE) |
| ``runtime.recursion`` | runtime | RecursionError |
| ``runtime.crash`` | runtime | a process killed by a signal: segfault, abort, sanitizer report |
| ``runtime.other`` | runtime | any other exception |
| ``wrong_answer`` | wrong_answer | an assertion failed: the code ran and gave a wrong result |
| ``timeout`` | timeout | a test or the whole run exceeded its time limit |
| ``memory`` | memory | MemoryError or the sandbox's OOM kill |
| ``disk_full`` | memory | the sandbox's disk was full when verification had to write (the agent filled it) |

Per-test tags (pytest markers such as ``boundary`` or ``core``) are kept next
to the class, so a wrong answer on an edge case can be told apart from a wrong
core algorithm.
"""

from __future__ import annotations

import re

CLASSES: dict[str, str] = {
    "syntax": "compile",
    "name": "runtime",
    "import": "runtime",
    "type": "runtime",
    "attribute": "runtime",
    "compile.undeclared": "compile",
    "compile.implicit_declaration": "compile",
    "compile.type": "compile",
    "compile.syntax": "compile",
    "compile.other": "compile",
    "link.undefined_reference": "compile",
    "link.multiple_definition": "compile",
    "link.other": "compile",
    "runtime.index": "runtime",
    "runtime.key": "runtime",
    "runtime.value": "runtime",
    "runtime.zero_division": "runtime",
    "runtime.recursion": "runtime",
    "runtime.crash": "runtime",
    "runtime.other": "runtime",
    "wrong_answer": "wrong_answer",
    "timeout": "timeout",
    "memory": "memory",
    "disk_full": "memory",
}
"""Every class of the taxonomy -> its group."""

GROUPS = ("compile", "runtime", "wrong_answer", "timeout", "memory")
SEVERITY = {"compile": 0, "memory": 1, "timeout": 1, "runtime": 2, "wrong_answer": 3}
"""Lower is further from a correct program; used to pick a run's dominant class."""

PYTHON_EXCEPTIONS = {
    "SyntaxError": "syntax", "IndentationError": "syntax", "TabError": "syntax",
    "NameError": "name", "UnboundLocalError": "name",
    "ImportError": "import", "ModuleNotFoundError": "import",
    "TypeError": "type", "AttributeError": "attribute",
    "IndexError": "runtime.index", "KeyError": "runtime.key", "ValueError": "runtime.value",
    "UnicodeDecodeError": "runtime.value", "UnicodeEncodeError": "runtime.value",
    "UnicodeError": "runtime.value", "JSONDecodeError": "runtime.value",
    "ZeroDivisionError": "runtime.zero_division", "FloatingPointError": "runtime.zero_division",
    "RecursionError": "runtime.recursion",
    "AssertionError": "wrong_answer", "Failed": "wrong_answer",
    # a stub's "not implemented" is no answer, not a crash: priced as a runtime error it would pay
    # an agent to replace it with `return None` (a wrong answer), which is no better
    "NotImplementedError": "wrong_answer",
    "TimeoutError": "timeout", "TermrlTestTimeout": "timeout", "ImportTimedOut": "timeout", "Timeout": "timeout",
    "MemoryError": "memory",
    "Interrupted": "runtime.crash",  # termrl.verify.harness.pytest_report: the run ended during the test
    "NotRun": "runtime.crash",  # the run ended before the test
    "CodeUnderTestDied": "runtime.crash",  # termrl.verify.harness.isolate: the agent's worker process ended mid-call
}

_CRASH = re.compile(r"Segmentation fault|core dumped|Aborted|AddressSanitizer|UndefinedBehaviorSanitizer|"
                    r"stack smashing|double free|free\(\): invalid|returncode\W+-(?:4|6|7|8|11)\b|"
                    r"(?:died|killed) (?:with|by) signal|Signals\.SIG(?:SEGV|ABRT|BUS|ILL|FPE)|"
                    r"(?<![\w-])-(?:6|11) [!=]= 0\b|\b(?:134|139) [!=]= 0\b")
_SIGFPE = re.compile(r"Floating point exception|SIGFPE|returncode\W+-8\b|\b136 [!=]= 0\b|(?<![\w-])-8 [!=]= 0\b")
_CHILD_TRACEBACK = re.compile(r"Traceback \(most recent call last\):.*?\b([A-Z]\w*(?:Error|Exception)):", re.S)
_TIMEOUT = re.compile(r"TimeoutExpired|timed out after|Timeout >|TermrlTestTimeout")


def group_of(error_class: str) -> str:
    return CLASSES[error_class]


def dominant(classes: list[str]) -> str | None:
    """The class furthest from a correct program (compile before runtime before wrong answer)."""
    if not classes:
        return None
    return min(classes, key=lambda c: SEVERITY[CLASSES[c]])


def classify_python(exc_type: str, message: str = "") -> str:
    """A Python exception type name (with its message and traceback text) -> class.

    An AssertionError whose message shows a crashed or timed-out child process is
    that crash or timeout, not a wrong answer.
    """
    name = exc_type.rsplit(".", 1)[-1]
    cls = PYTHON_EXCEPTIONS.get(name)
    if cls is None and name.endswith("TimeoutExpired"):
        cls = "timeout"
    if cls in (None, "wrong_answer"):
        child = _CHILD_TRACEBACK.findall(message)
        if child:
            mapped = PYTHON_EXCEPTIONS.get(child[-1], "runtime.other")
            if mapped != "wrong_answer":
                return mapped  # a subprocess the test ran died of this
        if _SIGFPE.search(message):
            return "runtime.zero_division"
        if _CRASH.search(message):
            return "runtime.crash"
        if _TIMEOUT.search(message):
            return "timeout"
    return cls or "runtime.other"


_GCC_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.*)$", re.M)
_LINK = [
    ("link.undefined_reference", re.compile(r"undefined reference to|undefined symbol|symbol\(s\) not found")),
    ("link.multiple_definition", re.compile(r"multiple definition of|duplicate symbol")),
]
_LD_FAILED = re.compile(r"ld returned \d+ exit status|linker command failed|collect2: error")
_COMPILE_KINDS = [
    ("compile.implicit_declaration", re.compile(r"implicit declaration of function|implicit-function-declaration")),
    ("compile.undeclared", re.compile(r"undeclared|was not declared in this scope|unknown type name|"
                                      r"has no member named|not declared")),
    ("compile.syntax", re.compile(r"expected .* before|expected ['‘]|stray ['‘]|expected expression|"
                                  r"expected identifier|expected declaration|unterminated|missing terminating")),
    ("compile.type", re.compile(r"incompatible|conflicting types|invalid conversion|cannot convert|"
                                r"too (?:few|many) arguments|invalid operands|incompatible pointer|"
                                r"lvalue required|assignment to .* from|makes (?:pointer|integer) from|"
                                r"no matching function|request for member|initialization of")),
]


def classify_compiler(output: str) -> list[dict]:
    """gcc/g++/clang/ld output -> one record per error: {class, file, line, message}."""
    records = []
    for m in _GCC_ERROR.finditer(output):
        msg = m.group("msg")
        cls = next((c for c, rx in _COMPILE_KINDS if rx.search(msg)), "compile.other")
        records.append({"class": cls, "file": m.group("file"), "line": int(m.group("line")),
                        "message": msg.strip()})
    for line in output.splitlines():
        for cls, rx in _LINK:
            if rx.search(line):
                records.append({"class": cls, "file": "", "line": 0, "message": line.strip()})
    if not any(r["class"].startswith("link.") for r in records) and _LD_FAILED.search(output):
        cause = re.search(r"^.*\bld(?:\.\w+)?: (?!warning).*$", output, re.M)  # e.g. "cannot find -lfoo"
        records.append({"class": "link.other", "file": "", "line": 0,
                        "message": (cause or _LD_FAILED.search(output)).group(0).strip()})
    return records
