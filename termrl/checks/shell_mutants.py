"""Mutants of shell scripts, JavaScript and build files: the small bugs a task's tests should catch
where the reference solution is not Python or C.

Shell (``shell_mutants``), from a small lexer (no bash parser: comments, quoted text, command
substitutions and here-document bodies are never mutated, so a heredoc that writes a file of
another language stays whole):

- ``test``: inside ``[ ]``, ``[[ ]]`` and ``test``: ``-eq`` <-> ``-ne``, ``-lt`` <-> ``-le``,
  ``-gt`` <-> ``-ge``, ``-z`` <-> ``-n``, ``=``/``==`` <-> ``!=``, ``-a`` <-> ``-o``, and a
  file test (``-f``, ``-d``, ``-e``, ``-s``, ``-x``...) negated;
- ``arith``: inside ``$(( ))`` and ``(( ))``: ``+`` <-> ``-``, ``*`` <-> ``/``, ``<`` <-> ``<=``,
  ``>`` <-> ``>=``, ``==`` <-> ``!=``;
- ``boolean``: ``&&`` <-> ``||`` between commands;
- ``constant``: a word that is a whole integer n -> n + 1 (``head -n 15``, ``exit 1``);
- ``redirect``: ``>>`` -> ``>`` to a file (not ``/dev/null``; ``>`` -> ``>>`` is the same to a
  new file);
- ``option``: an option word (``-l``, ``-cs``) left out where no argument of its follows, except
  for commands whose options say how rather than what (``QUIET_OPTIONS``: ``mkdir -p``, ``git``);
- ``pipe``: one stage of a pipeline left out;
- ``remove``: a simple command on its own line -> ``:``.

JavaScript (``js_mutants``) gets C's operators (``termrl.checks.mutants.c_mutants``) from the
same kind of lexer with JavaScript's tokens: template literals and regular expression literals
are skipped, ``===`` <-> ``!==`` joins the comparisons, every ``*`` is a product, and ``return X;``
becomes ``return undefined;``.

Build files (``build_mutants``): a Makefile's rule loses one prerequisite or one recipe line; a
CMakeLists.txt loses one command or one argument of a target command. ``language(path, data)``
tells which of all of termrl's mutators a file takes, by name or by its ``#!`` line, and
``mutants_for(path, source)`` makes them.

Every mutant differs from its source by one edit; ``termrl.checks.strength`` drops those that do
not parse (``bash -n``, ``node --check``) before verifying any.

>>> [m.operator for m in shell_mutants('if [ "$n" -gt 3 ]; then\\n  wc -l < in.txt >> out.txt\\nfi\\n')]
['constant', 'test', 'option', 'redirect', 'remove']
>>> print(shell_mutants("sort data | uniq -c | head -n 5\\n")[0].source, end="")
sort data | uniq -c | head -n 6
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from termrl.checks.mutants import Mutant, c_mutants, clike_mutants, mutants

TEST_SWAPS = {"-eq": "-ne", "-ne": "-eq", "-lt": "-le", "-le": "-lt", "-gt": "-ge", "-ge": "-gt", "-z": "-n",
              "-n": "-z", "=": "!=", "==": "!=", "!=": "==", "-a": "-o", "-o": "-a"}
FILE_TESTS = frozenset("-e -f -d -s -r -w -x -L -h -p -S".split())
ARITH_SWAPS = {"+": "-", "-": "+", "*": "/", "/": "*", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=",
               "!=": "=="}
KEYWORDS = frozenset("if then else elif fi for while until do done case esac in function select time { } ! "
                     "[[ ]] return break continue exit local declare export readonly set shift".split())
"""Words that start or end a compound command, or whose removal is no plain bug (``set -e``)."""
SOLUTION = "<solution>"
"""The path a mutant of the reference's own script is reported under (its survivors, their diffs)."""
QUIET_OPTIONS = frozenset(["git", "set", "mkdir", "rm", "cp", "mv", "ln", "install", "read", "local", "declare",
                           "export", "readonly", "ulimit", "trap", "shopt", "cd", "chmod", "chown", "touch", "tar"])
"""Commands whose options are mostly about how, not what (``mkdir -p``, ``git commit -q``): their
options are not left out (an equivalent mutant only lowers a score)."""
_REDIRECT = re.compile(r"[0-9]*>>?|<|&>|<<<|[0-9]*>&[0-9-]")
_HEREDOC = re.compile(r"(?<!<)<<-?(?!<)\s*(['\"]?)([A-Za-z_][\w.-]*)\1")  # not a <<< here-string


