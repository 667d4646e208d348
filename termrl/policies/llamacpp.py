"""A local Hugging Face model served by llama.cpp (``llama-server``, GGUF ``q8_0`` by default): the
fastest one-stream generation on a CPU measured here, and continuous batching across episodes.

``LlamaCppPolicy(PATH)`` takes the same model directory as ``HFPolicy`` and ``CT2Policy``. The first
time, llama.cpp's ``convert_hf_to_gguf.py`` converts it to GGUF (``quantization``; a k-quant such as
``q4_k_m`` goes through ``f16`` and ``llama-quantize``), cached under ``TERMRL_CACHE``/gguf by the
directory's content digest (``termrl.policies.ct2.model_digest``), so each RFT round's merged
weights are converted once, automatically. The policy then starts ``llama-server`` on 127.0.0.1 with
``max_batch`` slots, and stops it (by the process it started) when the policy is closed or
collected, or the interpreter exits. ``url`` talks to a server already running instead.

Where llama.cpp comes from: ``scripts/build_llamacpp.sh`` builds ``llama-server`` and
``llama-quantize`` from the llama.cpp that the ``llama-cpp-python`` source distribution on PyPI
vendors (no other site is needed; about 15 minutes on 2 cores) into ``TERMRL_CACHE``/llama.cpp;
``TERMRL_LLAMA_CPP`` or ``LlamaCppConfig.llama_cpp`` names another build (its source folder, with
``build/bin``). The conversion needs ``sentencepiece`` (the ``llamacpp`` extra).

Prompts, end tokens and reply text are ``HFPolicy``'s (the shared helpers of ``termrl.policies.hf``):
the prompt is tokenised here by the model directory's own tokenizer and chat template and sent as
token ids, so the server's template never enters. Differences from ``HFPolicy``:

- Sampling is llama.cpp's with only top-k, temperature and top-p, in transformers' order (its own
  defaults add min-p 0.05, top-k 40, top-p 0.95 and penalties); temperature 0 is greedy. Each turn is seeded on its own from ``seed`` and the turn
  (task, sample, step), so a seeded run replies the same whatever order its turns reach the server.
- ``Reply.logprobs`` are the log-softmax of the model's logits (llama.cpp's ``n_probs``), before
  temperature and top-k/top-p: ``CT2Policy``'s raw log-probs.
- Turns are served as they come (``continuous``): the rollout runner sends each episode's turn at
  once, and the server batches whatever its slots hold, each new prompt joining at the next step.
- CPU threads are llama.cpp's ``--threads``. On a machine whose cores other jobs share, more
  threads than free cores is far slower (measured here: 2 threads beside another job, 0.7 tokens a
  second against 47 with 1, ``bench/cpu_engines.py``).
"""

from __future__ import annotations

import ctypes
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path

from termrl.actions import holds_action, workspace_texts
from termrl.policies.base import PolicyError, configure
from termrl.policies.ct2 import model_digest
from termrl.policies.hf import chat_prompt, directory_end_ids, make_reply, stripped
from termrl.protocols import Reply, Turn
from termrl.tasks.pyenv import cache_root

DIRECT = ("f32", "f16", "bf16", "q8_0")
"""Types ``convert_hf_to_gguf.py`` writes itself."""
QUANTIZED = ("q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m",
             "q5_k_s", "q5_k_m", "q6_k")
"""Types ``llama-quantize`` makes from an ``f16`` conversion."""
BUILD = "scripts/build_llamacpp.sh"


