"""A local Hugging Face model run by CTranslate2 (int8 on a CPU by default): fast generation for
evaluation and sampling.

``CT2Policy(PATH)`` takes the same model directory as ``HFPolicy`` (a transformers checkpoint with
its tokenizer) and converts it once with ``ctranslate2.converters.TransformersConverter``
(``converted``): the converted copy is cached under ``TERMRL_CACHE``/ct2 (default
``~/.cache/termrl/ct2``, ``/var/cache/termrl/ct2`` for root), named by a content digest of the
directory's files and the quantization, and reused by every later policy over the same weights.

Prompts, end tokens and reply text are ``HFPolicy``'s (the shared helpers of ``termrl.policies.hf``):
the tokenizer's chat template, the oldest messages dropped past ``max_prompt_tokens``, eos plus
``<|im_end|>`` / ``<|endoftext|>`` ending a reply, special tokens kept in the text except those.

Differences from ``HFPolicy``:

- ``Reply.logprobs`` are always the log-softmax of the model's unmodified logits (``HFConfig``'s
  ``logprobs="raw"``): CTranslate2 reports each drawn token's log-probability before temperature,
  top-k and top-p (measured: equal to a forward pass's log-softmax at temperature 0.5, top-k 5 and
  top-p 0.5), and the distribution after them only as whole-vocabulary logits per step
  (``return_logits_vocab``), too heavy to keep.
- Seeding: CTranslate2's sampling RNG is per worker thread and seeded when it is first used, so a
  seeded policy seeds it once when it loads: its batches draw one reproducible sequence (the
  same policy, made again with the same seed and given the same turns, replies the same), not
  ``seed + batch index`` as ``HFPolicy`` does.
- Turns are batched by prompt length (``prompt_spread``): CTranslate2 has no padding mask and
  feeds a longer prompt's extra tokens one decoding step each.
- CPU only; ``threads`` is CTranslate2's ``intra_threads``.
- Memory: with glibc's default malloc, CTranslate2 maps and unmaps its large per-step buffers on
  every decoding step (each thread's arena gives them back), and the page faults take more time
  than the decoding: a batch of 8 prompts near 1,100 tokens made 74 million faults and 134 s of
  system time for 1,600 tokens. ``tune_malloc`` (on unless ``CT2Config.tune_malloc`` is off) sets
  this process's malloc to one arena that keeps up to 1 GiB of freed memory, once, before the
  first generator: the same batch then made 0.5 million faults, 2.3x the tokens a second, the
  same tokens (``bench/ct2_speed.py malloc``). glibc takes the arena limit only until a first
  thread needs an arena of its own, so ``termrl eval`` and ``termrl train`` also start with
  ``MALLOC_ARENA_MAX=1`` (``termrl.cli.restart_with_malloc_arena``); a process of your own that
  has run threads before loading a policy should set it in its environment.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from termrl.actions import holds_action, workspace_texts
from termrl.policies.base import configure
from termrl.policies.hf import chat_prompt, directory_end_ids, make_reply, stripped
from termrl.protocols import Reply, Turn
from termrl.tasks.pyenv import cache_root

COMPUTE_TYPES = ("int8", "int8_float32", "int16", "float32", "bfloat16", "float16", "int8_bfloat16",
                 "int8_float16")
"""CTranslate2's weight types: the quantization a model is converted to and computed in."""


