"""The house drawn from its imports: no import circle, and no import from a lower layer to a higher one.

Every import counts, at module level or inside a function. The one circle allowed is the
deliberate one of the ``debug-import-cycle`` task's workspace, which an agent is asked to break.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "termrl"
BUILTIN = PACKAGE / "tasks" / "builtin"

LAYERS = [
    ("termrl.protocols", "termrl.actions", "termrl.provenance"),
    ("termrl.sandbox",),
    ("termrl.tasks",),
    ("termrl.verify",),
    ("termrl.hacks",),
    ("termrl.reward",),
    ("termrl.episode",),
    ("termrl.policies",),
    ("termrl.reward.judge",),
    ("termrl.env",),
    ("termrl.rollout", "termrl.distributed"),
    ("termrl.reward.exports",),
    ("termrl.serve",),
    ("termrl.checks",),
    ("termrl.eval",),
    ("termrl.report",),
    ("termrl.training",),
    ("termrl.cli", "termrl.__main__", "termrl"),
]
"""Lowest first: a module may import its own layer's modules and any below, never one above.
The longest prefix names a module's layer: a reward spec scores an episode, so ``termrl.reward``
is below ``termrl.episode``, but a judge is built from a policy and the trainers' reward
functions play and score episodes (on every rank of a launched run), so ``termrl.reward.judge``
and ``termrl.reward.exports`` sit higher.
``termrl`` itself (the package's ``__init__``: the public API) is at the top with the CLI."""


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path, where: Path, skip: Path | None = None) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(where.rglob("*.py"))
            if skip is None or skip not in p.parents}


def imported(path: Path, name: str, known: dict[str, Path]) -> Iterator[str]:
    """The known modules ``path`` (module ``name``) imports, anywhere in it: ``from a.b import c``
    is ``a.b.c`` when that is a module, else ``a.b`` (a package's ``__init__`` counts: a module
    that takes names from its own package's ``__init__``, which imports it, is a circle);
    relative imports resolve against ``name``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def graph(root: Path, where: Path | None = None, skip: Path | None = None) -> dict[str, set[str]]:
    """Module -> the modules it imports, for the ``.py`` files under ``where`` (default ``root``),
    named from ``root``."""
    known = modules(root, where or root, skip)
    return {name: set(imported(path, name, known)) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def layer(name: str) -> int:
    best, depth = None, -1
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = level, prefix.count(".")
    assert best is not None, f"{name}: in no layer of tests/test_layers.py's LAYERS; add it there"
    return best


def test_the_circle_finder_finds_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_only_import_circle_is_the_fixture_s():
    package = graph(ROOT, PACKAGE, skip=BUILTIN)
    assert circles(package) == []
    in_tasks = {task.name: circles(graph(task / "workspace")) for task in sorted(BUILTIN.iterdir())
                if (task / "workspace").is_dir()}
    assert {name: found for name, found in in_tasks.items() if found} == {
        "debug-import-cycle": [["shop.models", "shop.pricing"]]}


def test_no_import_runs_up_the_layers():
    upward = sorted(f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
                    for a, targets in graph(ROOT, PACKAGE, skip=BUILTIN).items() if a.startswith("termrl")
                    for b in targets if b.startswith("termrl") and layer(b) > layer(a))
    assert upward == []


def test_the_longest_prefix_names_the_layer():
    assert layer("termrl.reward.spec") < layer("termrl.episode") < layer("termrl.reward.judge")
    assert layer("termrl.checks.audit") == layer("termrl.checks") > layer("termrl.rollout.chat")
    with pytest.raises(AssertionError, match="in no layer"):
        layer("elsewhere.module")


HARNESS = PACKAGE / "verify" / "harness"
"""Exempt from the rule below: the in-sandbox grading harness runs as top-level scripts in every
verification sandbox; it imports what it needs when it needs it, because its start-up is paid on
every verification and some imports must happen before a planted file can shadow them."""


def function_local_imports(path: Path) -> Iterator[ast.stmt]:
    def visit(node: ast.AST, in_function: bool) -> Iterator[ast.stmt]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                yield child
            yield from visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from visit(ast.parse(path.read_bytes()), False)


def test_function_local_imports_say_they_are_heavy_or_optional():
    """An import inside a function is there only because it is heavy (torch, TRL, pyarrow: kept off
    ``import termrl`` and ``termrl --help``) or optional (ray), and its line says which."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if BUILTIN in path.parents or HARNESS in path.parents:
            continue
        lines = path.read_text().splitlines()
        for node in function_local_imports(path):
            comment = lines[node.lineno - 1].partition("#")[2]
            if not any(word in comment for word in ("heavy", "optional")):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == []

