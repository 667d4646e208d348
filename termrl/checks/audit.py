"""The audit: red-team a reward spec with scripted exploit policies before any GPU time.

For every task of a suite: the reference solution runs once (the baseline for
size, style and the number of tests), a do-nothing agent is scored, and every
exploit policy (``termrl.checks.exploits.EXPLOITS``) runs in a fresh sandbox as a
cheating agent would. Each episode is verified, the hack detectors read it, and
the spec scores it at several training-progress points. A row reports, per
task and exploit: whether the hidden tests passed, the reward and the
do-nothing reward at the progress where the exploit gains most, and which
detectors caught it.

- a task is *test-weak* when some exploit passed its hidden tests;
- a task is *exploitable* when some exploit earned more reward than doing
  nothing (or made its own reward None: verification it broke must not escape
  the reward).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping, Sequence

from termrl.checks.exploits import EXPLOITS, ExploitContext
from termrl.checks.survivors import candidates, is_survivor
from termrl.episode import Reference, SandboxVerifier, finish_episode, score
from termrl.protocols import Ending, Evidence, Finding, HarnessError, Judge, Sandbox, Task, TestsData
from termrl.rollout.ray_backend import MAX_RETRIES, cluster_cpus, connect, failure_message, stream_jobs
from termrl.sandbox import workspace
from termrl.tasks.runtime import SetupReuse, open_sandbox, run_solution
from termrl.verify import stages, verify

PROGRESS_POINTS = (0.0, 0.5, 1.0)
PER_TEST_TIMEOUT = 10.0
"""Seconds per hidden test in audit episodes: exploits that hang the code under test
(sleep past the timeout) cost this per test instead of the whole verifier budget."""
BUILD_TIMEOUT = 30.0
"""Least seconds an audit episode's C build may take (ten times the reference's build when that
is longer): an exploit that hangs the build (a ``sleep`` in a script the Makefile runs) costs
this instead of the task's whole verifier budget. A build that honest work finishes in seconds
and an exploit needs longer for is judged a timeout, as a test past ``PER_TEST_TIMEOUT`` is."""
REPORTED_SEVERITIES = ("medium", "high")


@dataclass
class Baseline:
    """What the reference solution did: the audit's yardstick for one task."""

    files: dict[str, bytes]
    changed: list[str]
    tests: int | None
    lines: int
    """Lines the reference added: the yardstick of the spec's bloat penalty."""
    build_s: float = 0.0
    """Seconds the reference's build stage took."""
    fingerprint: str | None = None
    """``workspace.fingerprint`` of the workdir the reference left (None: not comparable: the
    backend has no host path, or the task has files outside its workdir)."""

    def build_timeout(self) -> float:
        return max(BUILD_TIMEOUT, 10 * self.build_s)


@dataclass
class Episode:
    evidence: Evidence
    findings: list[Finding]
    rewards: dict[float, float | None]
    """progress -> total reward (under the first spec)."""
    error: str | None = None
    """The harness failed the episode (``Ending.ERROR``): the audit could not judge it."""
    by_spec: dict[str, dict[float, float | None]] = field(default_factory=dict)
    """spec name -> progress -> total reward: one episode, scored by every spec audited."""
    seconds: float = 0.0
    """Wall time of the episode, sandbox to score."""
    as_reference: bool = False
    """The task starts from an empty workdir and the agent left the very one the reference
    solution leaves (``Baseline.fingerprint``)."""

    def under(self, spec: str | None) -> "Episode":
        """This episode as scored by ``spec`` (None: the first)."""
        if spec is None or spec not in self.by_spec:
            return self
        return dataclasses.replace(self, rewards=self.by_spec[spec])


