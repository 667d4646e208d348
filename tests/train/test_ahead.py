"""Rewards started while the batch still generates (``termrl.training.ahead``): the same rewards and
weights as a plain ``GRPOTrainer``, with evaluations started before generation has ended."""

from __future__ import annotations

import pickle
import threading
import time

import pytest
import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from termrl.reward.exports.trl import reward_row, trl_reward_funcs
from termrl.reward.spec import load_spec
from termrl.training.ahead import FinishedRows, generate_with, grpo_trainer_class
from tests.reward_exports.conftest import CountingEvaluate, evidence
from tests.reward_exports.test_trl_grpo import tiny_model, tiny_tokenizer


class Recorder:
    """An evaluator that passes with two "ok" words and records when each evaluation started."""

    def __init__(self, delay_s: float = 0.0):
        self.delay_s, self.started, self.lock = delay_s, [], threading.Lock()

    def __call__(self, prompt, completion: str, row: dict):
        with self.lock:
            self.started.append((time.perf_counter(), completion, row["task_id"]))
        time.sleep(self.delay_s)
        ratio = min(1.0, completion.split().count("ok") / 2)
        return evidence(ratio == 1.0, ratio=ratio, task_id=row["task_id"]), ()


def run(trainer_class, tmp_path, evaluate, steps=3, workers=2, conversational=False):
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    generated_until = []
    generate = model.generate

    def timed(*args, **kwargs):  # an instance attribute of its own, as bench/rl_overhead.py sets one
        try:
            return generate(*args, **kwargs)
        finally:
            generated_until.append(time.perf_counter())

    model.generate = timed
    prompts = ["def x", "print y"]
    if conversational:
        tokenizer.chat_template = ("{% for m in messages %}{{ m['content'] }} {% endfor %}"
                                   "{% if add_generation_prompt %}def {% endif %}")
        prompts = [[{"role": "user", "content": p}] for p in prompts]
    dataset = Dataset.from_dict({"prompt": prompts * 4, "task_id": ["task-a", "task-b"] * 4, "n": [1, 2] * 4})
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", max_steps=steps,
                      activation_checkpointing=False,
                      per_device_train_batch_size=8, num_generations=4, max_completion_length=12,
                      learning_rate=1e-2, logging_steps=1, save_strategy="no", seed=0, disable_tqdm=True)
    funcs = trl_reward_funcs(load_spec("rltf"), evaluate, workers=workers)
    trainer = trainer_class(model=model, reward_funcs=funcs, args=args, train_dataset=dataset,
                            processing_class=tokenizer)
    trainer.train()
    logs = [{k: v for k, v in e.items() if k.startswith("reward")} for e in trainer.state.log_history
            if "reward" in e]
    return trainer, funcs[0].scorer, logs, generated_until


@pytest.mark.parametrize("conversational", [False, True])
def test_the_same_rewards_and_weights_as_a_plain_trainer(tmp_path, conversational):
    plain, plain_scorer, plain_logs, _ = run(GRPOTrainer, tmp_path / "plain", Recorder(),
                                             conversational=conversational)
    recorder = Recorder(delay_s=0.01)
    ahead, scorer, logs, _ = run(grpo_trainer_class(), tmp_path / "ahead", recorder,
                                 conversational=conversational)

    assert logs == plain_logs  # every step's reward and per-component means, exactly
    for (name, a), b in zip(ahead.model.named_parameters(), plain.model.parameters(), strict=True):
        assert torch.equal(a, b), name
    counts = ahead.rewards_ahead
    assert counts.during_generation + counts.after_generation == 3 * 8
    assert counts.during_generation > 0 and counts.after_generation > 0  # both roads were taken
    # each completion evaluated once, every evaluation taken from those started ahead
    assert scorer.evaluations == plain_scorer.evaluations == len(recorder.started) == 3 * 8
    assert scorer.taken_ahead == 3 * 8


def test_evaluations_start_before_the_batch_has_generated(tmp_path):
    recorder = Recorder(delay_s=0.01)
    trainer, _, _, generated_until = run(grpo_trainer_class(), tmp_path, recorder, steps=2)
    assert len(generated_until) == 2
    # the evaluations of each batch start in its generation (the first started before generate returned)
    early = [t for t, _, _ in recorder.started if t < generated_until[0]]
    assert 1 <= len(early) <= trainer.rewards_ahead.during_generation


