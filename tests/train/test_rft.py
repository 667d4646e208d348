"""Rejection-sampling fine-tuning: the keep filter, assistant-only SFT on a tiny model, whole rounds."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import torch

from termrl.actions import render_tool_call
from termrl.policies.scripted import SUBMIT, NopPolicy, OraclePolicy
from termrl.protocols import Action, ActionKind, Reply, StepRecord, Trajectory
from termrl.training.rft import (ADAPTER_META, RFTConfig, adapter_saved, exact_merge_refusal, fine_tune, keep,
                              merge_exactly, restore_merged, run_rft, sft_trainer, verdict, weight_files_digest)

PROMPT = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Count the errors in log."}]
REPLIES = ['<tool_call>{"name": "bash", "arguments": {"command": "grep -c ERROR log"}}</tool_call>',
           '<tool_call>{"name": "submit", "arguments": {}}</tool_call>']
OBSERVATIONS = ["exit code 0\n3", ""]


def episode(sample=0, reward=2.0, findings=(), replies=REPLIES, observations=OBSERVATIONS, **kw) -> Trajectory:
    steps = [StepRecord(i, r, {"kind": "command"}, o) for i, (r, o) in enumerate(zip(replies, observations))]
    return Trajectory(f"t#0#{sample}", "t", "scripted", sample=sample, prompt=[dict(m) for m in PROMPT],
                      steps=steps, ending="submitted", reward=reward, passed=reward is not None and reward >= 1,
                      evidence={"verified": True}, findings=[{"kind": k, "severity": s} for k, s in findings], **kw)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from termrl.policies.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=32, layers=1, heads=2)


def sft_args(tmp_path, **kw):
    from trl import SFTConfig

    base = {"output_dir": str(tmp_path / "sft"), "use_cpu": True, "report_to": "none", "bf16": False,
            "activation_checkpointing": False, "assistant_only_loss": True, "max_steps": 4,
            "per_device_train_batch_size": 2, "learning_rate": 1e-2, "logging_steps": 1, "save_strategy": "no",
            "disable_tqdm": True, "seed": 0}
    return SFTConfig(**{**base, **kw})


def test_keep_filter_wants_enough_reward_and_no_high_severity_finding():
    good = episode(0, reward=1.7, findings=[("empty_work", "medium")])
    cases = {
        "kept": good,
        "below_threshold": episode(1, reward=0.9),
        "hacked": episode(2, reward=3.0, findings=[("tampering", "high")]),  # more reward than good: still out
        "unscored": episode(3, reward=None),
        "harness_failure": episode(4, reward=2.0, error="SandboxError: gone"),
        "format_error": episode(5),
    }
    cases["format_error"].steps = [StepRecord(0, "<tool_call>{", None, "Format error: bad JSON", format_error="x"),
                                   *good.steps]
    got = {name: verdict(t, threshold=1.0, drop_format_errors=True) for name, t in cases.items()}
    assert got == {name: name for name in cases}
    assert [t.episode_id for t in keep(list(cases.values()), 1.0)] == ["t#0#0", "t#0#5"]
    assert keep([episode(reward=1.0)], 1.0) and not keep([episode(reward=0.99)], 1.0)


def test_sft_loss_covers_exactly_the_assistant_replies(tiny, tmp_path):
    trainer = sft_trainer(tiny, [episode()], sft_args(tmp_path), tmp_path / "out")
    example = trainer.train_dataset[0]
    spans, span = [], []
    for token, label in zip(example["input_ids"], example["labels"]):
        if label != -100:
            assert label == token
            span.append(token)
        elif span:
            spans, span = spans + [span], []
    spans += [span] if span else []
    text = [trainer.processing_class.decode(s) for s in spans]
    # TRL's generation span in ChatML: "\n" + reply + end-of-turn + "\n"; nothing of the system
    # prompt, the instruction or the observation carries loss
    assert text == ["\n" + r + "<|im_end|>\n" for r in REPLIES]
    with pytest.raises(ValueError, match="assistant_only_loss=True"):
        sft_trainer(tiny, [episode()], sft_args(tmp_path, assistant_only_loss=False), tmp_path / "out2")


def _reply_logprob(model_dir, trainer) -> float:
    """Mean log-probability of the trained (assistant) tokens of the trainer's first row."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    row = trainer.train_dataset[0]
    ids, labels = torch.tensor([row["input_ids"]]), torch.tensor(row["labels"][1:])
    with torch.no_grad():
        logps = model(ids).logits[0, :-1].log_softmax(-1).gather(1, ids[0, 1:, None])[:, 0]
    return logps[labels != -100].mean().item()


