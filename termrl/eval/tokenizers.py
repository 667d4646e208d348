"""Tokenizer efficiency: what an episode costs in tokens, by content class, for each tokenizer.

``termrl tokenizers report [--tokenizer PATH ...] [--trajectories DIR] [--json]``. For each
tokenizer (a Hugging Face tokenizer directory, a ``tokenizer.json`` file, or ``quickstart``: the
quickstart's tokenizer, built here from its family's text) and each content class of the corpus:

- ``tokens_per_byte`` and ``tokens_per_char`` (UTF-8 bytes; characters are code points, so
  Chinese text has about a third as many characters as bytes);
- the longest run of spaces, of tabs and of newlines that is one token;
- the cost of an average episode in tokens: the episodes' chats rendered with the tokenizer's
  chat template (their contents joined when it has none).

The corpus (``CORPUS``): the mixed-language text in ``termrl/eval/corpus/`` (written for the
project: code, English, Chinese, Chinese mixed with code, shell sessions, tracebacks,
whitespace and indentation, digits; Apache-2.0, see its LICENSE.txt), termrl's own tasks
(class ``tasks``: the instructions and visible files of the built-in suite and of a few seeds of
every family) and episodes: ``--trajectories DIR`` (a ``TrajectoryStore``; classes ``replies``
and ``observations``), else the real model's episodes shipped in the corpus (``episodes.jsonl``:
24 held-out episodes of Qwen2.5-Coder-0.5B-Instruct from ``results/real-cpu/heldout-before``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from termrl.policies.tiny import quickstart_tokenizer
from termrl.rollout.chat import conversation
from termrl.rollout.store import read
from termrl.tasks.families import FAMILIES, get_family
from termrl.tasks.suites import resolve

CORPUS = Path(__file__).with_name("corpus")
CLASSES = ("code", "english", "chinese", "mixed", "shell", "traceback", "whitespace", "digits")
"""The corpus files' classes, in report order (``CORPUS / f"{name}.txt"``)."""
WHITESPACE = {"spaces": " ", "tabs": "\t", "newlines": "\n"}
LONGEST_RUN = 256
"""Runs longer than this are not tried."""
QUICKSTART = "quickstart"


class TokenizerError(ValueError):
    """A tokenizer that cannot be loaded: names the path and what to give instead."""


@dataclass
class Report:
    """One tokenizer's figures (``to_dict`` is the JSON of ``termrl tokenizers report``)."""

    tokenizer: str
    vocab_size: int
    classes: dict[str, dict] = field(default_factory=dict)
    """class -> {"bytes", "chars", "tokens", "tokens_per_byte", "tokens_per_char"}."""
    longest_one_token_run: dict[str, int] = field(default_factory=dict)
    """"spaces" / "tabs" / "newlines" -> the longest run of it that is one token (0: not even one)."""
    episode_tokens_mean: float | None = None
    episodes: int = 0

    def to_dict(self) -> dict:
        return {"tokenizer": self.tokenizer, "vocab_size": self.vocab_size, "classes": self.classes,
                "longest_one_token_run": self.longest_one_token_run,
                "episode_tokens_mean": self.episode_tokens_mean, "episodes": self.episodes}


def load_tokenizer(spec: str):
    """A tokenizer from ``spec``: ``quickstart``, a tokenizer directory or a ``tokenizer.json``.
    Nothing is downloaded: a hub id is refused."""
    if spec == QUICKSTART:
        return quickstart_tokenizer()
    path = Path(spec).expanduser()
    from transformers import AutoTokenizer, PreTrainedTokenizerFast  # heavy: transformers

    if path.is_file() and path.name.endswith(".json"):
        return PreTrainedTokenizerFast(tokenizer_file=str(path))
    if not path.is_dir():
        raise TokenizerError(f"--tokenizer {spec}: no such directory or tokenizer.json file; give a local "
                             "tokenizer directory (e.g. the one ../shared/tools/qwen2.5-coder-0.5b.sh builds), "
                             f"a tokenizer.json, or {QUICKSTART!r} (nothing is downloaded)")
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as e:
        raise TokenizerError(f"--tokenizer {spec}: not a tokenizer directory ({type(e).__name__}: "
                             f"{str(e).splitlines()[0][:200]}); it needs tokenizer.json or the files of a "
                             "slow tokenizer") from None


def count(tokenizer, text: str) -> int:
    """Tokens of ``text`` alone (no special tokens added)."""
    return len(tokenizer.encode(text, add_special_tokens=False)) if text else 0


