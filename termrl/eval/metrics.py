"""pass@k and a JSON-ready summary of an evaluation run's trajectories.

What counts, decided once here:

- A *harness failure* (``is_harness_failure``: ``traj.error`` set, ending ``error``,
  no evidence, or evidence with ``verified`` False) is not the agent's failure. It
  is counted in ``errors`` and left out of everything else that is a rate or a mean:
  the n of pass@k, rewards, components, findings, error classes.
- A task's n is its *scored* samples (episodes that are not harness failures), its
  c those that passed. A task's ``passed`` is whether any sample passed; ``pass_rate`` is c/n.
- ``pass@1`` and ``pass@k`` are means over tasks (every task weighs the same,
  whatever its n). A task with no scored sample is left out of them, with a note.
- pass@k needs n >= k for every task. When a scored task has fewer than k samples,
  that pass@k is None (for the run and the task's split) and ``notes`` says why:
  averaging over the tasks that do have k samples would measure a different task
  set than pass@1 does, silently.
- ``mean_reward`` is over scored episodes whose reward is not None; episodes with
  reward None (every harness failure, and any episode the reward spec could not
  score) are counted in ``unverified``. A missing reward is never averaged as 0.
- ``hack_rate``: scored episodes with at least one medium or high finding, over
  scored episodes.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable

from termrl.protocols import Ending, Trajectory
from termrl.tasks.families import FAMILIES
from termrl.verify.taxonomy import dominant, group_of

SUMMARY_VERSION = 1
SEVERE = ("medium", "high")
SEVERITIES = ("low", "medium", "high")
UNCLASSIFIED = "unclassified"
"""The class of a failed episode whose evidence names no taxonomy class."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of the chance that at least one of k samples passes, from n
    samples of which c passed: ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021), computed
    as a product so that large n never overflows.

    >>> pass_at_k(10, 3, 1)
    0.3
    >>> round(pass_at_k(10, 3, 5), 4)
    0.9167
    >>> pass_at_k(4, 3, 2), pass_at_k(5, 0, 2)
    (1.0, 0.0)
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"c (passed samples) must be between 0 and n={n}, got {c}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples of a task, got n={n}: "
                         f"run at least {k} samples per task, or ask for k <= {n}")
    if k == 1:
        return c / n  # what the product telescopes to, without its rounding error
    if n - c < k:
        return 1.0  # every k-subset holds a passing sample
    fail = 1.0
    for i in range(n - c + 1, n + 1):
        fail *= 1.0 - k / i
    return 1.0 - fail


def is_harness_failure(traj: Trajectory) -> bool:
    """True when the harness, not the agent, failed the episode (it is never scored)."""
    ev = traj.evidence
    return (traj.error is not None or traj.ending == Ending.ERROR.value or ev is None
            or not ev.get("verified", True))


def main_class(traj: Trajectory) -> str | None:
    """The dominant taxonomy class of an episode's evidence (compile before runtime before
    wrong answer), or None when it names none."""
    return dominant(list((traj.evidence or {}).get("error_classes") or []))


