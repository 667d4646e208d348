"""``HFPolicy`` on a CUDA device: ``device="auto"`` picks the current GPU, and a reply made there
is the reply the model would make (its log-probs equal a forward pass), batched or alone.

Marked ``gpu`` (deselected by default; ``-m gpu`` runs them); skipped with the reason where there
is no CUDA device."""

from __future__ import annotations

import pytest

from termrl.policies.hf import HFPolicy

from .conftest import turn

pytestmark = pytest.mark.gpu

TURNS = [turn("ls"), turn("run the tests, then fix src/app.py", "it failed"), turn("x " * 40)]


@pytest.fixture(scope="module")
def greedy(tiny_model):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    policy = HFPolicy(tiny_model, temperature=0, max_new_tokens=12, device="auto")
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        for p in policy.model.parameters():  # random weights whose greedy replies vary (see test_hf.py)
            p.copy_(torch.randn_like(p, device="cpu").mul(0.5))
    return policy


def test_auto_device_is_the_current_gpu(greedy):
    import torch

    assert greedy.device == torch.device("cuda", torch.cuda.current_device())
    assert {p.device for p in greedy.model.parameters()} == {greedy.device}


def test_cuda_replies_match_a_forward_pass_and_batching(greedy):
    import torch

    batched = greedy.generate(TURNS)
    alone = [greedy.generate([t])[0] for t in TURNS]
    assert len({tuple(r.tokens) for r in batched}) > 1
    for b, a in zip(batched, alone):
        assert b.tokens == a.tokens and b.prompt_tokens == a.prompt_tokens
        assert b.logprobs == pytest.approx(a.logprobs, abs=1e-3)
    reply, t = batched[1], TURNS[1]
    ids = torch.tensor([greedy.prompt(t.messages) + reply.tokens], device=greedy.device)
    with torch.no_grad():
        logits = greedy.model(ids).logits[0, reply.prompt_tokens - 1:-1].float().log_softmax(-1)
    expected = logits.gather(1, torch.tensor(reply.tokens, device=greedy.device)[:, None])[:, 0].tolist()
    assert reply.logprobs == pytest.approx(expected, abs=1e-3)


def test_seeded_sampling_on_cuda_repeats(tiny_model, greedy):
    options = {"temperature": 1.0, "top_k": 5, "max_new_tokens": 8, "seed": 7, "device": "auto"}
    first = HFPolicy(tiny_model, **options).generate(TURNS)
    second = HFPolicy(tiny_model, **options).generate(TURNS)
    assert [r.tokens for r in first] == [r.tokens for r in second]
    assert all(r.tokens for r in first)