@dataclass(frozen=True)
class CT2Config:
    """How ``CT2Policy`` converts, loads and samples."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling mass; 1.0 disables it."""
    top_k: int = 0
    """Sample among the k most likely tokens; 0 disables it."""
    max_new_tokens: int = 512
    """Longest reply, in tokens."""
    seed: int | None = None
    """Seeds the sampling RNG once, when the policy loads (see the module's notes)."""
    max_batch: int = 8
    """Most turns generated together; larger batches are split."""
    compute_type: str = "int8"
    """The weights' type, converted to and computed in: one of ``COMPUTE_TYPES``."""
    threads: int = 0
    """CTranslate2's ``intra_threads`` (OpenMP threads of one generation); 0: its default."""
    max_prompt_tokens: int | None = None
    """Longest prompt; default the model's max positions minus ``max_new_tokens``. Longer
    conversations lose their oldest messages after the first (system) one."""
    stop_at_action: bool = False
    """End a reply as soon as it holds a whole action (``termrl.actions.holds_action``), as
    ``HFConfig.stop_at_action`` does. The reply then has no end-of-turn token."""
    tune_malloc: bool = True
    """Tune this process's malloc for CTranslate2 before loading (``tune_malloc``): one arena, and
    allocations under 1 GiB from the heap, which keeps up to 1 GiB freed. Process-wide and for the
    process's life."""
    prompt_spread: int = 96
    """Most tokens the prompts generated together may differ in length. CTranslate2 forwards the
    shortest prompt at once and the rest of each longer one a token per decoding step (measured on
    the 0.5B: two prompts 200 tokens apart, 32 new tokens, took 39.6 s together against 10.8 s one
    after the other); turns further apart are generated in separate batches, by prompt length, each
    of which pays its own decode. About one reply's length in tokens is the break-even."""

    def __post_init__(self):
        if self.compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type {self.compute_type!r}: use one of {', '.join(COMPUTE_TYPES)}")
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError("need temperature >= 0, 0 < top_p <= 1, top_k >= 0")
        if self.max_batch < 1 or self.max_new_tokens < 1:
            raise ValueError("max_batch and max_new_tokens must be at least 1")
        if self.threads < 0 or self.prompt_spread < 0:
            raise ValueError("threads (0: CTranslate2's default) and prompt_spread must be 0 or more")


def ct2_config(options: dict, **overrides) -> CT2Config:
    """A ``CT2Config`` from ``HFConfig``-style ``options`` (and ``overrides``): the fields both have;
    the transformers-only ones (dtype, device, logprobs) are dropped.

    >>> ct2_config({"temperature": 0.7, "dtype": "auto", "device": "auto", "seed": 1}, threads=1)
    CT2Config(temperature=0.7, top_p=1.0, top_k=0, max_new_tokens=512, seed=1, max_batch=8, compute_type='int8', \
threads=1, max_prompt_tokens=None, stop_at_action=False, tune_malloc=True, prompt_spread=96)
    """
    known = {f.name for f in fields(CT2Config)}
    return CT2Config(**{key: value for key, value in {**options, **overrides}.items() if key in known})


MODEL_SUFFIXES = (".json", ".safetensors", ".bin", ".txt", ".model", ".jinja", ".py")
"""Files of a model directory its conversion depends on (weights, configs, tokenizer, chat template)."""


def cache_dir() -> Path:
    """Where converted models are kept: ``TERMRL_CACHE``/ct2 (the project's cache root)."""
    return cache_root() / "ct2"


