"""Rewards started while the batch still generates: TRL's ``GRPOTrainer`` that hands each
completion to its reward functions' evaluator as soon as the model has finished it.

TRL 1.16 generates a whole batch, then computes the rewards: a completion that ended after
ten tokens waits for the longest one of its batch before its sandbox starts, and on a GPU
machine the CPU cores idle while the model generates, then the GPU idles while the
completions are run and verified. ``rewards_ahead_trainer()`` overlaps the two:

- With transformers' ``generate`` (no vLLM, no tools), a stopping criterion that never stops
  anything reads each decoding step's tokens; a row that has just emitted an end-of-sequence
  token is decoded as TRL will decode it and its evaluation starts in the background
  (``_BatchScorer.start``, ``workers`` threads) while the other rows go on generating.
- Every backend (vLLM included, and completions that ended at the length limit): whatever was
  not started during generation starts as soon as TRL has decoded the batch, so it overlaps
  the log-probability passes TRL makes before it computes the rewards (``beta`` > 0,
  ``num_iterations`` > 1).

The reward call then takes each started result for the same prompt, completion text and row
(``trl_reward_funcs``' scorer) and evaluates only what was not started, so the rewards, their
order and what TRL trains on are those of a plain ``GRPOTrainer``; only when each evaluation
runs changes. A completion decoded here differently from TRL (a tokenizer whose decoding
depends on more than the tokens) is not taken, just evaluated again: it costs time, never a
wrong reward. ``trainer.rewards_ahead`` counts the starts, and each scorer's ``taken_ahead``
how many of them were used.

Reward functions that are not ``trl_reward_funcs``' (anything without a ``scorer`` that
can ``start``) are called as TRL calls them. The evaluator must be thread-safe, as
``workers`` > 1 already requires.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from packaging.version import Version

from termrl.reward.exports.trl import reward_row


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
def rewards_ahead_trainer():
    """TRL's ``GRPOTrainer`` with each completion's evaluation started as soon as it is finished."""
    import transformers  # heavy: transformers
    from trl import GRPOTrainer  # heavy: trl
    from trl.chat_template_utils import parse_response  # heavy: trl
    from trl.data_utils import is_conversational  # heavy: trl

    class RewardsAheadGRPOTrainer(GRPOTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.rewards_ahead = AheadCounts()
            self._ahead_inputs: list[dict] | None = None
            self._ahead_prompts: list | None = None
            self._ahead_scorers: list = []
            self._ahead_started: set[int] = set()

        def _scorers(self) -> list:
            """The reward functions' scorers that can start an evaluation (``trl_reward_funcs``'), once each."""
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
                    or self.tools or self.rollout_func is not None or self._ahead_prompts is None
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
            prompt, example = self._ahead_prompts[row], reward_row(self._ahead_inputs[row])
            for scorer in self._ahead_scorers:
                scorer.start(prompt, completion, example)

        def _decoded(self, row: int, prompt_ids: list[int], completion_ids: list[int]):
            """One completion as TRL 1.16's ``_generate`` decodes it (single turn, no tools)."""
            if not is_conversational({"prompt": self._ahead_prompts[row]}):
                return self.processing_class.batch_decode([completion_ids], skip_special_tokens=True)[0]
            if Version(transformers.__version__) >= Version("5.0.0") and (
                    getattr(self._tokenizer, "response_template", None) is not None
                    or getattr(self._tokenizer, "response_schema", None) is not None):
                return [parse_response(self._tokenizer, completion_ids, prefix=prompt_ids, tools=self.tools)]
            content = self.processing_class.batch_decode([completion_ids], skip_special_tokens=True)[0]
            return [{"role": "assistant", "content": content}]

    return RewardsAheadGRPOTrainer


__all__ = ["AheadCounts", "FinishedRows", "generate_with", "rewards_ahead_trainer"]
