"""Resolve a SUITE argument into tasks.

SUITE is one of: ``builtin``; ``humaneval``; ``mbpp``; ``FAMILY:SEEDS`` (e.g.
``logs-count:0-99`` or ``logs-count:heldout:0-99``), at a difficulty level with
``FAMILY@LEVEL:SEEDS`` (``py-function@1:heldout:0-99``; levels 1-3, 2 the default); or a
directory holding one task or many task directories in any supported format.

Any suite but a family takes a slice after a colon, so a subset can be checked quickly:
positions in the suite's stable order (``humaneval:0-39``, ``builtin:0,5,9-12``,
``DIR:0-9``), a split (``builtin:test``; for MBPP also its own splits by task id,
``mbpp:test`` = tasks 11-510, ``mbpp:train``, ``mbpp:validation``, ``mbpp:prompt``), or a
difficulty (``builtin:easy``, ``medium``, ``hard``).

Suites join with ``+``: ``py-function:heldout:0-99+json-transform:heldout:0-99`` is both, in
that order (a task named twice is kept once).
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path

from termrl.protocols import DIFFICULTIES, SPLITS, Task
from termrl.tasks import families
from termrl.tasks.families.base import DEFAULT_LEVEL, LEVELS
from termrl.tasks.formats import TaskFormatError, codegen, load_task, looks_like_task

BUILTIN_DIR = Path(str(importlib.resources.files("termrl.tasks") / "builtin"))


class SuiteError(ValueError):
    """A SUITE argument that names nothing loadable."""


@dataclass
class Entry:
    """One task of a suite, or the reason it could not be loaded."""

    id: str
    task: Task | None = None
    error: str | None = None

    @property
    def category(self) -> str:
        return self.task.meta.category if self.task else "?"


def parse_seeds(text: str, family) -> list[int]:
    """``0-99``, ``5``, ``0-9,100-109``; prefix ``heldout:`` counts from the held-out range and
    ``heldout-v1:`` from the range held out before held-out templates existed (``family`` None:
    plain numbers, as slices of a suite use them)."""
    base = 0
    if family is not None and text.startswith("heldout:"):
        base, text = family.heldout_seeds.start, text[len("heldout:"):]
    elif family is not None and text.startswith("heldout-v1:"):
        base, text = family.heldout_v1_seeds.start, text[len("heldout-v1:"):]
    elif text.startswith("train:"):
        text = text[len("train:"):]
    seeds: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise SuiteError(f"seeds {text!r}: expected ranges like 0-99 or lists like 1,5,9") from None
        if b < a:
            raise SuiteError(f"seeds {part!r}: the range ends before it starts")
        seeds.extend(range(base + a, base + b + 1))
    return seeds


def builtin_entries() -> list[Entry]:
    return directory_entries(BUILTIN_DIR)


def directory_entries(root: Path) -> list[Entry]:
    root = Path(root)
    if not root.is_dir():
        raise SuiteError(f"{root}: no such directory")
    dirs = [root] if looks_like_task(root) else sorted(
        d for d in root.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))
    entries: list[Entry] = []
    seen: dict[str, Path] = {}
    for d in dirs:
        try:
            task = load_task(d)
        except TaskFormatError as e:
            entries.append(Entry(d.name, error=str(e)))
            continue
        if task.id in seen:
            entries.append(Entry(d.name, error=f"{d / 'task.toml'}: field 'id': {task.id!r} is already "
                                               f"the id of {seen[task.id]}; ids must be unique"))
            continue
        seen[task.id] = d
        entries.append(Entry(task.id, task=task))
    if not entries:
        raise SuiteError(f"{root}: holds no task directories")
    return entries


MBPP_SPLITS = {"prompt": range(1, 11), "test": range(11, 511), "validation": range(511, 601),
               "train": range(601, 975)}
"""MBPP's own splits, by task id (Austin et al., 2021; the sanitized set keeps the same ids)."""


def _whole(suite: str) -> list[Entry] | None:
    """The tasks of an unsliced suite other than a family, or None when ``suite`` names none."""
    if suite == "builtin":
        return builtin_entries()
    if suite in ("humaneval", "mbpp"):
        loader = codegen.load_humaneval if suite == "humaneval" else codegen.load_mbpp
        try:
            return [Entry(t.id, task=t) for t in loader()]
        except TaskFormatError as e:
            raise SuiteError(str(e)) from None
    if _is_dir(suite):
        return directory_entries(Path(suite))
    return None


def select(suite: str, entries: list[Entry], selector: str) -> list[Entry]:
    """The slice ``selector`` of ``suite``'s ``entries``: a split name, or positions (``0-39``,
    ``1,5,9-12``)."""
    if suite == "mbpp" and selector in MBPP_SPLITS:
        ids = {f"mbpp-{n}" for n in MBPP_SPLITS[selector]}
        return [e for e in entries if e.id in ids]
    if selector in SPLITS:
        return [e for e in entries if e.task is not None and e.task.meta.split == selector]
    if selector in DIFFICULTIES:
        return [e for e in entries if e.task is not None and e.task.meta.difficulty == selector]
    if not selector or not all(part.strip() for part in selector.split(",")):
        splits = ", ".join(SPLITS) + (", or mbpp's: " + ", ".join(MBPP_SPLITS) if suite == "mbpp" else "")
        raise SuiteError(f"suite {suite}:{selector}: after the colon give positions like 0-39 or 1,5,9-12, "
                         f"a split ({splits}) or a difficulty ({', '.join(DIFFICULTIES)})")
    try:
        positions = parse_seeds(selector, None)
    except SuiteError as e:
        raise SuiteError(f"suite {suite}:{selector}: {e}; or name a split ({', '.join(SPLITS)}) "
                         f"or a difficulty ({', '.join(DIFFICULTIES)})") from None
    outside = [p for p in positions if p >= len(entries)]
    if outside:
        raise SuiteError(f"suite {suite}:{selector}: position {max(outside)} is past the end; {suite} has "
                         f"{len(entries)} tasks (positions 0-{len(entries) - 1})")
    return [entries[p] for p in dict.fromkeys(positions)]