def test_a_completion_decoded_differently_is_evaluated_again_not_misread(tmp_path):
    class Misreading(grpo_trainer_class()):
        def _decoded(self, row, prompt_ids, completion_ids):
            return "ok ok " + super()._decoded(row, prompt_ids, completion_ids)  # would pass: must not be used

    _, _, plain_logs, _ = run(GRPOTrainer, tmp_path / "plain", Recorder())
    recorder = Recorder()
    trainer, scorer, logs, _ = run(Misreading, tmp_path / "ahead", recorder)

    assert logs == plain_logs
    early = trainer.rewards_ahead.during_generation
    assert early > 0
    assert scorer.taken_ahead == 3 * 8 - early  # only those started after TRL decoded were taken
    assert scorer.evaluations == len(recorder.started) == 3 * 8 + early


def test_started_evaluations_are_taken_once_per_occurrence_and_raise_where_taken():
    calls = []

    def evaluate(prompt, completion, row):
        calls.append(completion)
        if completion == "boom":
            raise RuntimeError("evaluator bug")
        return evidence(completion == "ok", ratio=0.0, task_id=row["task_id"]), ()

    funcs = trl_reward_funcs(load_spec("rltf"), evaluate, workers=2)
    scorer = funcs[0].scorer
    rows = [{"task_id": "t"}] * 3
    for completion in ("ok", "ok"):
        scorer.start("p", completion, reward_row({"prompt": "p", "task_id": "t", "completion_ids": [1]}))
    completions = ["ok", "ok", "no"]
    out = [sum(f(["p"] * 3, completions, task_id=[r["task_id"] for r in rows], completion_ids=[[1]] * 3)[i]
               for f in funcs) for i in range(3)]
    assert out[0] == out[1] > out[2]
    assert sorted(calls) == ["no", "ok", "ok"]  # the sampled-twice completion ran twice, once per occurrence
    assert scorer.taken_ahead == 2 and scorer.evaluations == 3

    scorer.start("p", "boom", {"task_id": "t"})
    with pytest.raises(RuntimeError, match="evaluator bug"):
        funcs[0](["p"], ["boom"], task_id=["t"])
    scorer.close()
    assert scorer._ahead == {} and scorer._ahead_pool is None


def test_reward_funcs_with_started_evaluations_still_pickle():
    funcs = trl_reward_funcs(load_spec("rltf"), CountingEvaluate(), workers=2)
    funcs[0].scorer.start("p", "PASS", {"task_id": "t"})
    copy = pickle.loads(pickle.dumps(funcs))  # the started evaluations and their threads stay here
    assert copy[0].scorer._ahead == {} and copy[0].scorer._ahead_pool is None
    copy[0].scorer.start("p", "PASS", {"task_id": "t"})  # and the copy can start its own
    assert sum(f(["p"], ["PASS"], task_id=["t"])[0] for f in copy) > 0 and copy[0].scorer.taken_ahead == 1
    funcs[0].scorer.close()
    copy[0].scorer.close()


def test_finished_rows_reports_each_row_once_with_what_trl_keeps():
    seen = []
    eos, pad = 9, 9  # the pad token is the end token, as in many tokenizers
    criterion = FinishedRows(prompt_length=2, eos_ids=[eos], on_finished=lambda r, ids: seen.append((r, ids)))
    ids = torch.tensor([[5, 5], [0, 6], [7, 7]])
    for step in ([1, 9, 3], [9, pad, 4], [pad, pad, 4]):
        ids = torch.cat([ids, torch.tensor(step).unsqueeze(1)], dim=1)
        stop = criterion(ids, None)
        assert stop.dtype == torch.bool and not stop.any()  # stops nothing
    assert seen == [(1, [9]), (0, [1, 9])]  # row 2 never finished: TRL decodes it after generation


def test_generate_with_restores_the_model():
    class Model:
        def generate(self, input_ids, stopping_criteria=None):
            return list(stopping_criteria)

    model = Model()
    with generate_with(model, lambda prompt_length: ("criterion", prompt_length)):
        assert model.generate(input_ids=torch.zeros(2, 5)) == [("criterion", 5)]
    assert "generate" not in vars(model)
