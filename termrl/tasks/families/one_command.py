"""one-command: a one-line instruction that one shell command solves, for the CPU quickstart.

Small on purpose: a model trained from scratch in minutes on two cores can learn it, and
learning it still means reading the instruction and copying what it names into the command.
Three kinds:

- ``file``: create ``DIR/NAME.txt`` holding ``WORD`` (``mkdir -p DIR && echo WORD > DIR/NAME.txt``);
- ``empty``: create the empty file ``DIR/NAME.EXT`` (``mkdir -p DIR && touch DIR/NAME.EXT``);
- ``upper``: write ``WORD`` in upper case to ``NAME.EXT`` (``echo WORD | tr a-z A-Z > NAME.EXT``).

Directories, names, words and extensions come from disjoint word lists. Every combination of
a kind and its values is a task; a fixed hash of the combination puts one in five of them in
the held-out split, so **a held-out task is a combination never generated for any train
seed**: the model has seen each word in training, never that instruction. The family has no
held-out *templates* (``heldout_templates`` is empty): the three kinds are its whole content, and
a model built from nothing learns them, so its held-out split is new combinations of seen kinds
and words, not new content (``termrl tasks overlap`` reports it as near-duplicate). The
``heldout-v1`` range holds the same tasks as ``heldout``, seed for seed. The seed picks the
kind (``seed % 3``) and indexes a fixed shuffle of that kind's combinations in its split, so
consecutive seeds are distinct tasks (the train split holds about 3,700 combinations, the
held-out one about 900; seeds past a kind's count wrap around).

The workspace starts empty. The hidden tests (two per task, so graded rewards have partial
credit) check that the file exists and that it holds exactly the value asked for (surrounding
whitespace ignored). Every kind ends in a regular file, so a snapshot of the workspace's
files (what ``termrl.verify.pool.VerifierPool`` verifies) is all the tests need.

Levels: level 1 drops the directory: one file in the current directory named by two values
(``echo WORD > NAME.txt``, ``touch NAME.EXT``, and ``upper`` names its tool, ``tr a-z A-Z``);
its combinations are its own, split by the same hash (about 470 train, 110 held out). Level 3
chains a second step into the one line: ``file`` writes two lines into ``DIR/SUB/NAME.txt``,
``empty`` creates two files, one in a nested directory, each checked to be 0 bytes, and
``upper`` reverses the word too (``rev``) and writes it into a directory. A level-3 task is
the seed's level-2 combination plus values drawn for the added step, so a held-out level-3
task is built on a combination no train seed has at level 2 or 3. The workspace stays empty
and the answer one command at every level, so the quickstart can use any of them.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from termrl.protocols import Limits

from ._common import hidden_test_source
from .base import Family, files, split_index, split_of

DIRS = ["data", "docs", "logs", "notes", "out", "src", "build", "cache", "reports", "backup",
        "config", "tmp"]
NAMES = ["alpha", "atlas", "birch", "cedar", "delta", "ember", "fern", "harbor", "iris", "kite",
         "maple", "nova", "orbit", "pine", "quartz", "river"]
WORDS = ["red", "blue", "green", "gold", "silver", "black", "white", "pink", "amber", "violet",
         "olive", "coral", "ivory", "azure", "teal", "plum"]
EXTS = ["txt", "log", "md", "csv"]
KINDS = ("file", "empty", "upper")
HELDOUT_SHARE = 5
"""One combination in this many is held out."""

TEST_BODY = r'''
from pathlib import Path

import pytest

PATH = Path.cwd() / CONFIG["path"]


@pytest.mark.core
def test_file_exists():
    assert PATH.is_file(), f"{CONFIG['path']} is missing"


@pytest.mark.core
def test_file_holds_the_value():
    text = PATH.read_text(errors="replace").strip() if PATH.is_file() else None
    assert text == CONFIG["expected"], f"{CONFIG['path']} holds {text!r}, expected {CONFIG['expected']!r}"
'''

EMPTY_FILES_BODY = r'''
from pathlib import Path

import pytest


def check_empty(name):
    path = Path.cwd() / name
    assert path.is_file(), f"{name} is missing"
    size = path.stat().st_size
    assert size == 0, f"{name} holds {size} bytes, expected an empty file"


@pytest.mark.core
def test_first_file_is_empty():
    check_empty(CONFIG["paths"][0])


@pytest.mark.core
def test_second_file_is_empty():
    check_empty(CONFIG["paths"][1])
'''
"""Level 3's ``empty`` kind: two files, each exactly 0 bytes (a newline is not empty)."""


