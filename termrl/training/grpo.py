"""GRPO on termrl environments: TRL's ``GRPOTrainer`` with ``environment_factory``.

What the algorithm really is (TRL's GRPO, defaults of trl 1.16): each task is rolled out
``num_generations`` times; a rollout is one multi-turn conversation in which the model's
tool calls (``bash``, ``write_file``) run in the task's sandbox and their results are
appended as tool messages, until the model answers without a tool call. The episode is
then verified, the hack detectors read it, and the reward spec scores it. A rollout's
advantage is its reward minus its group's mean, over the group's std; the loss is a
clipped policy gradient ("dapo" token normalisation), with no KL term (``beta=0``).

termrl writes only what TRL cannot do: the environment adapter
(``termrl.reward.exports.trl_env``), the reward functions (``trl_reward_funcs``: one
``BatchScorer`` per run with one function per spec component, the same adapter a user gives
their own ``GRPOTrainer``), the count of zero-variance groups, and work started ahead
(``termrl.training.ahead``: with ``workers`` above 1 up to ``workers`` rollouts' tool calls run
at a time, where TRL runs them one rollout after another, and a rollout's episode is finished
as soon as it is over while the others go on). The rest is TRL's:

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
- ``max_turns``: replies per rollout, TRL's ``max_tool_calling_iterations`` plus one (the
  calls of the reply at the cap run when the episode is finished, ``trl_env.pending_calls``).
  With 1, GRPO trains on one reply per episode: the same path, one turn.
- The environment defines no ``get_reward`` (TRL would add it as one more, unweighted
  reward source and count the reward twice).
- LoRA: pass ``peft_config``. vLLM: set ``use_vllm`` / ``vllm_mode`` in ``args``; they
  reach TRL untouched, and TRL's tool loop generates each turn with vLLM.

Logged per generation batch: ``termrl/zero_variance_groups`` (fraction of groups whose
rollouts all earned the same total: their advantages are all 0 and they train nothing),
``termrl/zero_variance_groups_cumulative`` (the same since the start) and
``termrl/unverified_fraction``, by the scorer's ``BatchLog`` callback (``termrl.reward.exports.trl``). The running counts are
in ``reward_funcs[0].scorer.stats``.

Known limits: a length term (``length_penalty``) counts the completion tokens TRL passes
to reward functions, which include the tool results' tokens. ``EnvConfig.max_tokens`` is
not enforced (the environment never sees tokens): ``max_completion_length`` bounds a rollout. TRL generates inside its
training step, so an ``Accountant`` sees generation as part of ``training``; environment,
verification, detection and reward time are counted apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence

from termrl.actions import NATIVE_PROMPT
from termrl.env import EnvConfig
from termrl.episode import Verifier, system_message
from termrl.protocols import Judge, Task
from termrl.reward.exports.trl import ScoredBatch, trl_reward_funcs
from termrl.reward.exports.trl_env import EnvironmentFactory, register_tasks, resolve_task
from termrl.reward.spec import RewardSpec, as_spec
from termrl.training.ahead import grpo_trainer_class

GRPO_PROMPT = NATIVE_PROMPT
"""The system prompt of every GRPO rollout: the ``native`` action format's (TRL's tool loop is native
tool calling; the chat template adds the tools' schema)."""