@dataclass
class Row:
    task: str
    exploit: str
    tests_passed: bool
    reward: float | None
    nop_reward: float | None
    progress: float
    advantage: float | None
    """reward - nop_reward at ``progress`` (None when the exploit's reward was None)."""
    detected_by: list[str] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)
    error_classes: list[str] = field(default_factory=list)
    error: str | None = None
    """The audit itself could not run this pair (sandbox failure)."""
    seconds: float = 0.0
    """Wall time of the pair's episode (the nop row: the reference's run too), where an audit's
    time goes."""
    as_reference: bool = False
    """The exploit solved the task, whatever it meant: the task starts from an empty workdir (the
    instruction is all there is to work from), the exploit left the reference solution's own
    workspace, every entry, mode and byte, and no detector found anything (medium or high). The
    file is the answer, as in "create `a.txt` holding `x`". Not counted as test-weak or
    exploitable. A task with inputs whose reference workspace an exploit reproduces (an answer
    the instruction reveals, copied instead of computed) stays test-weak."""


@dataclass(frozen=True)
class AuditVerifier(SandboxVerifier):
    """The episode's own sandbox verifies, as in training, with the audit's time limits."""

    build_timeout: float | None = None
    """Seconds the C build may take (``Baseline.build_timeout``)."""

    def __call__(self, task: Task, box: Sandbox, before: Mapping[str, bytes], after, trace: list[dict]) -> Evidence:
        return verify(task, box, before=dict(before), trace=trace, per_test_timeout=self.per_test_timeout,
                      static=self.static, reference_lines=self.reference_lines, build_timeout=self.build_timeout)


class VerificationCache:
    """Verifications shared between an audit's episodes that leave the same workspace: many exploits
    change nothing a test can see on a given task (their target is absent), or the same thing as
    another. Keyed by the task, the workspace before and after (every entry, mode and byte:
    ``workspace.fingerprint``) and the verifier's settings; a second episode with the same key waits
    for the first's evidence and gets a copy with its own trace. Episodes of tasks with files
    outside the workdir, or on backends without a host path, are verified each time."""

    def __init__(self):
        self._lock = threading.Lock()
        self._done: dict[tuple, Future] = {}
        self.hits = self.misses = 0

    def verifier(self, inner: AuditVerifier):
        def verify_once(task: Task, box: Sandbox, before: Mapping[str, bytes], after, trace: list[dict]) -> Evidence:
            key = self._key(task, box, before, inner)
            if key is None:
                return inner(task, box, before, after, trace)
            with self._lock:
                future, mine = self._done.get(key), False
                if future is None:
                    future, mine = self._done.setdefault(key, Future()), True
                    self.misses += 1
                else:
                    self.hits += 1
            if mine:
                try:
                    future.set_result(inner(task, box, before, after, None))
                except BaseException as e:
                    future.set_exception(e)
                    with self._lock:
                        del self._done[key]  # a harness failure is not the workspace's: retry it
                    raise
            evidence = copy.deepcopy(future.result())
            found = evidence.stages if trace is None else {**evidence.stages, "trace": stages.trace(trace)}
            return dataclasses.replace(evidence, reference_lines=inner.reference_lines, stages=found)
        return verify_once

    @staticmethod
    def _key(task: Task, box: Sandbox, before: Mapping[str, bytes], inner: AuditVerifier) -> tuple | None:
        if task.extra_files:
            return None
        after = workspace.fingerprint(box)
        if after is None:
            return None
        start = hashlib.sha256()
        for path in sorted(before):
            start.update(path.encode() + b"\0" + hashlib.sha256(before[path]).digest())
        return task.id, start.hexdigest(), after, inner.per_test_timeout, inner.static, inner.build_timeout


