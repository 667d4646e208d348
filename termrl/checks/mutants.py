"""Mutants of a Python source: small, plausible bugs a task's tests should catch.

A small AST mutator (not mutmut or cosmic-ray: both run a project's own test command against
files in place, where termrl needs mutants as plain files to verify in its sandboxes, through
the same verifier the rewards use). Each operator rewrites the source span of one node, so a
mutant differs from the original by one small edit and its diff reads like a bug:

- ``compare``: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``in`` <-> ``not in``,
  ``is`` <-> ``is not`` (boundary shifts included);
- ``arith``: ``+`` <-> ``-``, ``*`` -> ``/``, ``/`` -> ``*``, ``//`` -> ``/``, ``%`` -> ``//``;
- ``boolean``: ``and`` <-> ``or``; ``not x`` -> ``x``;
- ``constant``: an integer n -> n + 1, ``True`` <-> ``False``, a non-empty string -> ``""``;
- ``return``: ``return X`` -> ``return None``;
- ``remove``: a statement (assignment, call, ``raise``, ``continue``, ``break``) in a block of
  several -> ``pass``.

Docstrings and f-strings are never mutated. ``mutants(source)`` lists them in source order; every one
compiles.

C sources (``c_mutants``) get the same operators from a small lexer (no C parser: comments,
string and character literals and preprocessor lines are skipped; a ``+``, ``-`` or ``*`` is
binary only after an operand, so ``-1``, ``*p`` and ``int *p`` are left alone): ``compare``,
``arith`` (``+`` <-> ``-``, ``*`` <-> ``/``, ``%`` -> ``/``, only where ``*`` is surely a product),
``boolean`` (``&&`` <-> ``||``), ``constant`` (an integer literal n -> n + 1), ``return``
(``return X;`` -> ``return 0;``; not ``return NULL;``, which is the same) and ``remove`` (an
expression statement at the top of a block -> ``;``). The lexer sees no types, so a few are not C (``return 0;`` for a struct, the sum of two
pointers): ``termrl.checks.strength`` drops those with the host's C compiler before verifying any.
Shell scripts, JavaScript and build files: ``termrl.checks.shell_mutants``, whose
``mutants_for(path, source)`` picks the mutator by file name or ``#!`` line.

>>> [m.operator for m in mutants("def f(a, b):\\n    return a < b\\n")]
['compare', 'return']
>>> print(mutants("x = 1 + 2\\n")[0].source, end="")
x = 1 - 2
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass

COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
         ast.Mod: ast.FloorDiv}
REMOVABLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Continue, ast.Break)


@dataclass(frozen=True)
class Mutant:
    """One mutant: the whole mutated ``source``, the ``operator`` that made it, and where."""

    operator: str
    line: int
    source: str

    def diff(self, original: str, path: str = "solution.py") -> str:
        """The mutant as a unified diff against ``original``."""
        return "".join(difflib.unified_diff(original.splitlines(True), self.source.splitlines(True),
                                            f"a/{path}", f"b/{path}", n=1))


def mutants(source: str) -> list[Mutant]:
    """Every mutant of ``source`` that compiles, in source order; [] when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines(True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    raw = source.encode()
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str)}

    def span(node) -> tuple[int, int]:
        return offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset

    def replaced(node, text: str) -> str:
        start, end = span(node)
        return (raw[:start] + text.encode() + raw[end:]).decode()

    in_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)
                   for part in ast.walk(node)}  # before 3.12 an f-string's pieces may carry wrong positions
    found: list[Mutant] = []

    def add(operator: str, node, text: str) -> None:
        mutated = replaced(node, text)
        try:
            compile(mutated, "<mutant>", "exec")
        except (SyntaxError, ValueError):
            return
        if mutated != source:
            found.append(Mutant(operator, node.lineno, mutated))

    def swapped(node, **change):
        copy = ast.copy_location(type(node)(**{**{f: getattr(node, f) for f in node._fields}, **change}), node)
        return ast.unparse(copy)

    for node in ast.walk(tree):
        if id(node) in in_fstrings:
            continue
        if isinstance(node, ast.Compare) and type(node.ops[0]) in COMPARE:
            add("compare", node, swapped(node, ops=[COMPARE[type(node.ops[0])](), *node.ops[1:]]))
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITH:
            add("arith", node, swapped(node, op=ARITH[type(node.op)]()))
        elif isinstance(node, ast.BoolOp):
            add("boolean", node, swapped(node, op=ast.Or() if isinstance(node.op, ast.And) else ast.And()))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add("boolean", node, ast.unparse(node.operand) if not isinstance(node.operand, ast.BoolOp)
                else f"({ast.unparse(node.operand)})")
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            value = node.value
            if isinstance(value, bool):
                add("constant", node, repr(not value))
            elif isinstance(value, int):
                add("constant", node, repr(value + 1))
            elif isinstance(value, str) and value:
                add("constant", node, '""')
        elif isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            add("return", node, "return None")
        for body in _blocks(node):
            if len(body) > 1:
                for stmt in body:
                    if isinstance(stmt, REMOVABLE) and not (isinstance(stmt, ast.Expr) and id(stmt.value) in docstrings):
                        add("remove", stmt, "pass")
    found.sort(key=lambda m: (m.line, m.operator))
    return found


