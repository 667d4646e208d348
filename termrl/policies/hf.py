"""A local Hugging Face causal LM as a policy: batched sampling with per-token logprobs.

Each turn's messages go through the tokenizer's chat template (``add_generation_prompt``);
turns are generated together in batches of ``max_batch``, left-padded with an attention
mask. Sampling uses only the parameters in ``HFConfig``: the model's own
``generation_config.json`` (Qwen ships temperature 0.7, top_k 20, repetition penalty 1.05)
contributes its eos ids and nothing else.

Log-probabilities are recorded by a logits processor that keeps one step's distribution
and reads off the token sampled from it, so memory stays ``batch x vocab`` however long
the reply (``output_scores`` would keep ``batch x new_tokens x vocab``).

A conversation longer than the context (max positions minus ``max_new_tokens``) loses its
oldest messages after the system prompt; one that still does not fit raises ValueError.
"""

from __future__ import annotations

import contextlib
import functools
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from termrl.actions import holds_action, workspace_texts
from termrl.policies.base import configure
from termrl.protocols import Reply, Turn

STRIP = ("<|im_end|>", "<|endoftext|>")
"""Token texts removed from replies besides the tokenizer's eos and pad."""


@dataclass(frozen=True)
class HFConfig:
    """How ``HFPolicy`` loads its model and samples."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling mass; 1.0 disables it."""
    top_k: int = 0
    """Sample among the k most likely tokens; 0 disables it."""
    max_new_tokens: int = 512
    """Longest reply, in tokens."""
    seed: int | None = None
    """Seeds sampling: batch i of this policy draws from ``seed + i``; the caller's RNG is untouched."""
    dtype: str = "auto"
    """auto (as saved, except float32 where half precision would be slower: ``auto_dtype``) | float32 | bfloat16."""
    device: str = "cpu"
    """cpu | cuda | cuda:N | auto (cuda when available, else cpu)."""
    max_batch: int = 8
    """Most turns generated together; larger batches are split."""
    logprobs: str = "sampling"
    """sampling: log-probs under the distribution tokens were drawn from (after temperature,
    top-k, top-p; what an importance ratio against the behaviour policy needs).
    raw: log-softmax of the model's unmodified logits. Under greedy decoding both are raw."""
    max_prompt_tokens: int | None = None
    """Longest prompt; default the model's max positions minus ``max_new_tokens``. Longer
    conversations lose their oldest messages after the first (system) one."""
    stop_at_action: bool = False
    """End a reply as soon as it holds a whole action (``termrl.actions.holds_action``, with the
    turn's task workspace): the environment runs only a reply's first action, and small models
    spend most of their tokens explaining after it. The reply then has no end-of-turn token."""

    def __post_init__(self):
        if self.dtype not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"dtype {self.dtype!r}: use auto, float32 or bfloat16")
        if self.logprobs not in ("sampling", "raw"):
            raise ValueError(f"logprobs {self.logprobs!r}: use sampling or raw")
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError("need temperature >= 0, 0 < top_p <= 1, top_k >= 0")
        if self.max_batch < 1 or self.max_new_tokens < 1:
            raise ValueError("max_batch and max_new_tokens must be at least 1")


class _LogprobRecorder:
    """A logits processor: keeps this step's log-softmax, and at the next step (or
    ``finish``) gathers the log-prob of the token that was drawn from it."""

    def __init__(self):
        self.last = None
        self.steps = []

    def __call__(self, input_ids, scores):
        self._take(input_ids[:, -1])
        self.last = scores.float().log_softmax(-1)
        return scores

    def _take(self, drawn):
        if self.last is not None:
            self.steps.append(self.last.gather(1, drawn[:, None])[:, 0].cpu())
            self.last = None

    def finish(self, drawn):
        import torch  # heavy: torch

        self._take(drawn)
        return torch.stack(self.steps, 1) if self.steps else torch.zeros(len(drawn), 0)


