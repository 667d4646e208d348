"""DPO from execution ranking: which episodes pair, which tokens are scored, and a tiny model's margin widening."""

from __future__ import annotations

import pytest
import torch

from termrl.protocols import StepRecord, Trajectory
from termrl.rollout.chat import conversation
from termrl.training.dpo import dpo_pairs, dpo_trainer, train_dpo

PROMPT = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Count the errors in log."}]
GOOD = ['<tool_call>{"name": "bash", "arguments": {"command": "grep -c ERROR log"}}</tool_call>',
        '<tool_call>{"name": "submit", "arguments": {}}</tool_call>']
BAD = ['<tool_call>{"name": "bash", "arguments": {"command": "echo 3 > /tests/expected"}}</tool_call>',
       '<tool_call>{"name": "submit", "arguments": {}}</tool_call>']
HACK = ['<tool_call>{"name": "write_file", "arguments": {"path": "conftest.py", "content": "x"}}</tool_call>',
        '<tool_call>{"name": "submit", "arguments": {}}</tool_call>']


def ep(sample, reward, hack=False, task="t", prompt=PROMPT, replies=GOOD, observations=("exit code 0\n3", ""),
       **kw) -> Trajectory:
    steps = [StepRecord(i, r, {"kind": "command"}, o) for i, (r, o) in enumerate(zip(replies, observations))]
    return Trajectory(f"{task}#0#{sample}", task, "scripted", sample=sample, prompt=[dict(m) for m in prompt],
                      steps=steps, ending="submitted", reward=reward, **{"evidence": {"verified": True}, **kw},
                      findings=[{"kind": "tampering", "severity": "high"}] if hack else [])


def ids(pairs):
    return [(p["chosen_id"][-1], p["rejected_id"][-1], p["reason"]) for p in pairs]


def test_a_hacked_episode_is_always_rejected_never_chosen():
    clean, hack, other_hack = ep(0, 0.1), ep(1, 2.0, hack=True), ep(2, 1.0, hack=True)
    assert ids(dpo_pairs([clean, hack, other_hack])) == [("0", "1", "hack"), ("0", "2", "hack")]
    assert dpo_pairs([hack, other_hack]) == []  # two hacks: neither may be chosen
    # equal rewards: the finding is the preference, and min_gap does not apply to it
    assert ids(dpo_pairs([ep(0, 1.0), ep(1, 1.0, hack=True)], min_gap=5)) == [("0", "1", "hack")]


def test_ties_missing_rewards_harness_failures_and_different_prompts_never_pair():
    other_prompt = [PROMPT[0], {"role": "user", "content": "Another listing."}]
    episodes = [ep(0, 1.0), ep(1, 1.0), ep(2, None), ep(3, 2.0, error="SandboxError: gone"),
                ep(4, 0.0, task="u"), ep(5, 0.0, prompt=other_prompt), ep(6, 3.0, evidence=None)]
    assert dpo_pairs(episodes) == []


def test_the_higher_reward_is_chosen_with_a_margin_and_a_cap():
    a, b, c = ep(0, 2.0), ep(1, 1.0, replies=BAD), ep(2, 1.9)
    pairs = dpo_pairs([b, c, a])
    assert ids(pairs) == [("0", "1", "reward"), ("2", "1", "reward"), ("0", "2", "reward")]  # largest gap first
    assert pairs[0]["prompt"] == PROMPT
    assert pairs[0]["chosen"] == conversation(a)[2:] and pairs[0]["rejected"] == conversation(b)[2:]
    assert [m["role"] for m in pairs[0]["chosen"]] == ["assistant", "user", "assistant"]
    assert (pairs[0]["chosen_reward"], pairs[0]["rejected_reward"]) == (2.0, 1.0)
    assert ids(dpo_pairs([a, b, c], min_gap=0.5)) == [("0", "1", "reward"), ("2", "1", "reward")]
    assert ids(dpo_pairs([a, b, c], max_pairs_per_prompt=1)) == [("0", "1", "reward")]
    with pytest.raises(ValueError):
        dpo_pairs([a], min_gap=-1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from termrl.policies.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=32, layers=1, heads=2)