C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
    "while _Bool bool size_t ssize_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t "
    "FILE".split())
"""Words that are never an operand: keywords and common type names (``int *p`` is no product)."""
_C_TOKEN = re.compile(r"""
    (?P<skip>//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|^[ \t]*\#(?:\\\n|[^\n])*)
  | (?P<number>\b(?:0[xX][0-9a-fA-F]+|\d+)(?:[uUlL]*)\b(?![.eE]))
  | (?P<word>[A-Za-z_]\w*)
  | (?P<op>->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|[-+*/%<>!=;{}()\[\],.?:&|^~])
  | (?P<space>[^\S\n]+|\n)
""", re.VERBOSE | re.DOTALL | re.MULTILINE)
C_COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
C_ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "/"}


def c_mutants(source: str) -> list[Mutant]:
    """The mutants of a C source (see the module's docstring), in source order.

    >>> [(m.operator, m.source) for m in c_mutants("int f(int a) { return a < 2; }")][:2]
    [('compare', 'int f(int a) { return a <= 2; }'), ('constant', 'int f(int a) { return a < 3; }')]
    """
    tokens = [(m.lastgroup, m.group(), m.start(), m.end()) for m in _C_TOKEN.finditer(source)
              if m.lastgroup in ("number", "word", "op")]  # comments, literals and blanks left out
    return clike_mutants(source, tokens, keywords=C_KEYWORDS, compare=C_COMPARE, zero="return 0;", products="sure")


def clike_mutants(source: str, tokens: list[tuple[str, str, int, int]], keywords: frozenset[str],
                  compare: dict[str, str], zero: str, products: str) -> list[Mutant]:
    """The operators of ``c_mutants`` over ``tokens`` (kind, text, start, end) of a language with
    C's syntax: ``keywords`` are never operands, ``compare`` maps each comparison to its mutant,
    ``zero`` replaces a ``return X;``, and ``products`` says which ``*`` are mutated ("all", or
    "sure": only where an operand is a number or a bracket, as C's pointers need)."""
    found: list[Mutant] = []

    def add(operator: str, start: int, end: int, text: str) -> None:
        found.append(Mutant(operator, source.count("\n", 0, start) + 1, source[:start] + text + source[end:]))

    def operand_before(i: int) -> bool:
        if i == 0:
            return False
        kind, text = tokens[i - 1][0], tokens[i - 1][1]
        return kind in ("number", "string") or text in (")", "]") or (kind == "word" and text not in keywords)

    depth = 0  # parentheses: a statement is only ever removed outside them (not a for loop's parts)
    for i, (kind, text, start, end) in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if text == "(":
            depth += 1
        elif text == ")":
            depth = max(0, depth - 1)
        if kind == "op" and text in compare and operand_before(i):
            add("compare", start, end, compare[text])
        elif kind == "op" and text in ("&&", "||"):
            add("boolean", start, end, "||" if text == "&&" else "&&")
        elif kind == "op" and text in C_ARITH and operand_before(i):
            if text == "*" and products == "sure" and not (
                    tokens[i - 1][0] == "number" or tokens[i - 1][1] in (")", "]")
                    or (after is not None and after[0] == "number")):
                continue  # `a * b` or `node * n`: only a product that is surely one
            add("arith", start, end, C_ARITH[text])
        elif kind == "number" and not text.lower().startswith(("0x", "0b", "0o")) and text.rstrip("uUlLn").isdigit():
            digits = text.rstrip("uUlLn")
            add("constant", start, start + len(digits), str(int(digits) + 1))
        elif kind == "word" and text == "return" and after is not None and after[1] not in (";", "}"):
            close = next((j for j in range(i + 1, len(tokens)) if tokens[j][1] == ";"), None)
            if close is not None and not (close == i + 2 and (zero == f"return {after[1]};" or after[1] == "NULL")):
                add("return", start, tokens[close][3], zero)
        elif kind == "word" and depth == 0 and text not in keywords and (i == 0 or tokens[i - 1][1] in ";{}") \
                and after is not None and after[0] != "word" and after[1] not in (":", "*", ";"):
            close = next((j for j in range(i + 1, len(tokens)) if tokens[j][1] in (";", "{", "}")), None)
            if close is not None and tokens[close][1] == ";" and \
                    any(t[1] in ("=", "(", "++", "--") or t[1].endswith("=") for t in tokens[i + 1:close]):
                add("remove", start, tokens[close][3], ";")
    found.sort(key=lambda m: (m.line, m.operator))
    return found


C_SUFFIXES = (".c", ".h")


def _blocks(node) -> list[list[ast.stmt]]:
    return [getattr(node, name) for name in ("body", "orelse", "finalbody")
            if isinstance(getattr(node, name, None), list) and getattr(node, name)
            and isinstance(getattr(node, name)[0], ast.stmt)]


def spread(items: list, most: int) -> list:
    """At most ``most`` of ``items``, evenly spaced over them (all when there are no more).

    >>> spread(list(range(10)), 3)
    [0, 3, 6]
    """
    if len(items) <= most:
        return list(items)
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


__all__ = ["C_SUFFIXES", "Mutant", "c_mutants", "clike_mutants", "mutants", "spread"]