def model_digest(path: str | Path) -> str:
    """sha256 over the names and contents of ``path``'s top-level files that a conversion reads
    (``MODEL_SUFFIXES``), in name order: equal weights, config and tokenizer give equal digests
    wherever the directory lies."""
    digest = hashlib.sha256()
    for file in sorted(Path(path).iterdir()):
        if file.is_file() and file.suffix in MODEL_SUFFIXES:
            stat = file.stat()
            digest.update(file.name.encode() + b"\0")
            digest.update(_file_digest(str(file.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, size: int, mtime_ns: int, inode: int) -> bytes:
    """sha256 of a file's content, read once per process for one size, mtime and inode (a 1.3 GB
    checkpoint takes about 2 s)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").digest()


def converted(path: str | Path, compute_type: str = "int8", cache: str | Path | None = None) -> Path:
    """The CTranslate2 model converted from the transformers directory ``path`` with weights in
    ``compute_type``: ``cache`` (default ``cache_dir()``)/DIGEST-COMPUTE_TYPE, converted the first
    time (into a temporary folder beside it, then renamed: a stopped conversion leaves nothing a
    later call would take for a model) and reused afterwards."""
    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        raise ValueError(f"{path} holds no model (no config.json)")
    if compute_type not in COMPUTE_TYPES:
        raise ValueError(f"compute_type {compute_type!r}: use one of {', '.join(COMPUTE_TYPES)}")
    root = Path(cache) if cache is not None else cache_dir()
    target = root / f"{model_digest(path)[:32]}-{compute_type}"
    if (target / "model.bin").is_file():
        return target
    from ctranslate2.converters import TransformersConverter  # heavy: ctranslate2, transformers, torch

    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
    try:
        TransformersConverter(str(path), low_cpu_mem_usage=True).convert(str(work), quantization=compute_type,
                                                                          force=True)
        (work / "termrl-source.json").write_text(json.dumps({"source": str(path.resolve()),
                                                             "compute_type": compute_type}))
        try:
            os.rename(work, target)
        except OSError:  # another process converted it first: keep theirs
            if not (target / "model.bin").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


_LIVE: weakref.WeakSet = weakref.WeakSet()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
"""glibc's ``mallopt`` parameters (malloc.h)."""

_malloc_tuned: bool | None = None


def tune_malloc(keep: int = 1 << 30) -> bool:
    """Set glibc's malloc, for this whole process, to what CTranslate2's decoding needs: one arena
    (``M_ARENA_MAX`` 1: the threads' own arenas hand their large buffers back to the kernel on every
    step), allocations under ``keep`` bytes served from the heap rather than fresh mappings
    (``M_MMAP_THRESHOLD``), and up to ``keep`` bytes of freed heap kept (``M_TRIM_THRESHOLD``).
    Once per process; True when glibc took the settings, False elsewhere (musl, macOS) or when
    it refused one. It only changes where memory comes from, never what is computed."""
    global _malloc_tuned
    if _malloc_tuned is None:
        _malloc_tuned = False
        try:
            libc = ctypes.CDLL("libc.so.6")
            settings = ((M_ARENA_MAX, 1), (M_MMAP_THRESHOLD, keep), (M_TRIM_THRESHOLD, keep))
            _malloc_tuned = all(libc.mallopt(param, value) == 1 for param, value in settings)
        except (OSError, AttributeError):
            pass
    return _malloc_tuned


@atexit.register
def _release() -> None:
    """Frees every live policy's generator before the interpreter tears down: a generator that ran
    a Python callback and is destroyed during teardown aborts the process ("terminate called
    without an active exception", exit status 134)."""
    for policy in list(_LIVE):
        policy.__dict__.pop("generator", None)


class CT2Policy:
    """Generates replies with a transformers model directory, converted to and run by CTranslate2.

    ``Reply`` is as ``HFPolicy`` makes it: text decoded with special tokens kept except eos, pad,
    ``<|im_end|>`` and ``<|endoftext|>``; tokens up to and including the first eos (or up to the
    whole action with ``stop_at_action``); one log-prob per token, raw (see the module's notes);
    ``gen_s`` the wall time of the batch it was generated in divided among its replies."""

    def __init__(self, path: str | Path, config: CT2Config | None = None, **options):
        import ctranslate2  # heavy: ctranslate2
        from transformers import AutoTokenizer  # heavy: transformers

        self.config = configure(CT2Config, config, options)
        if self.config.tune_malloc:
            tune_malloc()
        self.name = f"ct2:{path}"
        self.source = Path(path).expanduser()
        self.model_dir = converted(self.source, self.config.compute_type)
        self.tokenizer = AutoTokenizer.from_pretrained(self.source)
        model_config = json.loads((self.source / "config.json").read_text())
        self.eos_ids = directory_end_ids(self.tokenizer, self.source)
        self.strip = stripped(self.tokenizer)
        limit = model_config.get("max_position_embeddings") or 1 << 30
        self.max_prompt = self.config.max_prompt_tokens or limit - self.config.max_new_tokens
        ctranslate2.set_random_seed(self.config.seed if self.config.seed is not None
                                    else int.from_bytes(os.urandom(4), "little"))
        self.generator = ctranslate2.Generator(str(self.model_dir), device="cpu",
                                               compute_type=self.config.compute_type,
                                               intra_threads=self.config.threads)
        _LIVE.add(self)
        # the worker thread's RNG takes the seed when first used: use it now, before another policy seeds
        first = self.tokenizer.convert_ids_to_tokens(self.eos_ids[:1])
        self.generator.generate_batch([first], max_length=1, sampling_topk=0, include_prompt_in_result=False)

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        prompts = [self.prompt(t.messages, t.tools) for t in turns]
        replies: list[Reply | None] = [None] * len(turns)
        for group in self._groups([len(p) for p in prompts]):
            for i, reply in zip(group, self._batch([turns[i] for i in group], [prompts[i] for i in group])):
                replies[i] = reply
        return replies

    def prompt(self, messages: list[dict], tools: Sequence[dict] = ()) -> list[int]:
        """Token ids of the chat-templated prompt, as ``HFPolicy.prompt`` makes them (``chat_prompt``)."""
        return chat_prompt(self.tokenizer, messages, tools, self.max_prompt)

    def _groups(self, lengths: list[int]) -> list[list[int]]:
        """Turn indices in batches of at most ``max_batch``, by prompt length, each spanning at most
        ``prompt_spread`` tokens of length."""
        groups: list[list[int]] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            if (groups and len(groups[-1]) < self.config.max_batch
                    and lengths[i] - lengths[groups[-1][0]] <= self.config.prompt_spread):
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def _batch(self, turns: Sequence[Turn], prompts: list[list[int]]) -> list[Reply]:
        start = time.perf_counter()
        c = self.config
        rows: list[list[int]] = [[] for _ in turns]
        logprobs: list[list[float]] = [[] for _ in turns]
        workspaces = [workspace_texts(t.task.workspace) for t in turns] if c.stop_at_action else None
        failed: list[BaseException] = []
        greedy = c.temperature == 0
        self.generator.generate_batch(
            [self.tokenizer.convert_ids_to_tokens(p) for p in prompts], max_length=c.max_new_tokens,
            include_prompt_in_result=False, end_token=self.eos_ids, return_end_token=True, return_scores=True,
            sampling_topk=1 if greedy else c.top_k, sampling_topp=1.0 if greedy else c.top_p,
            sampling_temperature=1.0 if greedy else c.temperature,
            callback=_recorder(self.tokenizer, set(self.eos_ids), rows, logprobs, workspaces, failed))
        if failed:
            raise failed.pop()  # emptied: the callback, which CTranslate2 may free later, holds no traceback
        gen_s = (time.perf_counter() - start) / len(turns)
        return [make_reply(self.tokenizer, self.eos_ids, self.strip, row, lps, len(p), gen_s)
                for row, lps, p in zip(rows, logprobs, prompts)]


def _recorder(tokenizer, eos_ids: set[int], rows: list[list[int]], logprobs: list[list[float]],
              workspaces: list[dict] | None, failed: list[BaseException]):
    """The per-token callback of ``generate_batch``: appends each generated token and its log-prob to
    its sequence's row; returns True (ending that sequence) once the reply holds a whole action when
    ``workspaces`` are given. An error is kept in ``failed`` and ends the sequence: raised into
    CTranslate2's worker thread it would abort the process.

    It must not reach the policy: CTranslate2 frees it on its worker thread, possibly after
    ``generate_batch`` returned, and a policy whose last reference went with it would destroy its
    generator there, which joins that very thread ("Resource deadlock avoided", an abort)."""
    def step(result) -> bool:
        try:
            i = result.batch_id
            rows[i].append(result.token_id)
            logprobs[i].append(result.log_prob)
            if workspaces is None or result.token_id in eos_ids:
                return False
            return holds_action(tokenizer.decode(rows[i], skip_special_tokens=True), workspaces[i])
        except BaseException as e:  # noqa: BLE001 -- see above
            failed.append(e)
            return True

    return step


__all__ = ["COMPUTE_TYPES", "CT2Config", "CT2Policy", "cache_dir", "converted", "ct2_config", "model_digest",
           "tune_malloc"]