@dataclass(frozen=True)
class LlamaCppConfig:
    """How ``LlamaCppPolicy`` converts, serves and samples."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling mass; 1.0 disables it."""
    top_k: int = 0
    """Sample among the k most likely tokens; 0 disables it."""
    max_new_tokens: int = 512
    """Longest reply, in tokens."""
    seed: int | None = None
    """Seeds every turn's sampling with this and the turn (see the module's notes); None: random."""
    max_batch: int = 8
    """The server's slots: turns generated at once."""
    quantization: str = "q8_0"
    """The GGUF's weight type: one of ``DIRECT`` or ``QUANTIZED``."""
    threads: int = 0
    """llama.cpp's ``--threads``; 0: its default (the machine's cores)."""
    context: int = 8192
    """Tokens each slot holds, prompt and reply (the server's context is ``max_batch`` times it)."""
    max_prompt_tokens: int | None = None
    """Longest prompt; default ``context`` minus ``max_new_tokens``. Longer conversations lose their
    oldest messages after the first (system) one."""
    stop_at_action: bool = False
    """End a reply as soon as it holds a whole action (``termrl.actions.holds_action``), as
    ``HFConfig.stop_at_action`` does. The reply then has no end-of-turn token."""
    url: str = ""
    """A running ``llama-server`` serving this model's GGUF (``http://HOST:PORT``); "" starts one."""
    llama_cpp: str = ""
    """The llama.cpp build (the folder holding ``build/bin/llama-server``); "": ``TERMRL_LLAMA_CPP``,
    else ``TERMRL_CACHE``/llama.cpp, else ``llama-server`` on ``PATH``."""
    timeout_s: float = 1800.0
    """Longest wait for one reply, and for the server to load."""

    def __post_init__(self):
        if self.quantization not in DIRECT + QUANTIZED:
            raise ValueError(f"quantization {self.quantization!r}: use one of {', '.join(DIRECT + QUANTIZED)}")
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError("need temperature >= 0, 0 < top_p <= 1, top_k >= 0")
        if self.max_batch < 1 or self.max_new_tokens < 1 or self.threads < 0 or self.timeout_s <= 0:
            raise ValueError("need max_batch >= 1, max_new_tokens >= 1, threads >= 0 (0: llama.cpp's "
                             "default) and timeout_s > 0")
        if self.context <= self.max_new_tokens:
            raise ValueError(f"context {self.context} must exceed max_new_tokens {self.max_new_tokens}: "
                             "a slot holds the prompt and the reply")


def llamacpp_config(options: dict, **overrides) -> LlamaCppConfig:
    """A ``LlamaCppConfig`` from ``HFConfig``-style ``options`` (and ``overrides``): the fields both
    have; the transformers-only ones (dtype, device, logprobs) are dropped."""
    known = {f.name for f in fields(LlamaCppConfig)}
    return LlamaCppConfig(**{key: value for key, value in {**options, **overrides}.items() if key in known})


@dataclass(frozen=True)
class LlamaCpp:
    """Where a llama.cpp build's programs are."""

    server: Path
    quantize: Path | None
    convert: Path | None
    """``convert_hf_to_gguf.py`` (its ``gguf-py`` beside it)."""


def find_llama_cpp(where: str | Path = "") -> LlamaCpp:
    """The llama.cpp build at ``where`` (or as ``LlamaCppConfig.llama_cpp`` says); a ValueError
    that says how to build one when there is none."""
    candidates = [Path(where).expanduser()] if where else [
        *([Path(os.environ["TERMRL_LLAMA_CPP"])] if os.environ.get("TERMRL_LLAMA_CPP") else []),
        cache_root() / "llama.cpp"]
    for root in candidates:
        server = root / "build" / "bin" / "llama-server"
        if server.is_file():
            quantize = root / "build" / "bin" / "llama-quantize"
            convert = root / "convert_hf_to_gguf.py"
            return LlamaCpp(server, quantize if quantize.is_file() else None, convert if convert.is_file() else None)
    on_path = shutil.which("llama-server")
    if on_path and not where:
        return LlamaCpp(Path(on_path), None, None)
    raise ValueError(f"no llama.cpp build at {' or '.join(str(c) for c in candidates)} (no build/bin/llama-server): "
                     f"build one with `bash {BUILD}` (about 15 minutes), or set TERMRL_LLAMA_CPP to a llama.cpp "
                     "folder built with cmake")


def gguf_dir() -> Path:
    """Where converted models are kept: ``TERMRL_CACHE``/gguf."""
    return cache_root() / "gguf"


