"""What two suites share: exact and near-duplicate specifications (``termrl tasks overlap``).

A held-out set measures skill on unseen work only if its tasks are not the training tasks
renamed. This compares every task of one suite (say the held-out set) with every task of
another (the training set) on a normalised form of what the task *asks* and what its reference
*does*, so that two tasks that differ only in names and examples count as the same work.

The method, per task:

1. **Names are masked.** A task's own names are the paths of its workspace files, the files its
   reference solution writes (``cat > PATH``, ``> PATH``), and the functions, parameters and
   shell functions its reference defines. Each becomes ``<name>`` in the instruction and in the
   reference, as a whole word (a path also by its base name). Words of the language (``None``,
   ``int``, ``for``...) are never names.
2. **Examples are dropped from the instruction.** Its code blocks (fenced, or indented four
   spaces) hold the signature, examples and sample data, which differ from seed to seed of one
   specification; the prose around them is the specification. The reference keeps its code.
3. **Text is folded.** Lower case, runs of whitespace as one space; numbers are kept, so a
   specification with another parameter (the 2nd largest value, not the 3rd) is other work.

Two tasks are an **exact** duplicate when the folded prose and the folded reference are equal.
Their **similarity** is the Jaccard index of the sets of word 3-shingles of prose and reference
together; a pair at or above ``threshold`` (0.8 by default) is a **near** duplicate. Tasks with
no reference solution are compared on their prose alone.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from termrl.protocols import Task

THRESHOLD = 0.8
SHINGLE = 3

_WORDS_OF_LANGUAGES = (set(keyword.kwlist) | set(dir(builtins)) | {
    "self", "cls", "if", "then", "else", "fi", "for", "do", "done", "while", "case", "esac", "function",
    "echo", "printf", "cat", "set", "read", "local", "return", "exit", "main", "int", "char", "long",
    "void", "double", "float", "str", "list", "dict", "tuple", "bool", "none", "true", "false"})
_DEF = re.compile(r"^\s*def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)", re.MULTILINE)
_SHELL_FUNCTION = re.compile(r"^\s*(?:function\s+)?([A-Za-z_]\w*)\s*\(\)\s*\{", re.MULTILINE)
_WRITTEN = re.compile(r"(?:cat|tee)\s*>+\s*['\"]?([^\s'\"<>|;&]+)|(?<![<>&\d])>{1,2}\s*['\"]?([A-Za-z0-9_./-]+\.[A-Za-z0-9]+)")
_FENCED = re.compile(r"^```.*?^```[^\n]*$", re.MULTILINE | re.DOTALL)
_INDENTED = re.compile(r"(?:^(?: {4}|\t).*(?:\n|$))+", re.MULTILINE)
_TOKEN = re.compile(r"<name>|[a-z0-9_]+|[^\sa-z0-9_]")


def task_names(task: Task) -> set[str]:
    """The task's own names (see the module's docstring), longest first when masked."""
    names: set[str] = set()
    for path in task.workspace:
        names.update({path, path.rsplit("/", 1)[-1]})
    reference = task.solution or ""
    for match in _WRITTEN.finditer(reference):
        path = (match.group(1) or match.group(2)).strip("'\"")
        if path and not path.startswith(("/dev/", "$", "&")):
            names.update({path, path.rsplit("/", 1)[-1]})
    for fname, params in _DEF.findall(reference):
        names.add(fname)
        for param in params.split(","):
            name = param.split(":")[0].split("=")[0].strip().lstrip("*")
            if name.isidentifier():
                names.add(name)
    names.update(_SHELL_FUNCTION.findall(reference))
    return {n for n in names if n and n.lower() not in _WORDS_OF_LANGUAGES and not n.isdigit()}


def _mask(text: str, names: set[str]) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w./-]){re.escape(name)}(?![\w/-]|\.\w)", "<name>", text)
    return text


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def prose(instruction: str) -> str:
    """The instruction without its code blocks (fenced, or indented four spaces)."""
    return _INDENTED.sub("\n", _FENCED.sub("\n", instruction))


@dataclass(frozen=True)
class Fingerprint:
    """A task's normalised specification: folded prose and reference, and its shingles."""

    id: str
    prose: str
    reference: str
    shingles: frozenset

    @classmethod
    def of(cls, task: Task) -> Fingerprint:
        names = task_names(task)
        spec = _fold(_mask(prose(task.instruction), names))
        reference = _fold(_mask(task.solution or "", names))
        tokens = _TOKEN.findall(spec + " | " + reference)
        shingles = frozenset(tuple(tokens[i:i + SHINGLE]) for i in range(max(1, len(tokens) - SHINGLE + 1)))
        return cls(task.id, spec, reference, shingles)

    @property
    def key(self) -> tuple[str, str]:
        return self.prose, self.reference


