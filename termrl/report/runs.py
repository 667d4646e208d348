"""Reading a run directory, whatever made it, into one ``Run``: its episodes (through the same
trajectory store ``eval`` writes), its step metrics, its compute split and, for an audit, its rows.

What is recognised::

    eval        a trajectory store (part-*.parquet, _run.json)          termrl eval --out DIR
    train       config.json with an algorithm, stores below it            termrl train CONFIG, termrl quickstart
    audit       audit.json                                                termrl audit --out DIR

A training run's step metrics are its TensorBoard events; with ``logging.tensorboard`` off, the
log history in its newest checkpoint's ``trainer_state.json``. Those of its SFT warm start
(``[sft]``, which logs only to ``sft/log_history.json``) are read under ``sft/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from termrl.protocols import Trajectory
from termrl.rollout.store import TrajectoryStore, read_meta

TRAIN_PARTS = [  # (store folder, label) in reading order; "after" parts last
    ("heldout-before", "held-out before"), ("transfer-before", "transfer before"),
    ("rollouts", "training rollouts"), ("samples", "training samples"),
    ("heldout", "held-out after"), ("transfer", "transfer after"),
]


class RunError(ValueError):
    """A directory that is no run termrl wrote; names the directory and what was looked for."""


@dataclass
class Run:
    path: Path
    kind: str
    """eval | train | audit"""
    name: str
    meta: dict = field(default_factory=dict)
    """What made it: policy or model, suite, spec, algorithm (whatever the run recorded)."""
    parts: dict[str, list[Trajectory]] = field(default_factory=dict)
    """Label -> episodes (an eval run: one part; a training run: before, rollouts, after...)."""
    scalars: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """Training metrics by tag (TensorBoard event files): (step, value)."""
    compute: dict | None = None
    """Phase -> seconds of wall time (``Accountant.summary()["phases"]``, or summed episode timings)."""
    wall_s: float | None = None
    audit: dict | None = None
    """The audit's report (``termrl.checks.audit.audit``): rows, exploitable and test-weak tasks."""
    results: dict | None = None

    @property
    def episodes(self) -> list[Trajectory]:
        return [t for part in self.parts.values() for t in part]

    def evaluation(self) -> tuple[str, list[Trajectory]]:
        """The part a headline compares: an eval's episodes, a training run's held-out after."""
        for label in ("episodes", "held-out after", "held-out before"):
            if self.parts.get(label):
                return label, self.parts[label]
        label = next(iter(self.parts), "episodes")
        return label, self.parts.get(label, [])


def load_run(path: str | Path, name: str | None = None) -> Run:
    path = Path(path)
    if not path.is_dir():
        raise RunError(f"{path}: no such directory; give a run directory (termrl eval --out, termrl train's "
                       "output_dir, termrl quickstart --out or termrl audit --out)")
    name = name or path.name
    if (path / "audit.json").is_file():
        return _audit(path, name)
    if (path / "config.json").is_file() and "algorithm" in _json(path / "config.json"):
        return _train(path, name)
    if any(path.glob("part-*.parquet")):
        return _eval(path, name)
    raise RunError(f"{path}: not a run directory: expected part-*.parquet (an eval store), config.json (a training "
                   "run: termrl train, termrl quickstart) or audit.json")


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RunError(f"{path}: not valid JSON ({e}); was the run cut off while writing it?") from None


def _eval(path: Path, name: str) -> Run:
    episodes = TrajectoryStore(path).read()
    meta = read_meta(path) or {}
    return Run(path, "eval", name, meta, {"episodes": episodes}, compute=_episode_compute(episodes))