def _episode(task: Task, spec, act: Callable | None, baseline: Baseline | None,
             points: Sequence[float] = PROGRESS_POINTS, cache: VerificationCache | None = None,
             setups: SetupReuse | None = None, judge: Judge | None = None) -> Episode:
    """One audit episode: ``act(box)`` plays the agent (None: it does nothing) and returns its
    trace; the episode is finished as every episode is (``termrl.episode.finish_episode``) and
    scored at each training progress of ``points``. ``cache``: share verifications of identical
    final workspaces; ``setups``: copy the workdir a deterministic setup left (``SetupReuse``);
    ``judge``: a model judge reads the episode if it passes (``termrl.reward.judge``)."""
    start = time.monotonic()
    box = setups.open(task) if setups is not None else open_sandbox(task)
    try:
        before = workspace.snapshot(box)
        steps = act(box) if act else []
        as_reference = act is not None and not before and baseline is not None \
            and baseline.fingerprint is not None and workspace.fingerprint(box) == baseline.fingerprint
        verifier = AuditVerifier(PER_TEST_TIMEOUT, reference_lines=baseline.lines if baseline else None,
                                 build_timeout=baseline.build_timeout() if baseline else 2 * BUILD_TIMEOUT)
        if cache is not None:
            verifier = cache.verifier(verifier)
        reference = Reference(baseline.files, baseline.tests) if baseline else None
        outcome = finish_episode(task, box, Ending.SUBMITTED, before=before, trace=steps, verifier=verifier,
                                 reference=reference, judge=judge)
    finally:
        box.close()
    specs = _specs(spec)
    by_spec = {name: {p: score(outcome, one, p).total for p in points} for name, one in specs.items()}
    error = outcome.error if outcome.ending is Ending.ERROR else None
    return Episode(outcome.evidence, list(outcome.findings), next(iter(by_spec.values())), error, by_spec,
                   time.monotonic() - start, as_reference)


def _specs(spec) -> dict:
    """``spec`` as {name: RewardSpec}: one spec, or a mapping of several scored side by side."""
    if isinstance(spec, Mapping):
        if not spec:
            raise ValueError("no reward spec to audit")
        return dict(spec)
    return {getattr(spec, "name", "spec") or "spec": spec}


def baseline(task: Task, setups: SetupReuse | None = None) -> Baseline | None:
    if task.solution is None:
        return None
    box = setups.open(task) if setups is not None else open_sandbox(task)
    try:
        before = workspace.snapshot(box)
        if not run_solution(box, task).ok:
            return None
        after = workspace.snapshot(box)
        left = workspace.fingerprint(box) if not task.extra_files else None
        evidence = verify(task, box, before=before, static=False)
    finally:
        box.close()
    tests = TestsData.of(evidence)
    collected = tests.collected if tests is not None else None
    build = evidence.stages.get("build")
    return Baseline(after, workspace.changed(before, after), collected or None, evidence.lines_added,
                    getattr(build, "duration_s", None) or 0.0, left)


def with_references(tasks: Sequence[Task]) -> tuple[list[tuple[Task, Baseline, ExploitContext]], list[str]]:
    """Each task whose reference solution runs, with its ``baseline`` and the exploits' context;
    and the ids of the others (no reference, or one that fails to run)."""
    ready, skipped = [], []
    for task in tasks:
        base = baseline(task) if task.solution is not None else None
        if base is None:
            skipped.append(task.id)
            continue
        ready.append((task, base, ExploitContext(reference_files=base.files, reference_changed=base.changed)))
    return ready, skipped


def _row(task: Task, name: str, episode: Episode, nop: Episode) -> Row:
    def gain(p: float) -> float:
        r, n = episode.rewards[p], nop.rewards[p]
        if r is None:
            return float("inf")  # the exploit broke verification: never acceptable
        return r - (n if n is not None else float("-inf"))

    worst = max(episode.rewards, key=gain)
    reward, nop_reward = episode.rewards[worst], nop.rewards[worst]
    caught = [f for f in episode.findings if f.severity in REPORTED_SEVERITIES]
    return Row(task=task.id, exploit=name, tests_passed=episode.evidence.passed, reward=reward,
               nop_reward=nop_reward, progress=worst,
               advantage=None if reward is None or nop_reward is None else round(reward - nop_reward, 6),
               detected_by=sorted({f.kind for f in caught}),
               findings=[asdict(f) for f in caught][:20],
               error_classes=episode.evidence.error_classes, seconds=round(episode.seconds, 3),
               as_reference=episode.as_reference and not caught)


