"""Generation speed on this CPU: transformers (as ``HFPolicy`` loads the model) against CTranslate2
int8 (as ``CT2Policy`` converts and loads it), side by side in one run; and the pass-rate parity of
two stored evaluations.

Speed (``python bench/ct2_speed.py speed MODEL_DIR``): the model is loaded through the policies
themselves (``HFPolicy``: the dtype ``auto_dtype`` picks, or ``--hf-dtype``; ``CT2Policy``: the
conversion cached by ``converted``), then timed on their engines with a fixed number of new tokens
(``min_length``), so that both generate the same amount. Prints ``name=value`` lines:

  <engine>_prefill_tok_s     prompt tokens per second (a PROMPT-token prompt, one new token)
  <engine>_decode_tok_s      greedy tokens per second of one sequence, prefill excluded:
                             (N - 1) / (time for N new tokens - time for 1)
  <engine>_batch8_tok_s      sampled (T 0.7) tokens per second in all, 8 sequences, prefill excluded
  ct2_over_hf_<case>         the ratios (CTranslate2 measured before and after transformers, averaged)

for CTranslate2 at each of ``--ct2-threads`` (intra_threads) and transformers at ``--hf-threads``;
``spread_*`` lines time two prompts ``--spread`` tokens apart generated in one CTranslate2 batch
against one after the other (why ``CT2Policy`` batches only prompts of similar length); and the
load average before and after. The machine is shared: compare the ratios measured side by side.

Malloc (``python bench/ct2_speed.py malloc MODEL_DIR``): ``CT2Policy`` with and without
``tune_malloc`` (glibc's malloc set for CTranslate2, ``termrl.policies.ct2``), each in a process of
its own (the setting is process-wide), one after the other on the same prompts: one sequence, then
a batch of ``--batch`` prompts ``--spread`` tokens apart in all, each ``--new-tokens`` greedy tokens
(``min_length``). Prints, per setting, tokens per second, minor page faults and system CPU seconds,
then ``malloc_speedup_*`` and ``malloc_same_tokens`` (every generated token equal: the setting
changes where memory comes from, not what is computed).

Parity (``python bench/ct2_speed.py parity HF_RUN CT2_RUN``): two ``termrl eval --out`` stores of the
same suite, decoding and seeds, one per backend, compared on the episodes both hold (a run may be
unfinished): pass counts, the paired McNemar p over episodes
(``termrl.eval.metrics.paired``), the two-proportion z test, and how many episodes' first replies
are the same text (greedy int8 against bfloat16/float32: the numbers differ, so some replies do).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

PROMPT = [{"role": "system", "content": "You are a coding agent in a Linux terminal. " * 20},
          {"role": "user", "content": "Write a Python function that parses a log file and counts lines per level. " * 6}]
"""A chat prompt of about 300 tokens (Qwen2.5's tokenizer)."""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def speed(args) -> None:
    import torch

    from termrl.policies.ct2 import CT2Policy
    from termrl.policies.hf import HFPolicy

    n = args.new_tokens
    print(f"load_before={load()}")
    policies = {t: CT2Policy(args.model, threads=t, max_new_tokens=n) for t in args.ct2_threads}
    tok = next(iter(policies.values())).tokenizer
    ids = tok(tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True),
              add_special_tokens=False).input_ids
    print(f"prompt_tokens={len(ids)} new_tokens={n} cpus={os.cpu_count()}")
    tokens = tok.convert_ids_to_tokens(ids)

    def ct2(policy, batch: int, greedy: bool, length: int, prompts=None) -> float:
        start = time.perf_counter()
        policy.generator.generate_batch(prompts or [tokens] * batch, max_length=length, min_length=length,
                                        include_prompt_in_result=False, sampling_topk=1 if greedy else 0,
                                        sampling_temperature=1.0 if greedy else 0.7)
        return time.perf_counter() - start

    def ct2_case(policy) -> dict:
        ct2(policy, 1, True, 2)  # warm-up
        one = ct2(policy, 1, True, 1)
        many = ct2(policy, 1, True, n)
        one8 = ct2(policy, 8, False, 1)
        many8 = ct2(policy, 8, False, n)
        return {"prefill_tok_s": len(ids) / one, "decode_tok_s": (n - 1) / (many - one),
                "batch8_tok_s": 8 * (n - 1) / (many8 - one8)}

    before = {t: ct2_case(p) for t, p in policies.items()}
    torch.set_num_threads(args.hf_threads)
    model = HFPolicy(args.model, **({"dtype": args.hf_dtype} if args.hf_dtype else {})).model
    dtype = str(model.dtype).removeprefix("torch.")
    prompt = torch.tensor([ids])

    def run_hf(batch: int, greedy: bool, length: int) -> float:
        sampling = {} if greedy else {"do_sample": True, "temperature": 0.7, "top_p": None, "top_k": None}
        start = time.perf_counter()
        with torch.no_grad():
            model.generate(prompt.repeat(batch, 1), attention_mask=torch.ones_like(prompt).repeat(batch, 1),
                              max_new_tokens=length, min_new_tokens=length, **sampling)
        return time.perf_counter() - start

    run_hf(1, True, 2)  # warm-up
    one, many = run_hf(1, True, 1), run_hf(1, True, n)
    one8, many8 = run_hf(8, False, 1), run_hf(8, False, n)
    base = {"prefill_tok_s": len(ids) / one, "decode_tok_s": (n - 1) / (many - one),
            "batch8_tok_s": 8 * (n - 1) / (many8 - one8)}
    after = {t: ct2_case(p) for t, p in policies.items()}
    for key, value in base.items():
        print(f"hf_{dtype}_threads{args.hf_threads}_{key}={value:.2f}")
        for t in policies:
            print(f"ct2_int8_threads{t}_{key}={before[t][key]:.2f},{after[t][key]:.2f}")
            print(f"ct2_threads{t}_over_hf_{key}={(before[t][key] + after[t][key]) / 2 / value:.2f}")
    if args.spread:
        policy = policies[max(policies)]
        long = tok.convert_ids_to_tokens(ids + tok(" and then" * args.spread, add_special_tokens=False).input_ids
                                         [:args.spread])
        together = ct2(policy, 2, True, n, prompts=[tokens, long])
        apart = ct2(policy, 1, True, n, prompts=[tokens]) + ct2(policy, 1, True, n, prompts=[long])
        print(f"spread_{args.spread}_together_s={together:.2f} spread_{args.spread}_apart_s={apart:.2f}")
    print(f"load_after={load()}")


