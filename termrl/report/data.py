"""What a report shows, computed from ``Run``s as plain data (JSON-ready), before any HTML.

Every function here takes runs (``termrl.report.runs.Run``) and returns dicts and lists; the
renderer (``termrl.report.html``) only lays them out. Tests check these numbers.
"""

from __future__ import annotations

import functools
import itertools
import random
import shlex
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from termrl.eval import tokenizers as tk
from termrl.eval.badcases import bad_cases
from termrl.eval.metrics import is_harness_failure, main_class, paired, summarize, two_proportion_z, wilson
from termrl.protocols import Trajectory
from termrl.reward import SpecError, load_spec
from termrl.rollout.chat import conversation
from termrl.tasks import families
from termrl.tasks.suites import find_task

QUOTED_SPLIT = {"generation": 0.40, "environment": 0.30, "reward model": 0.20, "gradient": 0.10}
"""Where RL time goes on a GPU cluster, as the practitioners termrl was built for quote it."""
PHASE_ORDER = ("generation", "environment", "verification", "reward", "detection", "training", "other")
TEXT_CHARS = 4000
"""Longest reply, observation or instruction a trajectory keeps in the report."""


def ks_for(episodes: list[Trajectory]) -> list[int]:
    """pass@k for k = 1 and the largest sample count every task has (at most 10)."""
    per_task = Counter(t.task_id for t in episodes)
    k = min(per_task.values()) if per_task else 1
    return sorted({1, min(k, 10)})


def headline(runs) -> dict:
    """One row per run (its evaluation part): pass@1 with a 95% interval, pass@k, by split,
    category and family; with two or more runs, each against the first (difference, z, p, and,
    where they share episodes, the paired test over those: ``paired``)."""
    rows, played = [], []
    for run in runs:
        label, episodes = run.evaluation()
        played.append(episodes)
        ks = ks_for(episodes)
        s = summarize(episodes, ks) if episodes else {}
        scored = [t for t in episodes if not is_harness_failure(t)]
        passed = sum(bool(t.passed) for t in scored)
        rows.append({
            "run": run.name, "kind": run.kind, "part": label, "meta": run.meta,
            "episodes": len(episodes), "errors": s.get("errors", 0),
            "passed": passed, "scored": len(scored),
            "pass@1": passed / len(scored) if scored else None,
            "interval": list(wilson(passed, len(scored))) if scored else None,
            "pass@k": s.get("pass@k", {}), "pass@k_interval": {k: task_bootstrap(s.get("tasks", []), k) for k in
                                                                map(str, ks) if k != "1"},
            "mean_reward": s.get("mean_reward"), "reward_scale": reward_scale(run) if episodes else None,
            "splits": _rates(scored, lambda t: t.split),
            "categories": _rates(scored, lambda t: category_of(t.task_id, t.family)),
            "families": _rates(scored, lambda t: t.family or "(none)"),
        })
    comparisons = []
    base = rows[0] if rows else None
    for row, episodes in zip(rows[1:], played[1:]):
        if base and base["scored"] and row["scored"]:
            z, p = two_proportion_z(base["pass@1"], row["pass@1"], base["scored"], row["scored"])
            pairs = paired(played[0], episodes)
            comparisons.append({"a": base["run"], "b": row["run"], "difference": row["pass@1"] - base["pass@1"],
                                "z": z, "p_value": p,
                                "paired": {k: pairs[k] for k in ("episodes", "gained", "lost", "mcnemar_p")}
                                if pairs else None})
    return {"rows": rows, "comparisons": comparisons}


def reward_scale(run) -> str | None:
    """What the run's rewards are out of (``RewardSpec.scale``): the spec it recorded, loaded
    again; None when that spec cannot be loaded here."""
    spec = run.meta.get("spec")
    if not isinstance(spec, str) or not spec:
        return None
    try:
        return load_spec(spec).scale()
    except (SpecError, OSError):
        return None


SETTING_NAMES = {"stretches": "calls", "k": "pass@k's k", "tasks.suite": "tasks"}
"""A setting's name in the report, where its key says less than it could."""