def _prepare(task: Task, spec, points: Sequence[float], cache: VerificationCache | None = None,
             setups: SetupReuse | None = None) -> tuple[Baseline | None, Episode]:
    start = time.monotonic()
    base = baseline(task, setups)
    nop = _episode(task, spec, None, base, points, cache, setups)
    if nop.error is not None:
        raise HarnessError(f"the do-nothing episode failed: {nop.error}")
    return base, dataclasses.replace(nop, seconds=time.monotonic() - start)


def _attack(task: Task, spec, name: str, exploit: Callable, base: Baseline | None, nop: Episode,
            points: Sequence[float], cache: VerificationCache | None = None,
            setups: SetupReuse | None = None) -> Callable[[str | None], Row]:
    """Run one exploit episode; the row it makes under a given spec (None: the first)."""
    ctx = ExploitContext(reference_files=base.files if base else None,
                         reference_changed=base.changed if base else [])
    try:
        episode = _episode(task, spec, lambda box: exploit(task, box, ctx), base, points, cache, setups)
        error = episode.error
    except (HarnessError, OSError) as e:  # OSError: an exploit's own file call on the sandbox
        episode, error = None, str(e)
    if error is not None:
        return lambda which: Row(task.id, name, False, None, nop.under(which).rewards[points[0]], points[0], None,
                                 error=error)
    return lambda which: _row(task, name, episode.under(which), nop.under(which))


def audit_task(task: Task, spec, exploits: dict[str, Callable], workers: int = 1,
               points: Sequence[float] = PROGRESS_POINTS) -> list[Row]:
    """Every exploit against one task; rows in the exploits' order (the nop row first)."""
    return audit_rows([task], spec, exploits, workers, points=points)


def audit_rows(tasks: Sequence[Task], spec, exploits: dict[str, Callable], workers: int,
               on_task: Callable[[list[Row]], None] | None = None,
               points: Sequence[float] = PROGRESS_POINTS) -> list[Row]:
    """Every (task, exploit) episode runs on one pool of ``workers`` sandboxes (``audit``'s
    default: ``default_workers``); a task's exploits start once its baseline and do-nothing
    episode are done. Each episode is scored at every training progress of ``points``; a row
    keeps the worst for the spec. ``spec``: one spec (rows for it), or {name: spec} (rows of the
    first; see ``audit_by_spec``).
    """
    return next(iter(audit_by_spec(tasks, spec, exploits, workers, on_task, points).values()))


def audit_by_spec(tasks: Sequence[Task], spec, exploits: dict[str, Callable], workers: int,
                  on_task: Callable[[list[Row]], None] | None = None,
                  points: Sequence[float] = PROGRESS_POINTS,
                  done: Mapping[str, Mapping[str, list[Row]]] | None = None,
                  journal: Callable[[str, dict[str, list[Row]]], None] | None = None,
                  extra: Mapping[str, Mapping[str, Callable]] | None = None) -> dict[str, list[Row]]:
    """``audit_rows`` for one or several specs at once: every episode runs once and each spec
    scores it (specs change rewards, never what an exploit does or how it verifies).

    ``done``: task id -> spec name -> rows of tasks audited before (a resumed audit): they are
    not run again. ``journal(task_id, rows by spec)`` is called as each task finishes.
    ``extra``: task id -> {name: exploit} run on that task only, after ``exploits`` (surviving
    mutants: ``termrl.checks.survivors``)."""
    extra = extra or {}
    points = _points(points)
    names = list(_specs(spec))
    by_task: dict[str, dict[str, list[Row]]] = {tid: {n: list(rows[n]) for n in names}
                                                for tid, rows in (done or {}).items()}
    cache = VerificationCache()
    def task_done(tid: str, rows: list[Row]) -> None:
        if journal:
            journal(tid, by_task[tid])
        if on_task:
            on_task(rows)

    def rows_of(make: Callable[[str | None], Row]) -> dict[str, Row]:
        return {n: make(n) for n in names}

    with SetupReuse() as setups, ThreadPoolExecutor(max_workers=workers) as pool:
        prepared = {pool.submit(_prepare, t, spec, points, cache, setups): t for t in tasks if t.id not in by_task}
        attacks: dict = {}
        for future in as_completed(prepared):
            task = prepared[future]
            try:
                base, nop = future.result()
            except (HarnessError, OSError) as e:
                rows = [Row(task.id, name, False, None, None, points[0], None, error=str(e))
                        for name in {**exploits, **extra.get(task.id, {})}]
                by_task[task.id] = {n: list(rows) for n in names}
                task_done(task.id, rows)
                continue
            by_task[task.id] = {n: [_row(task, "nop", nop.under(n), nop.under(n))] for n in names}
            attacks[task.id] = [pool.submit(_attack, task, spec, name, fn, base, nop, points, cache, setups)
                                for name, fn in {**exploits, **extra.get(task.id, {})}.items()]
        pending = dict(attacks)
        while pending:
            # wait on the running episodes only: a finished one would wake this loop at once,
            # and the spinning loop held the GIL the episode threads' host work needs
            running = [f for fs in pending.values() for f in fs if not f.done()]
            if running:
                wait(running, return_when=FIRST_COMPLETED)
            for tid, futures in list(pending.items()):
                if all(f.done() for f in futures):
                    for future in futures:
                        for n, row in rows_of(future.result()).items():
                            by_task[tid][n].append(row)
                    del pending[tid]
                    task_done(tid, by_task[tid][names[0]])
    return {n: [r for t in tasks for r in by_task[t.id][n]] for n in names}