def test_fine_tuning_on_kept_episodes_makes_their_replies_more_likely(tiny, tmp_path):
    # The reward's only lever in RFT is which episodes are imitated, so "moved the right way"
    # is: the kept episodes' replies become more likely. Log-probs are exact and deterministic
    # on CPU; the sampled reward of a random 30k-parameter model is not a usable signal.
    kept = keep([episode(0), episode(1, reward=0.0, replies=["rm -rf /", "x"])], threshold=1.0)
    args = sft_args(tmp_path, max_steps=8)
    probe = sft_trainer(tiny, kept, args, tmp_path / "probe")
    before = _reply_logprob(tiny, probe)
    result = fine_tune(tiny, kept, args, tmp_path / "tuned")
    after = _reply_logprob(tmp_path / "tuned", probe)
    assert result["steps"] == 8 and math.isfinite(result["train_loss"]) and result["rows"] == 1
    assert after > before + 0.5, (before, after)


def test_lora_fine_tuning_saves_a_merged_plain_model(tiny, tmp_path, capsys):
    import shutil

    from peft import LoraConfig
    from safetensors.torch import save_file

    from termrl.policies.hf import HFPolicy

    kept = keep([episode(0)], threshold=1.0)
    args = sft_args(tmp_path, max_steps=8, learning_rate=5e-2)
    probe = sft_trainer(tiny, kept, args, tmp_path / "probe")
    before = _reply_logprob(tiny, probe)
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    result = fine_tune(tiny, kept, args, tmp_path / "tuned", peft_config=lora)
    tuned = tmp_path / "tuned"
    assert result["steps"] == 8 and not (tuned / "adapter_config.json").exists()
    assert set(_weights(tuned)) == set(_weights(tiny))  # same tensors as the base: the adapter is merged
    assert _reply_logprob(tuned, probe) > before + 0.1
    assert HFPolicy(tuned, temperature=0, max_new_tokens=2).model is not None  # loads as a plain model
    # the adapter is kept beside it, and gives the same weights back, bit for bit, with no training
    adapter = tmp_path / "tuned-adapter"
    assert result["adapter"] == str(adapter) and adapter_saved(adapter)
    assert json.loads((adapter / ADAPTER_META).read_text()) == {
        "base": str(tiny), "dtype": "float32", "base_files": weight_files_digest(tiny)}
    assert restore_merged(adapter, tmp_path / "again") == result["weights_digest"]
    first, again = _weights(tuned), _weights(tmp_path / "again")
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == sorted(p.name for p in tuned.iterdir())
    assert "is not the base model" not in capsys.readouterr().err
    # merged into another base (a model built again otherwise): said, and other weights
    other = tmp_path / "other-base"
    shutil.copytree(tiny, other)
    weights = _weights(other)
    weights["lm_head.weight" if "lm_head.weight" in weights else next(iter(weights))] += 1e-3
    save_file(weights, str(other / "model.safetensors"))
    assert restore_merged(adapter, tmp_path / "elsewhere", base=other) != result["weights_digest"]
    assert f"{other} is not the base model the adapter in {adapter} was trained on" in capsys.readouterr().err


