"""Bad cases: failed episodes grouped by what went wrong first, and terminal renderings.

An episode's group is (its dominant error class, its first failure). The first
failure is, in order of preference:

1. the first test, in report (file) order, whose outcome is ``failed`` or ``error``
   (its pytest node id);
2. else the first stage that failed or errored, e.g. ``"build stage"``, when no test ran;
3. else the episode's ending, e.g. ``"format_errors"`` or ``"step_limit"``.

A harness failure is grouped apart, under the class ``"harness"`` (not a taxonomy
class), its first failure the error's leading words, e.g. ``"SandboxError"``; pass
``harness=False`` to leave them out. Groups come largest first.
"""

from __future__ import annotations

import io
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from termrl.eval.metrics import UNCLASSIFIED, is_harness_failure, main_class
from termrl.protocols import Trajectory
from termrl.verify.taxonomy import CLASSES

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

HARNESS = "harness"
MESSAGE_CHARS = 300
OBSERVATION_CHARS = 500


def bad_cases(trajectories: Iterable[Trajectory], limit_per_group: int = 5, *, harness: bool = True
              ) -> list[dict]:
    """Failed episodes grouped by (error class, first failure), largest group first.

    Each group: ``error_class``, ``group`` (its taxonomy group), ``first_failure``, ``count``,
    ``tasks`` (sorted ids), ``endings`` (ending -> count) and up to ``limit_per_group``
    ``examples`` in input order: {episode_id, task_id, message, last_observation}, the
    observation being the tail of the last step's, at most ~500 characters.
    """
    groups: dict[tuple[str, str], list[tuple[Trajectory, str]]] = defaultdict(list)
    for t in trajectories:
        if is_harness_failure(t):
            if not harness:
                continue
            error = t.error or (t.evidence or {}).get("verify_error") or f"ending {t.ending}"
            groups[(HARNESS, error.split(":")[0].strip())].append((t, error))
        elif not t.passed:
            name, message = first_failure(t)
            groups[(main_class(t) or UNCLASSIFIED, name)].append((t, message))
    out = []
    for (cls, name), eps in groups.items():
        out.append({
            "error_class": cls,
            "group": CLASSES.get(cls, cls),
            "first_failure": name,
            "count": len(eps),
            "tasks": sorted({t.task_id for t, _ in eps}),
            "endings": dict(Counter(t.ending for t, _ in eps).most_common()),
            "examples": [{"episode_id": t.episode_id, "task_id": t.task_id, "message": _short(message),
                          "last_observation": _tail(t.steps[-1].observation if t.steps else "")}
                         for t, message in eps[:limit_per_group]],
        })
    return sorted(out, key=lambda g: (-g["count"], g["error_class"], g["first_failure"]))


def first_failure(traj: Trajectory) -> tuple[str, str]:
    """(name, message) of the first thing that failed in a scored episode's evidence."""
    ev = traj.evidence or {}
    for test in ev.get("tests") or []:
        if test["outcome"] in ("failed", "error"):
            exc, msg = test.get("exc_type") or "", test.get("message") or ""
            return test["nodeid"], f"{exc}: {msg}" if exc and msg else exc or msg or test["outcome"]
    for name, stage in (ev.get("stages") or {}).items():
        if stage["status"] in ("failed", "error"):
            tail = (stage.get("data") or {}).get("output_tail") or ""
            lines = [line for line in tail.splitlines() if line.strip()]
            return f"{name} stage", stage.get("message") or (lines[-1] if lines else "")
    return traj.ending, ""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"


def _tail(text: str) -> str:
    return text if len(text) <= OBSERVATION_CHARS else "…" + text[-(OBSERVATION_CHARS - 1):]


# --------------------------------------------------------------------------- rendering


def render_bad_cases(groups: list[dict]) -> str:
    """Plain text: an overview table, then one table of examples per group."""
    from rich.table import Table  # heavy: rich loads when something is rendered, not with termrl

    overview = Table(title="Bad cases", title_justify="left")
    for col in ("count", "class", "first failure", "tasks"):
        overview.add_column(col, justify="right" if col == "count" else "left")
    parts: list[RenderableType] = [overview]
    for g in groups:
        tasks = ", ".join(g["tasks"][:4]) + (f" (+{len(g['tasks']) - 4})" if len(g["tasks"]) > 4 else "")
        overview.add_row(str(g["count"]), g["error_class"], g["first_failure"], tasks)
        examples = Table(title=f"{g['count']} × {g['error_class']} at {g['first_failure']}",
                         title_justify="left")
        for col in ("episode", "message", "last observation"):
            examples.add_column(col, overflow="fold")
        for ex in g["examples"]:
            examples.add_row(ex["episode_id"], ex["message"], ex["last_observation"].strip())
        parts.append(examples)
    if not groups:
        return "No failed episodes.\n"
    return _text(*parts)


