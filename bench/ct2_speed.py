"""Generation speed on this CPU: transformers (bf16) against CTranslate2 (int8), side by side.

Not a dependency of termrl: ``pip install ctranslate2`` first, and convert the model once:
``ct2-transformers-converter --model MODEL_DIR --output_dir CT2_DIR --quantization int8``.
The same chat prompt (about 300 tokens) goes through both, CTranslate2 timed before and after
transformers so that a change in the machine's load shows. Prints ``name=value`` lines: tokens
per second (prefill included) greedy with one sequence and sampled with a batch of 8, and the
ratios.

Usage: python bench/ct2_speed.py MODEL_DIR CT2_DIR [--new-tokens 64] [--threads 2]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("ct2_dir")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    try:
        import ctranslate2
    except ImportError:
        raise SystemExit("bench/ct2_speed.py needs CTranslate2: pip install ctranslate2") from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    n = args.new_tokens
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    messages = [{"role": "system", "content": "You are a coding agent in a Linux terminal. " * 20},
                {"role": "user", "content": "Write a Python function that parses a log file and counts lines "
                                            "per level. " * 6}]
    ids = tok(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))["input_ids"]
    print(f"prompt_tokens={len(ids)}")

    generator = ctranslate2.Generator(args.ct2_dir, device="cpu", intra_threads=args.threads, compute_type="int8")
    tokens = tok.convert_ids_to_tokens(ids)

    def ct2(batch: int, greedy: bool) -> float:
        start = time.perf_counter()
        out = generator.generate_batch([tokens] * batch, max_length=n, min_length=n, include_prompt_in_result=False,
                                       sampling_topk=1 if greedy else 0, sampling_temperature=1.0 if greedy else 0.7)
        return sum(len(r.sequences_ids[0]) for r in out) / (time.perf_counter() - start)

    torch.set_num_threads(args.threads)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.bfloat16)
    prompt = torch.tensor([ids])

    def hf(batch: int, greedy: bool) -> float:
        start = time.perf_counter()
        kwargs = {} if greedy else {"do_sample": True, "temperature": 0.7, "top_p": None, "top_k": None}
        out = model.generate(prompt.repeat(batch, 1), attention_mask=torch.ones_like(prompt).repeat(batch, 1),
                             max_new_tokens=n, min_new_tokens=n, **kwargs)
        return (out.shape[1] - prompt.shape[1]) * batch / (time.perf_counter() - start)

    ct2(1, True)  # warm-up
    cases = {"greedy_b1": (1, True), "sampled_b8": (8, False)}
    before = {name: ct2(*case) for name, case in cases.items()}
    base = {name: hf(*case) for name, case in cases.items()}
    after = {name: ct2(*case) for name, case in cases.items()}
    for name in cases:
        print(f"hf_bf16_tok_s_{name}={base[name]:.2f}")
        print(f"ct2_int8_tok_s_{name}={before[name]:.2f},{after[name]:.2f}")
        print(f"ct2_over_hf_{name}={(before[name] + after[name]) / 2 / base[name]:.2f}")


if __name__ == "__main__":
    main()
