"""CT2Policy: the CTranslate2 backend against HFPolicy on the same tiny model, conversion and its cache."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import ctranslate2.converters  # scripts/setup.sh installs it (the fast extra): never skipped
import pytest

from termrl.policies import make_policy
from termrl.policies.ct2 import CT2Config, CT2Policy, converted, model_digest
from termrl.policies.hf import HFPolicy

from .conftest import turn

TURNS = [turn("ls"), turn("run the tests, then fix src/app.py", "it failed"), turn("x " * 40)]
EXACT = {"compute_type": "float32", "threads": 1}
"""CTranslate2 in float32: greedy replies equal transformers' token for token."""


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """Conversions go to a folder of this module's own (``TERMRL_CACHE``)."""
    import torch

    where = tmp_path_factory.mktemp("termrl-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TERMRL_CACHE", str(where))
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        yield where
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model(tiny_model, tmp_path_factory):
    """The tiny model with its random weights rescaled (std 0.5), saved: greedy replies then vary
    from token to token (at the default init they repeat one token)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dest = tmp_path_factory.mktemp("scaled") / "model"
    net = AutoModelForCausalLM.from_pretrained(tiny_model)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        for p in net.parameters():
            p.normal_(0, 0.5)
    net.save_pretrained(dest)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(dest)
    return dest


@pytest.fixture(scope="module")
def hf(model):
    return HFPolicy(model, temperature=0, max_new_tokens=12, dtype="float32")


@pytest.fixture(scope="module")
def ct2(model):
    return CT2Policy(model, temperature=0, max_new_tokens=12, **EXACT)


def test_greedy_replies_equal_transformers_in_float32(hf, ct2):
    expected, got = hf.generate(TURNS), ct2.generate(TURNS)
    assert len({r.prompt_tokens for r in got}) == 3
    for e, g in zip(expected, got):
        assert g.tokens == e.tokens and g.text == e.text and g.prompt_tokens == e.prompt_tokens
        assert len(set(g.tokens)) > 1
        assert g.logprobs == pytest.approx(e.logprobs, abs=1e-4)
        assert all(math.isfinite(lp) and lp <= 0 for lp in g.logprobs) and g.gen_s > 0
    assert (ct2.eos_ids, sorted(ct2.strip)) == (hf.eos_ids, sorted(hf.strip))


def test_batches_split_by_size_and_prompt_length_keep_order(model, ct2):
    alone = [ct2.generate([t])[0].tokens for t in TURNS]
    assert [r.tokens for r in ct2.generate(TURNS)] == alone
    small = CT2Policy(model, temperature=0, max_new_tokens=12, max_batch=1, **EXACT)
    assert [r.tokens for r in small.generate(TURNS)] == alone
    assert ct2._groups([50, 10, 150, 400, 12]) == [[1, 4, 0], [2], [3]]
    near = CT2Policy(model, temperature=0, max_new_tokens=12, prompt_spread=10, **EXACT)
    assert near._groups([len(near.prompt(t.messages)) for t in TURNS]) == [[0], [1], [2]]
    assert [r.tokens for r in near.generate(TURNS)] == alone
    assert small._groups([5, 5, 5]) == [[0], [1], [2]]


def test_sampled_logprobs_are_the_raw_models(model, hf):
    """Under temperature and top-k, a reply's log-probs are log_softmax of the unmodified logits."""
    import torch

    policy = CT2Policy(model, temperature=0.7, top_k=5, max_new_tokens=8, seed=3, **EXACT)
    t = TURNS[1]
    reply = policy.generate([t])[0]
    ids = torch.tensor([hf.prompt(t.messages) + reply.tokens])
    with torch.no_grad():
        logits = hf.model(ids).logits[0, reply.prompt_tokens - 1:-1].log_softmax(-1)
    assert reply.logprobs == pytest.approx(logits.gather(1, torch.tensor(reply.tokens)[:, None])[:, 0].tolist(),
                                           abs=1e-4)


def test_seeded_sampling_repeats_and_varies_between_batches(model):
    options = {"temperature": 1.0, "max_new_tokens": 8, "seed": 11, **EXACT}
    first = CT2Policy(model, **options)
    a, b = [r.tokens for r in first.generate(TURNS)], [r.tokens for r in first.generate(TURNS)]
    assert a != b
    again = CT2Policy(model, **options)
    assert [r.tokens for r in again.generate(TURNS)] == a and [r.tokens for r in again.generate(TURNS)] == b