def settings(runs) -> list[dict]:
    """What made each run (``Run.meta``), one row per setting that any run has, a readable value
    per run ("" where it has none): ``{"setting", "values"}``. Times are UTC dates, flags yes/no,
    lists and tables spelled out; a run's calls (``termrl eval --resume`` adds one each) only when
    there was more than one or they say what they ran on.

    >>> from types import SimpleNamespace as Run
    >>> settings([Run(meta={"policy": "oracle", "stop_at_action": False, "started": 1796595846.9,
    ...                     "stretches": [{"started": 1796595846.9}], "judge": None})])
    [{'setting': 'policy', 'values': ['oracle']}, {'setting': 'stop_at_action', 'values': ['no']}, \
{'setting': 'started', 'values': ['2026-12-06 22:24 UTC']}]
    """
    keys = list(dict.fromkeys(k for run in runs for k in run.meta))
    rows = []
    for key in keys:
        values = [_setting(key, run.meta.get(key)) for run in runs]
        if any(values):
            rows.append({"setting": SETTING_NAMES.get(key, key), "values": values})
    return rows


def _setting(key: str, value) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if key == "stretches":
        calls = [_call(s) for s in value]
        return "; ".join(calls) if len(calls) > 1 or any(set(s) - {"started"} for s in value) else ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in ("started", "ended", "finished") and isinstance(value, (int, float)):
        return utc(value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {_setting(k, v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_setting(key, v) for v in value)
    return str(value)


def _call(stretch: dict) -> str:
    on = ", ".join(str(stretch[k]) for k in ("dtype", "device") if stretch.get(k))
    return utc(stretch["started"]) + (f" ({on})" if on else "") if "started" in stretch else on


def utc(seconds: float) -> str:
    """``2026-12-06 22:24 UTC`` for seconds since the epoch."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


def task_bootstrap(tasks: list[dict], k: str, rounds: int = 2000, seed: int = 0) -> list[float] | None:
    """A 95% percentile-bootstrap interval of pass@k over tasks (tasks resampled with replacement;
    the unbiased estimator has no closed-form interval). None without two tasks with k samples."""
    values = [t["pass@k"].get(k) for t in tasks if t.get("pass@k", {}).get(k) is not None]
    if len(values) < 2:
        return None
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(values) for _ in values) / len(values) for _ in range(rounds))
    return [means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]]


def _rates(episodes: list[Trajectory], key) -> dict[str, dict]:
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for t in episodes:
        groups[str(key(t))].append(t)
    out = {}
    for name, eps in sorted(groups.items()):
        c = sum(bool(t.passed) for t in eps)
        out[name] = {"passed": c, "episodes": len(eps), "pass@1": c / len(eps), "interval": list(wilson(c, len(eps)))}
    return out


@functools.lru_cache(maxsize=4096)
def category_of(task_id: str, family: str | None = None) -> str:
    """The task's category (shell, data, python, ...): its family's, or the task's own."""
    if family:
        try:
            return families.get_family(family.partition("@")[0]).category
        except KeyError:
            pass
    if task_id.startswith(("humaneval-", "mbpp-")):
        return "python"
    try:
        return find_task(task_id).meta.category
    except Exception:  # noqa: BLE001 - a task no longer loadable here: uncategorised, not an error
        return "?"


def rewards(runs) -> dict:
    """Per run: every episode's total reward and each component's value, for distributions."""
    out = {}
    for run in runs:
        _, episodes = run.evaluation()
        scored = [t for t in episodes if t.reward is not None]
        components: dict[str, list[float]] = defaultdict(list)
        for t in scored:
            for name, c in (t.components or {}).items():
                if isinstance(c, dict) and c.get("value") is not None:
                    components[name].append(float(c["value"]))
        out[run.name] = {"total": [float(t.reward) for t in scored], "components": dict(components)}
    return out


def training_curves(run) -> dict[str, list[tuple[int, float]]]:
    """The scalars a training run logged, grouped for plotting: reward components, KL, loss,
    zero-variance groups, everything else."""
    groups: dict[str, dict[str, list]] = {"rewards": {}, "kl": {}, "loss": {}, "zero_variance": {}, "other": {}}
    for tag, points in run.scalars.items():
        low = tag.lower()
        group = ("zero_variance" if "zero_variance" in low else "rewards" if "reward" in low
                 else "kl" if low.endswith("kl") or "/kl" in low else "loss" if "loss" in low else "other")
        groups[group][tag] = points
    return {k: v for k, v in groups.items() if v}


def schedules(spec_name: str | None, points: int = 21) -> dict[str, list[tuple[float, float]]]:
    """Each component weight of the spec that changes over training progress: [(progress, weight)]."""
    if not spec_name:
        return {}

    try:
        spec = load_spec(spec_name)
    except Exception:  # noqa: BLE001 - a spec file gone since the run: no schedule plot, not an error
        return {}
    grid = [i / (points - 1) for i in range(points)]
    weights = [spec.weights(p) for p in grid]
    return {name: [(p, w[name]) for p, w in zip(grid, weights)]
            for name in weights[0] if len({round(w[name], 9) for w in weights}) > 1}


def compute(runs) -> dict:
    """Per run: each phase's share of the run's time, and episodes per hour where the wall
    time is known; with the quoted split beside them."""
    out = {}
    for run in runs:
        phases = dict(run.compute or {})
        total = sum(phases.values())
        shares = {p: phases.get(p, 0.0) / total for p in PHASE_ORDER if total and phases.get(p)}
        shares.update({p: v / total for p, v in phases.items() if p not in PHASE_ORDER and total and v})
        wall = run.wall_s or _span(run.episodes)
        out[run.name] = {"seconds": phases, "shares": shares, "wall_s": wall,
                         "episodes_per_hour": len(run.episodes) / wall * 3600 if wall else None}
    return {"runs": out, "quoted": QUOTED_SPLIT}


def _span(episodes: list[Trajectory]) -> float | None:
    starts = [t.started for t in episodes if t.started]
    if len(starts) < 2:
        return None
    last = max(episodes, key=lambda t: t.started or 0)
    return max(starts) + sum((last.timing or {}).values()) - min(starts)


def hacking(runs) -> dict:
    """Findings by detector and severity (with the episodes behind each), and an audit's
    task x exploit matrix."""
    by_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for run in runs:
        for t in run.episodes:
            for f in t.findings:
                by_kind[(f.get("kind", "?"), f.get("severity", "?"))].append(f"{run.name}/{t.episode_id}")
    findings = [{"detector": k, "severity": s, "count": len(ids), "episodes": ids[:50]}
                for (k, s), ids in sorted(by_kind.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    audits = {run.name: audit_matrix(run.audit) for run in runs if run.audit}
    return {"findings": findings, "audits": audits}


def audit_matrix(report: dict) -> dict:
    """An audit's rows as a task x exploit grid: each cell the exploit's advantage over doing
    nothing, whether its tests passed and which detectors caught it."""
    rows = report.get("rows", [])
    tasks = sorted({r["task"] for r in rows})
    exploits = list(dict.fromkeys(r["exploit"] for r in rows if r["exploit"] != "nop"))
    cells = {f"{r['task']}|{r['exploit']}": {"advantage": r.get("advantage"), "tests_passed": r.get("tests_passed"),
                                             "detected_by": r.get("detected_by", []), "error": r.get("error")}
             for r in rows if r["exploit"] != "nop"}
    return {"tasks": tasks, "exploits": exploits, "cells": cells,
            "exploitable": report.get("exploitable_tasks", []), "test_weak": report.get("test_weak_tasks", [])}


def failures(runs) -> dict:
    """Per run: error classes, endings and the largest bad-case clusters (with example episodes)."""
    out = {}
    for run in runs:
        _, episodes = run.evaluation()
        classes = Counter(c for t in episodes for c in ((t.evidence or {}).get("error_classes") or []))
        clusters = bad_cases(episodes, limit_per_group=3)[:30]
        for g in clusters:
            for ex in g["examples"]:
                ex["ref"] = f"{run.name}/{ex['episode_id']}"
        out[run.name] = {"error_classes": dict(classes.most_common()),
                         "endings": dict(Counter(t.ending for t in episodes).most_common()),
                         "clusters": clusters}
    return out


def command_head(command: str) -> str | None:
    """The program a shell command runs first (``cd x && make`` -> ``cd``), or None."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    words = [w for w in words if "=" not in w.split("/")[0]] or words  # VAR=1 cmd -> cmd
    return words[0].rsplit("/", 1)[-1] if words else None


def behaviour(runs) -> dict:
    """Per run: actions per episode, distinct command heads per episode and over the run (a
    policy penalised into timidity narrows here), reply lengths, format-error rate."""
    out = {}
    for run in runs:
        _, episodes = run.evaluation()
        actions, distinct, lengths, heads = [], [], [], Counter()
        replies = errors = 0
        for t in episodes:
            mine = set()
            acted = 0
            for s in t.steps:
                replies += 1
                errors += bool(s.format_error)
                lengths.append(len(s.reply))
                a = s.action or {}
                if a.get("kind") in ("command", "write"):
                    acted += 1
                if a.get("kind") == "command" and (head := command_head(a.get("command") or "")):
                    mine.add(head)
                    heads[head] += 1
                elif a.get("kind") == "write":
                    mine.add("write_file")
                    heads["write_file"] += 1
            actions.append(acted)
            distinct.append(len(mine))
        out[run.name] = {"actions_per_episode": actions, "distinct_heads_per_episode": distinct,
                         "distinct_heads": len(heads), "top_heads": dict(heads.most_common(20)),
                         "reply_chars": lengths, "format_error_rate": errors / replies if replies else None,
                         "replies": replies}
    return out


def episode_record(run_name: str, part: str, t: Trajectory) -> dict:
    """One episode as the trajectory viewer shows it (texts cut at ``TEXT_CHARS``)."""
    ev = t.evidence or {}
    instruction = next((m["content"] for m in reversed(t.prompt) if m.get("role") == "user"), "")
    flagged = any(f.get("severity") in ("medium", "high") for f in t.findings)
    return {
        "ref": f"{run_name}/{t.episode_id}", "run": run_name, "part": part, "id": t.episode_id,
        "task": t.task_id, "split": t.split, "passed": bool(t.passed), "reward": t.reward, "ending": t.ending,
        "flagged": flagged, "harness_error": is_harness_failure(t), "error": t.error,
        "main_class": main_class(t), "classes": ev.get("error_classes") or [],
        "instruction": _cut(instruction),
        "steps": [{"reply": _cut(s.reply), "action": _action(s.action), "observation": _cut(s.observation),
                   "format_error": s.format_error, "exit_code": s.exit_code, "gen_s": round(s.gen_s, 3),
                   "env_s": round(s.env_s, 3), "tokens": len(s.tokens) if s.tokens else None,
                   "prompt_tokens": s.prompt_tokens} for s in t.steps],
        "tests": [{"id": x.get("nodeid"), "outcome": x.get("outcome"), "class": x.get("error_class"),
                   "message": _cut(x.get("message") or "", 500)} for x in ev.get("tests") or []],
        "components": {k: {"weight": c.get("weight"), "value": c.get("value"), "contribution": c.get("contribution")}
                       for k, c in (t.components or {}).items() if isinstance(c, dict)},
        "findings": [{"kind": f.get("kind"), "severity": f.get("severity"), "message": _cut(f.get("message") or "", 500)}
                     for f in t.findings],
        "timing": {k: round(v, 3) for k, v in (t.timing or {}).items()},
    }


def _action(action: dict | None) -> str:
    if not action:
        return "(no action)"
    kind = action.get("kind")
    if kind == "command":
        return f"$ {action.get('command', '')}"[:TEXT_CHARS]
    if kind == "write":
        return f"write {action.get('path')} ({len(action.get('content') or '')} chars)"
    return str(kind)


def _cut(text: str, n: int = TEXT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= n else text[: n // 2] + f"\n[... {len(text) - n} characters cut ...]\n" + text[-n // 2:]


def episodes(runs) -> list[dict]:
    return [episode_record(run.name, part, t) for run in runs for part, eps in run.parts.items() for t in eps]


TOKENIZER_DIRS = ("final", "sft", "model-init", "model")
"""Where a run keeps a model's tokenizer, first found first (train: final/, its SFT warm start's sft/, model-init/)."""
EPISODE_SAMPLE = 200
"""Episodes of the runs a report's token figures read (the first ones, in the runs' order)."""


def run_tokenizer(path: Path) -> Path | None:
    """The tokenizer directory of the run at ``path``, or None."""
    for name in TOKENIZER_DIRS:
        if (path / name / "tokenizer.json").is_file() or (path / name / "tokenizer_config.json").is_file():
            return path / name
    return None


def tokens(runs, extra: Sequence[str] = ()) -> list[dict]:
    """``termrl.eval.tokenizers`` figures of each run's tokenizer and of ``extra`` tokenizers, on the
    shipped corpus and the runs' own episodes (their replies and observations, and the tokens of an
    average one): one ``Report.to_dict()`` each, ``tokenizer`` naming the run or the path."""
    specs = [(run.name, str(found)) for run in runs if (found := run_tokenizer(Path(run.path)))]
    specs += [(spec, spec) for spec in extra]
    if not specs:
        return []
    chats = [conversation(t) for t in itertools.islice((t for run in runs for t in run.episodes if t.prompt and t.steps),
                                                       EPISODE_SAMPLE)]
    texts = {**tk.corpus_texts(), **tk.episode_classes(chats)}
    return [tk.measure(tk.load_tokenizer(spec), label, texts, chats).to_dict() for label, spec in specs]
