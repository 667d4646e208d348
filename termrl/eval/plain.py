"""The plain prompt-and-run harness that code benchmarks use, as a yardstick for termrl's.

One user message: the task's instruction, then a request for the whole file in a
```python block. The first such block of the reply (or the whole reply when it has
none) becomes the task's one Python workspace file, and the task's hidden tests run on
it in a warm ``VerifierPool``: the same tests and verifier that score a termrl episode.
No system prompt, no tools, no second turn - what the model can do when nothing in the
harness stands in its way. ``bench/parity.py`` runs it beside ``termrl eval``.

Given a directory (``out``), both halves keep what they finish as they go - the plain
results as JSON lines in ``plain.jsonl`` after every batch, the termrl episodes in a
trajectory store under ``termrl/`` - and a second call with the same directory does only
what is missing: a measurement that takes longer than a session survives its end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from termrl.env import EnvConfig
from termrl.protocols import Policy, Task, Turn
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.rollout.store import TrajectoryStore
from termrl.verify.pool import VerifierPool

REQUEST = "Reply with the complete contents of `{path}` in one ```python block."
_PYTHON_BLOCK = re.compile(r"```(?:python|py|python3)?[ \t]*\n(.*?)```", re.S)


@dataclass(frozen=True)
class PlainResult:
    task_id: str
    passed: bool
    reply: str
    code: str


def target_file(task: Task) -> str:
    """The Python file a plain harness writes: the task's only ``.py`` workspace file."""
    found = [p for p in task.workspace if p.endswith(".py")]
    if len(found) != 1:
        raise ValueError(f"task {task.id}: the plain harness needs exactly one .py workspace file, "
                         f"found {found or 'none'}")
    return found[0]


def plain_messages(task: Task) -> list[dict]:
    return [{"role": "user", "content": f"{task.instruction.strip()}\n\n{REQUEST.format(path=target_file(task))}"}]


def extract_code(reply: str) -> str:
    """The first ```python (or untagged) block of ``reply``; the whole reply when there is none.

    >>> extract_code("Here:\\n```python\\ndef f():\\n    return 1\\n```\\nDone.")
    'def f():\\n    return 1\\n'
    """
    m = _PYTHON_BLOCK.search(reply)
    return m.group(1) if m else reply


def run_plain(tasks: Sequence[Task], policy: Policy, workers: int = 2, out: str | Path | None = None,
              batch: int = 8) -> list[PlainResult]:
    """Each task once: one reply from ``policy``, its code run with the task's hidden tests, in
    batches of ``batch`` tasks. ``out``: a directory whose ``plain.jsonl`` keeps every finished
    result (appended per batch) and whose tasks are not asked again."""
    path = Path(out) / "plain.jsonl" if out is not None else None
    done = {r.task_id: r for r in _read_plain(path)} if path else {}
    todo = [t for t in tasks if t.id not in done]
    with VerifierPool(workers=workers) as pool:
        for i in range(0, len(todo), batch):
            part = todo[i:i + batch]
            replies = policy.generate([Turn(plain_messages(t), t, step=0) for t in part])
            codes = [extract_code(r.text) for r in replies]
            evidence = pool.map([(t, {target_file(t): c.encode()}) for t, c in zip(part, codes)])
            results = [PlainResult(t.id, e.passed, r.text, c) for t, e, r, c in zip(part, evidence, replies, codes)]
            done.update((r.task_id, r) for r in results)
            if path:
                _append(path, [json.dumps(asdict(r)) for r in results])
    return [done[t.id] for t in tasks]


def _append(path: Path, lines: list[str]) -> None:
    """Append ``lines``, on a line of their own even after a line a kill cut short."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as fh:
        cut = fh.tell() > 0 and (fh.seek(-1, 2), fh.read(1))[1] != b"\n"
        fh.write(("\n" * cut + "".join(line + "\n" for line in lines)).encode())


def _read_plain(path: Path) -> list[PlainResult]:
    """The results in ``path``; a last line cut by a kill is dropped (its batch runs again)."""
    if not path.is_file():
        return []
    results = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            results.append(PlainResult(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return results


@dataclass(frozen=True)
class Parity:
    """The plain harness beside termrl episodes on the same tasks, model and decoding."""

    tasks: int
    plain_passed: int
    termrl_passed: int
    plain: list[PlainResult]
    episodes: list
    """termrl's ``Trajectory`` of each task."""

    @property
    def gap_points(self) -> float:
        """How many points of pass@1 termrl loses against the plain harness (negative: gains)."""
        return 100 * (self.plain_passed - self.termrl_passed) / self.tasks


def parity(tasks: Sequence[Task], policy: Policy, env=None, workers: int = 8,
           out: str | Path | None = None) -> Parity:
    """Run ``tasks`` through the plain harness, then as termrl episodes (``env``: an ``EnvConfig``).
    ``out``: keep both halves there as they finish, and finish what an earlier call left."""
    plain = run_plain(tasks, policy, workers=min(workers, 2), out=out, batch=workers)
    config = RolloutConfig(workers=workers, max_batch=workers, env=env or EnvConfig(time_limit_s=3600))
    store = TrajectoryStore(Path(out) / "termrl") if out is not None else None
    episodes = run_rollouts(list(tasks), policy, config, store=store)
    if store is not None:
        order = {t.id: i for i, t in enumerate(tasks)}
        episodes = sorted((t for t in store.read() if t.task_id in order), key=lambda t: order[t.task_id])
    return Parity(len(tasks), sum(r.passed for r in plain), sum(t.passed for t in episodes), plain, episodes)
