"""Reading a run directory, whatever made it, into one ``Run``: its episodes (through the same
trajectory store ``eval`` writes), its step metrics, its compute split and, for an audit, its rows.

What is recognised::

    eval        a trajectory store (part-*.parquet, _run.json)          termrl eval --out DIR
    train       config.json with an algorithm, stores below it            termrl train CONFIG
    quickstart  quickstart.json, stores eval_sft/ and eval_rl/            termrl quickstart --out DIR
    audit       audit.json                                                termrl audit --out DIR
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
    """eval | train | quickstart | audit"""
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
        for label in ("episodes", "held-out after", "held-out (RL)", "held-out before", "held-out (SFT)"):
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
    if (path / "quickstart.json").is_file():
        return _quickstart(path, name)
    if (path / "config.json").is_file() and "algorithm" in _json(path / "config.json"):
        return _train(path, name)
    if any(path.glob("part-*.parquet")):
        return _eval(path, name)
    raise RunError(f"{path}: not a run directory: expected part-*.parquet (an eval store), config.json (a training "
                   "run), quickstart.json or audit.json")


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
    meta = {"algorithm": config.get("algorithm"), "model": (config.get("model") or {}).get("path"),
            "spec": config.get("spec"), **{f"tasks.{k}": v for k, v in (config.get("tasks") or {}).items()}}
    return Run(path, "train", name, meta, parts, scalars=read_scalars(path / "tensorboard"),
               compute=_phases(compute) if compute else _episode_compute([t for p in parts.values() for t in p]),
               wall_s=compute.get("wall_s") if compute else None, results=results)


def _quickstart(path: Path, name: str) -> Run:
    results = _json(path / "quickstart.json")
    parts = {}
    for folder, label in (("eval_sft", "held-out (SFT)"), ("eval_rl", "held-out (RL)")):
        if any((path / folder).glob("part-*.parquet")):
            parts[label] = TrajectoryStore(path / folder).read()
    scalars = {}
    for stage in ("sft", "rl"):
        history = path / stage / "log_history.json"
        rows = _json(history) if history.is_file() else []
        scalars.update({f"{stage}/{k}": v for k, v in _history(rows).items()})
    config = results.get("config") or {}
    meta = {"algorithm": "sft + grpo", "family": results.get("family"), "spec": config.get("spec")}
    # the quickstart times its stages (build, SFT, evaluation, GRPO...): those are its split
    timings = {k.removesuffix("_s"): v for k, v in (results.get("timings") or {}).items() if k != "total_s"}
    return Run(path, "quickstart", name, meta, parts, scalars=scalars,
               compute=timings or _episode_compute([t for p in parts.values() for t in p]),
               wall_s=(results.get("timings") or {}).get("total_s"), results=results)


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


def _history(log_history: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """Scalars of a trainer's log history (``TrainerState.log_history``) by name."""
    out: dict[str, list[tuple[int, float]]] = {}
    for row in log_history:
        step = row.get("step")
        for k, v in row.items():
            if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool) and step is not None:
                out.setdefault(f"train/{k}", []).append((int(step), float(v)))
    return out