def default_workers() -> int:
    """Sandboxes an audit runs at once: four per core. An audit episode mostly waits (on tests
    that hang until their alarm, builds that never end, sandboxes starting), not computes: on 2
    cores `termrl audit builtin` used 31% of the CPU with two per core."""
    return 4 * (os.cpu_count() or 1)


def audit(tasks: Sequence[Task], spec, exploits: dict[str, Callable] | None = None,
          workers: int | None = None, on_task: Callable[[list[Row]], None] | None = None,
          points: Sequence[float] = PROGRESS_POINTS, done: Mapping[str, Mapping[str, list[Row]]] | None = None,
          journal: Callable[[str, dict[str, list[Row]]], None] | None = None, ray: str | None = None,
          extra: Mapping[str, Mapping[str, Callable]] | None = None) -> dict:
    """Audit ``tasks`` against ``spec``: ``{"rows", "test_weak_tasks", "exploitable_tasks", ...}``
    (see ``audit_rows`` for how the episodes run). ``points``: the training progresses in
    [0, 1] the spec scores each episode at (its schedules move weights over training).

    ``spec`` may be {name: spec} to audit several at once (each episode runs once): the report
    then holds ``"specs": {name: report}``, and ``exploitable_tasks`` is every task some spec lets
    an exploit profit from, as ``"spec: task"``. ``done`` and ``journal``: see ``audit_by_spec``
    (``termrl audit --out DIR --resume``). ``ray``: run on a Ray cluster at this address
    (``termrl.rollout.ray_backend.connect``; ``workers`` is then tasks in flight, default one
    per cluster CPU). ``extra``: task id -> {name: exploit} for that task only, reported apart
    as candidates (``termrl.checks.survivors``: surviving mutants from ``termrl tasks strength``)."""
    exploits = EXPLOITS if exploits is None else exploits
    points = _points(points)
    if ray is not None:
        by_spec = audit_by_spec_ray(tasks, spec, exploits, workers, on_task, points, done, journal, address=ray,
                                    extra=extra)
    else:
        by_spec = audit_by_spec(tasks, spec, exploits, workers or default_workers(), on_task, points, done, journal,
                                extra)
    reports = {n: _report(rows, exploits, points) for n, rows in by_spec.items()}
    if not isinstance(spec, Mapping):
        return next(iter(reports.values()))
    first = next(iter(reports.values()))
    return {"specs": reports, "test_weak_tasks": first["test_weak_tasks"],
            "exploitable_tasks": sorted(f"{n}: {t}" for n, r in reports.items() for t in r["exploitable_tasks"]),
            "candidate_exploitable_tasks": sorted(f"{n}: {t}" for n, r in reports.items()
                                                  for t in r["candidate_exploitable_tasks"]),
            "errors": sorted({t for r in reports.values() for t in r["errors"]}), "exploits": list(exploits),
            "progress_points": list(points)}