def resolve(suite: str) -> list[Entry]:
    """The tasks of SUITE, in a stable order (a slice keeps the order it names; a join, its parts')."""
    whole = _whole(suite)
    if whole is not None:
        return whole
    if "+" in suite:
        parts = [part.strip() for part in suite.split("+")]
        if not all(parts):
            raise SuiteError(f"suite {suite!r}: an empty part around '+'; join suites like "
                             f"py-function:0-9+builtin:easy")
        joined: dict[str, Entry] = {}
        for part in parts:
            for entry in _resolve_one(part):
                joined.setdefault(entry.id, entry)
        return list(joined.values())
    return _resolve_one(suite)


def _resolve_one(suite: str) -> list[Entry]:
    whole = _whole(suite)
    if whole is not None:
        return whole
    name, sep, seeds = suite.partition(":")
    found = _family_at(name) if sep else None
    if found:
        family, level = found
        tasks = [family.generate(s, level) for s in parse_seeds(seeds, family)]
        return [Entry(t.id, task=t) for t in tasks]
    base, sep, selector = suite.rpartition(":")
    whole = _whole(base) if sep else None
    if whole is not None:
        return select(base, whole, selector)
    if sep:
        try:
            families.get_family(name.partition("@")[0])
        except KeyError as e:
            raise SuiteError(f"{e.args[0]}; or slice a suite: humaneval:0-39, mbpp:test, builtin:0-9, "
                             f"DIR:0-9") from None
    known = ", ".join(families.FAMILIES)
    raise SuiteError(f"unknown suite {suite!r}: use builtin, humaneval, mbpp, FAMILY:SEEDS "
                     f"(families: {known}) or a directory of tasks, each optionally sliced "
                     f"(humaneval:0-39, mbpp:test)")


def find_task(ref: str) -> Task:
    """A task by id (builtin, humaneval-N, mbpp-N, FAMILY-SEED) or by directory path."""
    if _is_dir(ref):
        return load_task(Path(ref))
    if _is_dir(BUILTIN_DIR / ref):
        return load_task(BUILTIN_DIR / ref)
    for prefix in ("humaneval", "mbpp"):
        if ref.startswith(prefix + "-"):
            for entry in resolve(prefix):
                if entry.id == ref:
                    return entry.task
    name, _, seed = ref.rpartition("-")
    found = _family_at(name) if seed.isdigit() else None
    if found:
        return found[0].generate(int(seed), found[1])
    raise SuiteError(f"no task {ref!r}: give a built-in id (see `termrl tasks list`), humaneval-N, "
                     f"mbpp-N, FAMILY-SEED, FAMILY@LEVEL-SEED or a task directory")


def _is_dir(path) -> bool:
    """Whether ``path`` names a directory; a name the OS refuses (too long, say: a join of many
    suites) names none."""
    try:
        return Path(path).is_dir()
    except OSError:
        return False


def _family_at(name: str):
    """``(family, level)`` for ``FAMILY`` or ``FAMILY@LEVEL``; None when no family has the name.
    A bad level raises SuiteError naming the levels."""
    base, at, level = name.partition("@")
    if base not in families.FAMILIES:
        return None
    if not at:
        return families.FAMILIES[base], DEFAULT_LEVEL
    if not level.isdigit() or int(level) not in LEVELS:
        raise SuiteError(f"family {base}: level {level!r} does not exist; use {base}@1, {base}@2 or "
                         f"{base}@3 (1 easiest, {DEFAULT_LEVEL} the default)")
    return families.FAMILIES[base], int(level)


def listing(entries: list[Entry]) -> list[dict]:
    """One row per entry (``termrl tasks list --json``): id, category, difficulty, source, tags and
    the error of a task that cannot be loaded."""
    return [{"id": e.id, "category": e.category, "difficulty": e.task.meta.difficulty if e.task else "?",
             "source": e.task.meta.source if e.task else "?", "tags": list(e.task.meta.tags) if e.task else [],
             "error": e.error} for e in entries]


def describe(task: Task) -> dict:
    """What ``termrl tasks show --json`` says of ``task``: metadata, limits, instruction, and its
    files by name (hidden tests are listed, never shown)."""
    return {
        "id": task.id, "source": task.meta.source, "category": task.meta.category,
        "difficulty": task.meta.difficulty, "family": task.meta.family, "split": task.meta.split,
        "tags": list(task.meta.tags), "workdir": task.workdir,
        "limits": vars(task.limits), "setup": list(task.setup),
        "workspace": sorted(task.workspace), "extra_dirs": sorted(task.extra_files),
        "hidden_tests": sorted(task.tests), "holdout_tests": sorted(task.holdout_tests),
        "test_kind": task.test_spec.kind.value, "has_solution": task.solution is not None,
        "unsupported": task.unsupported, "instruction": task.instruction,
    }
