from __future__ import annotations

import math

import pytest

from termrl.policies.hf import HFConfig, HFPolicy

from .conftest import turn

TURNS = [turn("ls"), turn("run the tests, then fix src/app.py", "it failed"), turn("x " * 40)]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """A tiny model generates several times faster on one thread than on two busy cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def greedy(tiny_model):
    """A greedy policy whose random weights are rescaled (std 0.5) so greedy replies vary
    from token to token; at the default init (std 0.02) they repeat one token."""
    import torch

    policy = HFPolicy(tiny_model, temperature=0, max_new_tokens=12)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        for p in policy.model.parameters():
            p.normal_(0, 0.5)
    return policy


def test_batch_of_three_turns(greedy):
    replies = greedy.generate(TURNS)
    assert len(replies) == 3
    assert len({r.prompt_tokens for r in replies}) == 3
    for r in replies:
        assert r.tokens and len(r.logprobs) == len(r.tokens)
        assert all(math.isfinite(lp) and lp <= 0 for lp in r.logprobs)
        assert r.gen_s > 0
    assert len({tuple(r.tokens) for r in replies}) > 1


def test_greedy_is_deterministic_and_decodes_to_text(greedy):
    first, second = greedy.generate(TURNS), greedy.generate(TURNS)
    assert [r.tokens for r in first] == [r.tokens for r in second]
    for r in first:
        assert len(set(r.tokens)) > 1  # the rescaled model does not repeat one token
        decoded = greedy.tokenizer.decode(r.tokens, skip_special_tokens=False)
        assert decoded.replace("<|im_end|>", "").replace("<|endoftext|>", "") == r.text


def test_batched_equals_unbatched_under_greedy(greedy):
    """Left padding with an attention mask: the same tokens, and log-probs equal to float noise."""
    batched = greedy.generate(TURNS)
    alone = [greedy.generate([t])[0] for t in TURNS]
    for b, a in zip(batched, alone):
        assert b.tokens == a.tokens
        assert b.prompt_tokens == a.prompt_tokens
        assert b.logprobs == pytest.approx(a.logprobs, abs=1e-4)


def test_max_batch_splits_and_keeps_order(greedy, tiny_model):
    split = HFPolicy(tiny_model, config=HFConfig(temperature=0, max_new_tokens=12, max_batch=2))
    split.model.load_state_dict(greedy.model.state_dict())
    assert [r.tokens for r in split.generate(TURNS)] == [r.tokens for r in greedy.generate(TURNS)]


def test_raw_logprobs_match_a_forward_pass(greedy):
    """The recorded log-prob of token i is log_softmax(model(prompt + tokens[:i]))[tokens[i]]."""
    import torch

    t = TURNS[1]
    reply = greedy.generate([t])[0]
    ids = torch.tensor([greedy.prompt(t.messages) + reply.tokens])
    with torch.no_grad():
        logits = greedy.model(ids).logits[0, reply.prompt_tokens - 1:-1].log_softmax(-1)
    expected = logits.gather(1, torch.tensor(reply.tokens)[:, None])[:, 0].tolist()
    assert reply.logprobs == pytest.approx(expected, abs=1e-4)


def test_seeded_sampling_and_logprob_modes(tiny_model):
    """Same seed, same tokens; under top-k the sampling distribution is renormalised, so its
    log-probs are at least the raw model's."""
    options = {"temperature": 1.0, "top_k": 5, "max_new_tokens": 8, "seed": 7}
    sampling = HFPolicy(tiny_model, **options).generate(TURNS)
    raw = HFPolicy(tiny_model, logprobs="raw", **options).generate(TURNS)
    assert [r.tokens for r in sampling] == [r.tokens for r in raw]
    for s, r in zip(sampling, raw):
        assert all(a >= b - 1e-6 for a, b in zip(s.logprobs, r.logprobs))
    assert any(a > b + 1e-3 for s, r in zip(sampling, raw) for a, b in zip(s.logprobs, r.logprobs))


def test_reply_stops_at_eos_and_strips_it(greedy):
    tok = greedy.tokenizer
    body = tok("<tool_call>ls</tool_call>", add_special_tokens=False).input_ids
    eos, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.pad_token_id
    reply = greedy._reply(body + [eos, pad, pad], [-0.5] * (len(body) + 3), prompt_tokens=4, gen_s=0.1)
    assert reply.tokens == body + [eos] and len(reply.logprobs) == len(body) + 1
    assert reply.text == "<tool_call>ls</tool_call>"


def test_long_conversation_keeps_system_and_last_message(tiny_model):
    policy = HFPolicy(tiny_model, max_prompt_tokens=60, temperature=0, max_new_tokens=2)
    long = turn("first question " * 10, "middle " * 10, "last one")
    ids = policy.prompt(long.messages)
    text = policy.tokenizer.decode(ids)
    assert len(ids) <= 60 and "You are a coding agent." in text and "last one" in text
    assert "first question" not in text and "<|im_start|>user" in text
    assert policy.generate([long])[0].prompt_tokens == len(ids)
    with pytest.raises(ValueError, match="exceeds the limit of 60"):
        policy.prompt(turn("word " * 100).messages)


def test_config_errors_say_what_to_use(tiny_model):
    with pytest.raises(ValueError, match="use auto, float32 or bfloat16"):
        HFConfig(dtype="fp8")
    with pytest.raises(ValueError, match="known: temperature"):
        HFPolicy(tiny_model, temprature=0.5)


