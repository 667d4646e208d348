"""Docs that run: every fenced ``bash``/``sh``/``shell``/``console``/``python`` block of README.md
and docs/*.md is one test, and every relative link of the docs must resolve.

A block runs from the repository root with the virtualenv's ``bin`` first on ``PATH`` and
``TMPDIR`` a fresh folder: python blocks with the virtualenv's python, bash blocks with
``bash -e``, a ``console`` block's ``$ `` lines one after another. An HTML comment on the line
before the opening fence (a blank line may come between) changes that:
``<!-- docs-test: illustration -->`` says the block is not run (a diagram, an output sample), and
``<!-- docs-test: MARK -->`` gives its test a registered mark (``slow``, ``realmodel``,
``cluster``...), which keeps it out of the default tier. A block tagged anything else (``text``,
``toml``, ``json``) is not a command and is not collected.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [*DOCS, ROOT / "results" / "README.md", *sorted((ROOT / "results").glob("*/README.md"))]
RUNNABLE = {"bash": "bash", "sh": "bash", "shell": "bash", "console": "console", "python": "python"}
ILLUSTRATION = "illustration"
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*([\w-]+)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
NESTED = "TERMRL_DOCS_TEST"
"""Set in every block's environment: a block that runs pytest must not run the docs' blocks again."""


@dataclass(frozen=True)
class Block:
    file: Path
    line: int  # of the opening fence, 1-based
    lang: str  # bash, console or python
    code: str
    marker: str | None

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(ROOT).as_posix()}:{self.line}"


def fenced_blocks(text: str) -> list[tuple[int, str, str, str | None]]:
    """(line of the opening fence, info string's first word, code, docs-test marker) of every
    fenced code block of ``text``, in order."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):  # ```` ```bash ```` inline is no fence
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        tag = (m["info"].split() or [""])[0].lower()
        start, body, i = i, [], i + 1
        while i < len(lines):
            closing = lines[i].strip()
            if closing.startswith(fence[0] * len(fence)) and not closing.strip(fence[0]):
                break
            body.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i].lstrip() if indent else lines[i])
            i += 1
        i += 1
        found.append((start + 1, tag, "\n".join(body) + "\n", _marker(lines, start)))
    return found


def _marker(lines: list[str], fence_index: int) -> str | None:
    """The docs-test marker on the line before the fence, or before a blank line before it."""
    j = fence_index - 1
    if j >= 0 and not lines[j].strip():
        j -= 1
    m = MARKER.match(lines[j]) if j >= 0 else None
    return m[1] if m else None


def collect() -> list[Block]:
    blocks = []
    for file in DOCS:
        for line, tag, code, marker in fenced_blocks(file.read_text(encoding="utf-8")):
            if tag in RUNNABLE:
                blocks.append(Block(file, line, RUNNABLE[tag], code, marker))
    return blocks


def registered_marks() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {m.split(":")[0].strip() for m in config["tool"]["pytest"]["ini_options"]["markers"]}


def _param(block: Block):
    marks = []
    if block.marker == ILLUSTRATION:
        marks.append(pytest.mark.skip(reason="an illustration, not run"))
    elif block.marker:
        marks.append(getattr(pytest.mark, block.marker))
    return pytest.param(block, id=block.id, marks=marks)


BLOCKS = collect()


def console_commands(code: str) -> str:
    """The ``$ `` lines of a console block (with their ``\\`` continuations) as one script."""
    commands, continuing = [], False
    for line in code.splitlines():
        if continuing:
            commands.append(line)
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continuing = line.rstrip().endswith("\\")
    return "\n".join(commands) + "\n"


def run_block(block: Block, tmp: Path) -> subprocess.CompletedProcess:
    venv_bin = ROOT / ".venv" / "bin"
    python = venv_bin / "python" if (venv_bin / "python").exists() else Path(sys.executable)
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}", "TMPDIR": str(tmp),
           NESTED: "1", "PYTHONUNBUFFERED": "1"}
    if block.lang == "python":
        script, command = tmp / "block.py", [str(python)]
        script.write_text(block.code, encoding="utf-8")
    else:
        script, command = tmp / "block.sh", ["bash", "-e"]
        script.write_text(console_commands(block.code) if block.lang == "console" else block.code, encoding="utf-8")
    timeout = 3600 if block.marker else 600
    return subprocess.run([*command, str(script)], check=False, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout)


@pytest.fixture
def block_tmp():
    """A fresh TMPDIR for one block: not under pytest's private temp folder, since the
    sandboxes a block's commands start make their folders in it and run as another user."""
    path = Path(tempfile.mkdtemp(prefix="termrl-docs-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(bool(os.environ.get(NESTED)), reason="run from a docs block: the blocks are not run again")
@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_block_runs(block: Block, block_tmp):
    result = run_block(block, block_tmp)
    if result.returncode != 0:
        pytest.fail(f"{block.id}: the {block.lang} block exited {result.returncode}\n"
                    f"--- block ---\n{block.code}--- output (last 8,000 characters) ---\n"
                    f"{result.stdout[-8000:]}", pytrace=False)


def test_docs_have_blocks_and_known_markers():
    assert BLOCKS, "no runnable block found in README.md and docs/*.md"
    known = registered_marks() | {ILLUSTRATION}
    unknown = [f"{b.id}: docs-test: {b.marker}" for b in BLOCKS if b.marker and b.marker not in known]
    assert not unknown, f"markers that are neither 'illustration' nor a mark in pyproject.toml: {unknown}"


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every markdown link or image outside code whose target is a path."""
    lines = text.splitlines()
    in_code = [False] * len(lines)
    for line, _tag, code, _marker in fenced_blocks(text):
        for k in range(line - 1, line + code.count("\n") + 1):
            if k < len(lines):
                in_code[k] = True
    found = []
    for number, line in enumerate(lines, 1):
        if in_code[number - 1]:
            continue
        for m in LINK.finditer(INLINE_CODE.sub("", line)):
            target = m[1]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
                continue  # http:, mailto:, an anchor in the same page
            found.append((number, target))
    return found


@pytest.mark.parametrize("file", LINKED, ids=[f.relative_to(ROOT).as_posix() for f in LINKED])
def test_relative_links_resolve(file: Path):
    broken = []
    for line, target in relative_links(file.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if path and not (file.parent / path).exists():
            broken.append(f"{file.relative_to(ROOT)}:{line}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_the_block_reader_reads_markers_fences_and_console_lines():
    text = ("Intro\n\n<!-- docs-test: slow -->\n\n```bash\necho a\n```\n\n"
            "```` ```bash ```` inline\n\n<!-- docs-test: illustration -->\n```text\ndiagram\n```\n"
            "- item\n\n  ```python\n  for i in x:\n      print(i)\n  ```\n```python\nif x:\n    y()\n```\n")
    blocks = fenced_blocks(text)
    assert [(b[0], b[1], b[3]) for b in blocks] == [(5, "bash", "slow"), (12, "text", "illustration"),
                                                    (17, "python", None), (21, "python", None)]
    assert blocks[2][2] == "for i in x:\n    print(i)\n"
    assert blocks[3][2] == "if x:\n    y()\n"
    assert console_commands("$ echo a \\\n  b\nout\n$ ls\n") == "echo a \\\n  b\nls\n"
    assert relative_links("[a](docs/x.md#y) `[b](no.md)` [c](https://x) [d](#z) ![e](i.png)") == [
        (1, "docs/x.md#y"), (1, "i.png")]
