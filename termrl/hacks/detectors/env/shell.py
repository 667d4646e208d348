"""Shell command lines split into simple commands: words, redirections, heredocs, what prints."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
_FD_REDIRECT = re.compile(r"(?<![\w$@])([0-9])(?=>)")
_OPENERS = {"{", "if", "for", "while", "until", "case", "select"}
_CLOSERS = {"}", "fi", "done", "esac"}
_PREFIX_WORDS = {"then", "do", "else", "elif", "!", "time"}
_TERMINAL = {"/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2", "1", "2", "-"}


@dataclass
class Simple:
    """One simple command of a shell command line, with where its standard output goes."""

    words: list[str] = field(default_factory=list)
    to_file: bool = False
    """Its stdout is redirected to a file (``/dev/null`` included)."""
    piped: bool = False
    """Its stdout feeds another command."""
    captured: bool = False
    """It runs inside ``$( )``: its output becomes text, not output."""
    heredoc: str | None = None
    group: tuple[int, int] | None = None
    """For a closing ``}``/``done``/``fi``/``)``: the commands of the compound it closes."""

    @property
    def prints(self) -> bool:
        """Its output reaches the terminal."""
        return not (self.to_file or self.piped or self.captured)


def split_heredocs(command: str) -> tuple[str, list[str]]:
    """The command without its here-document bodies, and the bodies in order.

    >>> split_heredocs("cat > a <<'EOF'\\nx\\nEOF\\nls")
    ("cat > a <<'EOF'\\nls", ['x'])
    """
    lines, out, bodies, i = command.split("\n"), [], [], 0
    while i < len(lines):
        out.append(lines[i])
        i += 1
        for dash, _, word in _HEREDOC.findall(out[-1]):
            body = []
            while i < len(lines) and (lines[i].lstrip("\t") if dash else lines[i]) != word:
                body.append(lines[i])
                i += 1
            i += 1
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


def simple_commands(command: str) -> list[Simple]:
    """The simple commands of a bash command line, approximately (no expansion).

    >>> [(c.words, c.prints) for c in simple_commands("echo hi > f; { echo a; } | wc -l")]
    [(['echo', 'hi'], False), (['echo', 'a'], False), (['wc', '-l'], True)]
    """
    text, bodies = split_heredocs(command)
    lex = shlex.shlex(_FD_REDIRECT.sub(r" @fd\1@", text), posix=True, punctuation_chars=";&|<>()\n")
    lex.whitespace, lex.whitespace_split = " \t\r", True
    try:
        tokens = list(lex)
    except ValueError:  # an unclosed quote: words only
        return [Simple(words=command.split())]
    cmds: list[Simple] = []
    stack: list[tuple[int, Simple | None]] = []  # open compounds: (first command, the command a $( ) is in)
    cur = Simple()

    def flush() -> Simple:
        if cur.words or cur.heredoc is not None:
            cur.words = [w[3] if re.fullmatch(r"@fd\d@", w) else w for w in cur.words]
            cmds.append(cur)
        return Simple()

    def close() -> Simple:
        """End the innermost compound. The command to go on with: the one a ``$( )`` sits
        in, else an empty one holding the compound's range, so that a redirection after
        ``}``/``done``/``)`` applies to every command inside."""
        inner = flush()
        start, outer = stack.pop() if stack else (len(cmds), None)
        if outer is not None:  # $( ): its output is text of the outer command
            for c in cmds[start:]:
                c.captured = True
            outer.words.append("$(...)")
            return outer
        inner.group = (start, len(cmds))
        return inner

    def apply(**flags: bool) -> None:
        for c in [cur] + (cmds[slice(*cur.group)] if cur.group else []):
            for name, value in flags.items():
                setattr(c, name, getattr(c, name) or value)

    it = iter(tokens)
    for tok in it:
        if tok and all(ch in ";&|<>()\n" for ch in tok):
            if tok in (">", ">>", ">|", "&>", "&>>", ">&"):
                fd = cur.words.pop()[3] if cur.words and re.fullmatch(r"@fd\d@", cur.words[-1]) else "1"
                target = next(it, "")
                if fd == "1" and (tok.startswith("&") or target not in _TERMINAL):
                    apply(to_file=True)
            elif tok in ("<", "<<", "<<<", "<>", "<&"):
                next(it, "")
                if tok == "<<":
                    cur.heredoc = bodies.pop(0) if bodies else ""
            elif tok in ("|", "|&"):
                apply(piped=True)
                cur = flush()
            elif set(tok) == {"("}:
                if cur.words and cur.words[-1].endswith("$"):
                    cur.words[-1] = cur.words[-1][:-1]
                    if not cur.words[-1]:
                        cur.words.pop()
                    stack.append((len(cmds), cur))
                    cur = Simple()
                else:
                    cur = flush()
                    stack.append((len(cmds), None))
            elif tok.startswith(")"):
                cur = close()
                if tok.strip(")"):
                    cur = flush()
            else:  # ; && || & newline, and runs of them
                cur = flush()
            continue
        if not cur.words and cur.group is None:
            if tok in _PREFIX_WORDS:
                continue
            if tok in _OPENERS:
                stack.append((len(cmds), None))
                if tok == "{":
                    continue
            elif tok in _CLOSERS:
                cur = close()
                continue
        if cur.group is None:
            cur.words.append(tok)
    flush()
    return cmds