def test_replies_end_at_the_first_end_token_kept_in_tokens_not_text(ct2, monkeypatch):
    full = ct2.generate(TURNS[:1])[0].tokens
    assert len(full) == 12
    end = full[3]
    monkeypatch.setattr(ct2, "eos_ids", sorted({*ct2.eos_ids, end}))
    monkeypatch.setattr(ct2, "strip", [*ct2.strip, ct2.tokenizer.convert_ids_to_tokens(end)])
    reply = ct2.generate(TURNS[:1])[0]
    assert reply.tokens == full[:full.index(end) + 1] and len(reply.logprobs) == len(reply.tokens)
    assert reply.text == ct2.tokenizer.decode(full[:full.index(end)], clean_up_tokenization_spaces=False)


def test_stop_at_action_ends_only_the_reply_that_holds_one(model, ct2, monkeypatch):
    import termrl.policies.ct2 as module

    full = [r.tokens for r in ct2.generate(TURNS)]
    policy = CT2Policy(model, temperature=0, max_new_tokens=12, stop_at_action=True, **EXACT)
    target = policy.tokenizer.decode(full[1][:4], skip_special_tokens=True)
    seen = []

    def holds(text, workspace):
        seen.append(workspace)
        return text == target

    monkeypatch.setattr(module, "holds_action", holds)
    replies = policy.generate(TURNS)
    assert [r.tokens for r in replies] == [full[0], full[1][:4], full[2]]
    assert len(replies[1].logprobs) == 4 and seen and all(w == {} for w in seen)


