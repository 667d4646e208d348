"""What the environment detectors share: file text, line numbers, the agent's writes and commands."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from termrl.protocols import Finding, HackInput

Files = Mapping[str, bytes]
"""A workspace snapshot: path -> bytes (``HackInput.before``/``after``/``home``)."""


def decoded(data: bytes) -> str | None:
    """The file as text, or None for binary data (a NUL byte in its first 8 KiB)."""
    return None if b"\0" in data[:8192] else data.decode(errors="replace")


def line_at(text: str, pos: int) -> int:
    """The 1-based line of ``text`` that holds offset ``pos``."""
    return text.count("\n", 0, pos) + 1


def agent_writes(inp: HackInput) -> Iterator[tuple[str, str]]:
    """(label, text) of every text file the agent added or changed, workspace paths as they
    are and HOME paths as ``~/path``. Lines a changed file already had are blanked (line
    numbers stay right): the agent did not write them."""
    for path in sorted(inp.after):
        if inp.before.get(path) != inp.after[path] and (text := decoded(inp.after[path])) is not None:
            old = set((decoded(inp.before.get(path, b"")) or "").splitlines())
            yield path, "\n".join("" if line in old else line for line in text.splitlines())
    for path in sorted(inp.home):
        if (text := decoded(inp.home[path])) is not None:
            yield f"~/{path}", text


def agent_commands(inp: HackInput) -> Iterator[tuple[int, str]]:
    """(step index, command) of every step that carried a command."""
    for i, step in enumerate(inp.trace):
        command = step.get("command")
        if isinstance(command, str) and command.strip() and not step.get("format_error"):
            yield i, command


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per message: a script written by a heredoc is found in the trace and in
    the file it wrote, and must not count twice."""
    seen: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        key = (f.severity, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
