from __future__ import annotations

from termrl.policies.tiny import build_tiny_model


def test_tiny_model_reloads_with_auto_classes_and_renders_chatml(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert model.config.model_type == "qwen2"
    assert model.get_input_embeddings().num_embeddings == len(tok)
    assert (tok.eos_token, tok.pad_token) == ("<|im_end|>", "<|endoftext|>")
    text = tok.apply_chat_template([{"role": "system", "content": "be brief"}, {"role": "user", "content": "ls"}],
                                   tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nls<|im_end|>")
    assert text.endswith("<|im_start|>assistant\n")


def test_markers_are_single_tokens_and_round_trip(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    for marker in ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<tool_call>", "</tool_call>",
                   "<tool_response>", "</tool_response>"):
        assert len(tok(marker, add_special_tokens=False).input_ids) == 1, marker
    text = '<tool_call>\n{"name": "bash", "arguments": {"command": "grep -rn ünïcode ."}}\n</tool_call>'
    ids = tok(text, add_special_tokens=False).input_ids
    assert tok.decode(ids, skip_special_tokens=True) == text  # tool markers survive skipping specials


def test_build_is_deterministic_and_takes_extra_corpus(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    small = {"hidden_size": 16, "layers": 1, "heads": 2, "seed": 3}
    a, a2 = build_tiny_model(tmp_path / "a", **small), build_tiny_model(tmp_path / "a2", **small)
    assert (a / "tokenizer.json").read_text() == (a2 / "tokenizer.json").read_text()
    wa, wa2 = (AutoModelForCausalLM.from_pretrained(d).state_dict() for d in (a, a2))
    assert all(torch.equal(wa[k], wa2[k]) for k in wa)
    b = build_tiny_model(tmp_path / "b", corpus=["kubectl get pods --namespace kube-system\n" * 50], **small)
    word = " kubectl"
    assert len(AutoTokenizer.from_pretrained(b)(word).input_ids) < len(AutoTokenizer.from_pretrained(a)(word).input_ids)
