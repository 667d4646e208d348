"""The TRL export on a fake ``evaluate``: names, weighted sums, None, progress, caching, chat, length, group."""

from __future__ import annotations

import math
import pickle

import pytest
from transformers import TrainerState
from trl.trainer.utils import get_callable_name

from termrl.protocols import Finding
from termrl.reward.exports.trl import completion_text, training_progress, trl_reward_funcs
from termrl.reward.spec import load_spec

from .conftest import CountingEvaluate, fake_evaluate

PROMPTS = ["p0", "p0", "p1", "p1"]
COMPLETIONS = ["PASS", "HALF", "fail", "PASS"]
TASK_IDS = ["t0", "t0", "t1", "t1"]
STATE = TrainerState(global_step=0, max_steps=10)


def call_all(funcs, prompts=PROMPTS, completions=COMPLETIONS, state=STATE, **columns):
    columns.setdefault("task_id", TASK_IDS[:len(completions)])
    return {f.__name__: f(prompts=prompts, completions=completions, trainer_state=state, **columns)
            for f in funcs}


@pytest.mark.parametrize("preset", ["sparse", "coderl", "rltf", "staged"])
def test_one_function_per_component_named_after_it(preset):
    spec = load_spec(preset)
    funcs = trl_reward_funcs(spec, fake_evaluate)
    names = [f"termrl/{n}" for n in spec.component_names]
    assert [f.__name__ for f in funcs] == names
    assert [get_callable_name(f) for f in funcs] == names  # what TRL logs as rewards/<name>/mean


@pytest.mark.parametrize("preset", ["coderl", "rltf", "staged"])
def test_contributions_sum_to_the_total(preset):
    spec = load_spec(preset)
    out = call_all(trl_reward_funcs(spec, fake_evaluate), state=TrainerState(global_step=3, max_steps=10))
    for i, completion in enumerate(COMPLETIONS):
        expected = spec.score(fake_evaluate(PROMPTS[i], completion, {})[0], progress=0.3)
        assert math.isclose(sum(out[name][i] for name in out), expected.total, abs_tol=1e-9)
        for name in spec.component_names:
            contribution = expected.components[name].contribution
            assert out[f"termrl/{name}"][i] == pytest.approx(contribution or 0.0)
    assert out["termrl/outcome"] == pytest.approx([1.0, -0.3 + 1.3 * 0.5, -0.3, 1.0] if preset == "rltf"
                                                  else [1.0, -0.3, -0.3, 1.0])


def test_none_from_every_function_when_verification_fails():
    funcs = trl_reward_funcs(load_spec("staged"), fake_evaluate)
    logged = []
    out = call_all(funcs, completions=["PASS", "CRASH", "NONE", "fail"],
                   log_metric=lambda name, value: logged.append((name, value)))
    for values in out.values():
        assert values[1] is None and values[2] is None  # TRL: the row is unscorable, advantage 0
        assert isinstance(values[0], float) and isinstance(values[3], float)
    # counted apart from the policy's failures: once per batch, not once per function
    assert funcs[0].scorer.unverified == 2
    # groups by prompt (no num_generations): each holds one verified completion, so no signal
    assert logged == [("termrl/zero_variance_groups", 1.0), ("termrl/zero_variance_groups_cumulative", 1.0),
                      ("termrl/unverified_fraction", 0.5)]
    assert (funcs[0].scorer.stats.groups, funcs[0].scorer.stats.zero) == (2, 2)


def test_progress_from_trainer_state_moves_a_scheduled_weight():
    spec = load_spec("staged")
    funcs = trl_reward_funcs(spec, fake_evaluate)
    start = call_all(funcs, state=TrainerState(global_step=0, max_steps=10))
    middle = call_all(funcs, state=TrainerState(global_step=5, max_steps=10))
    # compile_success: 0.5 -> 0.275 at p=0.5; test_pass_ratio: 0.2 -> 1.0
    assert start["termrl/compile"] == pytest.approx([0.5] * 4)
    assert middle["termrl/compile"] == pytest.approx([0.275] * 4)
    assert start["termrl/tests"] == pytest.approx([0.2, 0.1, 0.0, 0.2])
    assert middle["termrl/tests"] == pytest.approx([1.0, 0.5, 0.0, 1.0])
    assert start["termrl/outcome"] == middle["termrl/outcome"]
    assert training_progress(TrainerState(global_step=5, max_steps=10)) == 0.5
    assert training_progress(TrainerState(global_step=5, max_steps=0)) == 0.0
    assert training_progress(None) == 0.0