def task_rows(tasks: Iterable[Task | str | dict], system_prompt: str = GRPO_PROMPT) -> list[dict]:
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
            item = {**item, "prompt": [system_message(resolve_task(item["task_id"]), system_prompt),
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


def train_grpo(model, tokenizer, tasks, spec: RewardSpec | str, args, peft_config=None, accountant=None, callbacks=(), *,
               env_config: EnvConfig | None = None, workers: int = 1, system_prompt: str = GRPO_PROMPT,
               on_batch: Callable[[ScoredBatch], None] | None = None,
               resume_from_checkpoint: str | bool | None = None, verifier: Verifier | None = None,
               judge: Judge | None = None, print_logs: bool = True, remote: Sequence[str] = (),
               remote_token: str | None = None):
    """Train ``model`` with GRPO on ``tasks``; returns the ``GRPOTrainer`` after training.

    ``model``: a causal LM (or a path); ``tokenizer``: its tokenizer, whose chat template must
    support tool calling (TRL parses the tool calls with it). ``tasks``: Tasks, task ids, rows
    (see ``task_rows``) or a ``datasets.Dataset`` with ``prompt`` and ``task_id`` columns.
    ``spec``: a ``RewardSpec`` or preset name. ``args``: a ``trl.GRPOConfig``, used as is (its
    ``max_tool_calling_iterations`` caps the tool rounds: 0 trains one reply per episode).
    ``peft_config``: LoRA (or any PEFT) config; only the adapter is trained. ``accountant``:
    a ``termrl.rollout.accounting.Accountant``; training goes to its ``training`` phase,
    sandbox, verification, detection and reward time to theirs. ``env_config``: the episodes'
    limits and sandbox backend. ``workers``: episodes verified, and rollouts' tool calls run, at
    once. ``system_prompt``: every rollout's system prompt. ``on_batch``: called with every
    ``ScoredBatch`` (``termrl train`` stores the rollouts). ``resume_from_checkpoint``: passed
    to ``Trainer.train``. ``verifier``: how finished episodes are verified (None: in their own
    sandboxes; ``PoolVerifier(VerifierPool(...))``: on warm verifiers;
    ``PoolVerifier(RayVerifierPool(...))``: on a Ray cluster). ``judge``: a
    ``termrl.reward.judge.ModelJudge`` reading each passing episode (a spec's ``judge``
    component). ``print_logs``: keep transformers' ``PrinterCallback`` (each step's logs printed
    on stdout; ``termrl train`` reports progress by its own callback). ``remote``: urls of
    ``termrl serve`` servers that play the episodes instead of this process
    (``termrl.serve.client.RemoteEnvironmentFactory``; ``remote_token``: their bearer token): the
    same tools, observations and outcomes, scored here by the same reward functions; the servers
    run with their own limits and sandboxes, so ``env_config``, ``verifier`` and ``judge`` are
    theirs. Every sandbox is closed when this returns, also when training raises. The run's
    ``BatchScorer`` (one per run: it finishes and scores each batch once) is
    ``trainer.reward_funcs[0].scorer``.
    """
    from datasets import Dataset  # heavy: datasets

    spec = as_spec(spec)
    _check_args(args)
    dataset = tasks if isinstance(tasks, Dataset) else Dataset.from_list(task_rows(tasks, system_prompt))
    if "task_id" not in dataset.column_names:
        raise ValueError("the dataset needs a 'task_id' column (and a 'prompt' column); build it with task_rows")
    phase = accountant.phase if accountant is not None else None
    if remote:
        from termrl.serve.client import RemoteEnvironmentFactory  # heavy: openenv-core

        factory = RemoteEnvironmentFactory(remote, remote_token, phase)
    else:
        factory = EnvironmentFactory(env_config, phase, verifier=verifier, judge=judge)
    funcs = trl_reward_funcs(spec, workers=workers, num_generations=args.num_generations,
                             max_tool_calling_iterations=args.max_tool_calling_iterations, accountant=accountant,
                             on_batch=on_batch)
    trainer = grpo_trainer_class()(model=model, reward_funcs=funcs, args=args, train_dataset=dataset,
                                   processing_class=tokenizer, callbacks=list(callbacks), peft_config=peft_config,
                                   environment_factory=factory)
    trainer.tool_workers = workers
    if not print_logs:
        from transformers import PrinterCallback  # heavy: transformers (loaded with TRL above)

        trainer.remove_callback(PrinterCallback)
    try:
        with accountant.phase("training") if accountant is not None else contextlib.nullcontext():
            trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    finally:
        factory.close()
    return trainer


__all__ = ["GRPO_PROMPT", "task_rows", "train_grpo"]
