"""A real TRL ``GRPOTrainer`` trains a tiny locally built Qwen2 on our reward functions, on CPU."""

from __future__ import annotations

import math

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from termrl.reward.exports.trl import trl_reward_funcs
from termrl.reward.spec import load_spec

from .conftest import evidence

WORDS = ["def", "return", "pass", "ok", "fail", "x", "y", "print", "if", "else", "for", "in", "range"]


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer trained here on WORDS: never fetched from a hub."""
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.train_from_iterator([" ".join(WORDS)], trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<eos>"]))
    tok.decoder = decoders.WordPiece()  # joins words with spaces
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")


def tiny_model(tokenizer) -> Qwen2ForCausalLM:
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=None, tie_word_embeddings=True)
    torch.manual_seed(0)
    return Qwen2ForCausalLM(config)


SEEN: list[str] = []


def ok_evaluate(prompt, completion: str, row: dict):
    """Passes with two "ok" words; one earns half the tests; "fail" first makes verification fail."""
    assert row["task_id"] in ("task-a", "task-b")
    SEEN.append(completion)
    if completion.split()[:1] == ["fail"]:
        return evidence(False, verified=False, task_id=row["task_id"]), ()
    ratio = min(1.0, completion.split().count("ok") / 2)
    return evidence(ratio == 1.0, ratio=ratio, task_id=row["task_id"]), ()


def test_grpo_trainer_trains_on_the_component_rewards(tmp_path):
    spec = load_spec("rltf")
    funcs = trl_reward_funcs(spec, ok_evaluate)
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    dataset = Dataset.from_dict({"prompt": ["def x", "print y"] * 4, "task_id": ["task-a", "task-b"] * 4})
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", max_steps=2,
                      activation_checkpointing=False,
                      per_device_train_batch_size=4, num_generations=4, max_completion_length=8,
                      learning_rate=1e-2, logging_steps=1, save_strategy="no", seed=0, disable_tqdm=True)
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=args, train_dataset=dataset,
                          processing_class=tokenizer)
    SEEN.clear()
    trainer.train()

    assert trainer.state.global_step == 2
    assert len(SEEN) == 2 * 4  # each completion evaluated once, though TRL called two functions
    logs = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logs) == 2
    for entry in logs:
        for name in spec.component_names:  # one logged reward per component, under its own name
            assert f"rewards/termrl/{name}/mean" in entry and f"rewards/termrl/{name}/std" in entry
        # TRL's reward is the sum of the weighted contributions (reward_weights left at 1)
        means = [entry[f"rewards/termrl/{name}/mean"] for name in spec.component_names]
        if not any(math.isnan(m) for m in means):
            assert entry["reward"] == pytest.approx(sum(means), abs=1e-5)
    changed = sum((p.detach() - before[n]).abs().sum().item() for n, p in trainer.model.named_parameters())
    assert changed > 0
