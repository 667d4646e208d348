"""termrl's ``GRPOTrainer``: TRL's, with each rollout's reward started as soon as it can be.

TRL 1.16 generates a whole batch, then computes the rewards: a completion that ended after
ten tokens waits for the longest one of its batch before its sandbox starts, and on a GPU
machine the CPU cores idle while the model generates, then the GPU idles while the
completions are run and verified. TRL also runs the tool calls of a batch's rollouts one
rollout after another. ``grpo_trainer_class()`` overlaps them, for the reward functions of
``termrl.reward.exports.trl.trl_reward_funcs`` (one ``BatchScorer``):

- **Tool calls ahead** (``environment_factory``, ``tool_workers`` > 1): TRL's tool loop is
  wrapped in ``trl_env.ToolCallsAhead``: every rollout's calls run at once, and a rollout that
  stopped calling tools has its episode finished while the others go on.
- **During generation** (transformers' ``generate``, no vLLM): a stopping criterion that never
  stops anything reads each decoding step's tokens; a row that has just emitted an
  end-of-sequence token is decoded as TRL will decode it, and its reward starts in the
  background while the other rows go on generating: ``scorer.start`` (a completion played by
  ``evaluate``), or ``scorer.finish_ahead`` (the episode of a one-turn rollout,
  ``max_tool_calling_iterations=0``, with its reply's calls).
- **After generation** (every backend, vLLM included, and completions that ended at the
  length limit): whatever was not started starts as soon as TRL has decoded the batch, so it
  overlaps the log-probability passes TRL makes before it computes the rewards (``beta`` > 0,
  ``num_iterations`` > 1).

The reward call then takes each started result and plays only what was not started, so the
rewards, their order and what TRL trains on are those of a plain ``GRPOTrainer``; only when each
part runs changes. A completion decoded here differently from TRL is not taken, just played
again: it costs time, never a wrong reward. ``trainer.rewards_ahead`` counts the starts,
``trainer.episodes_finished_ahead`` the episodes ``ToolCallsAhead`` finished, and the scorer's
``taken_ahead`` how many starts were used.

Reward functions that are not ``trl_reward_funcs``' (anything without a ``scorer`` that can
``start``) are called as TRL calls them. An ``evaluate`` function must be thread-safe, as
``workers`` > 1 already requires.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from packaging.version import Version

from termrl.reward.exports.trl import reward_row
from termrl.reward.exports.trl_env import ToolCallsAhead


@dataclass
class AheadCounts:
    """Completions whose evaluation a trainer started before TRL asked for the rewards."""

    during_generation: int = 0
    """Started when the model emitted their last token, while the batch still generated."""
    after_generation: int = 0
    """Started when TRL had decoded the batch (vLLM, the length limit, tool loops)."""


class FinishedRows:
    """A transformers stopping criterion that stops nothing: it calls ``on_finished(row,
    completion_ids)`` once for each row of the batch that has just emitted one of
    ``eos_ids``, with the row's tokens after the prompt up to and including that token (what
    TRL keeps of it)."""

    def __init__(self, prompt_length: int, eos_ids: list[int], on_finished: Callable[[int, list[int]], None]):
        self.prompt_length, self.eos_ids, self.on_finished = prompt_length, eos_ids, on_finished
        self._done = self._eos = self._never = None

    def __call__(self, input_ids, scores, **kwargs):
        import torch  # heavy: torch

        if self._done is None:  # once per generation, on the batch's device
            self._done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
            self._never = torch.zeros_like(self._done)
            self._eos = torch.tensor(self.eos_ids, device=input_ids.device)
        finished = torch.isin(input_ids[:, -1], self._eos) & ~self._done
        if finished.any():
            self._done |= finished
            for row in finished.nonzero().flatten().tolist():
                self.on_finished(row, input_ids[row, self.prompt_length:].tolist())
        return self._never


@contextlib.contextmanager
def generate_with(model, criterion) -> Iterator[None]:
    """``model.generate`` with ``criterion`` added to its stopping criteria, for the block."""
    from transformers import StoppingCriteriaList  # heavy: transformers

    had_own = "generate" in vars(model)
    generate = model.generate

    @functools.wraps(generate)
    def wrapped(*args, **kwargs):
        criteria = StoppingCriteriaList(kwargs.pop("stopping_criteria", None) or [])
        criteria.append(criterion(kwargs["input_ids"].shape[1]))
        return generate(*args, stopping_criteria=criteria, **kwargs)

    model.generate = wrapped
    try:
        yield
    finally:
        if had_own:
            model.generate = generate
        else:
            del model.generate


@functools.cache
def grpo_trainer_class():
    """TRL's ``GRPOTrainer`` with tool calls and rewards started ahead (the module's docstring)."""
    import transformers  # heavy: transformers
    from trl import GRPOTrainer  # heavy: trl
    from trl.chat_template_utils import parse_response  # heavy: trl
    from trl.data_utils import is_conversational  # heavy: trl

    class TermrlGRPOTrainer(GRPOTrainer):
        tool_workers = 1
        """Rollouts whose tool calls run at once (1: one after another, as in TRL)."""
        finish_ahead = True
        """Finish a rollout's episode as soon as it stops calling tools (with ``tool_workers`` > 1)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.rewards_ahead = AheadCounts()
            self.episodes_finished_ahead = 0
            """Episodes ``ToolCallsAhead`` finished while other rollouts of their batch still called tools."""
            self._ahead_inputs: list[dict] | None = None
            self._ahead_prompts: list | None = None
            self._ahead_scorers: list = []
            self._ahead_started: set[int] = set()

        def _scorers(self) -> list:
            """The reward functions' scorers that can start work ahead (``trl_reward_funcs``'), once each."""
            scorers = {}
            for func in self.reward_funcs:
                scorer = getattr(func, "scorer", None)
                if callable(getattr(scorer, "start", None)):
                    scorers[id(scorer)] = scorer
            return list(scorers.values())

        def train(self, *args, **kwargs):
            try:
                return super().train(*args, **kwargs)
            finally:
                for scorer in self._scorers():
                    scorer.close()

        def _one_turn(self) -> bool:
            """Whether the first reply of each rollout is its last: no tools, or no tool rounds."""
            return not self.tools or self.max_tool_calling_iterations == 0

        def _generate_and_score_completions(self, inputs):
            self._ahead_scorers = self._scorers()
            for scorer in self._ahead_scorers:
                scorer.forget_started()
            self._ahead_inputs = inputs if self._ahead_scorers and isinstance(inputs, list) else None
            self._ahead_started = set()
            try:
                return super()._generate_and_score_completions(inputs)
            finally:
                self._ahead_inputs = self._ahead_prompts = None

        def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, *args, **kwargs):
            if self.max_tool_calling_iterations == 0:  # no round: the calls run when the episodes finish
                return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, *args, **kwargs)
            ahead = ToolCallsAhead(self.environments, self._sync_tool_dicts, self._async_tool_dicts, completions,
                                   self.tool_workers, self.finish_ahead)
            try:
                with ahead:
                    return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, *args, **kwargs)
            finally:
                self.episodes_finished_ahead += ahead.finished

        def _generate(self, prompts):
            self._ahead_prompts = prompts
            out = super()._generate(prompts)
            completions = out[3]
            if self._ahead_inputs is not None and len(completions) == len(self._ahead_inputs):
                for row, completion in enumerate(completions):
                    if row not in self._ahead_started:
                        self._start(row, completion)
                        self.rewards_ahead.after_generation += 1
            return out

        def _generate_single_turn(self, prompt_ids, *args, **kwargs):
            if (self._ahead_inputs is None or self.use_vllm or self.use_transformers_continuous_batching
                    or not self._one_turn() or self.rollout_func is not None or self._ahead_prompts is None
                    or len(prompt_ids) != len(self._ahead_inputs)):
                return super()._generate_single_turn(prompt_ids, *args, **kwargs)

            def on_finished(row: int, completion_ids: list[int]) -> None:
                self._start(row, self._decoded(row, prompt_ids[row], completion_ids))
                self.rewards_ahead.during_generation += 1

            model = self.accelerator.unwrap_model(self.model_wrapped)
            eos_ids = [t for t in self.eos_token_ids if t is not None]
            criterion = functools.partial(FinishedRows, eos_ids=eos_ids, on_finished=on_finished)
            with generate_with(model, criterion):
                return super()._generate_single_turn(prompt_ids, *args, **kwargs)

        def _start(self, row: int, completion) -> None:
            self._ahead_started.add(row)
            if self.environments:
                environment = self.environments[row]
                for scorer in self._ahead_scorers:
                    if callable(getattr(scorer, "finish_ahead", None)):
                        scorer.finish_ahead(environment, completion)
                return
            prompt, example = self._ahead_prompts[row], reward_row(self._ahead_inputs[row])
            for scorer in self._ahead_scorers:
                scorer.start(prompt, completion, example)

        def _decoded(self, row: int, prompt_ids: list[int], completion_ids: list[int]):
            """One completion as TRL 1.16's ``_generate`` decodes it (before any tool round)."""
            if not is_conversational({"prompt": self._ahead_prompts[row]}):
                return self.processing_class.batch_decode([completion_ids], skip_special_tokens=True)[0]
            if Version(transformers.__version__) >= Version("5.0.0") and (
                    getattr(self._tokenizer, "response_template", None) is not None
                    or getattr(self._tokenizer, "response_schema", None) is not None):
                if self.environment_factories is not None:
                    tools = self._env_tools[self._batch_environments[row]]
                else:
                    tools = self.tools
                return [parse_response(self._tokenizer, completion_ids, prefix=prompt_ids, tools=tools)]
            content = self.processing_class.batch_decode([completion_ids], skip_special_tokens=True)[0]
            return [{"role": "assistant", "content": content}]

    return TermrlGRPOTrainer


__all__ = ["AheadCounts", "FinishedRows", "generate_with", "grpo_trainer_class"]
