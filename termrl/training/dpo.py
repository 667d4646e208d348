"""DPO on execution-ranked pairs: ``dpo_pairs`` ranks episodes, TRL's ``DPOTrainer`` trains.

What it really is: standard DPO (Rafailov et al. 2023, sigmoid loss by default) over whole
multi-turn episodes. Pairs come from ``termrl.training.trajdata.dpo_pairs``: two episodes of the
same prompt, the higher execution reward chosen, and an episode caught hacking (a high-severity
finding) always rejected, never chosen.

A chosen or rejected completion is the rest of an episode's chat: the policy's replies *and*
the environment's observations between them. TRL's DPO scores every completion token. The
observations are not the policy's actions: in an episode's true likelihood the environment's
transition probabilities are the same under the policy and the reference, so they cancel out of
the DPO log-ratio; scored anyway, they train the model to predict the chosen episode's terminal
output. TRL has no option to leave them out, so ``AgentDPOTrainer`` (``mask_observations=True``,
the default) does, in two small overrides: after TRL tokenizes a pair it computes which
completion tokens are assistant tokens (the chat template's ``{% generation %}`` spans: the same
masks ``SFTConfig(assistant_only_loss=True)`` uses, from TRL's training template when the
tokenizer's own has no markers), and its collator zeros TRL's ``completion_mask`` everywhere
else. The loss, the reference log-probs and the logged ``rewards/*`` and ``logps/*`` then cover
the policy's tokens only. ``mask_observations=False`` runs TRL's ``DPOTrainer`` unchanged
(observations scored: the approximation above).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from datasets import Dataset
from trl import DPOConfig, DPOTrainer
from trl.trainer.dpo_trainer import DataCollatorForPreference

from termrl.training.trajdata import dpo_pairs, training_template

__all__ = ["ActionMaskCollator", "AgentDPOTrainer", "dpo_pairs", "dpo_trainer", "train_dpo"]

MASK_COLUMNS = ("chosen_action_mask", "rejected_action_mask")


def _action_masks(example: dict, tokenizer, template: str | None) -> dict:
    """1 for each completion token inside an assistant turn, aligned with TRL's ``*_ids``."""
    out = {}
    for side in ("chosen", "rejected"):
        enc = tokenizer.apply_chat_template(example["prompt"] + example[side], tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True, chat_template=template)
        ids = example["prompt_ids"] + example[f"{side}_ids"]
        if list(enc["input_ids"]) != ids:
            raise ValueError("the training chat template tokenizes a pair differently from the tokenizer's own "
                             "template, so its assistant masks do not line up: give the tokenizer a template "
                             "with {% generation %} markers that renders the same text, or use "
                             "mask_observations=False")
        out[f"{side}_action_mask"] = list(enc["assistant_masks"][len(example["prompt_ids"]):])
    return out


@dataclass
class ActionMaskCollator(DataCollatorForPreference):
    """TRL's preference collator, with ``completion_mask`` zeroed outside assistant tokens."""

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        out = super().torch_call(examples)
        keep = torch.zeros_like(out["completion_mask"])
        rows = [(e, "chosen") for e in examples] + [(e, "rejected") for e in examples]  # TRL's row order
        for i, (e, side) in enumerate(rows):
            bits = ([0] * len(e["prompt_ids"]) + list(e[f"{side}_action_mask"]))[: keep.shape[1]]
            keep[i, : len(bits)] = torch.tensor(bits, dtype=keep.dtype)
        out["completion_mask"] = out["completion_mask"] * keep
        return out


class AgentDPOTrainer(DPOTrainer):
    """``DPOTrainer`` whose log-probs cover the policy's replies only, not the observations.

    Needs ``data_collator=ActionMaskCollator(...)``; ``dpo_trainer`` and ``train_dpo`` pass it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not isinstance(self.data_collator, ActionMaskCollator):
            raise TypeError("AgentDPOTrainer needs data_collator=ActionMaskCollator(...), or its masks go unused: "
                            "build it with termrl.training.dpo.dpo_trainer")

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        dataset = super()._prepare_dataset(dataset, processing_class, args, dataset_name)
        return dataset.map(_action_masks, fn_kwargs={"tokenizer": processing_class,
                                                     "template": training_template(processing_class)})

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        self._signature_columns = [*self._signature_columns,
                                   *(c for c in MASK_COLUMNS if c not in self._signature_columns)]


def dpo_trainer(model, tokenizer, pairs: Sequence[dict], args: DPOConfig, peft_config=None, *,
                mask_observations: bool = True, ref_model=None) -> DPOTrainer:
    """The trainer ``train_dpo`` trains: ``AgentDPOTrainer`` with ``ActionMaskCollator`` when
    ``mask_observations``, else TRL's ``DPOTrainer`` as is. ``pairs``: ``dpo_pairs`` rows (only
    their ``prompt``, ``chosen`` and ``rejected`` are used)."""
    if not pairs:
        raise ValueError("no preference pairs: sample more episodes per task, or lower min_gap")
    dataset = Dataset.from_list([{k: p[k] for k in ("prompt", "chosen", "rejected")} for p in pairs])
    if not mask_observations:
        return DPOTrainer(model=model, ref_model=ref_model, args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=peft_config)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    collator = ActionMaskCollator(pad_token_id=tokenizer.pad_token_id, max_length=args.max_length,
                                  truncation_mode=args.truncation_mode, pad_to_multiple_of=args.pad_to_multiple_of)
    return AgentDPOTrainer(model=model, ref_model=ref_model, args=args, data_collator=collator,
                           train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config)


def train_dpo(model, tokenizer, pairs: Sequence[dict], args: DPOConfig, peft_config=None, *,
              mask_observations: bool = True, ref_model=None) -> DPOTrainer:
    """Train ``model`` (a model or its directory) on ``pairs`` (``dpo_pairs`` rows) with TRL's DPO;
    returns the trained trainer (``trainer.model``, ``trainer.state.log_history``, ``save_model``).

    ``ref_model`` None: TRL's default (a frozen copy of the initial model; with ``peft_config``, the
    model without its adapter). ``mask_observations``: see the module docstring."""
    trainer = dpo_trainer(model, tokenizer, pairs, args, peft_config, mask_observations=mask_observations,
                          ref_model=ref_model)
    trainer.train()
    return trainer