class _StopAtAction:
    """A stopping criterion: a sequence is done once its reply holds a whole action. Remembers
    how many tokens each stopped reply had, since the batch pads it from then on."""

    def __init__(self, tokenizer, prompt_len: int, workspaces: list):
        self.tokenizer, self.prompt_len, self.workspaces = tokenizer, prompt_len, workspaces
        self.lengths: list[int | None] = [None] * len(workspaces)

    def __call__(self, input_ids, scores, **kwargs):
        import torch  # heavy: torch

        done = torch.zeros(len(self.workspaces), dtype=torch.bool, device=input_ids.device)
        generated = input_ids[:, self.prompt_len:]
        for i, workspace in enumerate(self.workspaces):
            if self.lengths[i] is None:
                text = self.tokenizer.decode(generated[i], skip_special_tokens=True)
                if holds_action(text, workspace):
                    self.lengths[i] = generated.shape[1]
            done[i] = self.lengths[i] is not None
        return done


def auto_dtype(path, device: str = "cpu") -> str:
    """The dtype ``auto`` loads a checkpoint in: float32 for weights that stay packed GGUF (their
    kernels compute in float32, so bfloat16 only adds casts), and float32 for a bfloat16/float16
    checkpoint on a CPU whose half-precision matmul is slower than float32 (no AVX512-BF16 or
    AMX: 0.7 against 37 GFLOPS on this project's 2-core AVX2 machine, prefill 4.9x slower,
    bench/hf_dtype.py; see ``half_matmul_is_fast``); otherwise ``auto`` (as saved)."""
    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return "auto"
    quant = config.get("quantization_config") or {}
    if quant.get("quant_method") == "gguf":
        return "float32"
    saved = config.get("dtype") or config.get("torch_dtype")
    if str(device).startswith("cpu") and saved in ("bfloat16", "float16") and not half_matmul_is_fast(saved):
        return "float32"
    return "auto"


HALF_FLAGS = {"bfloat16": ("avx512_bf16", "amx_bf16"), "float16": ("avx512_fp16", "amx_fp16")}
"""x86 CPU flags under which PyTorch multiplies in that dtype natively (without them it emulates)."""


@functools.cache
def half_matmul_is_fast(dtype: str = "bfloat16") -> bool:
    """Whether this CPU multiplies matrices in ``dtype`` at least as fast as in float32.

    On x86 Linux the CPU's flags answer it (``HALF_FLAGS``): a timing can be fooled by a busy
    machine, and a wrong answer here costs a run 5x its time. Elsewhere (other CPUs, no
    ``/proc/cpuinfo``) it times a 64x256 by 256x256 product per dtype, interleaved, best of 10."""
    flags = cpu_flags()
    if flags:
        return any(flag in flags for flag in HALF_FLAGS[dtype])
    return _timed_half_is_fast(dtype)


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The flags of an x86 CPU as Linux lists them; empty on other machines or without the file."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return set()
    try:
        lines = Path(cpuinfo).read_text().splitlines()
    except OSError:
        return set()
    return {flag for line in lines if line.startswith("flags") for flag in line.partition(":")[2].split()}


def _timed_half_is_fast(dtype: str) -> bool:
    import torch  # heavy: torch

    pairs = {dt: (torch.ones(64, 256, dtype=dt), torch.ones(256, 256, dtype=dt))
             for dt in (getattr(torch, dtype), torch.float32)}
    best = dict.fromkeys(pairs, float("inf"))
    for _ in range(10):
        for dt, (a, b) in pairs.items():
            start = time.perf_counter()
            a @ b
            best[dt] = min(best[dt], time.perf_counter() - start)
    return best[getattr(torch, dtype)] <= best[torch.float32]