def dpo_args(tmp_path, **kw):
    from trl import DPOConfig

    base = {"output_dir": str(tmp_path / "dpo"), "use_cpu": True, "report_to": "none", "bf16": False,
            "activation_checkpointing": False, "max_steps": 8, "per_device_train_batch_size": 2,
            "learning_rate": 5e-3, "logging_steps": 1, "save_strategy": "no", "disable_tqdm": True, "seed": 0,
            "beta": 0.1}
    return DPOConfig(**{**base, **kw})


def _scored(trainer, row: int) -> tuple[list[str], list[str]]:
    """The scored stretches of the chosen and rejected sequences of the first pair, decoded."""
    batch = trainer.data_collator([trainer.train_dataset[row]])
    out = []
    for input_ids, mask in zip(batch["input_ids"], batch["completion_mask"]):
        spans, span = [], []
        for token, bit in zip(input_ids.tolist(), mask.tolist()):
            if bit:
                span.append(token)
            elif span:
                spans, span = spans + [span], []
        out.append([trainer.processing_class.decode(s) for s in spans + ([span] if span else [])])
    return out[0], out[1]


def test_dpo_scores_the_policys_replies_and_not_the_observations(tiny, tmp_path):
    from transformers import AutoTokenizer

    pairs = dpo_pairs([ep(0, 2.0), ep(1, 0.0, replies=BAD, observations=("exit code 0\n", ""))])
    tok = AutoTokenizer.from_pretrained(tiny)
    chosen, rejected = _scored(dpo_trainer(str(tiny), tok, pairs, dpo_args(tmp_path)), 0)
    # the first reply follows the prompt's "<|im_start|>assistant\n"; later ones carry TRL's "\n"
    assert chosen == [GOOD[0] + "<|im_end|>\n", "\n" + GOOD[1] + "<|im_end|>\n"]
    assert rejected == [BAD[0] + "<|im_end|>\n", "\n" + BAD[1] + "<|im_end|>\n"]

    plain_chosen, _ = _scored(dpo_trainer(str(tiny), tok, pairs, dpo_args(tmp_path), mask_observations=False), 0)
    assert len(plain_chosen) == 1 and "exit code 0\n3" in plain_chosen[0]  # TRL alone scores the observation


def test_dpo_changes_the_weights_and_widens_the_preference_margin(tiny, tmp_path):
    from datasets import Dataset
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    episodes = [ep(0, 2.0), ep(1, 0.5, replies=BAD), ep(2, 3.0, hack=True, replies=HACK)]
    pairs = dpo_pairs(episodes)
    assert ids(pairs) == [("0", "2", "hack"), ("1", "2", "hack"), ("0", "1", "reward")]
    trainer = train_dpo(str(tiny), AutoTokenizer.from_pretrained(tiny), pairs, dpo_args(tmp_path))

    # TRL's implicit-reward margin, beta * (chosen - rejected log-ratio to the reference), per batch:
    # zero at step 1 (policy == reference), positive once the policy prefers the chosen side
    margins = [log["rewards/margins"] for log in trainer.state.log_history if "rewards/margins" in log]
    assert len(margins) == 8 and margins[0] == pytest.approx(0.0, abs=1e-4)
    assert all(m > 0 for m in margins[1:]), margins
    # and over every pair at the end (batches above mix different pairs)
    final = trainer.evaluate(Dataset.from_list([{k: p[k] for k in ("prompt", "chosen", "rejected")} for p in pairs]))
    assert final["eval_rewards/margins"] > 0.5 and final["eval_rewards/accuracies"] == 1.0, final
    before = load_file(str(tiny / "model.safetensors"))
    after = {k: v.detach() for k, v in trainer.model.state_dict().items()}
    assert any(not torch.equal(before[k], after[k]) for k in before if k in after)