def _train(path: Path, name: str) -> Run:
    config = _json(path / "config.json")
    parts = {}
    for folder, label in TRAIN_PARTS:
        if any((path / folder).glob("part-*.parquet")):
            parts[label] = TrajectoryStore(path / folder).read()
    rounds = sorted((path / "rft").glob("round-*"), key=lambda p: int(p.name.split("-")[1]))
    for r in rounds:
        for sub, label in (("samples", "samples"), ("heldout", "held-out")):
            if any((r / sub).glob("part-*.parquet")):
                parts[f"{r.name} {label}"] = TrajectoryStore(r / sub).read()
    if "held-out after" not in parts and rounds:  # RFT: the last round's held-out is the "after"
        last = f"{rounds[-1].name} held-out"
        if last in parts:
            parts["held-out after"] = parts.pop(last)
    results = _json(path / "results.json") if (path / "results.json").is_file() else None
    compute = _json(path / "compute.json") if (path / "compute.json").is_file() else None
    model = config.get("model") or {}
    sft = config.get("sft") or {}
    meta = {"algorithm": config.get("algorithm"),
            "model": model.get("path") or (_tiny(model) if model.get("tiny") else None),
            "spec": config.get("spec"), **{f"tasks.{k}": v for k, v in (config.get("tasks") or {}).items()},
            "sft": f"{sft['steps']} steps on {sft.get('tasks')}" if sft.get("steps") else None}
    return Run(path, "train", name, meta, parts, scalars=train_scalars(path),
               compute=_phases(compute) if compute else _episode_compute([t for p in parts.values() for t in p]),
               wall_s=compute.get("wall_s") if compute else None, results=results)


def _audit(path: Path, name: str) -> Run:
    report = _json(path / "audit.json")
    meta = {k: report.get(k) for k in ("suite", "specs", "exploits", "progress_points") if k in report}
    return Run(path, "audit", name, meta, {}, audit=report, wall_s=report.get("wall_s"))


def _phases(summary: dict) -> dict:
    return {phase: row.get("wall_s", 0.0) for phase, row in (summary.get("phases") or {}).items()}


def _episode_compute(episodes: list[Trajectory]) -> dict | None:
    """Phase -> seconds summed over episodes (episode time, not wall time: episodes overlap)."""
    out: dict[str, float] = {}
    for t in episodes:
        for phase, seconds in (t.timing or {}).items():
            out[phase] = out.get(phase, 0.0) + float(seconds)
    return out or None


def _tiny(model: dict) -> str:
    return (f"tiny (hidden {model.get('tiny_hidden_size')}, {model.get('tiny_layers')} layers, "
            f"{model.get('tiny_heads')} heads)")


SFT_HISTORY = Path("sft") / "log_history.json"
"""The SFT warm start's step metrics in a training run (``termrl.training.sft.LOG_HISTORY``)."""


def train_scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """A training run's step metrics by tag: the algorithm's (TensorBoard events; without any, the
    log history of its newest checkpoint) as ``train/NAME``, its SFT warm start's as ``sft/train/NAME``."""
    history = path / SFT_HISTORY
    sft = _history(_json(history)) if history.is_file() else {}
    algorithm = read_scalars(path / "tensorboard") or _history(_checkpoint_history(path / "checkpoints"))
    return {**algorithm, **{f"sft/{tag}": points for tag, points in sft.items()}}


def read_scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar tag of the TensorBoard event files under ``directory`` (empty when none)."""
    files = sorted(directory.rglob("events.out.tfevents.*")) if directory.is_dir() else []
    if not files:
        return {}
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # heavy: tensorboard

    out: dict[str, list[tuple[int, float]]] = {}
    for f in files:
        acc = EventAccumulator(str(f), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            out.setdefault(tag, []).extend((e.step, e.value) for e in acc.Scalars(tag))
    return {tag: sorted(set(points)) for tag, points in out.items()}


def _checkpoint_history(directory: Path) -> list[dict]:
    """The log history in the ``trainer_state.json`` of the newest checkpoint under ``directory``
    that has a readable one ([] when none)."""
    found = sorted((p for p in directory.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()),
                   key=lambda p: int(p.name.split("-")[-1]), reverse=True) if directory.is_dir() else []
    for checkpoint in found:
        try:
            return json.loads((checkpoint / "trainer_state.json").read_text()).get("log_history") or []
        except (OSError, ValueError, AttributeError):
            continue  # cut mid-write by a kill: an older one holds the history up to its step
    return []


def _history(log_history: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """Scalars of a trainer's log history (``TrainerState.log_history``) by name."""
    out: dict[str, list[tuple[int, float]]] = {}
    for row in log_history:
        step = row.get("step")
        for k, v in row.items():
            if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool) and step is not None:
                out.setdefault(f"train/{k}", []).append((int(step), float(v)))
    return {tag: sorted(set(points)) for tag, points in out.items()}