class HFPolicy:
    """Generates replies with a local transformers model directory (``AutoModelForCausalLM``).

    ``Reply.text`` is the decoded reply with special tokens kept (``<tool_call>`` may be one)
    except eos, pad, ``<|im_end|>`` and ``<|endoftext|>``. ``Reply.tokens`` are the generated
    ids up to and including the first eos; ``Reply.logprobs`` one per token (see
    ``HFConfig.logprobs``); with ``stop_at_action``, a reply stopped at its action ends there, with
    no eos. ``gen_s`` is the batch's wall time divided among its replies."""

    def __init__(self, path: str | Path, config: HFConfig | None = None, **options):
        import torch  # heavy: torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig  # heavy: transformers

        self.config = configure(HFConfig, config, options)
        self.name = f"hf:{path}"
        self.device = _device(self.config.device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        dtype = self.config.dtype if self.config.dtype != "auto" else auto_dtype(path, str(self.device))
        dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(self.device).eval()
        tok = self.tokenizer
        self.eos_ids = end_ids(tok, self.model.generation_config.eos_token_id)
        self.model.generation_config = GenerationConfig(eos_token_id=self.eos_ids, pad_token_id=tok.pad_token_id)
        self.strip = stripped(tok)
        limit = getattr(self.model.config, "max_position_embeddings", None) or 1 << 30
        self.max_prompt = self.config.max_prompt_tokens or limit - self.config.max_new_tokens
        self._batches = 0

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        step = self.config.max_batch
        return [r for i in range(0, len(turns), step) for r in self._batch(turns[i:i + step])]

    def prompt(self, messages: list[dict], tools: Sequence[dict] = ()) -> list[int]:
        """Token ids of the chat-templated prompt (``tools``, if any, go to the template: native
        tool calling). Over ``max_prompt_tokens``, messages after the first are dropped oldest
        first (and a leading assistant reply with them), keeping at least the last; still too
        long raises ValueError (``chat_prompt``)."""
        return chat_prompt(self.tokenizer, messages, tools, self.max_prompt)

    def _batch(self, turns: Sequence[Turn]) -> list[Reply]:
        start = time.perf_counter()
        prompts = [self.prompt(t.messages, t.tools) for t in turns]
        enc = self.tokenizer.pad({"input_ids": prompts}, return_tensors="pt").to(self.device)
        recorder = _LogprobRecorder()
        options = self._sampling(recorder)
        stop = None
        if self.config.stop_at_action:
            from transformers import StoppingCriteriaList  # heavy: transformers

            workspaces = [workspace_texts(t.task.workspace) for t in turns]  # decoded once, not per token
            stop = _StopAtAction(self.tokenizer, enc["input_ids"].shape[1], workspaces)
            options["stopping_criteria"] = StoppingCriteriaList([stop])
        with self._rng():
            out = self.model.generate(**enc, **options)
        self._batches += 1
        generated = out[:, enc["input_ids"].shape[1]:]
        logprobs = recorder.finish(generated[:, -1])
        gen_s = (time.perf_counter() - start) / len(turns)
        lengths = stop.lengths if stop else [None] * len(turns)
        return [self._reply(row.tolist()[:n], lps.tolist()[:n], len(p), gen_s)
                for row, lps, p, n in zip(generated, logprobs, prompts, lengths)]

    @contextlib.contextmanager
    def _rng(self):
        """Unseeded: the global RNG, as is. Seeded: a forked RNG seeded ``seed + batch index``,
        so the caller's RNG is untouched and each batch draws differently."""
        if self.config.seed is None:
            yield
            return
        import torch  # heavy: torch

        cuda = [] if self.device.type == "cpu" else [self.device.index or 0]
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(self.config.seed + self._batches)
            yield

    def _sampling(self, recorder: _LogprobRecorder) -> dict:
        """generate() kwargs. The warpers are ours, in this order, so the recorder sees
        exactly the scores tokens are drawn from (custom processors otherwise run before them)."""
        import transformers as tf  # heavy: transformers

        c = self.config
        greedy = c.temperature == 0
        warpers = [] if greedy else [tf.TemperatureLogitsWarper(c.temperature)]
        if not greedy and c.top_k:
            warpers.append(tf.TopKLogitsWarper(c.top_k))
        if not greedy and c.top_p < 1:
            warpers.append(tf.TopPLogitsWarper(c.top_p))
        chain = [recorder, *warpers] if c.logprobs == "raw" else [*warpers, recorder]
        neutral = {} if greedy else {"temperature": 1.0, "top_k": 0, "top_p": 1.0}  # no built-in warpers
        return dict(do_sample=not greedy, max_new_tokens=c.max_new_tokens,
                    logits_processor=tf.LogitsProcessorList(chain), **neutral)

    def _reply(self, row: list[int], logprobs: list[float], prompt_tokens: int, gen_s: float) -> Reply:
        return make_reply(self.tokenizer, self.eos_ids, self.strip, row, logprobs, prompt_tokens, gen_s)


def end_ids(tokenizer, saved) -> list[int]:
    """The token ids that end a reply: the tokenizer's eos, ``STRIP``'s tokens it has, and ``saved``
    (the model's ``generation_config`` eos id or ids)."""
    vocab = tokenizer.get_vocab()
    ids = [tokenizer.eos_token_id, *(tokenizer.convert_tokens_to_ids(t) for t in STRIP if t in vocab)]
    ids += saved if isinstance(saved, list) else [saved]
    return sorted({i for i in ids if i is not None})


def directory_end_ids(tokenizer, source: Path) -> list[int]:
    """``end_ids`` of a model directory read without loading its weights: the eos id(s) of its
    ``generation_config.json``, else of its ``config.json``."""
    generation = source / "generation_config.json"
    saved = json.loads((generation if generation.is_file() else source / "config.json").read_text())
    return end_ids(tokenizer, saved.get("eos_token_id"))


def stripped(tokenizer) -> list[str]:
    """Token texts removed from a decoded reply: ``STRIP``, eos and pad."""
    return [s for s in {*STRIP, tokenizer.eos_token, tokenizer.pad_token} if s]


def chat_prompt(tokenizer, messages: list[dict], tools: Sequence[dict], limit: int) -> list[int]:
    """Token ids of the chat-templated prompt (``tools``, if any, go to the template: native
    tool calling). Over ``limit`` tokens, messages after the first are dropped oldest first
    (and a leading assistant reply with them), keeping at least the last; still too long
    raises ValueError."""
    messages = list(messages)
    extra = {"tools": list(tools)} if tools else {}
    while True:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **extra)
        ids = tokenizer(text, add_special_tokens=False).input_ids
        if len(ids) <= limit:
            return ids
        if len(messages) <= 2:
            raise ValueError(f"prompt of {len(ids)} tokens exceeds the limit of {limit} "
                             f"(max positions minus max_new_tokens) even with only the first and last "
                             f"messages; raise max_prompt_tokens or shorten the observation")
        del messages[1]
        while len(messages) > 2 and messages[1].get("role") == "assistant":
            del messages[1]


def make_reply(tokenizer, eos_ids: list[int], strip: list[str], row: list[int], logprobs: list[float],
               prompt_tokens: int, gen_s: float) -> Reply:
    """A reply from generated ids ``row``: cut after the first of ``eos_ids``, decoded with special
    tokens kept except ``strip``."""
    end = next((i + 1 for i, t in enumerate(row) if t in eos_ids), len(row))
    tokens = row[:end]
    text = tokenizer.decode(tokens, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    for s in strip:
        text = text.replace(s, "")
    return Reply(text=text, tokens=tokens, logprobs=logprobs[:end], prompt_tokens=prompt_tokens, gen_s=gen_s)


def _device(spec: str):
    import torch  # heavy: torch

    if spec == "auto":  # the current GPU (a launcher's rank has its own), with its index: RNG forks need it
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    if spec.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {spec!r} requested but CUDA is not available; use device='cpu' or 'auto'")
    return torch.device(spec)
