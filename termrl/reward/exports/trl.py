"""A reward spec as TRL ``GRPOTrainer`` reward functions: one function per component.

    funcs = trl_reward_funcs(load_spec("coderl"), code_task_evaluator(load_humaneval()))
    GRPOTrainer(model, reward_funcs=funcs, train_dataset=ds, args=GRPOConfig(...))

The dataset needs a ``prompt`` column and whatever ``evaluate`` reads (a
``task_id`` column for ``code_task_evaluator``). ``evaluate(prompt, completion,
row)`` turns one completion (its text: the assistant messages joined, for chat
completions) and its dataset row (a dict) into ``(Evidence | None, findings)``.

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
counted apart: TRL logs ``termrl/unverified_fraction`` per step, and the
functions' shared scorer keeps the running count in ``.scorer.unverified``. TRL turns
None into NaN, leaves it out of each function's mean, and a row that is NaN in
every function is *unscorable*: it is left out of the group baseline and its
advantage is 0, so it never trains the policy. A component without a value on
a verified completion returns 0.0, so the functions always sum to the total.

Each completion is evaluated once per batch although TRL calls N functions: the
first function evaluates the batch and the others reuse it (a small cache keyed
by the batch). Group terms see ``(length, passed)`` of the verified completions
of the same prompt in the batch; lengths are ``len(completion_ids[i])``.

A completion's evaluation can start before TRL asks for the batch's rewards:
``funcs[0].scorer.start(prompt, completion, row)`` runs it in the background, and the
reward call takes that result for the same prompt, completion text and row instead of
evaluating again (``termrl.training.ahead`` starts each completion as soon as the model
has finished it, while the rest of the batch still generates).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from termrl.episode import score_batch
from termrl.protocols import Ending, Evidence, Finding, Outcome, Reward
from termrl.reward.exports.codegen import code_task_evaluator
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


class _BatchScorer:
    """Evaluates each completion of a batch once and scores it; shared by one spec's functions."""

    def __init__(self, spec: RewardSpec, evaluate: Evaluate, cache_size: int = 4, workers: int = 1):
        self.spec, self.evaluate, self.cache_size, self.workers = spec, evaluate, cache_size, workers
        self._cache: OrderedDict[tuple, dict] = OrderedDict()
        self.evaluations = 0
        """How many completions ``evaluate`` was called on, in all (for tests and logs)."""
        self.unverified = 0
        """How many of them could not be verified (reward None): counted apart from failures."""
        self.taken_ahead = 0
        """Of the completions scored, how many took an evaluation started ahead (``start``)."""
        self._ahead: dict[tuple, deque[Future]] = {}
        self._ahead_lock = threading.Lock()
        self._ahead_pool: ThreadPoolExecutor | None = None

    def __getstate__(self):  # neither the cache nor the evaluations started ahead travel to another process
        state = {**self.__dict__, "_cache": OrderedDict(), "_ahead": {}, "_ahead_pool": None}
        del state["_ahead_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state, _ahead_lock=threading.Lock())

    def start(self, prompt, completion, row: dict) -> None:
        """Start evaluating one completion now, in one of ``workers`` background threads.

        The batch's reward call takes the result for the same prompt, completion text and row
        (one started evaluation per occurrence: a completion sampled twice is evaluated twice,
        as without ``start``) and evaluates only what was not started. An exception ``evaluate``
        raised is raised there."""
        text = completion_text(completion)
        key = (repr(prompt), text, repr(row))
        with self._ahead_lock:
            if self._ahead_pool is None:
                self._ahead_pool = ThreadPoolExecutor(self.workers, thread_name_prefix="termrl-reward-ahead")
            self.evaluations += 1
            self._ahead.setdefault(key, deque()).append(self._ahead_pool.submit(self._evaluate, prompt, text, row))

    def forget_started(self) -> None:
        """Drop the evaluations started ahead that no reward call took (they still finish)."""
        with self._ahead_lock:
            self._ahead.clear()

    def close(self) -> None:
        """Wait for the evaluations started ahead and stop their threads; ``start`` opens new ones."""
        with self._ahead_lock:
            pool, self._ahead_pool = self._ahead_pool, None
            self._ahead.clear()
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

    def rewards(self, prompts: list, completions: list, kwargs: Mapping[str, Any]) -> list[Reward]:
        n = len(completions)
        texts = [completion_text(c) for c in completions]
        rows = [{k: v[i] for k, v in kwargs.items()
                 if k not in NOT_COLUMNS and isinstance(v, (list, tuple)) and len(v) == n} for i in range(n)]
        # the same list object across the N calls of one batch; the texts guard against a reused id
        key = (id(completions), tuple(texts), tuple(repr(p) for p in prompts), tuple(repr(r) for r in rows))
        entry = self._cache.get(key)
        if entry is None:
            results = self._evaluate_all(prompts, texts, rows)
            unverified = sum(1 for evidence, _ in results if evidence is None or not evidence.verified)
            self.unverified += unverified
            if callable(kwargs.get("log_metric")):  # TRL >= 1.16 averages it per logging step
                kwargs["log_metric"]("termrl/unverified_fraction", unverified / max(1, n))
            entry = {"results": results, "rewards": {}}
            self._cache[key] = entry
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        progress = training_progress(kwargs.get("trainer_state"))
        ids = kwargs.get("completion_ids")
        lengths = tuple(len(x) for x in ids) if ids is not None else (None,) * n
        if (progress, lengths) not in entry["rewards"]:
            entry["rewards"][progress, lengths] = self._score(prompts, entry["results"], lengths, progress)
        return entry["rewards"][progress, lengths]

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

    def _score(self, prompts: list, results: list, lengths: tuple, progress: float) -> list[Reward]:
        return score_batch(self.spec, [as_outcome(*r) for r in results], [repr(p) for p in prompts], progress,
                           lengths)


class ComponentReward:
    """One component of a spec as a TRL reward function (a picklable callable with a ``__name__``)."""

    def __init__(self, scorer: _BatchScorer, component: str, name: str | None = None):
        self.scorer, self.component = scorer, component
        self.__name__ = name or component
        """What TRL logs it as: ``rewards/<__name__>/mean``."""

    def __call__(self, prompts: list, completions: list, **kwargs) -> list[float | None]:
        rewards = self.scorer.rewards(prompts, completions, kwargs)
        return [component_contribution(r, self.component) for r in rewards]

    def __repr__(self) -> str:
        return f"ComponentReward({self.component!r})"


def trl_reward_funcs(spec: RewardSpec | str, evaluate: Evaluate, workers: int = 1, cache_size: int = 4,
                     prefix: str = "termrl/") -> list[ComponentReward]:
    """One TRL reward function per component of ``spec``, in ``spec.component_names`` order.

    ``spec``: a ``RewardSpec``, or a preset name / TOML path for ``load_spec``.
    ``evaluate``: ``(prompt, completion_text, row) -> (Evidence | None, findings)``,
    e.g. ``code_task_evaluator(tasks)``; its exceptions propagate (a missing
    column is a bug to fix, not a reward). ``workers``: completions of a batch
    evaluated at once, in threads (``evaluate`` must be thread-safe; the code
    evaluator is). ``cache_size``: batches kept evaluated. ``prefix``: put before each
    component name in ``__name__``, so TRL logs ``rewards/termrl/outcome/mean``.
    """
    spec = as_spec(spec)
    if workers < 1:
        raise ValueError(f"workers must be 1 or more, got {workers}")
    scorer = _BatchScorer(spec, evaluate, cache_size, workers)
    return [ComponentReward(scorer, name, prefix + name) for name in spec.component_names]


__all__ = ["ComponentReward", "as_outcome", "code_task_evaluator", "completion_text",
           "component_contribution", "reward_row", "training_progress", "trl_reward_funcs"]