def render_summary(summary: dict) -> str:
    """Plain text tables of a ``summarize`` result."""
    from rich.table import Table  # heavy: rich

    head = Table(title="Evaluation", title_justify="left", show_header=False)
    head.add_column("metric")
    head.add_column("value", justify="right")
    rows = [("pass@1", summary["pass@1"])] + [(f"pass@{k}", v) for k, v in summary["pass@k"].items() if k != "1"]
    rows += [("episodes", summary["episodes"]), ("harness errors", summary["errors"]),
             ("unverified (no reward)", summary["unverified"]),
             ("mean reward", _fmt(summary["mean_reward"]) + (f" ({summary['reward_scale']})"
                                                             if summary.get("reward_scale") else "")),
             ("hack rate", summary["hack_rate"])]
    for name, value in rows:
        head.add_row(name, _fmt(value))
    parts: list[RenderableType] = [head]
    ks = [k for k in summary["pass@k"] if k != "1"]
    splits = _table("Splits", ["split"], ["tasks", "episodes", "errors", "pass@1", *(f"pass@{k}" for k in ks)])
    for name, s in summary["splits"].items():
        splits.add_row(name, *map(_fmt, (s["tasks"], s["episodes"], s["errors"], s["pass@1"],
                                         *(s["pass@k"][k] for k in ks))))
    parts.append(splits)
    if summary.get("families"):
        fams = _table("Families", ["family"], ["tasks", "episodes", "errors", "pass@1", "95% interval"])
        for name, f in summary["families"].items():
            low_high = f"{f['interval'][0]:.2f}-{f['interval'][1]:.2f}" if f["interval"] else "-"
            fams.add_row(name, *map(_fmt, (f["tasks"], f["episodes"], f["errors"], f["pass@1"])), low_high)
        parts.append(fams)
    if summary["components"]:
        comps = _table("Reward components", ["component"], ["mean value", "mean contribution", "episodes"])
        for name, c in summary["components"].items():
            comps.add_row(name, *map(_fmt, (c["value"], c["contribution"], c["episodes"])))
        parts.append(comps)
    if summary["findings"]:
        finds = _table("Findings", ["kind"], ["count", "episodes", "rate", "low", "medium", "high"])
        for kind, f in summary["findings"].items():
            by = f["by_severity"]
            finds.add_row(kind, *map(_fmt, (f["count"], f["episodes"], f["rate"], by.get("low", 0),
                                             by.get("medium", 0), by.get("high", 0))))
        parts.append(finds)
    if summary["error_classes"]:
        errs = _table("Failures by class", ["class"], ["episodes"])
        for cls, count in summary["error_classes"].items():
            errs.add_row(cls, str(count))
        parts.append(errs)
    tasks = _table("Tasks", ["task", "split"], ["samples", "pass rate", "reward"], ["error class", "findings"])
    for t in summary["tasks"]:
        findings = ", ".join(f"{f['kind']}:{f['severity']}×{f['count']}" for f in t["findings"])
        tasks.add_row(t["id"], t["split"], *map(_fmt, (t["samples"], t["pass_rate"], t["reward"])),
                      t["error_class"] or "", findings)
    parts.append(tasks)
    text = _text(*parts)
    return text + "".join(f"note: {n}\n" for n in summary.get("notes", []))


def _table(title: str, text: list[str], numbers: list[str], more_text: list[str] = ()) -> Table:
    """A table whose ``numbers`` columns are right-aligned, between ``text`` and ``more_text``."""
    from rich.table import Table  # heavy: rich

    table = Table(title=title, title_justify="left")
    for col in text:
        table.add_column(col, overflow="fold")
    for col in numbers:
        table.add_column(col, justify="right")
    for col in more_text:
        table.add_column(col, overflow="fold")
    return table


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _text(*renderables: RenderableType, width: int = 120) -> str:
    from rich.console import Console, Group  # heavy: rich

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False, emoji=False).print(Group(*renderables))
    return buf.getvalue()
