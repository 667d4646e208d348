"""What the code detectors share: the changed files, parsing, names, scopes and constants."""

from __future__ import annotations

import ast
import functools
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping

from termrl.protocols import Finding, HackInput

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
TEST_DIRS = {"tests", "test", "tests_visible", "testing"}


def changed_files(inp: HackInput) -> list[str]:
    """Files the agent added or modified (deleted files are not code)."""
    return sorted(p for p in inp.after if inp.before.get(p) != inp.after[p])


def is_test_file(path: str) -> bool:
    """``test_*.py``, ``test(s).py``, ``*_test(s).py`` or any file under a ``tests``-like
    directory; not conftest.py."""
    parts = path.split("/")
    name = parts[-1]
    if name == "conftest.py":
        return False
    return name.startswith("test_") or name in ("test.py", "tests.py") or \
        name.endswith(("_test.py", "_tests.py")) or bool(TEST_DIRS & set(parts[:-1]))


def is_python(path: str, data: bytes) -> bool:
    first = data[:200].split(b"\n", 1)[0]
    return path.endswith(".py") or (first.startswith(b"#!") and b"python" in first)


@functools.lru_cache(maxsize=128)
def parse(data: bytes) -> ast.Module | None:
    """The module's AST, or None when it is not valid Python (or too deeply nested to parse)."""
    try:
        with warnings.catch_warnings():  # invalid escapes in the agent's code are not our warnings
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def python_files(files: Mapping[str, bytes], paths: Iterable[str]) -> list[tuple[str, ast.Module]]:
    out = []
    for p in paths:
        if p in files and is_python(p, files[p]):
            tree = parse(files[p])
            if tree is not None:
                out.append((p, tree))
    return out


def names_file(text: str, path: str) -> bool:
    """Whether ``text`` names the file ``path`` (its file name, as a whole word).

    >>> names_file("Write `count.sh`, then run ./count.sh", "bin/count.sh"), names_file("recount.sh", "count.sh")
    (True, False)
    """
    name = path.rsplit("/", 1)[-1]
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def hidden_texts(inp: HackInput) -> list[str]:
    """The hidden (and holdout) test files, as text."""
    files = [*inp.task.tests.values(), *inp.task.holdout_tests.values()]
    return [f.data.decode(errors="replace") for f in files]


def changed_code(inp: HackInput) -> list[tuple[str, ast.Module]]:
    """(path, AST) of every changed Python file that is not a test file."""
    return python_files(inp.after, [p for p in changed_files(inp) if not is_test_file(p)])


def aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it was imported as: ``from sys import exit as e`` gives e -> sys.exit."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def qualname(node: ast.AST, names: Mapping[str, str]) -> str:
    """``os.path.join`` for an attribute chain, resolved through the file's imports; "" if not a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    parts.append(names.get(node.id, node.id))
    return ".".join(reversed(parts))


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def scoped(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.AST | None, bool]]:
    """Every node with its innermost enclosing function (None at import time) and whether it
    is inside a module-level ``if __name__ == "__main__":`` block. Iterative: no recursion limit."""
    stack: list[tuple[ast.AST, ast.AST | None, bool]] = [(tree, None, False)]
    while stack:
        node, func, main = stack.pop()
        for child in reversed(list(ast.iter_child_nodes(node))):
            if isinstance(node, ast.If) and func is None and not main and is_main_guard(node.test):
                inside = child in node.body
            else:
                inside = main
            yield child, func, inside
            stack.append((child, child if isinstance(child, FUNCTIONS) else func, inside))


def body_without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring Constant nodes of a module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and \
                len(body_without_docstring(node.body)) < len(node.body):
            out.add(id(node.body[0].value))
    return out


NOT_CONSTANT = object()
"""What ``constant`` returns for an expression whose value is not known without running it."""


def constant(node: ast.AST | None, depth: int = 0) -> object:
    """The value of a constant expression (``True``, ``not 0``, ``1 == 1``, ``[]``), else ``NOT_CONSTANT``."""
    if node is None or depth > 20:
        return NOT_CONSTANT
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = constant(node.operand, depth + 1)
        return NOT_CONSTANT if v is NOT_CONSTANT else not v
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
            isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is)):
        a, b = constant(node.left, depth + 1), constant(node.comparators[0], depth + 1)
        if a is NOT_CONSTANT or b is NOT_CONSTANT:
            return NOT_CONSTANT
        return (a == b) if isinstance(node.ops[0], (ast.Eq, ast.Is)) else (a != b)
    if isinstance(node, ast.BoolOp):
        values = [constant(v, depth + 1) for v in node.values]
        if NOT_CONSTANT in values:
            return NOT_CONSTANT
        return all(values) if isinstance(node.op, ast.And) else any(values)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_CONSTANT


def finding(kind: str, severity: str, message: str, path: str = "", node: ast.AST | None = None) -> Finding:
    return Finding(kind, severity, message, path, getattr(node, "lineno", 0) if node is not None else 0)
