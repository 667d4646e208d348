"""Resolve a SUITE argument into tasks.

SUITE is one of: ``builtin``; ``humaneval``; ``mbpp``; ``FAMILY:SEEDS`` (e.g.
``logs-count:0-99`` or ``logs-count:heldout:0-99``); or a directory holding one
task or many task directories in any supported format.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path

from termrl.protocols import Task
from termrl.tasks.formats import TaskFormatError, load_task, looks_like_task

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
    """``0-99``, ``5``, ``0-9,100-109``; prefix ``heldout:`` counts from the held-out range."""
    base = 0
    if text.startswith("heldout:"):
        base, text = family.heldout_seeds.start, text[len("heldout:"):]
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


def resolve(suite: str) -> list[Entry]:
    """The tasks of SUITE, in a stable order."""
    from termrl.tasks import families

    if suite == "builtin":
        return builtin_entries()
    if suite in ("humaneval", "mbpp"):
        from termrl.tasks.formats import codegen

        loader = codegen.load_humaneval if suite == "humaneval" else codegen.load_mbpp
        try:
            return [Entry(t.id, task=t) for t in loader()]
        except TaskFormatError as e:
            raise SuiteError(str(e)) from None
    if Path(suite).exists():
        return directory_entries(Path(suite))
    name, sep, seeds = suite.partition(":")
    if sep:
        try:
            family = families.get_family(name)
        except KeyError as e:
            raise SuiteError(e.args[0]) from None
        return [Entry(f"{name}-{s}", task=family.generate(s)) for s in parse_seeds(seeds, family)]
    known = ", ".join(families.FAMILIES)
    raise SuiteError(f"unknown suite {suite!r}: use builtin, humaneval, mbpp, FAMILY:SEEDS "
                     f"(families: {known}) or a directory of tasks")


def find_task(ref: str) -> Task:
    """A task by id (builtin, humaneval-N, mbpp-N, FAMILY-SEED) or by directory path."""
    from termrl.tasks import families

    if Path(ref).is_dir():
        return load_task(Path(ref))
    if (BUILTIN_DIR / ref).is_dir():
        return load_task(BUILTIN_DIR / ref)
    for prefix in ("humaneval", "mbpp"):
        if ref.startswith(prefix + "-"):
            for entry in resolve(prefix):
                if entry.id == ref:
                    return entry.task
    name, _, seed = ref.rpartition("-")
    if name in families.FAMILIES and seed.isdigit():
        return families.FAMILIES[name].generate(int(seed))
    raise SuiteError(f"no task {ref!r}: give a built-in id (see `termrl tasks list`), humaneval-N, "
                     f"mbpp-N, FAMILY-SEED or a task directory")
