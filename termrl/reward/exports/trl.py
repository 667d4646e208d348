"""A reward spec as TRL ``GRPOTrainer`` reward functions: one function per component, one scorer.

Two ways to play a completion, one adapter:

- **Episodes** (``environment_factory``, multi-turn): the rollout's own ``TerminalToolEnv``
  (``termrl.reward.exports.trl_env``) played its tool calls in a sandbox while TRL generated;
  the scorer finishes each episode (verification, hack detectors) and scores it::

      funcs = trl_reward_funcs("staged", num_generations=8)
      GRPOTrainer(model, reward_funcs=funcs, environment_factory=EnvironmentFactory(), ...)

- **Completions** (no environments): ``evaluate(prompt, completion, row)`` turns one completion
  (its text: the assistant messages joined, for chat completions) and its dataset row into
  ``(Evidence | None, findings)``::

      funcs = trl_reward_funcs(load_spec("coderl"), code_task_evaluator(load_humaneval()))
      GRPOTrainer(model, reward_funcs=funcs, train_dataset=ds, args=GRPOConfig(...))

  The dataset needs a ``prompt`` column and whatever ``evaluate`` reads (a ``task_id`` column
  for ``code_task_evaluator``).

``termrl train`` uses the first (``termrl.training.grpo``); GRPO on one reply per episode is
the same path with one turn (``max_tool_calling_iterations=0``: the reply's tool calls run when
the episode is finished, ``trl_env.pending_calls``).

How the weights work with TRL
-----------------------------
Each function is named after its component (``__name__`` is ``termrl/<name>``),
so TRL logs ``rewards/termrl/<name>/mean`` and ``.../std`` per component. Each returns
the component's *weighted* contribution ``weight(progress) * value``: the spec's
weights and schedules are already applied. TRL multiplies each function by
``GRPOConfig.reward_weights`` (default 1.0 each) and sums, so leave
``reward_weights`` unset to train on exactly ``Reward.total``. This holds for
TRL's default ``multi_objective_aggregation="sum_then_normalize"``;
``"normalize_then_sum"`` normalizes each component on its own and changes the
spec's balance. Progress is ``trainer_state.global_step / max_steps``.

A completion whose verification failed (``Reward.total`` None: the sandbox or
the verifier failed, not the policy) gets None from *every* function, and is
counted apart: the scorer keeps the running count in ``.scorer.unverified``. TRL turns
None into NaN, leaves it out of each function's mean, and a row that is NaN in
every function is *unscorable*: it is left out of the group baseline and its
advantage is 0, so it never trains the policy. A component without a value on
a verified completion returns 0.0, so the functions always sum to the total.

Each completion is finished once per batch although TRL calls N functions: the first
function finishes the batch and the others reuse it (a small cache keyed by the batch: its
episodes' ids, or its completions). Group terms see ``(length, passed)`` of the verified
completions of the same group; lengths are ``len(completion_ids[i])``, groups the
``num_generations`` consecutive rollouts of a prompt (or equal prompts, or task ids, when
the batch does not divide). Under a launcher every rank scores the whole batch (a group may
span ranks) and keeps its own slice.

Logged per batch, by the scorer's first callback (``BatchLog``), through TRL's
``log_metric``: ``termrl/zero_variance_groups`` (groups whose rollouts all earned the same
total: they train nothing), ``termrl/zero_variance_groups_cumulative`` and
``termrl/unverified_fraction``; with ``log_completions``, each rollout's ending and findings
as columns of TRL's completions table. ``on_batch`` callbacks get every ``ScoredBatch``
(``termrl train`` stores the rollouts).

Rewards ahead: a completion's episode can be finished before TRL asks for the batch's
rewards. ``scorer.start(prompt, completion, row)`` evaluates a completion in the background
and ``scorer.finish_ahead(env, completion)`` finishes an episode there; the reward call takes
those results (``termrl.training.ahead``'s trainer starts each one as soon as the model has
finished its completion, while the rest of the batch still generates).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from termrl.distributed import SINGLE, World, current
from termrl.episode import Phase, group_keys, score_batch, zero_variance
from termrl.protocols import Ending, Evidence, Finding, Outcome, Reward
from termrl.reward.exports.codegen import code_task_evaluator
from termrl.reward.exports.trl_env import TerminalToolEnv, episode_outcome, pending_calls
from termrl.reward.spec import RewardSpec, as_spec

Evaluate = Callable[[Any, str, dict], "tuple[Evidence | None, Sequence[Finding]]"]
"""(prompt, completion text, dataset row) -> (evidence or None, findings)."""

NOT_COLUMNS = frozenset({"trainer_state", "log_extra", "log_metric", "environments", "completion_ids"})
"""Keyword arguments TRL passes that are not dataset columns."""


def reward_row(example: Mapping[str, Any]) -> dict:
    """The row ``evaluate`` sees for one of TRL's batch ``inputs``: its dataset columns but the
    prompt and completion (TRL passes those apart)."""
    return {k: v for k, v in example.items() if k not in NOT_COLUMNS and k not in ("prompt", "completion")}


def completion_text(completion: Any) -> str:
    """A completion as text: a string as is; chat messages -> their assistant contents joined.

    >>> completion_text([{"role": "assistant", "content": "x = 1"}])
    'x = 1'
    """
    if isinstance(completion, str):
        return completion
    parts = []
    for message in completion:
        if message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content") or ""
        if not isinstance(content, str):  # content blocks: [{"type": "text", "text": ...}]
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        parts.append(content)
    return "\n".join(parts)


def training_progress(trainer_state: Any) -> float:
    """``global_step / max_steps`` of a transformers ``TrainerState``, in [0, 1]; 0 without one."""
    max_steps = getattr(trainer_state, "max_steps", 0) or 0
    if max_steps <= 0:
        return 0.0
    return min(1.0, max(0.0, (getattr(trainer_state, "global_step", 0) or 0) / max_steps))


def component_contribution(reward: Reward, component: str) -> float | None:
    """What one reward function returns for ``reward``: the component's weighted contribution,
    0.0 when it has no value on a verified episode, None when the episode is unverified.

    >>> from termrl.protocols import ComponentScore
    >>> reward = Reward(1.0, {"outcome": ComponentScore(1.0, 1.0, 1.0), "style": ComponentScore(1.0)})
    >>> component_contribution(reward, "style")
    0.0
    """
    if reward.total is None:
        return None
    contribution = reward.components[component].contribution
    return 0.0 if contribution is None else float(contribution)


def as_outcome(evidence: Evidence | None, findings: Sequence[Finding]) -> Outcome:
    """An evaluator's ``(evidence, findings)`` as the one-reply episode's ``Outcome``."""
    if evidence is None:
        evidence = Evidence("", verified=False, verify_error="the evaluator returned no evidence")
    return Outcome(Ending.SUBMITTED, evidence, tuple(findings))


@dataclass
class ZeroVarianceStats:
    """Groups (the ``num_generations`` rollouts of one prompt) whose totals have zero variance."""

    groups: int = 0
    """Groups scored since the start."""
    zero: int = 0
    """Of them, groups that carry no learning signal: fewer than two verified rollouts, or all
    verified rollouts with the same total (GRPO's advantages are then all 0)."""
    last_groups: int = 0
    last_zero: int = 0
    """The same counts for the last generation batch."""

    def update(self, totals: Sequence[float | None], keys: Sequence[Any],
               num_generations: int | None) -> None:
        """Count the groups of one batch (``termrl.episode.group_keys``: consecutive runs of
        ``num_generations`` rollouts, or equal ``keys`` when the batch does not divide)."""
        self.last_groups, self.last_zero = zero_variance(totals, group_keys(keys, num_generations))
        self.groups += self.last_groups
        self.zero += self.last_zero

    @property
    def fraction(self) -> float:
        """Cumulative fraction of zero-variance groups."""
        return self.zero / self.groups if self.groups else 0.0


@dataclass(frozen=True)
class ScoredBatch:
    """One generation batch, finished and scored: what the scorer's callbacks receive."""

    environments: list[TerminalToolEnv] | None
    """The rollouts' environments, in TRL's order (None: completions scored by ``evaluate``)."""
    outcomes: list[Outcome]
    """Each rollout's finished episode."""
    rewards: list[Reward]
    """Each rollout's reward at the batch's progress (``total`` None: the harness failed)."""
    groups: list[Any]
    """Each rollout's group key (the same for the rollouts of one prompt)."""
    trainer_state: Any
    """TRL's ``TrainerState`` (``global_step``, ``max_steps``), or None."""
    log_metric: Callable[[str, float], None] | None = None
    """TRL's per-step metric logger (averaged over a logging step), when TRL passes one."""
    log_extra: Callable[[str, list], None] | None = None
    """TRL's completions-table column logger (``log_completions=True``), when TRL passes one."""
    world: World = SINGLE
    """The run's processes: under a launcher, this rank holds the batch's rollouts from ``offset``."""
    offset: int = 0
    """Where this rank's rollouts start in the whole batch (TRL's rank-major order)."""
    batch_totals: list[float | None] | None = None
    """Every rank's rollouts' totals, the whole batch (None: ``rewards`` are the whole batch)."""
    batch_groups: list[Any] | None = None
    """Every rank's rollouts' group keys, the whole batch (None: ``groups`` are)."""


class BatchLog:
    """The scorer's logging callback: zero-variance groups, the unverified fraction, and the
    endings and findings of each rollout as columns of TRL's completions table."""

    def __init__(self):
        self.stats = ZeroVarianceStats()

    def __call__(self, batch: ScoredBatch) -> None:
        totals = batch.batch_totals if batch.batch_totals is not None else [r.total for r in batch.rewards]
        groups = batch.batch_groups if batch.batch_groups is not None else batch.groups
        self.stats.update(totals, groups, num_generations=None)
        if batch.log_metric is not None:  # TRL averages each metric over a logging step
            last = self.stats.last_zero / max(1, self.stats.last_groups)
            batch.log_metric("termrl/zero_variance_groups", last)
            batch.log_metric("termrl/zero_variance_groups_cumulative", self.stats.fraction)
            batch.log_metric("termrl/unverified_fraction",
                             sum(not o.verified for o in batch.outcomes) / max(1, len(batch.outcomes)))
        if batch.log_extra is not None:
            batch.log_extra("termrl/ending", [o.ending.value for o in batch.outcomes])
            batch.log_extra("termrl/findings", [",".join(f.kind for f in o.findings) for o in batch.outcomes])


class BatchScorer:
    """Finishes and scores each generation batch once; shared by one spec's reward functions.

    ``evaluate``: how a completion is played when TRL passes no ``environments`` (None: the
    batch must come with them). ``num_generations``: the group size (None: equal prompts or
    task ids form a group). ``workers``: episodes finished at once, in threads.
    ``max_tool_calling_iterations``: the trainer's cap on tool rounds (``pending_calls``).
    ``phase``: reward time goes to its ``reward`` phase. ``callbacks``: ``(ScoredBatch) ->
    None``, called once per batch, in order, after the scorer's own ``BatchLog``.
    """

    def __init__(self, spec: RewardSpec, evaluate: Evaluate | None = None, *, num_generations: int | None = None,
                 workers: int = 1, cache_size: int = 4, phase: Phase | None = None,
                 callbacks: Sequence[Callable[[ScoredBatch], None]] = (),
                 max_tool_calling_iterations: int | None = None):
        if workers < 1:
            raise ValueError(f"workers must be 1 or more, got {workers}")
        self.spec, self.evaluate, self.cache_size, self.workers = spec, evaluate, cache_size, workers
        self.num_generations, self.phase = num_generations, phase
        self.max_tool_calling_iterations = max_tool_calling_iterations
        self.log = BatchLog()
        """The first callback: logs each batch and counts its zero-variance groups."""
        self.stats: ZeroVarianceStats = self.log.stats
        """The run's zero-variance counts (``BatchLog.stats``)."""
        self.callbacks = [self.log, *callbacks]
        self._cache: OrderedDict[tuple, dict] = OrderedDict()
        self.evaluations = 0
        """Completions played, in all: ``evaluate`` calls, or episodes finished."""
        self.unverified = 0
        """Of the completions scored, how many could not be verified (reward None): counted apart."""
        self.taken_ahead = 0
        """Of the completions scored, how many took a result started ahead (``start``, ``finish_ahead``)."""
        self._ahead: dict[tuple, deque[Future]] = {}
        self._ahead_lock = threading.Lock()
        self._ahead_pool: ThreadPoolExecutor | None = None
        self._finished_ahead: set[int] = set()
        self._finishing: dict[int, Future] = {}
        """Episode id -> its finish started ahead (``finish_ahead``), until a reward call takes it."""

    def __getstate__(self):  # neither the cache nor the work started ahead travels to another process
        state = {**self.__dict__, "_cache": OrderedDict(), "_ahead": {}, "_ahead_pool": None,
                 "_finished_ahead": set(), "_finishing": {}}
        del state["_ahead_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state, _ahead_lock=threading.Lock())

    # ------------------------------------------------------------------ ahead

    def _submit(self, fn, *args) -> Future:
        with self._ahead_lock:
            if self._ahead_pool is None:
                self._ahead_pool = ThreadPoolExecutor(self.workers, thread_name_prefix="termrl-reward-ahead")
            return self._ahead_pool.submit(fn, *args)

    def start(self, prompt, completion, row: dict) -> None:
        """Start evaluating one completion now, in one of ``workers`` background threads.

        The batch's reward call takes the result for the same prompt, completion text and row
        (one started evaluation per occurrence: a completion sampled twice is evaluated twice,
        as without ``start``) and evaluates only what was not started. An exception ``evaluate``
        raised is raised there."""
        text = completion_text(completion)
        future = self._submit(self._evaluate, prompt, text, row)
        with self._ahead_lock:
            self.evaluations += 1
            self._ahead.setdefault((repr(prompt), text, repr(row)), deque()).append(future)

    def finish_ahead(self, env: TerminalToolEnv, completion) -> None:
        """Finish ``env``'s episode now, in a background thread, with the calls ``completion`` (the
        rollout's messages as decoded ahead) leaves pending. The reward call then reads that
        outcome; had TRL decoded the last reply otherwise, the episode is played again with
        TRL's calls (``TerminalToolEnv.replayed``): it costs time, never a wrong reward."""
        future = self._submit(episode_outcome, env, pending_calls(completion, self.max_tool_calling_iterations))
        with self._ahead_lock:
            self._finished_ahead.add(env.episode)
            self._finishing[env.episode] = future

    def forget_started(self) -> None:
        """Drop the evaluations started ahead that no reward call took (they still finish); an
        episode finish started ahead and not taken is cancelled, or waited for if it runs, so it
        can never reach the episode TRL resets its environment to next."""
        with self._ahead_lock:
            self._ahead.clear()
            self._finished_ahead.clear()
            finishing, self._finishing = self._finishing, {}
        for future in finishing.values():
            if not future.cancel():
                future.exception()

    def close(self) -> None:
        """Wait for the work started ahead and stop its threads; ``start`` opens new ones."""
        with self._ahead_lock:
            pool, self._ahead_pool = self._ahead_pool, None
            self._ahead.clear()
            self._finished_ahead.clear()
            self._finishing.clear()
        if pool is not None:
            pool.shutdown(wait=True)

    def _take(self, prompt, text: str, row: dict) -> Future | None:
        """The oldest evaluation started for this prompt, completion text and row, or None."""
        key = (repr(prompt), text, repr(row))
        with self._ahead_lock:
            started = self._ahead.get(key)
            if not started:
                return None
            future = started.popleft()
            if not started:
                del self._ahead[key]
            return future

    # ------------------------------------------------------------------ the batch

    def rewards(self, prompts: list, completions: list, kwargs: Mapping[str, Any]) -> list[Reward]:
        """The rewards of one batch (TRL's reward-function arguments) at its training progress."""
        environments = kwargs.get("environments")
        n = len(completions)
        if environments is not None:
            key: tuple = ("episodes", *(env.episode for env in environments))
            keys = [env.task_id for env in environments]
        elif self.evaluate is None:
            raise ValueError("these reward functions play each rollout's own environment: pass "
                             "environment_factory=EnvironmentFactory(...) to GRPOTrainer, or give "
                             "trl_reward_funcs an evaluate function")
        else:
            texts = [completion_text(c) for c in completions]
            rows = [{k: v[i] for k, v in kwargs.items()
                     if k not in NOT_COLUMNS and isinstance(v, (list, tuple)) and len(v) == n} for i in range(n)]
            # the same list object across the N calls of one batch; the texts guard against a reused id
            key = (id(completions), tuple(texts), tuple(repr(p) for p in prompts), tuple(repr(r) for r in rows))
            keys = [repr(p) for p in prompts]
        entry = self._cache.get(key)
        if entry is None:
            outcomes = (self._finish(environments, completions) if environments is not None
                        else [as_outcome(*r) for r in self._evaluate_all(prompts, texts, rows)])
            self.unverified += sum(not o.verified for o in outcomes)
            entry = self._cache[key] = {"outcomes": outcomes, "rewards": {}}
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        progress = training_progress(kwargs.get("trainer_state"))
        ids = kwargs.get("completion_ids")
        lengths = tuple(len(x) for x in ids) if ids is not None else (None,) * n
        if (progress, lengths) in entry["rewards"]:
            return entry["rewards"][progress, lengths]
        world = current()
        # Under a launcher each rank holds a slice of TRL's batch and a group may span ranks: every
        # rank scores the whole batch (rank-major, TRL's order) and keeps its own slice.
        everyone = world.gather((keys, entry["outcomes"], lengths))
        offset = sum(len(k) for k, _, _ in everyone[:world.rank])
        groups = group_keys([k for ks, _, _ in everyone for k in ks], self.num_generations)
        whole = score_batch(self.spec, [o for _, outs, _ in everyone for o in outs], groups, progress,
                            [length for _, _, ls in everyone for length in ls])
        rewards = whole[offset:offset + n]
        first = not entry["rewards"]
        entry["rewards"][progress, lengths] = rewards
        if first:
            log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
            scored = ScoredBatch(list(environments) if environments is not None else None, entry["outcomes"],
                                 rewards, groups[offset:offset + n], kwargs.get("trainer_state"),
                                 log_metric if callable(log_metric) else None,
                                 log_extra if callable(log_extra) else None, world=world, offset=offset,
                                 batch_totals=[r.total for r in whole], batch_groups=groups)
            for callback in self.callbacks:
                callback(scored)
        return rewards

    def _finish(self, environments: Sequence[TerminalToolEnv], completions: list) -> list[Outcome]:
        pending = [pending_calls(c, self.max_tool_calling_iterations) for c in completions]
        with self._ahead_lock:
            started = [self._finishing.pop(env.episode, None) for env in environments]
        for env, future in zip(environments, started, strict=True):
            if future is None:
                continue
            if future.cancel():  # still queued: this call finishes it, with TRL's calls
                with self._ahead_lock:
                    self._finished_ahead.discard(env.episode)
            else:  # running or done: wait, so the episode is finished once, before it is read
                future.exception()
        with self._ahead_lock:
            self.taken_ahead += sum(env.episode in self._finished_ahead for env in environments)
            self.evaluations += sum(env.episode not in self._finished_ahead for env in environments)
        if self.workers > 1 and len(environments) > 1:  # each episode's sandbox stays in one thread
            with ThreadPoolExecutor(min(self.workers, len(environments))) as pool:
                return list(pool.map(episode_outcome, environments, pending))
        return [episode_outcome(env, calls) for env, calls in zip(environments, pending, strict=True)]

    def _evaluate_all(self, prompts: list, texts: list[str], rows: list[dict]) -> list[tuple]:
        started = [self._take(p, t, r) for p, t, r in zip(prompts, texts, rows, strict=True)]
        todo = [i for i, future in enumerate(started) if future is None]
        self.taken_ahead += len(texts) - len(todo)
        self.evaluations += len(todo)
        args = [(prompts[i], texts[i], rows[i]) for i in todo]
        if self.workers > 1 and len(todo) > 1:
            # each evaluation opens, uses and closes its sandbox within one thread
            with ThreadPoolExecutor(min(self.workers, len(todo))) as pool:
                fresh = list(pool.map(self._evaluate, *zip(*args, strict=True)))
        else:
            fresh = [self._evaluate(*a) for a in args]
        results = dict(zip(todo, fresh, strict=True))
        return [results[i] if future is None else future.result() for i, future in enumerate(started)]

    def _evaluate(self, prompt, text: str, row: dict) -> tuple[Evidence | None, tuple[Finding, ...]]:
        evidence, findings = self.evaluate(prompt, text, row)
        return evidence, tuple(findings)


class ComponentReward:
    """One component of a spec as a TRL reward function (a picklable callable with a ``__name__``)."""

    def __init__(self, scorer: BatchScorer, component: str, name: str | None = None):
        self.scorer, self.component = scorer, component
        self.__name__ = name or component
        """What TRL logs it as: ``rewards/<__name__>/mean``."""

    def __call__(self, prompts: list, completions: list, **kwargs) -> list[float | None]:
        phase = self.scorer.phase
        with phase("reward") if phase else contextlib.nullcontext():  # verification and detection nest inside
            rewards = self.scorer.rewards(prompts, completions, kwargs)
        return [component_contribution(r, self.component) for r in rewards]

    def __repr__(self) -> str:
        return f"ComponentReward({self.component!r})"


def trl_reward_funcs(spec: RewardSpec | str, evaluate: Evaluate | None = None, workers: int = 1,
                     cache_size: int = 4, prefix: str = "termrl/", *, num_generations: int | None = None,
                     max_tool_calling_iterations: int | None = None, accountant=None,
                     on_batch: Callable[[ScoredBatch], None] | None = None) -> list[ComponentReward]:
    """One TRL reward function per component of ``spec``, in ``spec.component_names`` order,
    sharing one ``BatchScorer`` (``funcs[0].scorer``; its ``stats`` are the zero-variance counts).

    ``spec``: a ``RewardSpec``, or a preset name / TOML path for ``load_spec``.
    ``evaluate``: ``(prompt, completion_text, row) -> (Evidence | None, findings)``,
    e.g. ``code_task_evaluator(tasks)``, for a trainer without environments; its exceptions
    propagate (a missing column is a bug to fix, not a reward). None: the trainer's
    ``environment_factory`` (``trl_env.EnvironmentFactory``) plays the episodes.
    ``workers``: completions of a batch played at once, in threads (``evaluate`` must be
    thread-safe; the code evaluator is). ``cache_size``: batches kept scored. ``prefix``: put
    before each component name in ``__name__``, so TRL logs ``rewards/termrl/outcome/mean``.
    ``num_generations``: GRPO's group size (``GRPOConfig.num_generations``).
    ``max_tool_calling_iterations``: the same field of the ``GRPOConfig`` (the calls of a reply
    at the cap run when its episode is finished). ``accountant``: reward time goes to its
    ``reward`` phase. ``on_batch``: called with every ``ScoredBatch``.
    """
    spec = as_spec(spec)
    phase = accountant.phase if accountant is not None else None
    scorer = BatchScorer(spec, evaluate, num_generations=num_generations, workers=workers, cache_size=cache_size,
                         phase=phase, callbacks=[on_batch] if on_batch else [],
                         max_tool_calling_iterations=max_tool_calling_iterations)
    return [ComponentReward(scorer, name, prefix + name) for name in spec.component_names]


__all__ = ["BatchLog", "BatchScorer", "ComponentReward", "ScoredBatch", "ZeroVarianceStats", "as_outcome",
           "code_task_evaluator", "completion_text", "component_contribution", "reward_row", "training_progress",
           "trl_reward_funcs"]