def two_proportion_z(p1: float, p2: float, n1: int, n2: int) -> tuple[float, float]:
    """(z, two-sided p-value) of the difference p2 - p1 of two proportions (pooled variance).

    >>> round(two_proportion_z(0.5, 0.6, 200, 200)[0], 2)
    2.01
    """
    pooled = (p1 * n1 + p2 * n2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 0.0, 1.0
    z = (p2 - p1) / se
    return z, math.erfc(abs(z) / math.sqrt(2))


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p-value: the discordant pairs (failed -> passed: ``gained``,
    passed -> failed: ``lost``) against Binomial(gained + lost, 1/2).

    >>> round(mcnemar_exact(14, 0), 6)
    0.000122
    """
    n = gained + lost
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(before: Iterable[Trajectory], after: Iterable[Trajectory]) -> dict | None:
    """Two evaluations of the same episodes (same episode ids: same tasks, seeds and sample
    indices), compared episode by episode: ``episodes`` (ids both scored), ``gained`` (failed
    before, passed after), ``lost``, ``mcnemar_p`` (exact), ``gained_ids``, ``lost_ids``.
    Harness failures on either side leave the pair out. None when no episode is in both."""
    b = {t.episode_id: bool(t.passed) for t in before if not is_harness_failure(t)}
    a = {t.episode_id: bool(t.passed) for t in after if not is_harness_failure(t)}
    common = [k for k in b if k in a]
    if not common:
        return None
    gained = sorted(k for k in common if a[k] and not b[k])
    lost = sorted(k for k in common if b[k] and not a[k])
    return {"episodes": len(common), "gained": len(gained), "lost": len(lost),
            "mcnemar_p": mcnemar_exact(len(gained), len(lost)), "gained_ids": gained, "lost_ids": lost}


def passed_fraction(trajectories: Iterable[Trajectory]) -> tuple[int, int]:
    """(passed, scored): episodes that passed, of those the harness did not fail."""
    scored = [t for t in trajectories if not is_harness_failure(t)]
    return sum(t.passed for t in scored), len(scored)


def summarize(trajectories: Iterable[Trajectory], ks: Iterable[int] = (1,)) -> dict:
    """A JSON-ready summary of a run; the module docstring says what counts where.

    Keys: ``version``, ``pass@1``, ``pass@k`` ({"k": value}), ``episodes``, ``errors``,
    ``unverified``, ``mean_reward``, ``components``, ``hack_rate``, ``findings``,
    ``error_classes``, ``error_groups``, ``endings``, ``splits``, ``families``, ``tasks``, ``notes``,
    ``judge`` (``_judged``).
    ``families``: the same as ``splits`` for each seeded family at each level present
    (``py-function``, ``py-function@1``; see ``family_of``), with ``passed``/``scored`` episodes
    and the 95% Wilson interval of that rate (pass@1 itself when every task has the same
    number of samples).
    """
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"ks must be positive integers, got {ks}: e.g. ks=(1, 5)")
    trajs = list(trajectories)
    by_task: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
    for t in trajs:
        by_task[(t.task_id, t.split)].append(t)
    tasks = [_task(tid, split, sorted(eps, key=lambda t: t.sample), ks)
             for (tid, split), eps in sorted(by_task.items())]
    scored = [t for t in trajs if not is_harness_failure(t)]
    rewards = [t.reward for t in scored if t.reward is not None]
    failed = [t for t in scored if not t.passed]
    classes = Counter(main_class(t) or UNCLASSIFIED for t in failed)
    hack_rate, findings = _findings(scored)
    splits = {}
    for split in sorted({t["split"] for t in tasks}):
        in_split = [t for t in tasks if t["split"] == split]
        splits[split] = {"pass@1": _mean_passed(in_split), "pass@k": _mean_pass_k(in_split, ks),
                         "episodes": sum(t["episodes"] for t in in_split),
                         "errors": sum(t["errors"] for t in in_split), "tasks": len(in_split)}
    families = {}
    for name in sorted({family_of(t["id"]) for t in tasks} - {None}):
        mine = [t for t in tasks if family_of(t["id"]) == name]
        n, c = sum(t["samples"] for t in mine), sum(round(t["pass_rate"] * t["samples"]) for t in mine
                                                      if t["samples"])
        families[name] = {"pass@1": _mean_passed(mine), "pass@k": _mean_pass_k(mine, ks),
                          "episodes": sum(t["episodes"] for t in mine),
                          "errors": sum(t["errors"] for t in mine), "tasks": len(mine),
                          "passed": c, "scored": n, "interval": list(wilson(c, n)) if n else None}
    return {
        "version": SUMMARY_VERSION,
        "pass@1": _mean_passed(tasks),
        "pass@k": _mean_pass_k(tasks, ks),
        "episodes": len(trajs),
        "errors": len(trajs) - len(scored),
        "unverified": sum(t.reward is None for t in trajs),
        "mean_reward": _mean(rewards),
        "components": _components(scored),
        "hack_rate": hack_rate,
        "findings": findings,
        "error_classes": dict(classes.most_common()),
        "error_groups": dict(Counter(_group(c) for c in classes.elements()).most_common()),
        "endings": dict(Counter(t.ending for t in trajs).most_common()),
        "splits": splits,
        "families": families,
        "tasks": tasks,
        "notes": _notes(tasks, ks),
        "judge": _judged(scored),
    }


def _judged(scored: list[Trajectory]) -> dict | None:
    """What a model judge said of the passing episodes (``termrl.reward.judge``): ``judged``,
    ``verdicts`` (verdict -> episodes) and ``errors`` (no verdict); None where no judge ran."""
    stages = [((t.evidence or {}).get("stages") or {}).get("judge") for t in scored]
    stages = [s for s in stages if s]
    if not stages:
        return None
    verdicts = Counter(s["data"].get("verdict") for s in stages if s.get("status") == "ok")
    return {"judged": len(stages), "verdicts": dict(verdicts.most_common()),
            "errors": sum(s.get("status") != "ok" for s in stages)}


def family_of(task_id: str) -> str | None:
    """``FAMILY`` or ``FAMILY@LEVEL`` of a seeded family's task id (``py-function@1-1000003``),
    None for any other task."""
    name, _, seed = task_id.rpartition("-")
    return name if seed.isdigit() and name.partition("@")[0] in FAMILIES else None


def wilson(passed: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% at z=1.96); sound at small n and at 0 or n."""
    if n <= 0:
        raise ValueError("wilson needs n >= 1")
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _task(task_id: str, split: str, eps: list[Trajectory], ks: list[int]) -> dict:
    scored = [t for t in eps if not is_harness_failure(t)]
    n, c = len(scored), sum(t.passed for t in scored)
    classes = Counter(main_class(t) or UNCLASSIFIED for t in scored if not t.passed)
    findings = Counter((f["kind"], f["severity"]) for t in scored for f in t.findings)
    comps = _components(scored)
    names = dict.fromkeys(name for t in scored for name in t.components)
    return {
        "id": task_id,
        "split": split,
        "passed": c > 0 if n else None,
        "pass_rate": pass_at_k(n, c, 1) if n else None,
        "pass@k": {str(k): pass_at_k(n, c, k) if n >= k else None for k in ks},
        "samples": n,
        "episodes": len(eps),
        "errors": len(eps) - n,
        "reward": _mean([t.reward for t in scored if t.reward is not None]),
        "components": {name: comps[name]["value"] if name in comps else None for name in names},
        "findings": [{"kind": kind, "severity": sev, "count": count} for (kind, sev), count in
                     sorted(findings.items(), key=lambda kv: (-_severity(kv[0][1]), kv[0][0]))],
        "error_class": classes.most_common(1)[0][0] if classes else None,
    }


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _mean_passed(tasks: list[dict]) -> float | None:
    return _mean([t["pass_rate"] for t in tasks if t["samples"]])


def _mean_pass_k(tasks: list[dict], ks: list[int]) -> dict[str, float | None]:
    out = {}
    for k in ks:
        values = [t["pass@k"][str(k)] for t in tasks if t["samples"]]
        out[str(k)] = None if None in values else _mean(values)
    return out


def _components(scored: list[Trajectory]) -> dict[str, dict]:
    """name -> mean value and mean contribution over the episodes where its value is not None."""
    values: dict[str, list[dict]] = defaultdict(list)
    for t in scored:
        for name, comp in t.components.items():
            if comp.get("value") is not None:
                values[name].append(comp)
    return {name: {"value": _mean([c["value"] for c in cs]),
                   "contribution": _mean([c["contribution"] for c in cs if c.get("contribution") is not None]),
                   "episodes": len(cs)}
            for name, cs in sorted(values.items())}


def _findings(scored: list[Trajectory]) -> tuple[float | None, dict[str, dict]]:
    """(hack rate, kind -> {count, episodes, rate, by_severity}) over scored episodes."""
    kinds: dict[str, dict] = {}
    for t in scored:
        for kind in dict.fromkeys(f["kind"] for f in t.findings):
            entry = kinds.setdefault(kind, {"count": 0, "episodes": 0, "rate": None,
                                            "by_severity": dict.fromkeys(SEVERITIES, 0)})
            entry["episodes"] += 1
        for f in t.findings:
            kinds[f["kind"]]["count"] += 1
            by = kinds[f["kind"]]["by_severity"]
            by[f["severity"]] = by.get(f["severity"], 0) + 1
    for entry in kinds.values():
        entry["rate"] = entry["episodes"] / len(scored)
    hacked = sum(any(f["severity"] in SEVERE for f in t.findings) for t in scored)
    return (hacked / len(scored) if scored else None), dict(sorted(kinds.items()))


def _severity(severity: str) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else -1


def _group(error_class: str) -> str:
    return UNCLASSIFIED if error_class == UNCLASSIFIED else group_of(error_class)


def _notes(tasks: list[dict], ks: list[int]) -> list[str]:
    notes = []
    empty = [t["id"] for t in tasks if not t["samples"]]
    if empty:
        notes.append(f"{len(empty)} task(s) had no scored sample (every episode a harness failure) and are "
                     f"left out of pass@1 and pass@k: {', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}")
    for k in ks:
        short = [t["id"] for t in tasks if 0 < t["samples"] < k]
        if short:
            notes.append(f"pass@{k} is None: {len(short)} task(s) have fewer than {k} scored samples "
                         f"(e.g. {short[0]}); run more samples per task or ask for a smaller k")
    return notes
