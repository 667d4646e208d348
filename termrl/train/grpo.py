"""GRPO on termrl environments: TRL's ``GRPOTrainer`` with ``environment_factory``.

What the algorithm really is (TRL's GRPO, defaults of trl 1.16): each task is rolled out
``num_generations`` times; a rollout is one multi-turn conversation in which the model's
tool calls (``bash``, ``write_file``) run in the task's sandbox and their results are
appended as tool messages, until the model answers without a tool call. The episode is
then verified, the hack detectors read it, and the reward spec scores it. A rollout's
advantage is its reward minus its group's mean, over the group's std; the loss is a
clipped policy gradient ("dapo" token normalisation), with no KL term (``beta=0``).

termrl writes only what TRL cannot do: the environment adapter
(``termrl.train.grpo_env``), the reward functions (one per spec component, reusing
``termrl.reward.exports.trl``) and the count of zero-variance groups. The rest is TRL's:

- Environment tokens are masked out of the loss by TRL's tool loop: the tokens of tool
  results get 0 in its ``tool_mask`` and the loss mask is ``completion_mask * tool_mask``.
  Only the model's own tokens (its text, tool calls and end-of-turn tokens) are trained.
- The reward functions are named ``termrl/<component>`` (TRL logs
  ``rewards/termrl/<component>/mean``) and return the component's weighted contribution
  at progress ``global_step / max_steps``: the spec's schedules follow training. They sum
  to ``Reward.total`` (leave ``GRPOConfig.reward_weights`` unset). A rollout whose
  verification failed gets None from every function: TRL leaves it out of the group
  baseline and gives it advantage 0. Hack findings are applied by the spec (the preset's
  ``hack`` component caps the total).
- The environment defines no ``get_reward`` (TRL would add it as one more, unweighted
  reward source and count the reward twice).
- LoRA: pass ``peft_config``. vLLM: set ``use_vllm`` / ``vllm_mode`` in ``args``; they
  reach TRL untouched, and TRL's tool loop generates each turn with vLLM.

Logged per generation batch: ``termrl/zero_variance_groups`` (fraction of groups whose
rollouts all earned the same total: their advantages are all 0 and they train nothing),
``termrl/zero_variance_groups_cumulative`` (the same since the start) and
``termrl/unverified_fraction``. The running counts are in ``reward_funcs[0].stats``.

Known limits: a length term (``length_penalty``) counts the completion tokens TRL passes
to reward functions, which include the tool results' tokens. ``EnvConfig.max_tokens`` is
not enforced (the environment never sees tokens): ``max_completion_length`` bounds a rollout. TRL generates inside its
training step, so an ``Accountant`` sees generation as part of ``training``; environment,
verification, detection and reward time are counted apart.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from termrl.env import EnvConfig
from termrl.protocols import Reward, Task
from termrl.reward.exports.trl import trl_reward_funcs
from termrl.train.grpo_env import EnvironmentFactory, TerminalToolEnv, register_tasks, resolve_task

ENV_COLUMN = "_termrl_env"
"""The per-rollout column holding each rollout's environment, as the scorer's rows see it."""

SYSTEM_PROMPT = """\
You are an expert software engineer working in a Linux terminal, inside the directory {workdir}.
Solve the task below with the tools: `bash` runs a shell command and returns its exit code and output;
`write_file` creates or overwrites a file. Call a tool, read its result, and go on until the task is
done. The shell keeps its working directory and variables between calls; there is no network.
Test your work. When you are done, reply without a tool call: hidden tests then check your work."""
"""The system prompt of every rollout; the chat template adds the tools' schema."""


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

    def update(self, totals: Sequence[float | None], keys: Sequence[Any], num_generations: int | None) -> None:
        """Count the groups of one batch: consecutive runs of ``num_generations`` rollouts (TRL's
        order on one process), or rollouts with the same prompt when the batch does not divide."""
        n = len(totals)
        if num_generations and n % num_generations == 0:
            groups = [list(range(i, i + num_generations)) for i in range(0, n, num_generations)]
        else:
            by_key: dict[str, list[int]] = {}
            for i, key in enumerate(keys):
                by_key.setdefault(repr(key), []).append(i)
            groups = list(by_key.values())
        zero = 0
        for members in groups:
            values = [totals[i] for i in members if totals[i] is not None and not math.isnan(totals[i])]
            zero += len(values) < 2 or max(values) - min(values) <= 1e-9
        self.last_groups, self.last_zero = len(groups), zero
        self.groups += len(groups)
        self.zero += zero

    @property
    def fraction(self) -> float:
        """Cumulative fraction of zero-variance groups."""
        return self.zero / self.groups if self.groups else 0.0