def test_each_completion_is_evaluated_once_per_batch():
    evaluate = CountingEvaluate()
    funcs = trl_reward_funcs(load_spec("staged"), evaluate)
    completions = list(COMPLETIONS)
    for f in funcs:
        f(prompts=PROMPTS, completions=completions, trainer_state=STATE, task_id=TASK_IDS)
    assert len(funcs) == 6 and len(evaluate.calls) == 4
    assert [c[1] for c in evaluate.calls] == COMPLETIONS
    assert evaluate.calls[0][2] == {"task_id": "t0"}  # the row: dataset columns only
    # the next batch is a new list, even with the same texts: evaluated again
    batch2 = list(COMPLETIONS)
    for f in funcs:
        f(prompts=PROMPTS, completions=batch2, trainer_state=STATE, task_id=TASK_IDS)
    assert len(evaluate.calls) == 8
    # a batch with other texts in a list at the same address is never served from the cache
    completions[:] = ["fail"] * 4
    assert funcs[2](prompts=PROMPTS, completions=completions, trainer_state=STATE,
                    task_id=TASK_IDS) == [-0.3] * 4
    assert len(evaluate.calls) == 12


def test_chat_completions_are_handled():
    evaluate = CountingEvaluate()
    funcs = trl_reward_funcs(load_spec("coderl"), evaluate)
    prompts = [[{"role": "user", "content": "solve"}]] * 2
    completions = [[{"role": "assistant", "content": "PASS"}],
                   [{"role": "assistant", "content": [{"type": "text", "text": "fail"}]}]]
    out = call_all(funcs, prompts=prompts, completions=completions, task_id=["t0", "t0"])
    assert out["termrl/outcome"] == [1.0, -0.3]
    assert [c[1] for c in evaluate.calls] == ["PASS", "fail"]
    assert completion_text([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "x"},
                            {"role": "assistant", "content": "b"}]) == "a\nb"


def test_findings_reach_the_hack_component():
    def evaluate(prompt, completion, row):
        evidence, _ = fake_evaluate(prompt, completion, row)
        return evidence, [Finding("test_edit", "high")] if "HACK" in completion else []

    out = call_all(trl_reward_funcs(load_spec("coderl"), evaluate), completions=["PASS HACK", "PASS"],
                   prompts=["p", "p"], task_id=["t", "t"])
    assert out["termrl/outcome"] == [1.0, 1.0]
    assert out["termrl/hack"] == [-2.0, 0.0]  # capped at the preset's floor, -1


def test_length_from_completion_ids_and_group_by_prompt(tmp_path):
    spec_file = tmp_path / "lengthy.toml"
    spec_file.write_text('version = 1\n'
                         '[components.outcome]\ntype = "outcome"\nweight = 1.0\n'
                         '[components.overlong]\ntype = "overlong"\nweight = 1.0\nmax_length = 10\ncache = 4\n'
                         '[components.brevity]\ntype = "group_length"\nweight = 1.0\n')
    funcs = trl_reward_funcs(str(spec_file), fake_evaluate)
    ids = [[1] * 4, [1] * 8, [1] * 2, [1] * 12]
    out = call_all(funcs, completion_ids=ids)
    assert out["termrl/overlong"] == pytest.approx([0.0, -0.5, 0.0, -1.0])
    # Kimi length reward within each prompt's group: p0 has lengths 4 and 8, p1 has 2 and 12
    assert out["termrl/brevity"] == pytest.approx([0.5, -0.5, 0.0, -0.5])
    # without completion_ids, length terms have no value and add nothing
    assert call_all(funcs)["termrl/overlong"] == [0.0] * 4


def test_failed_verifications_stay_out_of_the_group():
    seen = []

    class Recording:
        component_names = ("outcome",)

        def score(self, evidence, findings=(), progress=0.0, length=None, group=None):
            seen.append(group)
            return load_spec("sparse").score(evidence, findings, progress, length, group)

    funcs = trl_reward_funcs(Recording(), fake_evaluate)
    call_all(funcs, completions=["PASS", "CRASH", "fail", "PASS"], completion_ids=[[1], [1, 1], [1] * 3, [1] * 4])
    assert seen == [((1, True),), ((1, True),), ((3, False), (4, True)), ((3, False), (4, True))]


def test_reward_functions_pickle_together():
    evaluate = CountingEvaluate()
    funcs = pickle.loads(pickle.dumps(trl_reward_funcs(load_spec("coderl"), evaluate)))
    assert funcs[0].scorer is funcs[1].scorer
    assert call_all(funcs)["termrl/outcome"] == [1.0, -0.3, -0.3, 1.0]