def test_an_error_in_the_stop_check_is_raised_not_an_abort(model, monkeypatch):
    import termrl.policies.ct2 as module

    policy = CT2Policy(model, temperature=0, max_new_tokens=4, stop_at_action=True, **EXACT)
    monkeypatch.setattr(module, "holds_action", lambda text, workspace: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        policy.generate(TURNS[:1])


def test_long_conversation_is_cut_as_transformers_cuts_it(model, hf):
    policy = CT2Policy(model, max_prompt_tokens=60, temperature=0, max_new_tokens=2, **EXACT)
    long = turn("first question " * 10, "middle " * 10, "last one")
    ids = policy.prompt(long.messages)
    hf_cut = HFPolicy(model, max_prompt_tokens=60, max_new_tokens=2).prompt(long.messages)
    assert ids == hf_cut and len(ids) <= 60
    assert policy.generate([long])[0].prompt_tokens == len(ids)
    with pytest.raises(ValueError, match="exceeds the limit of 60"):
        policy.prompt(turn("word " * 100).messages)
    assert CT2Policy(model, max_new_tokens=100, **EXACT).max_prompt == 4096 - 100


def test_conversion_is_cached_by_content_and_reused(model, cache, tmp_path, monkeypatch):
    import shutil

    first = converted(model, "float32")
    assert first.parent == cache / "ct2" and first.name.endswith("-float32") and (first / "model.bin").is_file()
    stamp = (first / "model.bin").stat().st_mtime_ns

    def refuse(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(ctranslate2.converters, "TransformersConverter", refuse)
    copy = tmp_path / "copy"
    shutil.copytree(model, copy)
    assert converted(model, "float32") == first == converted(copy, "float32")
    assert (first / "model.bin").stat().st_mtime_ns == stamp
    (copy / "config.json").write_text((copy / "config.json").read_text().replace("4096", "2048"))
    assert model_digest(copy) != model_digest(model)
    with pytest.raises(AssertionError, match="converted again"):
        converted(copy, "float32")
    assert not [p for p in (cache / "ct2").iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_failed_conversion_leaves_nothing(model, tmp_path, monkeypatch):
    class Broken:
        def __init__(self, *args, **kwargs):
            pass

        def convert(self, output_dir, **kwargs):
            (Path(output_dir) / "model.bin").write_bytes(b"half")
            raise RuntimeError("stopped")

    monkeypatch.setattr(ctranslate2.converters, "TransformersConverter", Broken)
    with pytest.raises(RuntimeError, match="stopped"):
        converted(model, "int16", cache=tmp_path / "c")
    assert list((tmp_path / "c").iterdir()) == []


def test_int8_conversion_generates(model):
    policy = CT2Policy(model, temperature=0, max_new_tokens=6)
    assert policy.config.compute_type == "int8" and policy.model_dir.name.endswith("-int8")
    replies = policy.generate(TURNS)
    assert all(r.tokens and len(r.logprobs) == len(r.tokens) for r in replies)


def test_make_policy_builds_it_and_bad_paths_say_what_to_do(model, tmp_path):
    policy = make_policy(f"ct2:{model}", temperature=0, max_new_tokens=3, **EXACT)
    assert isinstance(policy, CT2Policy) and policy.name == f"ct2:{model}" and policy.config.max_new_tokens == 3
    with pytest.raises(ValueError, match="needs a model directory: ct2:PATH"):
        make_policy("ct2:")
    for path in (tmp_path / "missing", tmp_path, "qwen/qwen"):
        with pytest.raises(ValueError, match=f"ct2:{path}: {path} holds no model \\(no config.json\\): build one"):
            make_policy(f"ct2:{path}")
    with pytest.raises(ValueError, match="no config.json"):
        converted(tmp_path)


def test_config_errors_say_what_to_use(model):
    with pytest.raises(ValueError, match="compute_type 'fp8': use one of int8"):
        CT2Config(compute_type="fp8")
    with pytest.raises(ValueError, match="known: temperature"):
        CT2Policy(model, temprature=0.5)
    for bad in ({"threads": -1}, {"prompt_spread": -1}):
        with pytest.raises(ValueError, match="must be 0 or more"):
            CT2Config(**bad)


def test_a_process_that_generated_exits_cleanly(model, cache):
    """A generator that ran a Python callback and is destroyed in interpreter teardown aborts the
    process (exit 134): the policy frees it at exit."""
    code = ("import sys; from termrl.policies.ct2 import CT2Policy; from termrl.protocols import Task, Turn\n"
            "p = CT2Policy(sys.argv[1], temperature=0, max_new_tokens=3, compute_type='float32', threads=1)\n"
            "t = Turn(messages=[{'role': 'user', 'content': 'ls'}], task=Task(id='t', instruction='x'), step=0)\n"
            "print(len(p.generate([t])[0].tokens))\n")
    done = subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True, text=True, timeout=300,
                          check=False, env={**os.environ, "TERMRL_CACHE": str(cache)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3"


def test_eval_treats_it_as_a_local_model():
    from termrl.eval.run import EvalConfig, EvalError, _same_setting

    with pytest.raises(EvalError, match="every episode on the cluster would load the model again"):
        EvalConfig(policy="ct2:/models/x", suite="logs-count:0-1", ray="local")
    assert _same_setting("policy", "ct2:/tmp", "ct2:/tmp/") and not _same_setting("policy", "ct2:/tmp", "hf:/tmp")


def test_tuned_malloc_takes_and_leaves_the_tokens_as_they_were(model, cache):
    """``tune_malloc`` (on by default) is process-wide, so each setting runs in a process of its own:
    glibc takes it, and the greedy int8 tokens of a batch of different lengths are the same."""
    code = ("import sys, json; from termrl.policies.ct2 import CT2Policy\n"
            "from tests.policies.conftest import turn\n"
            "p = CT2Policy(sys.argv[1], temperature=0, max_new_tokens=8, tune_malloc=sys.argv[2] == '1')\n"
            "from termrl.policies import ct2\n"
            "turns = [turn('ls'), turn('x ' * 30, 'it failed'), turn('run the tests')]\n"
            "print(json.dumps([ct2._malloc_tuned, [r.tokens for r in p.generate(turns)]]))\n")
    runs = {}
    for tuned in "01":
        done = subprocess.run([sys.executable, "-c", code, str(model), tuned], capture_output=True, text=True,
                              timeout=300, check=False, cwd=Path(__file__).parents[2],
                              env={**os.environ, "TERMRL_CACHE": str(cache)})
        assert done.returncode == 0, done.stderr[-2000:]
        runs[tuned] = json.loads(done.stdout.strip().splitlines()[-1])
    assert runs["0"][0] is None and runs["1"][0] is True  # untouched, then taken (glibc)
    assert runs["0"][1] == runs["1"][1] and all(runs["1"][1])


def test_stores_record_it_as_ctranslate2_with_its_compute_type(ct2, hf):
    from termrl.provenance import backend

    assert backend(ct2) == {"backend": "ctranslate2", "compute_type": "float32"}
    assert backend(hf) == {"backend": "transformers", "dtype": "float32", "device": "cpu"}