class EnvComponentReward:
    """One spec component as a TRL reward function over ``environments`` (``__name__`` ``termrl/<name>``).

    Wraps ``termrl.reward.exports.trl.ComponentReward``: it hands each rollout's environment to
    the shared scorer as a per-rollout column, so every episode is finished and evaluated once
    per batch, then scored at the batch's training progress."""

    def __init__(self, inner, stats: ZeroVarianceStats | None, num_generations: int | None,
                 phase: Callable | None, on_batch: Callable | None = None):
        self.inner, self.stats, self.num_generations, self._phase = inner, stats, num_generations, phase
        self.on_batch = on_batch
        self.component = inner.component
        self.__name__ = inner.__name__

    @property
    def scorer(self):
        return self.inner.scorer

    def __call__(self, prompts: list, completions: list, environments: list | None = None,
                 **kwargs) -> list[float | None]:
        if environments is None:
            raise ValueError("termrl's GRPO rewards read the rollouts' environments: pass "
                             "environment_factory=EnvironmentFactory(...) to GRPOTrainer (train_grpo does)")
        kwargs[ENV_COLUMN] = list(environments)
        with self._phase("reward") if self._phase else contextlib.nullcontext():
            out = self.inner(prompts, completions, **kwargs)
            if self.stats is not None:  # the first function of the list counts, once per batch
                rewards: list[Reward] = self.inner.scorer.rewards(prompts, completions, kwargs)
                self._log(rewards, prompts, environments, kwargs)
                if self.on_batch is not None:
                    self.on_batch(environments, rewards, kwargs.get("trainer_state"))
        return out

    def _log(self, rewards: list[Reward], prompts: list, environments: list, kwargs: dict) -> None:
        self.stats.update([r.total for r in rewards], prompts, self.num_generations)
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if callable(log_metric):  # TRL averages each metric over a logging step
            log_metric("termrl/zero_variance_groups", self.stats.last_zero / max(1, self.stats.last_groups))
            log_metric("termrl/zero_variance_groups_cumulative", self.stats.fraction)
        if callable(log_extra):  # columns of TRL's completions table (log_completions=True)
            log_extra("termrl/ending", [getattr(e.ending, "value", None) for e in environments])
            log_extra("termrl/findings", [",".join(f.kind for f in e._outcome()[1]) for e in environments])

    def __repr__(self) -> str:
        return f"EnvComponentReward({self.component!r})"


def grpo_reward_funcs(spec, num_generations: int | None = None, workers: int = 1,
                      accountant=None, on_batch: Callable | None = None) -> list[EnvComponentReward]:
    """One TRL reward function per component of ``spec`` (a ``RewardSpec`` or preset name), in order.

    They read ``environments`` (TRL passes them with ``environment_factory``): each rollout's
    episode is finished once (``TerminalToolEnv._outcome``) and scored by the spec at progress
    ``global_step / max_steps``, with ``len(completion_ids[i])`` as its length and the group's
    verified rollouts as its group. ``num_generations``: the group size, for counting
    zero-variance groups (None: group by prompt). ``workers``: episodes finished at once, in
    threads. ``accountant``: reward time goes to its ``reward`` phase. ``on_batch(environments,
    rewards, trainer_state)``: called once per scored batch (``termrl train`` stores the rollouts).
    """

    def evaluate(prompt, text: str, row: dict):
        env: TerminalToolEnv = row[ENV_COLUMN]
        return env._outcome()

    funcs = trl_reward_funcs(spec, evaluate, workers=workers)
    stats = ZeroVarianceStats()
    phase = accountant.phase if accountant is not None else None
    return [EnvComponentReward(f, stats if i == 0 else None, num_generations, phase, on_batch if i == 0 else None)
            for i, f in enumerate(funcs)]


