"""Counting helpers."""
import string
from collections import Counter


def count_text(text):
    """Return {"lines": ..., "words": ..., "chars": ...} for text."""
    return {
        "lines": text.count("\n"),
        "words": len(text.split(" ")),
        "chars": len(text),
    }


def ranking_words(text, ignore_case=False):
    """Whitespace-separated tokens stripped of ASCII punctuation; empty ones skipped."""
    words = []
    for token in text.split():
        word = token.strip(string.punctuation)
        if word:
            words.append(word.lower() if ignore_case else word)
    return words


def top_words(counts, n):
    """The n most common (word, count) pairs: count descending, then word ascending."""
    ranked = sorted(counts.items(), key=lambda item: item[1], reverse=True)
    return ranked[:n]


def new_counter():
    return Counter()
