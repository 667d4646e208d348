"""CPU generation engines side by side in one run: CTranslate2 int8 (``CT2Policy``) against llama.cpp
GGUF (``LlamaCppPolicy``: its own ``llama-server``), each loaded as termrl loads it, on the same
prompt and the same number of new tokens.

    bash scripts/build_llamacpp.sh       # once
    nice .venv/bin/python bench/cpu_engines.py MODEL_DIR [--threads 1] [--new-tokens 64] [--streams 8]

Each engine is timed twice, in the order CT2, llama.cpp, CT2, llama.cpp, so that a change of load
shows; the machine is shared, so read the ratios of one run. Prints ``name=value`` lines:

  <engine>_prefill_tok_s    prompt tokens per second (the prompt, one new token)
  <engine>_decode_tok_s     greedy tokens per second of one sequence, prefill excluded:
                            (N - 1) / (time for N new tokens - time for 1)
  <engine>_streams_tok_s    tokens per second in all of ``--streams`` sequences generated together
                            (CT2: one sampled batch, T 0.7; llama.cpp: as many concurrent requests
                            to the server's slots, T 0.7), prefill excluded
  <engine>_read_gb_s        one-sequence decoding's weight reads: the model file's size times
                            decode_tok_s (every step reads every weight once)
  llamacpp_over_ct2_<case>  the ratios (each engine's two runs averaged)

llama.cpp requests are sent with ``cache_prompt`` off (its prompt cache would skip the prefill of a
prompt it has seen; in an episode it reuses the previous turn's prefix, which CTranslate2 cannot)
and ``ignore_eos`` (N tokens whatever the model says; CTranslate2: ``min_length``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PROMPT = [{"role": "system", "content": "You are a coding agent in a Linux terminal. " * 20},
          {"role": "user", "content": "Write a Python function that parses a log file and counts lines per level. " * 6}]
"""A chat prompt of about 300 tokens (Qwen2.5's tokenizer), as in ``bench/ct2_speed.py``."""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(run, prompt: int, n: int, streams: int) -> dict:
    """The figures of one engine, ``run(sequences, greedy, new_tokens)`` timing one generation."""
    run(1, True, 2)  # warm-up
    one, many = run(1, True, 1), run(1, True, n)
    one_s, many_s = run(streams, False, 1), run(streams, False, n)
    return {"prefill_tok_s": prompt / one, "decode_tok_s": (n - 1) / (many - one),
            "streams_tok_s": streams * (n - 1) / (many_s - one_s)}


def ct2_case(policy, ids: list[int], n: int, streams: int) -> dict:
    tokens = policy.tokenizer.convert_ids_to_tokens(ids)

    def run(batch: int, greedy: bool, length: int) -> float:
        start = time.perf_counter()
        policy.generator.generate_batch([tokens] * batch, max_length=length, min_length=length,
                                        include_prompt_in_result=False, sampling_topk=1 if greedy else 0,
                                        sampling_temperature=1.0 if greedy else 0.7)
        return time.perf_counter() - start

    return measure(run, len(ids), n, streams)


def llama_case(policy, ids: list[int], n: int, streams: int) -> dict:
    def request(length: int, greedy: bool) -> None:
        host, port = policy.url.split("://")[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=3600)
        body = {"prompt": ids, "n_predict": length, "ignore_eos": True, "cache_prompt": False, "stream": False,
                "temperature": 0.0 if greedy else 0.7, "top_k": 1 if greedy else 0, "top_p": 1.0,
                "samplers": ["top_k", "temperature", "top_p"], "seed": 1}
        conn.request("POST", "/completion", body=json.dumps(body), headers={"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        conn.close()
        assert answer.get("tokens_predicted") == length, answer

    def run(count: int, greedy: bool, length: int) -> float:
        start = time.perf_counter()
        with ThreadPoolExecutor(count) as pool:
            list(pool.map(lambda _: request(length, greedy), range(count)))
        return time.perf_counter() - start

    return measure(run, len(ids), n, streams)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a transformers model directory (converted for each engine on first use)")
    ap.add_argument("--threads", type=int, default=1, help="each engine's CPU threads")
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--quantization", default="q8_0", help="llama.cpp's GGUF type")
    args = ap.parse_args()

    from termrl.policies.ct2 import CT2Policy, converted
    from termrl.policies.llamacpp import LlamaCppPolicy

    print(f"load_before={load()}")
    ct2 = CT2Policy(args.model, threads=args.threads, max_batch=args.streams)
    llama = LlamaCppPolicy(args.model, threads=args.threads, max_batch=args.streams, quantization=args.quantization)
    tok = ct2.tokenizer
    ids = tok(tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True),
              add_special_tokens=False).input_ids
    print(f"prompt_tokens={len(ids)} new_tokens={args.new_tokens} streams={args.streams} threads={args.threads} "
          f"cpus={os.cpu_count()}")
    sizes = {"ct2": sum(f.stat().st_size for f in Path(converted(args.model, "int8")).iterdir()),
             "llamacpp": llama.gguf.stat().st_size}
    runs: dict[str, list[dict]] = {"ct2": [], "llamacpp": []}
    for _ in range(2):
        runs["ct2"].append(ct2_case(ct2, ids, args.new_tokens, args.streams))
        runs["llamacpp"].append(llama_case(llama, ids, args.new_tokens, args.streams))
    llama.close()
    mean = {name: {key: sum(r[key] for r in rs) / len(rs) for key in rs[0]} for name, rs in runs.items()}
    for name, rs in runs.items():
        for key in rs[0]:
            print(f"{name}_{key}={','.join(f'{r[key]:.1f}' for r in rs)}")
        print(f"{name}_model_mb={sizes[name] / 2**20:.0f} "
              f"{name}_read_gb_s={sizes[name] * mean[name]['decode_tok_s'] / 1e9:.1f}")
    for key in runs["ct2"][0]:
        print(f"llamacpp_over_ct2_{key}={mean['llamacpp'][key] / mean['ct2'][key]:.2f}")
    print(f"load_after={load()}")


if __name__ == "__main__":
    main()