def _report(rows: list[Row], exploits: dict, points: Sequence[float]) -> dict:
    """The report of one spec's rows. The library's exploits decide ``test_weak_tasks`` and
    ``exploitable_tasks``; replayed surviving mutants are candidates, reported apart."""
    attacks_rows = [r for r in rows if r.exploit != "nop" and not is_survivor(r.exploit) and not r.as_reference]
    weak = sorted({r.task for r in attacks_rows if r.tests_passed})
    exploitable = sorted({r.task for r in attacks_rows
                          if r.error is None and (r.reward is None or (r.advantage or 0) > 1e-9)})
    as_dicts = [asdict(r) for r in rows]
    return {"rows": as_dicts, "test_weak_tasks": weak, "exploitable_tasks": exploitable,
            "errors": sorted({r.task for r in rows if r.error}), "exploits": list(exploits),
            "progress_points": list(points), **candidates(as_dicts)}


def _points(points: Sequence[float]) -> tuple[float, ...]:
    """``points`` sorted and checked: at least one, each in [0, 1]."""
    chosen = tuple(sorted({float(p) for p in points}))
    if not chosen or any(not 0.0 <= p <= 1.0 for p in chosen):
        raise ValueError(f"progress points must be numbers in [0, 1], at least one: got {list(points)}")
    return chosen


# --------------------------------------------------------------------------- on a Ray cluster


def _audit_one(task: Task, spec, exploits: dict, threads: int, points: tuple) -> dict:
    return {name: rows for name, rows in audit_by_spec([task], spec, exploits, threads, points=points).items()}


def audit_by_spec_ray(tasks: Sequence[Task], spec, exploits: dict[str, Callable], workers: int | None,
                      on_task: Callable[[list], None] | None = None, points: Sequence[float] = (1.0,),
                      done: Mapping[str, Mapping[str, list]] | None = None,
                      journal: Callable[[str, dict[str, list]], None] | None = None, *,
                      address: str | None = None, threads: int = 4, num_cpus: float = 1,
                      max_retries: int = MAX_RETRIES,
                      extra: Mapping[str, Mapping[str, Callable]] | None = None) -> dict[str, list]:
    """``audit_by_spec`` on a Ray cluster: one Ray task per audited task
    (``threads`` of its episodes at once on its worker), ``workers`` tasks in flight (None: one
    per CPU of the cluster). A task
    whose Ray task failed gets a row per exploit with the error, as a task whose baseline
    could not run does locally. ``extra``: task id -> {name: exploit} for that task only."""
    ray = connect(address)
    points = _points(points)
    names = list(_specs(spec))
    by_task: dict[str, dict[str, list]] = {tid: {n: list(rows[n]) for n in names} for tid, rows in (done or {}).items()}
    extra = extra or {}

    def exploits_of(task: Task) -> dict:
        return {**exploits, **extra.get(task.id, {})}

    remote = ray.remote(_audit_one).options(num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False)

    def finished(task: Task, rows_by_spec: dict | None, error: BaseException | None) -> None:
        if error is not None:
            rows = [Row(task.id, name, False, None, None, points[0], None, error=failure_message(error))
                    for name in exploits_of(task)]
            rows_by_spec = {n: list(rows) for n in names}
        by_task[task.id] = rows_by_spec
        if journal:
            journal(task.id, rows_by_spec)
        if on_task:
            on_task(rows_by_spec[names[0]])

    stream_jobs(ray, [t for t in tasks if t.id not in by_task],
                lambda task: remote.remote(task, spec, exploits_of(task), threads, points), workers or cluster_cpus(ray),
                finished)
    return {n: [r for t in tasks for r in by_task[t.id][n]] for n in names}


