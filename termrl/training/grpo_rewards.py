"""GRPO's rewards over termrl environments: one episode scorer per training run, thin views per component.

TRL calls every reward function with the same generation batch; here they are views of one
``EpisodeScorer`` that ``train_grpo`` owns:

- The first view to ask finishes every episode of the batch once (``episode_outcome``, in
  ``workers`` threads) and scores them at the batch's training progress
  (``global_step / max_steps``) with ``termrl.episode.score_batch``: the length of each
  rollout is ``len(completion_ids[i])``, its group the ``num_generations`` rollouts of its
  prompt. The batch is keyed on the episode ids of its environments, so the other views
  read the same rewards.
- Each view (``ComponentView``, ``__name__`` ``termrl/<component>``) returns its component's
  weighted contribution; they sum to ``Reward.total``. A rollout the harness failed gets
  None from every view (TRL then gives it advantage 0).
- Once per scored batch the scorer calls its callbacks with a ``ScoredBatch``: ``BatchLog``
  logs the zero-variance groups, the unverified fraction and the endings and findings
  columns through TRL's ``log_metric`` / ``log_extra``; ``termrl train`` stores the rollouts.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from termrl.distributed import SINGLE, World, current
from termrl.episode import Phase, group_keys, score_batch, zero_variance
from termrl.protocols import Outcome, Reward
from termrl.reward.exports.trl import component_contribution, training_progress
from termrl.reward.spec import RewardSpec, as_spec
from termrl.training.grpo_env import TerminalToolEnv, episode_outcome


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

    environments: list[TerminalToolEnv]
    """The rollouts' environments, in TRL's order."""
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


class EpisodeScorer:
    """Finishes and scores each generation batch once, keyed on its episodes' ids.

    ``spec``: the ``RewardSpec``. ``num_generations``: the group size (None:
    group by task). ``workers``: episodes finished at once, in threads. ``phase``: reward
    time (finishing and scoring, less the verification and detection nested in it) goes to its
    ``reward`` phase. ``callbacks``: ``(ScoredBatch) -> None``, called once
    per batch, in order, after the scorer's own ``BatchLog``.
    """

    def __init__(self, spec: RewardSpec, num_generations: int | None = None, workers: int = 1,
                 phase: Phase | None = None, callbacks: Sequence[Callable[[ScoredBatch], None]] = (),
                 cache_size: int = 4):
        if workers < 1:
            raise ValueError(f"workers must be 1 or more, got {workers}")
        self.spec = spec
        self.num_generations, self.workers, self.phase = num_generations, workers, phase
        self.log = BatchLog()
        """The first callback: logs each batch and counts its zero-variance groups."""
        self.stats: ZeroVarianceStats = self.log.stats
        """The run's zero-variance counts (``BatchLog.stats``)."""
        self.callbacks = [self.log, *callbacks]
        self.cache_size = cache_size
        self._batches: OrderedDict[tuple, dict] = OrderedDict()
        self.episodes = 0
        """Episodes finished so far."""
        self.unverified = 0
        """Of them, episodes the harness failed (reward None)."""

    def views(self) -> list[ComponentView]:
        """One TRL reward function per spec component, in ``spec.component_names`` order."""
        return [ComponentView(self, name) for name in self.spec.component_names]

    def rewards(self, environments: Sequence[TerminalToolEnv], completion_ids: Sequence | None = None,
                trainer_state: Any = None, log_metric: Callable | None = None,
                log_extra: Callable | None = None) -> list[Reward]:
        """The rewards of the batch of ``environments`` at the progress of ``trainer_state``."""
        ids = tuple(env.episode for env in environments)
        batch = self._batches.get(ids)
        if batch is None:
            batch = self._batches[ids] = {"outcomes": self._finish(environments), "rewards": {}}
            while len(self._batches) > self.cache_size:
                self._batches.popitem(last=False)
        progress = training_progress(trainer_state)
        lengths = tuple(len(x) for x in completion_ids) if completion_ids is not None else None
        if (progress, lengths) in batch["rewards"]:
            return batch["rewards"][progress, lengths]
        world = current()
        keys = [env.task_id for env in environments]
        # Under a launcher each rank holds a slice of TRL's batch and a group may span ranks: every
        # rank scores the whole batch (rank-major, TRL's order) and keeps its own slice.
        everyone = world.gather((keys, batch["outcomes"], lengths or (None,) * len(keys)))
        offset = sum(len(k) for k, _, _ in everyone[:world.rank])
        groups = group_keys([k for ks, _, _ in everyone for k in ks], self.num_generations)
        whole = score_batch(self.spec, [o for _, outs, _ in everyone for o in outs], groups, progress,
                            [n for _, _, ns in everyone for n in ns])
        rewards = whole[offset:offset + len(keys)]
        first = not batch["rewards"]
        batch["rewards"][progress, lengths] = rewards
        if first:
            scored = ScoredBatch(list(environments), batch["outcomes"], rewards, groups[offset:offset + len(keys)],
                                 trainer_state, log_metric if callable(log_metric) else None,
                                 log_extra if callable(log_extra) else None,
                                 world=world, offset=offset, batch_totals=[r.total for r in whole],
                                 batch_groups=groups)
            for callback in self.callbacks:
                callback(scored)
        return rewards

    def _finish(self, environments: Sequence[TerminalToolEnv]) -> list[Outcome]:
        if self.workers > 1 and len(environments) > 1:  # each episode's sandbox stays in one thread
            with ThreadPoolExecutor(min(self.workers, len(environments))) as pool:
                outcomes = list(pool.map(episode_outcome, environments))
        else:
            outcomes = [episode_outcome(env) for env in environments]
        self.episodes += len(outcomes)
        self.unverified += sum(not o.verified for o in outcomes)
        return outcomes