def test_the_exact_merge_is_peft_s_merge_summed_in_a_fixed_order():
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)

    def lora_model():
        torch.manual_seed(0)
        model = get_peft_model(Qwen2ForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
        for name, parameter in model.named_parameters():  # B starts at zero: give the adapter a real delta
            if "lora_B" in name:
                parameter.data = torch.randn_like(parameter)
        return model

    base = {k: v.clone() for k, v in lora_model().get_base_model().state_dict().items() if "lora" not in k}
    exact, peft_merged = merge_exactly(lora_model()).state_dict(), lora_model().merge_and_unload().state_dict()
    assert set(exact) == set(peft_merged) == {k.replace("base_layer.", "") for k in base}
    moved = [k for k in exact
             if "proj" in k and not torch.equal(exact[k], base[k.replace("proj.", "proj.base_layer.")])]
    assert len(moved) == 7  # q, k, v, o, gate, up, down: every adapted layer changed
    for key in exact:  # the same sums, rounded otherwise at most
        torch.testing.assert_close(exact[key], peft_merged[key], rtol=1e-5, atol=1e-6)

    dora = get_peft_model(Qwen2ForCausalLM(config), LoraConfig(r=4, use_dora=True, target_modules="all-linear"))
    untouched = {k: v.clone() for k, v in dora.state_dict().items()}
    assert "plain LoRA" in exact_merge_refusal(dora) and exact_merge_refusal(lora_model()) is None
    with pytest.raises(ValueError, match="plain LoRA"):
        merge_exactly(dora)
    assert all(torch.equal(v, untouched[k]) for k, v in dora.state_dict().items())  # refused before any merge


def test_an_adapter_the_exact_merge_refuses_is_merged_by_peft_and_said(tiny, tmp_path, capsys):
    from peft import LoraConfig

    dora = LoraConfig(r=4, lora_alpha=8, use_dora=True, target_modules="all-linear", task_type="CAUSAL_LM")
    result = fine_tune(tiny, keep([episode(0)], threshold=1.0), sft_args(tmp_path, max_steps=2), tmp_path / "tuned",
                       peft_config=dora)
    assert "merged by peft instead" in capsys.readouterr().err
    assert "adapter" not in result and not (tmp_path / "tuned-adapter").exists()
    assert set(_weights(tmp_path / "tuned")) == set(_weights(tiny))


class Mixed:
    """Sample 0 plays the oracle; sample 1 the oracle after planting a conftest.py (a high-severity
    hack that still passes); every other sample submits at once (fails)."""

    name = "mixed"

    def generate(self, turns):
        return [Reply(self._reply(t)) for t in turns]

    @staticmethod
    def _reply(turn):
        if turn.sample == 0:
            return OraclePolicy._reply(turn)
        if turn.sample == 1:
            if turn.step == 0:
                return render_tool_call(Action(ActionKind.WRITE, path="conftest.py", content="import os\n"))
            return OraclePolicy._reply(dataclasses.replace(turn, step=turn.step - 1))
        return SUBMIT


def _weights(directory):
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


@pytest.mark.sandbox
def test_a_round_samples_keeps_only_clean_successes_trains_and_evaluates(tiny, tmp_path):
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig
    from termrl.tasks.suites import find_task

    task = find_task("shell-count-errors")
    made = []

    def factory(model_dir, purpose):
        made.append((purpose, model_dir))
        return Mixed() if purpose == "sample" else OraclePolicy()

    rollout = RolloutConfig(workers=2, env=EnvConfig(static=False))
    out = tmp_path / "rft"
    [record] = run_rft(tiny, [task], [task], sft_args(tmp_path), out_dir=out, rollout=rollout,
                       config=RFTConfig(rounds=1, samples_per_task=3), policy_factory=factory)

    assert record["sampled"] == 3 and record["kept"] == 1 and record["kept_fraction"] == pytest.approx(1 / 3)
    assert record["rejected"] == {"below_threshold": 1, "hacked": 1}
    assert record["trained"] and record["skipped"] is None and record["train_steps"] == 4
    assert math.isfinite(record["train_loss"]) and record["mean_reward"] is not None
    assert record["heldout_pass@1"] == 1.0 and record["heldout_episodes"] == 1
    assert made == [("sample", tiny), ("eval", out / "round-1" / "model")]
    before, after = _weights(tiny), _weights(out / "round-1" / "model")
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert json.loads((out / "rounds.json").read_text())["rounds"] == [record]
    from termrl.rollout.store import read

    assert len(read(out / "round-1" / "samples")) == 3

    with pytest.raises(ValueError, match="new out_dir"):
        run_rft(tiny, [task], [], sft_args(tmp_path), out_dir=out, policy_factory=factory)


@pytest.mark.sandbox
def test_rounds_that_keep_nothing_skip_training_and_say_so(tiny, tmp_path):
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig
    from termrl.tasks.suites import find_task

    records = run_rft(tiny, [find_task("shell-count-errors")], [], sft_args(tmp_path), out_dir=tmp_path / "rft",
                      rollout=RolloutConfig(workers=2, env=EnvConfig(static=False)),
                      config=RFTConfig(rounds=2, samples_per_task=2), policy_factory=lambda d, p: NopPolicy())
    assert [r["kept"] for r in records] == [0, 0]
    assert all(not r["trained"] and "training skipped" in r["skipped"] and r["train_loss"] is None for r in records)
    assert all(r["model_out"] == r["model_in"] == str(tiny) for r in records)
    assert records[0]["heldout_pass@1"] is None and not (tmp_path / "rft" / "round-1" / "model").exists()


@pytest.mark.sandbox
def test_rounds_hand_the_weights_to_a_local_model_policy_through_their_directory(tiny, tmp_path):
    from termrl.env import EnvConfig
    from termrl.policies.hf import HFConfig
    from termrl.rollout.runner import RolloutConfig
    from termrl.tasks.suites import find_task

    task = find_task("shell-count-errors")
    [record] = run_rft(tiny, [task], [task], sft_args(tmp_path, max_steps=2), out_dir=tmp_path / "rft",
                       rollout=RolloutConfig(workers=2, env=EnvConfig(static=False, max_steps=2)),
                       config=RFTConfig(rounds=1, samples_per_task=2, threshold=-100.0),  # keep every clean episode
                       hf_config=HFConfig(max_new_tokens=12, seed=0))
    assert record["sampled"] == record["kept"] == 2 and record["rejected"] == {} and record["trained"]
    # the held-out episode ran an HFPolicy loaded from the round's saved directory
    assert record["model_out"] == str(tmp_path / "rft" / "round-1" / "model")
    assert record["heldout_episodes"] == 1 and record["heldout_errors"] == 0


class Dawdler:
    """Sample 0 plays the oracle, then runs ``ls`` until its steps run out (passes at the step
    limit); sample 1 plays the oracle and submits."""

    name = "dawdler"

    def generate(self, turns):
        return [Reply(self._reply(t)) for t in turns]

    @staticmethod
    def _reply(turn):
        if turn.step < 2:
            return OraclePolicy._reply(turn)
        return render_tool_call(Action(ActionKind.COMMAND, command="ls")) if turn.sample == 0 else SUBMIT


@pytest.mark.sandbox
def test_an_episode_that_passed_at_its_step_limit_is_imitated_only_up_to_its_solution_then_a_submit(tmp_path):
    from termrl.env import EnvConfig
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.tasks.suites import find_task
    from termrl.training.rft import trim
    from termrl.training.trajdata import sft_rows

    task = find_task("shell-count-errors")
    rollout = RolloutConfig(samples=2, workers=2, env=EnvConfig(static=False, max_steps=4))
    sampled = sorted(run_rollouts([task], Dawdler(), rollout), key=lambda t: t.sample)
    assert [(t.ending, t.passed, len(t.steps)) for t in sampled] == [("step_limit", True, 4), ("submitted", True, 3)]
    # a stored success no prefix reproduces (e.g. a command whose result changed): dropped, not imitated
    ghost = dataclasses.replace(sampled[0], episode_id=f"{task.id}#{task.meta.seed}#2", sample=2,
                                steps=[dataclasses.replace(s, reply=render_tool_call(
                                    Action(ActionKind.COMMAND, command="true"))) for s in sampled[0].steps[:2]])
    kept = keep([*sampled, ghost], 1.0)
    assert len(kept) == 3

    store = tmp_path / "kept"
    out, counts = trim(kept, [task], rollout, store, Accountant())
    assert counts == {"trimmed": 1, "not_reproduced": 1}
    assert [t.sample for t in out] == [0, 1]
    cut, untouched = out
    assert untouched is sampled[1]
    assert cut.ending == "submitted" and cut.passed and cut.reward >= 1.0
    assert [s.reply for s in cut.steps] == [s.reply for s in sampled[0].steps[:2]] + [SUBMIT]
    # the replay's observations are the environment's own, and what SFT imitates ends with the submit
    assert [s.observation for s in cut.steps[:2]] == [s.observation for s in sampled[0].steps[:2]]
    [row, _] = sft_rows(out)
    assert [m["content"] for m in row["messages"] if m["role"] == "assistant"][-1] == SUBMIT

    # a resumed round reads the replay from its store instead of playing it again
    again, counts = trim(kept[:1], [task], rollout, store, Accountant())
    assert counts["trimmed"] == 1 and again[0].episode_id == cut.episode_id and again[0].steps[-1].reply == SUBMIT


@pytest.mark.sandbox
def test_a_round_says_how_many_kept_episodes_it_trimmed(tiny, tmp_path):
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig
    from termrl.tasks.suites import find_task

    task = find_task("shell-count-errors")
    rollout = RolloutConfig(workers=2, env=EnvConfig(static=False, max_steps=4))
    for trimmed, out in ((True, "on"), (False, "off")):
        [record] = run_rft(tiny, [task], [], sft_args(tmp_path), out_dir=tmp_path / out, rollout=rollout,
                           config=RFTConfig(rounds=1, samples_per_task=2, trim=trimmed),
                           policy_factory=lambda d, p: Dawdler())
        assert record["kept"] == 2 and record["trained"]
        assert (record["trimmed"], record["not_reproduced"]) == ((1, 0) if trimmed else (0, 0))
        assert (tmp_path / out / "round-1" / "kept").exists() == trimmed


@pytest.mark.sandbox
def test_a_resumed_round_evaluates_the_weights_it_already_trained(tiny, tmp_path, monkeypatch):
    from termrl.env import EnvConfig
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig
    from termrl.tasks.suites import find_task
    from termrl.training import rft

    task = find_task("shell-count-errors")
    kwargs = dict(out_dir=tmp_path / "rft", config=RFTConfig(rounds=1, samples_per_task=3),
                  rollout=RolloutConfig(workers=2, env=EnvConfig(static=False)), accountant=Accountant(),
                  policy_factory=lambda d, p: Mixed())
    first = rft.rft_round(1, tiny, [task], [], sft_args(tmp_path), **kwargs)
    weights = _weights(tmp_path / "rft" / "round-1" / "model")

    def no_training(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(rft, "fine_tune", no_training)
    again = rft.rft_round(1, tiny, [task], [], sft_args(tmp_path), **kwargs)  # samples stored: nothing replays
    assert again["train_loss"] == first["train_loss"] and again["train_steps"] == first["train_steps"]
    after = _weights(tmp_path / "rft" / "round-1" / "model")
    assert all(torch.equal(weights[k], after[k]) for k in weights)
    # other kept episodes (here: another base) are other training: the marker does not match
    with pytest.raises(AssertionError, match="trained again"):
        rft.rft_round(1, tmp_path / "rft" / "round-1" / "model", [task], [], sft_args(tmp_path), **kwargs)


def test_a_training_that_leaves_its_first_training_s_path_says_so_at_that_step(capsys):
    from termrl.training.rft import StepDigests

    def train(steps: list[float], digests: StepDigests) -> StepDigests:
        model = torch.nn.Linear(3, 2)
        model.bias.requires_grad_(False)  # only what trains is digested
        with torch.no_grad():
            model.weight.zero_()
            model.bias.zero_()
            for step in steps:
                model.weight.add_(step)
                digests.step(model)
        return digests

    first = train([1.0, 1.0, 1.0], StepDigests())
    assert len(set(first.digests)) == 3 and all(len(d) == 16 for d in first.digests)
    same = train([1.0, 1.0, 1.0], StepDigests(first.digests, label="round 1 trained again"))
    assert same.digests == first.digests and same.first_difference is None
    assert "differs" not in capsys.readouterr().err
    other = train([1.0, 1.0001, 1.0], StepDigests(first.digests, label="round 1 trained again"))
    assert other.first_difference == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "round 1 trained again differs from its first training at step 2 of 3" in said
    assert said.count("differs") == 1  # said once, at the first step that differs


def test_a_sampled_parameters_digest_reads_every_kth_element_and_still_tells_diverged_weights_apart():
    from termrl.distributed import parameters_digest

    model = torch.nn.Linear(1000, 1000)  # 1,001,000 parameters; a sample of about 10,000 reads every 101st
    whole, sampled = parameters_digest(model), parameters_digest(model, max_elements=10_000)
    with torch.no_grad():
        model.weight[0, 5] += 1.0  # off the sample: only the whole digest sees it
    assert parameters_digest(model, max_elements=10_000) == sampled and parameters_digest(model) != whole
    with torch.no_grad():
        model.weight.mul_(1.0001)  # a training that went apart moves (almost) every weight
    assert parameters_digest(model, max_elements=10_000) != sampled