def malloc(args) -> None:
    print(f"load_before={load()}")
    runs = {}
    for tuned in (False, True):
        child = subprocess.run([sys.executable, __file__, "malloc-child", args.model, str(int(tuned)),
                                str(args.new_tokens), str(args.batch), str(args.spread)],
                               capture_output=True, text=True, check=True)
        runs[tuned] = json.loads(child.stdout.strip().splitlines()[-1])
        name = "tuned" if tuned else "default"
        for case in ("one", "batch"):
            r = runs[tuned][case]
            print(f"{name}_{case}_tok_s={r['tok_s']:.1f} {name}_{case}_page_faults={r['faults']} "
                  f"{name}_{case}_system_s={r['system_s']:.1f}")
    for case in ("one", "batch"):
        print(f"malloc_speedup_{case}={runs[True][case]['tok_s'] / runs[False][case]['tok_s']:.2f}")
    print(f"malloc_same_tokens={runs[True]['tokens'] == runs[False]['tokens']}")
    print(f"load_after={load()}")


def malloc_child(args) -> None:
    from termrl.policies.ct2 import CT2Policy

    n, batch, spread = int(args.new_tokens), int(args.batch), int(args.spread)
    policy = CT2Policy(args.model, tune_malloc=args.tuned == "1", threads=2)
    tok = policy.tokenizer
    base = tok(tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True),
               add_special_tokens=False).input_ids
    filler = tok(" and then the next step of the task" * 400, add_special_tokens=False).input_ids
    # prompts of about 1,000 tokens, spread evenly over ``spread`` tokens: a multi-turn episode's turns
    prompts = [tok.convert_ids_to_tokens(base + filler[:700 + spread * i // max(batch - 1, 1)]) for i in range(batch)]
    out, tokens = {}, []
    policy.generator.generate_batch(prompts[:1], max_length=1)  # warm
    for case, group in (("one", prompts[:1]), ("batch", prompts)):
        before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        results = policy.generator.generate_batch(group, max_length=n, min_length=n, sampling_topk=1,
                                                  include_prompt_in_result=False)
        seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
        out[case] = {"tok_s": len(group) * n / seconds, "faults": after.ru_minflt - before.ru_minflt,
                     "system_s": after.ru_stime - before.ru_stime}
        tokens += [r.sequences_ids[0] for r in results]
    print(json.dumps({**out, "tokens": tokens}))


def parity(args) -> None:
    from termrl.eval.metrics import paired, passed_fraction, two_proportion_z
    from termrl.rollout.store import read

    runs = {"hf": read(args.hf_run), "ct2": read(args.ct2_run)}
    print(f"stored_episodes hf={len(runs['hf'])} ct2={len(runs['ct2'])}")
    both = {t.episode_id for t in runs["hf"]} & {t.episode_id for t in runs["ct2"]}
    runs = {name: [t for t in episodes if t.episode_id in both] for name, episodes in runs.items()}
    counts = {name: passed_fraction(episodes) for name, episodes in runs.items()}
    for name, (passed, scored) in counts.items():
        print(f"{name}_passed={passed}/{scored} (episodes both stored)")
    (p1, n1), (p2, n2) = counts["hf"], counts["ct2"]
    if n1 and n2:
        z, p = two_proportion_z(p1 / n1, p2 / n2, n1, n2)
        print(f"two_proportion_z={z:.2f} two_proportion_p={p:.3f}")
    pairs = paired(runs["hf"], runs["ct2"])
    if pairs:
        print(f"paired_episodes={pairs['episodes']} ct2_only_passed={pairs['gained']} hf_only_passed={pairs['lost']} "
              f"mcnemar_p={pairs['mcnemar_p']:.3f}")
    hf_first = {t.episode_id: t.steps[0].reply for t in runs["hf"] if t.steps}
    same = [hf_first[t.episode_id] == t.steps[0].reply for t in runs["ct2"] if t.steps and t.episode_id in hf_first]
    print(f"first_replies_identical={sum(same)}/{len(same)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("speed", help="tokens per second, transformers against CTranslate2")
    s.add_argument("model", help="a transformers model directory (converted for CTranslate2 on first use)")
    s.add_argument("--new-tokens", type=int, default=64)
    s.add_argument("--ct2-threads", type=int, nargs="+", default=[1, 2])
    s.add_argument("--hf-threads", type=int, default=2)
    s.add_argument("--hf-dtype", choices=["float32", "bfloat16"], default=None, help="default: auto_dtype's")
    s.add_argument("--spread", type=int, default=200, help="prompt length gap of the spread case (0: skip)")
    m = sub.add_parser("malloc", help="CTranslate2 with and without tune_malloc, each in its own process")
    m.add_argument("model", help="a transformers model directory (converted for CTranslate2 on first use)")
    m.add_argument("--new-tokens", type=int, default=200)
    m.add_argument("--batch", type=int, default=8)
    m.add_argument("--spread", type=int, default=180, help="tokens between the batch's shortest and longest prompt")
    c = sub.add_parser("malloc-child")  # one setting, in its own process (malloc's settings are process-wide)
    for name in ("model", "tuned", "new_tokens", "batch", "spread"):
        c.add_argument(name)
    p = sub.add_parser("parity", help="pass counts of two stored evaluations and the tests of their difference")
    p.add_argument("hf_run")
    p.add_argument("ct2_run")
    args = ap.parse_args()
    {"speed": speed, "malloc": malloc, "malloc-child": malloc_child, "parity": parity}[args.command](args)


if __name__ == "__main__":
    main()