def shell_mutants(source: str) -> list[Mutant]:
    """The mutants of a shell script (see the module's docstring), in source order."""
    found: list[Mutant] = []
    offset = 0
    lines = source.splitlines(True)
    i = 0
    while i < len(lines):
        line = lines[i]
        logical = line
        while logical.rstrip("\n").endswith("\\") and i + 1 < len(lines):
            i += 1
            logical += lines[i]
        _mutate_line(source, logical, offset, found)
        offset += len(logical)
        i += 1
        code = _code_only(logical)
        for match in (m for m in _HEREDOC.finditer(logical) if code[m.start():m.start() + 2] == "<<"):
            # skip the body to its delimiter
            strip = logical[match.start():match.start() + 3] == "<<-"
            while i < len(lines):
                body = lines[i]
                offset += len(body)
                i += 1
                if (body.lstrip("\t") if strip else body).rstrip("\n") == match.group(2):
                    break
    found.sort(key=lambda m: (m.line, m.operator))
    return found


def _code_only(line: str) -> str:
    """``line`` with quoted text, command substitutions and its comment blanked (same length)."""
    out, i, depth, quote = [], 0, 0, ""
    while i < len(line):
        ch = line[i]
        if quote == '"' and line.startswith("$((", i):  # arithmetic is code, quoted or not
            end, level = i + 3, 2
            while end < len(line) and level:
                level += {"(": 1, ")": -1}.get(line[end], 0)
                end += 1
            out.append(line[i:end])
            i = end
            continue
        if quote:
            if ch == "\\" and quote == '"':
                out.append("  ")
                i += 2
                continue
            if ch == quote:
                quote = ""
                out.append(ch)
            else:
                out.append(" ")
        elif depth:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            out.append(" " if depth else ")")
        elif ch == "\\":
            out.append(" " + (" " if i + 1 < len(line) and line[i + 1] != "\n" else line[i + 1:i + 2]))
            i += 2
            continue
        elif ch in "'\"`":
            quote = ch
            out.append(ch)
        elif ch == "$" and line[i + 1:i + 2] == "(" and line[i + 2:i + 3] != "(":
            depth = 1
            out.append("$(")
            i += 2
            continue
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;|&("):
            out.append(" " * (len(line) - i - (1 if line.endswith("\n") else 0)))
            if line.endswith("\n"):
                out.append("\n")
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out)[:len(line)]


_WORD = re.compile(r"\$\(\(|\(\(|\)\)|&&|\|\||;;|>>|&>|[0-9]*>&[0-9-]|[0-9]*>|<<<|<<-?|<|\||;|&|\(|\)|[^\s|&;<>()]+")


def _mutate_line(source: str, line: str, offset: int, found: list[Mutant]) -> None:
    code = _code_only(line)
    tokens = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(code)]
    number = source.count("\n", 0, offset) + 1

    def add(operator: str, start: int, end: int, text: str) -> None:
        mutated = source[:offset + start] + text + source[offset + end:]
        if mutated != source:
            found.append(Mutant(operator, number, mutated))

    test = arith = 0  # inside [ ] / [[ ]] / test, inside $(( )) / (( ))
    stages, pipes, stage_start, redirected, command_start, command = [], [], 0, None, True, ""
    for k, (text, start, end) in enumerate(tokens):
        before = tokens[k - 1][0] if k else ""
        if text in ("$((", "(("):
            arith += 1
            continue
        if text == "))" and arith:
            arith -= 1
            continue
        if arith:
            for op, swap in ARITH_SWAPS.items():
                for m in re.finditer(re.escape(op), text):
                    neighbours = text[max(0, m.start() - 1):m.start()] + text[m.end():m.end() + 1]
                    if not set(neighbours) & set("<>=!+-*/"):
                        add("arith", start + m.start(), start + m.end(), swap)
            if text.isdigit():
                add("constant", start, end, str(int(text) + 1))
            continue
        if command_start and text in ("[", "[[", "test"):
            test = 1
        elif text in ("]", "]]") and test:
            test = 0
        elif test and text in TEST_SWAPS:
            add("test", start, end, TEST_SWAPS[text])
        elif test and text in FILE_TESTS:
            add("test", start, start, "! ")
        if text in ("&&", "||"):
            add("boolean", start, end, "||" if text == "&&" else "&&")
        elif text == ">>" and k + 1 < len(tokens) and tokens[k + 1][0] != "/dev/null":
            add("redirect", start, end, ">")  # not `>` -> `>>`: to a new file, the same
        elif not test and command and command not in QUIET_OPTIONS and k and re.fullmatch(r"-[A-Za-z]+", text) \
                and (k + 1 == len(tokens) or tokens[k + 1][0][0] in "-'\"$|;&<>"
                     or _REDIRECT.fullmatch(tokens[k + 1][0])):
            add("option", start - 1 if code[start - 1:start] == " " else start, end, "")
        elif text.isdigit() and before not in ("<", "<<<"):
            add("constant", start, end, str(int(text) + 1))
        if redirected is None and (text in (">", ">>", "<", "&>", "<<<") or re.fullmatch(r"[0-9]*>&?[0-9-]*", text)):
            redirected = start  # a stage's redirections stay when the stage is left out
        if text == "|":
            stages.append((stage_start, start if redirected is None else redirected))
            pipes.append(start)
            stage_start, redirected = end, None
        elif text in ("&&", "||", ";", "&", ";;", "(", ")") or k == len(tokens) - 1:
            last = end if k == len(tokens) - 1 and text not in (";", "&", ")") else start
            if stages:
                stages.append((stage_start, last if redirected is None else redirected))
                for n, (a, b) in enumerate(stages):  # a stage left out, with the pipe before it (after the first's)
                    if n:
                        add("pipe", pipes[n - 1], b, "")
                    else:
                        add("pipe", a, pipes[0] + 1, " ")
            stages, pipes, stage_start, redirected = [], [], end, None
        if command_start:
            command = "" if text in KEYWORDS or ("=" in text.split("/")[0] and not text.startswith("-")) else text
        command_start = text in ("&&", "||", ";", "|", "&", "(", "then", "do", "else", "{", "!", "if", "elif", "while",
                                 "until")
    first = tokens[0][0] if tokens else ""
    heredoc = {"<<", "<<-"} & {t[0] for t in tokens}  # left whole: its body would turn into commands
    if tokens and not heredoc and first not in KEYWORDS and not first.endswith(("()", "=")) \
            and "=" not in first.split("/")[0] \
            and not (len(tokens) > 1 and tokens[1][0] in ("(", "()")) and tokens[-1][0] not in ("{", "\\", "|"):
        end = len(line.rstrip("\n"))
        indent = len(line) - len(line.lstrip())
        add("remove", indent, end, ":")