class ComponentView:
    """One spec component as a TRL reward function over ``environments``: its weighted contribution."""

    def __init__(self, scorer: EpisodeScorer, component: str):
        self.scorer, self.component = scorer, component
        self.__name__ = f"termrl/{component}"
        """What TRL logs it as: ``rewards/termrl/<component>/mean``."""

    def __call__(self, prompts: list, completions: list, environments: list | None = None,
                 completion_ids: list | None = None, trainer_state: Any = None,
                 log_metric: Callable | None = None, log_extra: Callable | None = None,
                 **columns) -> list[float | None]:
        if environments is None:
            raise ValueError("termrl's GRPO rewards read the rollouts' environments: pass "
                             "environment_factory=EnvironmentFactory(...) to GRPOTrainer (train_grpo does)")
        phase = self.scorer.phase
        with phase("reward") if phase else contextlib.nullcontext():  # verification and detection nest inside
            rewards = self.scorer.rewards(environments, completion_ids, trainer_state, log_metric, log_extra)
        return [component_contribution(r, self.component) for r in rewards]

    def __repr__(self) -> str:
        return f"ComponentView({self.component!r})"


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


def grpo_reward_funcs(spec: RewardSpec | str, num_generations: int | None = None, workers: int = 1,
                      accountant=None,
                      on_batch: Callable[[ScoredBatch], None] | None = None) -> list[ComponentView]:
    """One TRL reward function per component of ``spec``: views of one new ``EpisodeScorer``
    (``funcs[0].scorer``; its ``stats`` are the zero-variance counts). ``spec``: a ``RewardSpec``, or a
    preset name or TOML path. ``accountant``: reward
    time goes to its ``reward`` phase. ``on_batch``: called with each ``ScoredBatch``."""
    phase = accountant.phase if accountant is not None else None
    return EpisodeScorer(as_spec(spec), num_generations, workers, phase, [on_batch] if on_batch else []).views()


__all__ = ["BatchLog", "ComponentView", "EpisodeScorer", "ScoredBatch", "ZeroVarianceStats",
           "grpo_reward_funcs"]