@dataclass
class Match:
    """The closest task of the other suite to one task."""

    id: str
    nearest: str | None
    similarity: float
    exact: bool


@dataclass
class Overlap:
    """What ``suite`` shares with ``against``: per task of ``suite``, its nearest task there."""

    suite: str
    against: str
    threshold: float
    tasks: int
    against_tasks: int
    exact: int = 0
    near: int = 0
    matches: list[Match] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Tasks of either suite that could not be loaded (``id: why``), left out of the figures."""

    @property
    def disjoint(self) -> int:
        """Tasks of ``suite`` with no exact or near duplicate in ``against``."""
        return self.tasks - self.near

    def summary(self) -> dict:
        """The figures without the per-task list (what ``results.json`` keeps)."""
        sims = sorted(m.similarity for m in self.matches)
        return {"suite": self.suite, "against": self.against, "method": METHOD, "threshold": self.threshold,
                "tasks": self.tasks, "against_tasks": self.against_tasks, "exact": self.exact,
                "near": self.near, "disjoint": self.disjoint,
                "max_similarity_median": sims[len(sims) // 2] if sims else None,
                "max_similarity_max": sims[-1] if sims else None, "skipped": self.skipped}

    def to_dict(self) -> dict:
        return {**self.summary(), "matches": [asdict(m) for m in self.matches]}

    def lines(self, show: int = 10) -> list[str]:
        """The figures in words, the first ``show`` shared tasks with their nearest match, the method."""
        out = [f"{self.suite} ({self.tasks} tasks) against {self.against} ({self.against_tasks} tasks):",
               (f"  exact duplicates {self.exact}, near duplicates (similarity >= {self.threshold}, exact "
                f"included) {self.near}, disjoint {self.disjoint}")]
        shared = [m for m in self.matches if m.exact or m.similarity >= self.threshold][:max(show, 0)]
        out += [f"  {m.id} ~ {m.nearest} {m.similarity:.3f}{' exact' if m.exact else ''}" for m in shared]
        out += [f"  skipped (cannot be loaded) {why}" for why in self.skipped]
        return out + [f"method: {METHOD}"]

    def shared_ids(self) -> list[str]:
        """Ids of ``suite``'s tasks that are an exact or near duplicate of one in ``against``."""
        return [m.id for m in self.matches if m.exact or m.similarity >= self.threshold]


METHOD = ("names masked (workspace and written paths, defined functions and parameters), the instruction's "
          "code blocks dropped, lower case; exact = equal prose and reference; near = Jaccard of word "
          f"{SHINGLE}-shingles of prose and reference >= threshold")


def overlap(tasks: list[Task], against: list[Task], *, threshold: float = THRESHOLD, suite: str = "",
            against_name: str = "") -> Overlap:
    """Each task of ``tasks`` with its nearest task of ``against`` (see the module's docstring)."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold {threshold}: give a Jaccard index in (0, 1], e.g. {THRESHOLD}")
    others = [Fingerprint.of(t) for t in against]
    by_key = {}
    index: dict[tuple, list[int]] = defaultdict(list)
    for i, fp in enumerate(others):
        by_key.setdefault(fp.key, fp.id)
        for shingle in fp.shingles:
            index[shingle].append(i)
    result = Overlap(suite, against_name, threshold, len(tasks), len(against))
    for task in tasks:
        fp = Fingerprint.of(task)
        exact_id = by_key.get(fp.key)
        shared: dict[int, int] = defaultdict(int)
        for shingle in fp.shingles:
            for i in index.get(shingle, ()):
                shared[i] += 1
        best, best_sim = None, 0.0
        for i, n in shared.items():
            sim = n / (len(fp.shingles) + len(others[i].shingles) - n)
            if sim > best_sim or (sim == best_sim and best is not None and others[i].id < best):
                best, best_sim = others[i].id, sim
        if exact_id is not None:
            best, best_sim = exact_id, 1.0
        match = Match(task.id, best, round(best_sim, 4), exact_id is not None)
        result.matches.append(match)
        result.exact += match.exact
        result.near += match.exact or match.similarity >= threshold
    return result


__all__ = ["METHOD", "THRESHOLD", "Fingerprint", "Match", "Overlap", "overlap", "prose", "task_names"]