def task_rows(tasks: Iterable[Task | str | dict], system_prompt: str = SYSTEM_PROMPT) -> list[dict]:
    """Dataset rows ``{"prompt": [system, empty user], "task_id": ...}`` for ``tasks``.

    A ``Task`` is registered (``reset`` finds it by id); a string is a task id; a dict is a row
    with a ``task_id`` and, optionally, its own ``prompt``. The user message is empty: ``reset``
    returns the instruction and the workspace listing, which TRL appends to it."""
    rows = []
    for item in tasks:
        if isinstance(item, Task):
            register_tasks([item])
            item = {"task_id": item.id}
        elif isinstance(item, str):
            item = {"task_id": item}
        elif not isinstance(item, dict) or not isinstance(item.get("task_id"), str):
            raise TypeError(f"a task is a Task, a task id or a row with a 'task_id'; got {item!r}")
        if "prompt" not in item:
            workdir = resolve_task(item["task_id"]).workdir
            item = {**item, "prompt": [{"role": "system", "content": system_prompt.format(workdir=workdir)},
                                       {"role": "user", "content": ""}]}
        rows.append(item)
    if not rows:
        raise ValueError("no tasks to train on: give at least one Task, task id or row")
    return rows


def _check_args(args) -> None:
    weights = getattr(args, "reward_weights", None)
    if weights is not None and any(w != 1.0 for w in weights):
        raise ValueError("GRPOConfig.reward_weights must stay unset: the reward functions already return "
                         "each component's weighted contribution; change the weights in the reward spec")
    if getattr(args, "multi_objective_aggregation", "sum_then_normalize") != "sum_then_normalize":
        raise ValueError("multi_objective_aggregation must be 'sum_then_normalize' (the default): "
                         "'normalize_then_sum' normalizes each component apart and changes the spec's balance")


def train_grpo(model, tokenizer, tasks, spec, args, peft_config=None, accountant=None, callbacks=(), *,
               env_config: EnvConfig | None = None, workers: int = 1, system_prompt: str = SYSTEM_PROMPT,
               on_batch: Callable | None = None, resume_from_checkpoint: str | bool | None = None):
    """Train ``model`` with GRPO on ``tasks``; returns the ``GRPOTrainer`` after training.

    ``model``: a causal LM (or a path); ``tokenizer``: its tokenizer, whose chat template must
    support tool calling (TRL parses the tool calls with it). ``tasks``: Tasks, task ids, rows
    (see ``task_rows``) or a ``datasets.Dataset`` with ``prompt`` and ``task_id`` columns.
    ``spec``: a ``RewardSpec`` or preset name. ``args``: a ``trl.GRPOConfig``, used as is.
    ``peft_config``: LoRA (or any PEFT) config; only the adapter is trained. ``accountant``:
    a ``termrl.rollout.accounting.Accountant``; training goes to its ``training`` phase,
    sandbox, verification, detection and reward time to theirs. ``env_config``: the episodes'
    limits and sandbox backend. ``workers``: episodes verified at once. ``on_batch``: see
    ``grpo_reward_funcs``. ``resume_from_checkpoint``: passed to ``Trainer.train``. Every sandbox is
    closed when this returns, also when training raises.
    """
    from datasets import Dataset
    from trl import GRPOTrainer

    if isinstance(spec, str):
        from termrl.reward.spec import load_spec

        spec = load_spec(spec)
    _check_args(args)
    dataset = tasks if isinstance(tasks, Dataset) else Dataset.from_list(task_rows(tasks, system_prompt))
    if "task_id" not in dataset.column_names:
        raise ValueError("the dataset needs a 'task_id' column (and a 'prompt' column); build it with task_rows")
    phase = accountant.phase if accountant is not None else None
    factory = EnvironmentFactory(env_config, phase)
    trainer = GRPOTrainer(model=model, reward_funcs=grpo_reward_funcs(spec, args.num_generations, workers, accountant,
                                                                 on_batch),
                          args=args, train_dataset=dataset, processing_class=tokenizer, callbacks=list(callbacks),
                          peft_config=peft_config, environment_factory=factory)
    try:
        with phase("training") if phase else contextlib.nullcontext():
            trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    finally:
        factory.close()
    return trainer


__all__ = ["EnvComponentReward", "SYSTEM_PROMPT", "ZeroVarianceStats", "grpo_reward_funcs", "task_rows",
           "train_grpo"]