def converted_gguf(path: str | Path, quantization: str = "q8_0", llama: LlamaCpp | None = None,
                   cache: str | Path | None = None) -> Path:
    """The GGUF of the transformers directory ``path`` in ``quantization``: ``cache`` (default
    ``gguf_dir()``)/DIGEST-QUANTIZATION.gguf, converted the first time (into a temporary file beside
    it, then renamed: a stopped conversion leaves nothing a later call would take for a model)."""
    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        raise ValueError(f"{path} holds no model (no config.json)")
    if quantization not in DIRECT + QUANTIZED:
        raise ValueError(f"quantization {quantization!r}: use one of {', '.join(DIRECT + QUANTIZED)}")
    root = Path(cache) if cache is not None else gguf_dir()
    target = root / f"{model_digest(path)[:32]}-{quantization}.gguf"
    if target.is_file():
        return target
    llama = llama or find_llama_cpp()
    if llama.convert is None or (quantization in QUANTIZED and llama.quantize is None):
        raise ValueError(f"the llama.cpp at {llama.server.parent} lacks convert_hf_to_gguf.py or llama-quantize: "
                         f"build it with `bash {BUILD}`")
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.stem}-", dir=root))
    try:
        first = work / ("model.gguf" if quantization in DIRECT else "f16.gguf")
        _run([sys.executable, str(llama.convert), str(path), "--outtype",
              quantization if quantization in DIRECT else "f16", "--outfile", str(first)], "convert_hf_to_gguf.py")
        if quantization in QUANTIZED:
            _run([str(llama.quantize), str(first), str(work / "model.gguf"), quantization.upper()], "llama-quantize")
        try:
            os.rename(work / "model.gguf", target)
        except OSError:  # another process converted it first: keep theirs
            if not target.is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _run(command: list[str], name: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        hint = " (pip install sentencepiece: the llamacpp extra)" if "sentencepiece" in tail else ""
        raise ValueError(f"{name} failed with exit status {done.returncode}{hint}:\n{tail}")


class LlamaServer:
    """A ``llama-server`` this process started on 127.0.0.1, stopped by its own PID."""

    def __init__(self, llama: LlamaCpp, model: Path, config: LlamaCppConfig):
        fd, self.log = tempfile.mkstemp(prefix="termrl-llama-server-", suffix=".log")
        self.port = _free_port()
        command = [str(llama.server), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                   "--parallel", str(config.max_batch), "--ctx-size", str(config.context * config.max_batch),
                   "--no-webui", "--no-warmup"]
        if config.threads:
            command += ["--threads", str(config.threads), "--threads-batch", str(config.threads)]
        try:
            self.process = subprocess.Popen(command, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True,
                                            preexec_fn=_die_with_parent)  # noqa: PLW1509 - one prctl call
        finally:
            os.close(fd)
        self._stop = weakref.finalize(self, _stop, self.process, self.log)
        self.url = f"http://127.0.0.1:{self.port}"
        self._wait(config.timeout_s)

    def _wait(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self._tail()
                self.close()
                raise PolicyError(f"llama-server exited with status {self.process.returncode} while loading:\n{tail}")
            try:
                status, _ = _get(self.url, "/health", 5)
                if status == 200:
                    return
            except (OSError, http.client.HTTPException):  # not listening yet, or closed on us while starting
                pass
            time.sleep(0.2)
        tail = self._tail()
        self.close()
        raise PolicyError(f"llama-server did not load within {timeout_s:.0f} s; its last lines:\n{tail}")

    def _tail(self) -> str:
        return "\n".join(Path(self.log).read_text(errors="replace").strip().splitlines()[-10:])

    def close(self) -> None:
        self._stop()


try:
    _PRCTL = ctypes.CDLL(None).prctl  # looked up here: the forked child must not load libraries
except (OSError, AttributeError):  # not Linux
    _PRCTL = None


def _die_with_parent() -> None:
    """In the server's process before it runs: Linux sends it SIGTERM when the thread that started
    it ends, so a harness killed without cleaning up (SIGKILL, SIGTERM) leaves no server behind."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _start(llama: LlamaCpp, model: Path, config: LlamaCppConfig, tries: int = 3) -> LlamaServer:
    """A started server; a port another process took between ``_free_port`` and the server's bind
    is tried again on a new one."""
    for attempt in range(tries):
        try:
            return LlamaServer(llama, model, config)
        except PolicyError as e:
            taken = ("couldn't bind http server socket", "address already in use")  # llama-server's words, the OS's
            if attempt == tries - 1 or not any(words in str(e).lower() for words in taken):
                raise
    raise AssertionError("unreachable")


def _stop(process: subprocess.Popen, log: str) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    try:
        os.unlink(log)
    except OSError:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connection(url: str, timeout: float) -> http.client.HTTPConnection:
    rest = url.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.partition(":")
    return http.client.HTTPConnection(host, int(port or 80), timeout=timeout)


def _get(url: str, path: str, timeout: float) -> tuple[int, bytes]:
    conn = _connection(url, timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class LlamaCppPolicy:
    """Generates replies with a transformers model directory, converted to GGUF and served by
    llama.cpp.

    ``Reply`` is as ``HFPolicy`` makes it: text decoded with special tokens kept except eos, pad,
    ``<|im_end|>`` and ``<|endoftext|>``; tokens up to and including the end token (or up to the
    whole action with ``stop_at_action``); one raw log-prob per token; ``gen_s`` the reply's own
    wall time."""

    continuous = True
    """The rollout runner sends turns as they come rather than in batches: the server batches."""

    def __init__(self, path: str | Path, config: LlamaCppConfig | None = None, **options):
        from transformers import AutoTokenizer  # heavy: transformers

        self.config = configure(LlamaCppConfig, config, options)
        self.name = f"llamacpp:{path}"
        self.source = Path(path).expanduser()
        if not (self.source / "config.json").is_file():
            raise ValueError(f"{self.source} holds no model (no config.json)")
        self.tokenizer = AutoTokenizer.from_pretrained(self.source)
        self.eos_ids = directory_end_ids(self.tokenizer, self.source)
        self.strip = stripped(self.tokenizer)
        self.max_prompt = self.config.max_prompt_tokens or self.config.context - self.config.max_new_tokens
        self.server: LlamaServer | None = None
        if self.config.url:
            self.url = self.config.url.rstrip("/")
        else:
            llama = find_llama_cpp(self.config.llama_cpp)
            self.gguf = converted_gguf(self.source, self.config.quantization, llama)
            self.server = _start(llama, self.gguf, self.config)
            self.url = self.server.url
        self._pool = ThreadPoolExecutor(max_workers=self.config.max_batch, thread_name_prefix="termrl-llama")
        self._local = threading.local()

    def close(self) -> None:
        """Stops the server this policy started (also done when it is collected, or at exit)."""
        self._pool.shutdown(wait=False)
        if self.server is not None:
            self.server.close()

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        if len(turns) == 1:
            return [self._one(turns[0])]
        return list(self._pool.map(self._one, turns))

    def prompt(self, messages: list[dict], tools: Sequence[dict] = ()) -> list[int]:
        """Token ids of the chat-templated prompt, as ``HFPolicy.prompt`` makes them (``chat_prompt``)."""
        return chat_prompt(self.tokenizer, messages, tools, self.max_prompt)

    def request(self, turn: Turn, prompt: list[int]) -> dict:
        """The ``/completion`` request body for ``turn``."""
        c = self.config
        greedy = c.temperature == 0
        seed = (zlib.crc32(f"{c.seed}|{turn.task.id}|{turn.task.meta.seed}|{turn.sample}|{turn.step}".encode())
                if c.seed is not None else int.from_bytes(os.urandom(4), "little"))
        return {"prompt": prompt, "n_predict": c.max_new_tokens, "stream": True, "return_tokens": True,
                "n_probs": 1, "cache_prompt": True, "seed": seed,
                "temperature": 0.0 if greedy else c.temperature, "top_k": 1 if greedy else c.top_k,
                "top_p": 1.0 if greedy else c.top_p, "samplers": ["top_k", "temperature", "top_p"]}

    def _one(self, turn: Turn) -> Reply:
        start = time.perf_counter()
        prompt = self.prompt(turn.messages, turn.tools)
        workspace = workspace_texts(turn.task.workspace) if self.config.stop_at_action else None
        row: list[int] = []
        logprobs: list[float] = []
        conn = _connection(self.url, self.config.timeout_s)
        try:
            conn.request("POST", "/completion", body=json.dumps(self.request(turn, prompt)),
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            if response.status != 200:
                raise PolicyError(f"llama-server at {self.url} answered {response.status}: "
                                  f"{response.read(2000).decode(errors='replace')}")
            for chunk in _events(response):
                if "error" in chunk:
                    raise PolicyError(f"llama-server at {self.url}: {chunk['error']}")
                tokens = chunk.get("tokens") or []
                row += tokens
                probs = chunk.get("completion_probabilities") or []
                logprobs += [p.get("logprob", 0.0) for p in probs][:len(tokens)]
                logprobs += [0.0] * (len(row) - len(logprobs))  # a chunk without probabilities
                if chunk.get("stop"):
                    if chunk.get("stop_type") == "eos" and not (row and row[-1] in self.eos_ids):
                        row.append(self.eos_ids[0] if self.eos_ids else 0)
                        logprobs.append(0.0)
                    break
                if workspace is not None and tokens and holds_action(
                        self.tokenizer.decode(row, skip_special_tokens=True), workspace):
                    break  # closing the connection cancels the rest on the server
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise PolicyError(f"llama-server at {self.url}: {type(e).__name__}: {e}") from e
        finally:
            conn.close()
        return make_reply(self.tokenizer, self.eos_ids, self.strip, row, logprobs, len(prompt),
                          time.perf_counter() - start)


def _events(response):
    """The JSON objects of a server-sent event stream (``data: {...}`` lines)."""
    for line in response:
        line = line.strip()
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data and data != b"[DONE]":
                yield json.loads(data)
        elif line.startswith(b"{"):  # an error answered as plain JSON
            yield json.loads(line)


__all__ = ["DIRECT", "QUANTIZED", "LlamaCpp", "LlamaCppConfig", "LlamaCppPolicy", "LlamaServer", "converted_gguf",
           "find_llama_cpp", "gguf_dir", "llamacpp_config"]
