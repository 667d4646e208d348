"""``termrl tokenizers report``: tokens by content class, one-token whitespace runs, episode cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from termrl.eval import tokenizers as tk
from termrl.policies.tiny import build_tokenizer


@pytest.fixture(scope="module")
def eight_spaces():
    """A byte-level BPE tokenizer trained on text without long blanks, plus a run of 8 spaces as one token."""
    return build_tokenizer(["alpha beta gamma", "x = 1", "print(x)"], 300, base_corpus=False,
                           extra_tokens=[" " * 8])


def test_the_longest_one_token_run_is_found_whatever_its_length(eight_spaces):
    assert tk.longest_one_token_run(eight_spaces, " ") == 8
    assert tk.count(eight_spaces, " " * 9) == 2
    assert tk.longest_one_token_run(eight_spaces, "\t") == 1  # byte-level: every byte alone is a token


def test_measure_divides_tokens_by_utf8_bytes_and_by_characters(eight_spaces):
    texts = {"english": "alpha beta gamma", "chinese": "计算平均值并打印结果"}
    chats = [[{"role": "system", "content": "s"}, {"role": "user", "content": "alpha"},
              {"role": "assistant", "content": "print(x)"}]]
    report = tk.measure(eight_spaces, "tiny", texts, chats)
    for cls, text in texts.items():
        row = report.classes[cls]
        assert row["tokens"] == len(eight_spaces.encode(text, add_special_tokens=False))
        assert row["bytes"] == len(text.encode()) and row["chars"] == len(text)
        assert row["tokens_per_byte"] == round(row["tokens"] / row["bytes"], 4)
    # Chinese: 3 UTF-8 bytes a character, and this tokenizer never saw it, so a token per byte
    assert report.classes["chinese"]["tokens_per_byte"] == 1.0 and report.classes["chinese"]["tokens_per_char"] == 3.0
    # with a chat template the episode costs its contents and the template's role markers
    assert report.episodes == 1 and report.episode_tokens_mean > sum(tk.count(eight_spaces, m["content"])
                                                                     for m in chats[0])


def test_the_corpus_has_every_class_and_the_episodes_split_into_replies_and_observations():
    texts = tk.corpus_texts()
    assert set(texts) == set(tk.CLASSES) and all(len(t.encode()) > 2000 for t in texts.values())
    assert sum("\u4e00" <= c <= "\u9fff" for c in texts["chinese"]) > 500
    assert sum("\u4e00" <= c <= "\u9fff" for c in texts["mixed"]) > 100 and "def " in texts["mixed"]
    chats = tk.shipped_episodes()
    assert len(chats) == 24 and all(c[0]["role"] == "system" for c in chats)
    parts = tk.episode_classes(chats)
    assert parts["replies"] and parts["observations"]
    assert chats[0][2]["content"] in parts["replies"] and chats[0][0]["content"] not in parts["observations"]
    assert (tk.CORPUS / "LICENSE.txt").read_text().count("Apache") >= 1


def run(*args):
    return subprocess.run([sys.executable, "-m", "termrl", "tokenizers", "report", *args],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_report_on_the_quickstart_tokenizer_and_a_tokenizer_json(tmp_path, eight_spaces):
    eight_spaces.save_pretrained(tmp_path / "tiny")
    res = run("--tokenizer", "quickstart", "--tokenizer", str(tmp_path / "tiny" / "tokenizer.json"), "--json")
    assert res.returncode == 0, res.stderr[-2000:]
    quick, tiny = json.loads(res.stdout)
    assert set(quick["classes"]) == {*tk.CLASSES, "tasks", "replies", "observations"}
    # the quickstart's tokenizer was trained on one family's text: other families' tasks cost it more
    assert quick["classes"]["chinese"]["tokens_per_char"] > quick["classes"]["english"]["tokens_per_char"]
    assert tiny["longest_one_token_run"]["spaces"] == 8 and quick["episodes"] == tiny["episodes"] == 24
    assert quick["episode_tokens_mean"] > 100
    table = run("--tokenizer", "quickstart")
    assert table.returncode == 0 and "tokens per episode" in table.stdout


def test_a_missing_tokenizer_or_store_is_a_clear_error(tmp_path):
    res = run("--tokenizer", str(tmp_path / "nope"))
    said = " ".join(res.stderr.split())  # rich folds long lines
    assert res.returncode == 2 and "no such directory or tokenizer.json" in said and "Traceback" not in said
    res = run("--trajectories", str(tmp_path / "nope"))
    said = " ".join(res.stderr.split())
    assert res.returncode == 2 and "--trajectories" in said and "no such directory" in said and "Traceback" not in said
