"""Prefill and decode speed of a local Hugging Face model in float32 and bfloat16, side by side.

Prints, for each dtype:
  <dtype>_prefill_s=   seconds of one forward pass over a TOKENS-token prompt
  <dtype>_decode_tok_s= greedy tokens per second for one sequence (32 new tokens)
  <dtype>_batch<B>_tok_s= greedy tokens per second in all for a batch of B sequences (--batch B)
and prefill_ratio= bf16 / float32 prefill time. On the packed-GGUF checkpoint that
../shared/tools/qwen-coder-1.5b.sh builds, float32 is the faster one here, which is why
``HFPolicy`` loads such checkpoints in float32 by default.

Usage: python bench/hf_dtype.py MODEL_DIR [--tokens N] [--batch B]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    import torch
    from transformers import AutoModelForCausalLM

    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--tokens", type=int, default=1200)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    ids = torch.randint(100, 20000, (1, args.tokens), generator=torch.Generator().manual_seed(0))
    prefill = {}
    for dtype in (torch.float32, torch.bfloat16):
        name = str(dtype).removeprefix("torch.")
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype).eval()
        with torch.no_grad():
            start = time.perf_counter()
            model(ids)
            prefill[name] = time.perf_counter() - start
            start = time.perf_counter()
            model.generate(ids[:, :50], max_new_tokens=32, min_new_tokens=32, do_sample=False)
            decode = 32 / (time.perf_counter() - start)
        print(f"{name}_prefill_s={prefill[name]:.1f}")
        print(f"{name}_decode_tok_s={decode:.2f}")
        batch = ids[:, :50].repeat(args.batch, 1)
        with torch.no_grad():
            start = time.perf_counter()
            model.generate(batch, max_new_tokens=32, min_new_tokens=32, do_sample=False)
            print(f"{name}_batch{args.batch}_tok_s={args.batch * 32 / (time.perf_counter() - start):.2f}")
        del model
    print(f"prefill_ratio={prefill['bfloat16'] / prefill['float32']:.2f}")


if __name__ == "__main__":
    main()