JS_KEYWORDS = frozenset(
    "break case catch class const continue debugger default delete do else export extends finally for function "
    "if import in instanceof let new of return super switch this throw try typeof var void while with yield "
    "async await static get set".split())
_JS_TOKEN = re.compile(r"""
    (?P<skip>//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)
  | (?P<number>\b(?:0[xXbBoO][0-9a-fA-F_]+|\d[\d_]*)n?\b(?![.eE]))
  | (?P<word>[A-Za-z_$][\w$]*)
  | (?P<op>=>|\?\?=|\?\?|\?\.|\.\.\.|\+\+|--|===|!==|\*\*=?|<<=|>>>=|>>=|>>>|<<|>>|<=|>=|==|!=|&&=?|\|\|=?|
         [-+*/%&|^!=<>]=|[-+*/%<>!=;{}()\[\],.?:&|^~])
  | (?P<space>[^\S\n]+|\n)
""", re.VERBOSE | re.DOTALL)
_REGEX_AFTER = frozenset("( , = : [ ! & | ? { } ; + - * % < > ~ ^ return typeof case".split())
JS_COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "===": "!==", "!==": "==="}


def _js_tokens(source: str) -> list[tuple[str, str, int, int]]:
    """JavaScript's tokens (kind, text, start, end), strings, comments, template and regular
    expression literals left out (a ``/`` where an operand cannot end starts a regular expression)."""
    tokens, i = [], 0
    while i < len(source):
        previous = tokens[-1][1] if tokens else "("
        if source[i] == "/" and source[i + 1:i + 2] not in ("/", "*") and previous in _REGEX_AFTER:
            j, klass = i + 1, False
            while j < len(source) and source[j] != "\n":
                if source[j] == "\\":
                    j += 2
                    continue
                if source[j] == "[":
                    klass = True
                elif source[j] == "]":
                    klass = False
                elif source[j] == "/" and not klass:
                    break
                j += 1
            i = j + 1
            while i < len(source) and source[i].isalpha():
                i += 1
            tokens.append(("skip", "/re/", i, i))
            continue
        match = _JS_TOKEN.match(source, i)
        if match is None:
            i += 1
            continue
        kind = match.lastgroup
        if kind in ("number", "word", "op"):
            tokens.append((kind, match.group(), match.start(), match.end()))
        elif kind == "skip" and match.group()[0] in "\"'`":
            tokens.append(("string", match.group(), match.start(), match.end()))
        i = match.end()
    return tokens


def js_mutants(source: str) -> list[Mutant]:
    """The mutants of a JavaScript source (see the module's docstring), in source order.

    >>> [m.source for m in js_mutants("const ok = (a) => a === 2;")]
    ['const ok = (a) => a !== 2;', 'const ok = (a) => a === 3;']
    """
    return clike_mutants(source, _js_tokens(source), keywords=JS_KEYWORDS, compare=JS_COMPARE,
                         zero="return undefined;", products="all")