@dataclass(frozen=True)
class Rendered:
    """A combination as a task's text."""

    instruction: str
    """The one-line instruction."""
    command: str
    """The reference command."""
    config: dict
    """The hidden tests' ``CONFIG``."""
    body: str = TEST_BODY
    """The hidden tests after ``CONFIG``."""


def combinations(kind: str, level: int = 2) -> list[tuple]:
    """Every task of ``kind`` at ``level`` (1 or 2; level 3 extends level 2's) as ``(kind, *values)``."""
    if level == 1:
        if kind == "file":
            return [("file", n, w) for n in NAMES for w in WORDS]
        if kind == "empty":
            return [("empty", n, e) for n in NAMES for e in EXTS]
        return [("upper", w, n) for w in WORDS for n in NAMES]
    if kind == "file":
        return [("file", d, n, w) for d in DIRS for n in NAMES for w in WORDS]
    if kind == "empty":
        return [("empty", d, n, e) for d in DIRS for n in NAMES for e in EXTS]
    return [("upper", w, n, e) for w in WORDS for n in NAMES for e in EXTS]


def held_out(combo: tuple) -> bool:
    """Whether ``combo`` belongs to the held-out split (a fixed hash, not a random draw)."""
    return zlib.crc32(repr(combo).encode()) % HELDOUT_SHARE == 0


@lru_cache(maxsize=16)
def split_combinations(kind: str, split: str, level: int = 2) -> tuple[tuple, ...]:
    """The combinations of ``kind`` at ``level`` (1 or 2) in ``split`` (train or heldout), in a
    fixed shuffled order."""
    combos = [c for c in combinations(kind, level) if held_out(c) == (split != "train")]
    random.Random(f"one-command:{kind}" if level == 2 else f"one-command@{level}:{kind}").shuffle(combos)
    return tuple(combos)


