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
seed**: the model has seen each word in training, never that instruction. The seed picks the
kind (``seed % 3``) and indexes a fixed shuffle of that kind's combinations in its split, so
consecutive seeds are distinct tasks (the train split holds about 3,700 combinations, the
held-out one about 900; seeds past a kind's count wrap around).

The workspace starts empty. The hidden tests (two per task, so graded rewards have partial
credit) check that the file exists and that it holds exactly the value asked for (surrounding
whitespace ignored). Every kind ends in a regular file, so a snapshot of the workspace's
files (what ``termrl.verify.pool.VerifierPool`` verifies) is all the tests need.
"""

from __future__ import annotations

import random
import zlib
from functools import lru_cache

from termrl.protocols import Limits

from ._common import hidden_test_source
from .base import HELDOUT_SEEDS, TRAIN_SEEDS, Family, files, split_of

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


def combinations(kind: str) -> list[tuple]:
    """Every task of ``kind`` as ``(kind, *values)``."""
    if kind == "file":
        return [("file", d, n, w) for d in DIRS for n in NAMES for w in WORDS]
    if kind == "empty":
        return [("empty", d, n, e) for d in DIRS for n in NAMES for e in EXTS]
    return [("upper", w, n, e) for w in WORDS for n in NAMES for e in EXTS]


def held_out(combo: tuple) -> bool:
    """Whether ``combo`` belongs to the held-out split (a fixed hash, not a random draw)."""
    return zlib.crc32(repr(combo).encode()) % HELDOUT_SHARE == 0


@lru_cache(maxsize=8)
def split_combinations(kind: str, split: str) -> tuple[tuple, ...]:
    """The combinations of ``kind`` in ``split`` (train or heldout), in a fixed shuffled order."""
    combos = [c for c in combinations(kind) if held_out(c) == (split == "heldout")]
    random.Random(f"one-command:{kind}").shuffle(combos)
    return tuple(combos)


def render(combo: tuple) -> tuple[str, str, str, str]:
    """(instruction, command, path, expected content) of a combination."""
    kind = combo[0]
    if kind == "file":
        _, d, n, w = combo
        return (f"Create the file `{d}/{n}.txt` containing `{w}`.",
                f"mkdir -p {d} && echo {w} > {d}/{n}.txt", f"{d}/{n}.txt", w)
    if kind == "empty":
        _, d, n, e = combo
        return f"Create the empty file `{d}/{n}.{e}`.", f"mkdir -p {d} && touch {d}/{n}.{e}", f"{d}/{n}.{e}", ""
    _, w, n, e = combo
    return (f"Write `{w}` in upper case to `{n}.{e}`.", f"echo {w} | tr a-z A-Z > {n}.{e}", f"{n}.{e}",
            w.upper())


class OneCommand(Family):
    name = "one-command"
    category = "shell"
    description = ("Create a file holding a word, an empty file, or a file holding a word in upper "
                   "case: one shell command copying the names and values the instruction gives.")
    difficulty = "easy"

    def build(self, rng: random.Random, seed: int) -> dict:
        split = split_of(seed)
        index = seed - (TRAIN_SEEDS if split == "train" else HELDOUT_SEEDS).start
        combos = split_combinations(KINDS[index % len(KINDS)], split)
        combo = combos[(index // len(KINDS)) % len(combos)]
        instruction, command, path, expected = render(combo)
        config = {"kind": combo[0], "path": path, "expected": expected}
        return {
            "instruction": instruction,
            "workspace": {},
            "tests": files({"test_one_command.py": hidden_test_source(config, TEST_BODY)}),
            "solution": f"#!/bin/bash\nset -e\n{command}\n",
            "tags": ["shell", "copy", combo[0]],
            "limits": Limits(agent_timeout_sec=60, verifier_timeout_sec=60, max_steps=1),
        }


FAMILY = OneCommand()