def longest_one_token_run(tokenizer, char: str, limit: int = LONGEST_RUN) -> int:
    """The longest run of ``char`` (up to ``limit``) that encodes as one token; 0 when not even one does.

    Runs are tried longest first down to where one fits: a vocabulary holds runs of many lengths,
    not only the short ones."""
    for n in range(limit, 0, -1):
        if count(tokenizer, char * n) == 1:
            return n
    return 0


def corpus_texts(corpus: Path = CORPUS) -> dict[str, str]:
    """class -> text of the shipped corpus (every ``CLASSES`` file must be there)."""
    texts = {}
    for name in CLASSES:
        path = corpus / f"{name}.txt"
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except OSError as e:
            raise FileNotFoundError(f"{path}: the tokenizer corpus is incomplete ({e.strerror}); reinstall termrl") from None
    return texts


def task_texts(families_seeds: int = 3) -> str:
    """termrl's own tasks as an agent reads them: every built-in task's and ``families_seeds``
    seeds of every family's instruction and visible files."""
    tasks = [e.task for e in resolve("builtin") if e.task is not None]
    for name in FAMILIES:
        family = get_family(name)
        tasks += [family.generate(family.train_seeds.start + i) for i in range(families_seeds)]
    parts = []
    for task in tasks:
        parts.append(task.instruction)
        for rel, file in sorted(task.workspace.items()):
            try:
                parts.append(f"{rel}\n{file.data.decode('utf-8')}")
            except UnicodeDecodeError:  # a binary file is not text a model reads
                continue
    return "\n\n".join(parts)


def episodes_from_store(directory: str | Path) -> list[list[dict]]:
    """The chats of the episodes stored in ``directory`` (a ``TrajectoryStore``)."""
    return [conversation(t) for t in read(directory) if t.prompt and t.steps]


def shipped_episodes(corpus: Path = CORPUS) -> list[list[dict]]:
    """The real model's episodes shipped with the corpus (``episodes.jsonl``: one chat per line)."""
    path = corpus / "episodes.jsonl"
    return [json.loads(line)["messages"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def episode_classes(chats: Iterable[list[dict]]) -> dict[str, str]:
    """``replies`` (the policy's turns) and ``observations`` (what it read back) of ``chats``."""
    replies, observations = [], []
    for chat in chats:
        for i, message in enumerate(chat):
            if message["role"] == "assistant":
                replies.append(message["content"])
            elif i > 1:  # after the system prompt and the instruction: what the environment answered
                observations.append(message["content"])
    return {"replies": "\n".join(replies), "observations": "\n".join(observations)}


def chat_tokens(tokenizer, chat: list[dict]) -> int:
    """Tokens of one episode's whole chat, as the model sees it."""
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(chat, tokenize=True)
        if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
            ids = ids["input_ids"]
        return len(ids)
    return sum(count(tokenizer, m["content"]) for m in chat)


def measure(tokenizer, name: str, texts: dict[str, str], chats: Sequence[list[dict]]) -> Report:
    """``tokenizer``'s figures on ``texts`` (class -> text) and the episodes ``chats``."""
    report = Report(name, len(tokenizer))
    for cls, text in texts.items():
        tokens, raw = count(tokenizer, text), text.encode("utf-8")
        report.classes[cls] = {"bytes": len(raw), "chars": len(text), "tokens": tokens,
                               "tokens_per_byte": round(tokens / len(raw), 4) if raw else None,
                               "tokens_per_char": round(tokens / len(text), 4) if text else None}
    report.longest_one_token_run = {k: longest_one_token_run(tokenizer, c) for k, c in WHITESPACE.items()}
    if chats:
        report.episodes = len(chats)
        report.episode_tokens_mean = round(sum(chat_tokens(tokenizer, c) for c in chats) / len(chats), 1)
    return report


def report(tokenizers: Sequence[str], trajectories: str | Path | None = None) -> list[Report]:
    """One ``Report`` per tokenizer spec, on the corpus, termrl's tasks and the episodes
    (``trajectories``' or the shipped ones)."""
    chats = episodes_from_store(trajectories) if trajectories else shipped_episodes()
    texts = {**corpus_texts(), "tasks": task_texts(), **episode_classes(chats)}
    return [measure(load_tokenizer(spec), spec, texts, chats) for spec in tokenizers]


__all__ = ["CLASSES", "CORPUS", "Report", "TokenizerError", "chat_tokens", "count", "load_tokenizer",
           "longest_one_token_run", "measure", "report"]