def combination(seed: int, level: int = 2) -> tuple:
    """The combination ``seed``'s task is built from. Level 3: the seed's level-2 combination
    plus the values of its added step, drawn by a generator of the seed."""
    split, index = split_of(seed), split_index(seed)
    combos = split_combinations(KINDS[index % len(KINDS)], "train" if split == "train" else "heldout", min(level, 2))
    combo = combos[(index // len(KINDS)) % len(combos)]
    return combo if level < 3 else combo + added_step(combo, random.Random(f"one-command@3:{seed}"))


def added_step(combo: tuple, rng: random.Random) -> tuple:
    """Level 3's extra values: ``file`` a subdirectory and a second word, ``empty`` a
    subdirectory and a second name, ``upper`` a directory."""
    kind = combo[0]
    if kind == "file":
        _, d, _, w = combo
        return other(rng, DIRS, d), other(rng, WORDS, w)
    if kind == "empty":
        _, d, n, _ = combo
        return other(rng, DIRS, d), other(rng, NAMES, n)
    return (rng.choice(DIRS),)


def other(rng: random.Random, pool: list[str], taken: str) -> str:
    """A value of ``pool`` other than ``taken``."""
    return rng.choice([v for v in pool if v != taken])


def render_flat(combo: tuple) -> Rendered:
    """Level 1: one file in the current directory."""
    kind = combo[0]
    if kind == "file":
        _, n, w = combo
        return Rendered(f"Create the file `{n}.txt` containing `{w}`.", f"echo {w} > {n}.txt",
                        {"kind": kind, "path": f"{n}.txt", "expected": w})
    if kind == "empty":
        _, n, e = combo
        return Rendered(f"Create the empty file `{n}.{e}`.", f"touch {n}.{e}",
                        {"kind": kind, "path": f"{n}.{e}", "expected": ""})
    _, w, n = combo
    return Rendered(f"Write `{w}` in upper case to `{n}.txt` (`tr a-z A-Z` upper-cases text).",
                    f"echo {w} | tr a-z A-Z > {n}.txt", {"kind": kind, "path": f"{n}.txt", "expected": w.upper()})


def render(combo: tuple) -> Rendered:
    """Level 2: the family as it always was."""
    kind = combo[0]
    if kind == "file":
        _, d, n, w = combo
        return Rendered(f"Create the file `{d}/{n}.txt` containing `{w}`.",
                        f"mkdir -p {d} && echo {w} > {d}/{n}.txt", {"kind": kind, "path": f"{d}/{n}.txt", "expected": w})
    if kind == "empty":
        _, d, n, e = combo
        return Rendered(f"Create the empty file `{d}/{n}.{e}`.", f"mkdir -p {d} && touch {d}/{n}.{e}",
                        {"kind": kind, "path": f"{d}/{n}.{e}", "expected": ""})
    _, w, n, e = combo
    return Rendered(f"Write `{w}` in upper case to `{n}.{e}`.", f"echo {w} | tr a-z A-Z > {n}.{e}",
                    {"kind": kind, "path": f"{n}.{e}", "expected": w.upper()})


def render_chained(combo: tuple) -> Rendered:
    """Level 3: two chained steps in one line."""
    kind = combo[0]
    if kind == "file":
        _, d, n, w, sub, w2 = combo
        path = f"{d}/{sub}/{n}.txt"
        return Rendered(f"Create the file `{path}` holding two lines: `{w}`, then `{w2}`.",
                        f"mkdir -p {d}/{sub} && echo {w} > {path} && echo {w2} >> {path}",
                        {"kind": kind, "path": path, "expected": f"{w}\n{w2}"})
    if kind == "empty":
        _, d, n, e, sub, n2 = combo
        paths = [f"{d}/{sub}/{n}.{e}", f"{d}/{n2}.{e}"]
        return Rendered(f"Create two empty files: `{paths[0]}` and `{paths[1]}`.",
                        f"mkdir -p {d}/{sub} && touch {paths[0]} {paths[1]}",
                        {"kind": kind, "paths": paths}, EMPTY_FILES_BODY)
    _, w, n, e, d = combo
    return Rendered(f"Write `{w}` reversed and in upper case to `{d}/{n}.{e}`.",
                    f"mkdir -p {d} && echo {w} | rev | tr a-z A-Z > {d}/{n}.{e}",
                    {"kind": kind, "path": f"{d}/{n}.{e}", "expected": w[::-1].upper()})


RENDER = {1: render_flat, 2: render, 3: render_chained}


class OneCommand(Family):
    name = "one-command"
    category = "shell"
    description = ("Create a file holding a word, an empty file, or a file holding a word in upper "
                   "case: one shell command copying the names and values the instruction gives.")
    difficulty = "easy"
    levels: ClassVar[dict[int, str]] = {
        1: "one file in the current directory (no mkdir), named by two values instead of three; "
           "the upper-case kind names its tool (tr a-z A-Z)",
        2: "the family as it always was: a file holding a word or an empty file in a directory, "
           "or a word upper-cased into a file",
        3: "two chained steps in one line: two lines into a file in a nested directory, two empty "
           "files checked to be 0 bytes, or a word reversed and upper-cased into a directory",
    }

    train_templates = KINDS

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        combo = combination(seed, level)
        task = RENDER[level](combo)
        return {
            "instruction": task.instruction,
            "workspace": {},
            "tests": files({"test_one_command.py": hidden_test_source(task.config, task.body)}),
            "solution": f"#!/bin/bash\nset -e\n{task.command}\n",
            "tags": ["shell", "copy", combo[0]],
            "template": combo[0],
            "limits": Limits(agent_timeout_sec=60, verifier_timeout_sec=60, max_steps=1),
        }


FAMILY = OneCommand()