def test_sampling_rng(tiny_model):
    """Unseeded sampling draws afresh from the global RNG; seeded sampling leaves it untouched
    and still varies from batch to batch."""
    import torch

    unseeded = HFPolicy(tiny_model, max_new_tokens=6)
    assert unseeded.generate(TURNS[:1])[0].tokens != unseeded.generate(TURNS[:1])[0].tokens
    seeded = HFPolicy(tiny_model, max_new_tokens=6, seed=1)
    state = torch.random.get_rng_state()
    first, second = seeded.generate(TURNS[:1])[0], seeded.generate(TURNS[:1])[0]
    assert torch.equal(state, torch.random.get_rng_state())
    assert first.tokens != second.tokens
    assert HFPolicy(tiny_model, max_new_tokens=6, seed=1).generate(TURNS[:1])[0].tokens == first.tokens


def test_auto_dtype_is_float32_for_packed_gguf_weights(tmp_path):
    import json

    from termrl.policies.hf import auto_dtype

    (tmp_path / "config.json").write_text(json.dumps({"dtype": "bfloat16",
                                                      "quantization_config": {"quant_method": "gguf"}}))
    assert auto_dtype(tmp_path) == "float32"
    (tmp_path / "config.json").write_text(json.dumps({"dtype": "float32"}))
    assert auto_dtype(tmp_path) == "auto"
    assert auto_dtype(tmp_path / "missing") == "auto"


def test_auto_dtype_follows_the_measured_half_precision_speed(tmp_path, monkeypatch):
    import json

    from termrl.policies import hf

    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "bfloat16"}))
    monkeypatch.setattr(hf, "half_matmul_is_fast", lambda dtype: False)
    assert hf.auto_dtype(tmp_path, "cpu") == "float32"
    assert hf.auto_dtype(tmp_path, "cuda:0") == "auto"
    monkeypatch.setattr(hf, "half_matmul_is_fast", lambda dtype: True)
    assert hf.auto_dtype(tmp_path, "cpu") == "auto"


def test_half_precision_speed_comes_from_the_cpu_flags_and_is_decided_once(tmp_path, monkeypatch):
    from termrl.policies import hf

    plain, amx = tmp_path / "plain", tmp_path / "amx"
    plain.write_text("processor : 0\nflags\t\t: fpu sse2 avx avx2 fma\n")
    amx.write_text("processor : 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16\n")
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    assert hf.cpu_flags(plain) == {"fpu", "sse2", "avx", "avx2", "fma"}
    assert hf.cpu_flags(tmp_path / "missing") == set()
    read = hf.cpu_flags
    for path, fast in ((plain, False), (amx, True)):
        monkeypatch.setattr(hf, "cpu_flags", lambda path=path: read(path))
        hf.half_matmul_is_fast.cache_clear()
        assert hf.half_matmul_is_fast("bfloat16") is fast
        assert hf.half_matmul_is_fast("float16") is False
    monkeypatch.setattr("platform.machine", lambda: "arm64")
    assert hf.cpu_flags(amx) == set()
    monkeypatch.undo()
    hf.half_matmul_is_fast.cache_clear()
    first = hf.half_matmul_is_fast("bfloat16")
    assert hf.half_matmul_is_fast("bfloat16") is first and hf.half_matmul_is_fast.cache_info().hits == 1


def test_the_timed_fallback_returns_a_verdict():
    from termrl.policies.hf import _timed_half_is_fast

    assert isinstance(_timed_half_is_fast("bfloat16"), bool)


def test_native_tools_reach_the_chat_template(tiny_model):
    from dataclasses import replace

    from termrl.actions import TOOL_SCHEMAS

    policy = HFPolicy(tiny_model, temperature=0, max_new_tokens=2)
    plain = policy.tokenizer.decode(policy.prompt(TURNS[0].messages))
    native = policy.tokenizer.decode(policy.prompt(TURNS[0].messages, TOOL_SCHEMAS))
    assert "write_file" not in plain and '"name": "write_file"' in native and "<tools>" in native
    assert policy.generate([replace(TURNS[0], tools=TOOL_SCHEMAS)])[0].prompt_tokens == len(
        policy.prompt(TURNS[0].messages, TOOL_SCHEMAS))


def test_replies_can_stop_at_their_first_whole_action(tiny_model):
    import torch

    from termrl.policies.hf import _StopAtAction

    policy = HFPolicy(tiny_model, temperature=0, max_new_tokens=2)
    tok = policy.tokenizer
    texts = ["Look:\n```bash\nls\n```", "Look:\n```bash\nls\n", "```python\ndef f():\n    return 1\n```"]
    ids = [tok(t, add_special_tokens=False).input_ids for t in texts]
    width = max(map(len, ids))
    prompt = [7, 8, 9]
    batch = torch.tensor([prompt + [tok.pad_token_id] * (width - len(i)) + i for i in ids])
    # left-padded replies are not what generate makes; pad tokens decode to nothing here either way
    stop = _StopAtAction(tok, len(prompt), [(), (), ("solution.py",)])
    assert stop(batch, None).tolist() == [True, False, True]
    assert stop.lengths == [width, None, width]
    assert HFPolicy(tiny_model, stop_at_action=True).config.stop_at_action
