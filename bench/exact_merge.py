"""Whether a LoRA merge gives the same bits under another CPU's matrix kernels: termrl's
``merge_exactly`` against peft's ``merge_and_unload``, side by side.

One process per kernel setting (the environment variables that make MKL and PyTorch take the
code paths of other CPUs on this one), each merging the same adapter (the 0.5B's layer shapes,
r = 16, random B) both ways. Prints, per setting:
  <setting>_exact=  the first 12 hex digits of the SHA-256 of merge_exactly's weights
  <setting>_peft=   the same for peft's merge
and exact_same= / peft_same= (whether every setting gave one digest). A merge that differs here
differs between machines, and weights merged again on another machine are then not the ones
whose episodes were played.

Usage: python bench/exact_merge.py [--layers N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

SETTINGS = {
    "default": {},
    "onednn_avx512_bf16": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
    "mkl_avx2": {"MKL_CBWR": "AVX2"},
    "mkl_compatible_aten_avx2": {"MKL_CBWR": "COMPATIBLE", "ATEN_CPU_CAPABILITY": "avx2"},
}


def merge(layers: int) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from termrl.distributed import parameters_digest
    from termrl.training.rft import merge_exactly

    config = Qwen2Config(vocab_size=256, hidden_size=896, intermediate_size=4864, num_hidden_layers=layers,
                         num_attention_heads=14, num_key_value_heads=2)

    def model():
        torch.manual_seed(0)
        lora = get_peft_model(Qwen2ForCausalLM(config), LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
        for name, parameter in lora.named_parameters():
            if "lora_B" in name:
                parameter.data = torch.randn_like(parameter) * 0.01
        return lora

    print(parameters_digest(merge_exactly(model()))[:12], parameters_digest(model().merge_and_unload())[:12])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        merge(args.layers)
        return
    digests = {}
    for name, extra in SETTINGS.items():
        out = subprocess.run([sys.executable, __file__, "--child", "--layers", str(args.layers)], text=True,
                             capture_output=True, env={**os.environ, **extra}, check=True)
        exact, peft = out.stdout.split()[-2:]
        digests[name] = (exact, peft)
        print(f"{name}_exact={exact}")
        print(f"{name}_peft={peft}")
    print(f"exact_same={len({d[0] for d in digests.values()}) == 1}")
    print(f"peft_same={len({d[1] for d in digests.values()}) == 1}")


if __name__ == "__main__":
    main()