def build_mutants(source: str, kind: str) -> list[Mutant]:
    """Mutants of a Makefile (``kind`` "make") or a CMakeLists.txt ("cmake"): a rule's
    prerequisite or recipe line left out, or a CMake command or one of a target command's
    arguments left out.

    >>> [m.source for m in build_mutants("all: a b\\n\\tcc -o all a b\\n", "make")]
    ['all: b\\n\\tcc -o all a b\\n', 'all: a\\n\\tcc -o all a b\\n', 'all: a b\\n\\t@:\\n']
    """
    found: list[Mutant] = []
    lines = source.splitlines(True)
    for n, line in enumerate(lines):
        body = line.rstrip("\n")
        if not body.strip() or body.lstrip().startswith("#"):
            continue

        def add(operator: str, text: str, n: int = n) -> None:
            found.append(Mutant(operator, n + 1, "".join(lines[:n]) + text + "".join(lines[n + 1:])))

        if kind == "make":
            if line.startswith("\t"):
                add("remove", "\t@:\n")
                continue
            rule = re.match(r"^([^\s:=#][^:=#]*?):(?![=:])([^;#=]*)", body)
            if rule and not rule.group(1).startswith("."):
                words = list(re.finditer(r"[^\s|]+", rule.group(2)))
                for w in words:
                    start, end = rule.start(2) + w.start(), rule.start(2) + w.end()
                    rest = body[end:].lstrip(" \t")
                    add("remove", body[:start].rstrip(" \t") + (" " + rest if rest else "") + "\n")
        else:
            command = re.match(r"^(\s*)([A-Za-z_]\w*)\s*\((.*)\)\s*$", body)
            if not command:
                continue
            name = command.group(2).lower()
            if name not in ("project", "cmake_minimum_required", "if", "else", "elseif", "endif", "foreach",
                            "endforeach", "function", "endfunction", "macro", "endmacro"):
                add("remove", command.group(1) + "# " + command.group(2) + "(" + command.group(3) + ")\n")
            if name in ("add_executable", "add_library", "target_link_libraries", "target_sources",
                        "target_include_directories", "target_compile_definitions"):
                args = list(re.finditer(r'"[^"]*"|[^\s"]+', command.group(3)))
                for a in args[1:]:
                    if a.group().isupper():
                        continue  # STATIC, PRIVATE, PUBLIC: a keyword, not an argument
                    inner = command.group(3)[:a.start()].rstrip() + " " + command.group(3)[a.end():].lstrip()
                    add("remove", command.group(1) + command.group(2) + "(" + inner.strip() + ")\n")
    return found


def language(path: str, data: bytes) -> str | None:
    """Which mutator a file takes: python, c, shell, javascript, make, cmake; None for others.

    >>> language("csvjoin", b"#!/usr/bin/env python3\\nimport csv\\n"), language("notes.txt", b"hello")
    ('python', None)
    """
    name = PurePosixPath(path).name
    suffix = PurePosixPath(path).suffix
    by_suffix = {".py": "python", ".c": "c", ".h": "c", ".sh": "shell", ".bash": "shell", ".js": "javascript",
                 ".mjs": "javascript", ".cjs": "javascript", ".mk": "make", ".cmake": "cmake"}
    if suffix in by_suffix:
        return by_suffix[suffix]
    if name in ("Makefile", "makefile", "GNUmakefile"):
        return "make"
    if name == "CMakeLists.txt":
        return "cmake"
    if data.startswith(b"#!"):
        shebang = data.split(b"\n", 1)[0].decode("utf-8", "replace")
        words = shebang[2:].split()
        program = PurePosixPath(words[1] if words and words[0].endswith("/env") and len(words) > 1
                                else words[0] if words else "").name
        if program.startswith("python"):
            return "python"
        if program in ("node", "nodejs"):
            return "javascript"
        if program in ("sh", "bash", "dash", "ash", "ksh"):
            return "shell"
    return None


def mutants_for(path: str, source: str, kind: str | None = None) -> list[Mutant]:
    """The mutants of the file at ``path`` in its language (``language``; ``kind`` when known)."""
    kind = kind or language(path, source.encode())
    if kind == "python":
        return mutants(source)
    if kind == "c":
        return c_mutants(source)
    if kind == "shell":
        return shell_mutants(source)
    if kind == "javascript":
        return js_mutants(source)
    if kind in ("make", "cmake"):
        return build_mutants(source, kind)
    return []


__all__ = ["SOLUTION", "build_mutants", "js_mutants", "language", "mutants_for", "shell_mutants"]
