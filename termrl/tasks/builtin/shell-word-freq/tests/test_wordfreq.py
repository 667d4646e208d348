import hashlib
import random
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "wordfreq.sh"
BOOK_SHA256 = "0dd289bea8ec5045847c4801aca5038e7f2ee7306f7f49fc48b5c154a71960f8"


def run(n, data):
    if isinstance(data, str):
        data = data.encode()
    r = subprocess.run([str(SCRIPT), str(n)], input=data, capture_output=True, timeout=30)
    return r.returncode, r.stdout.decode()


def expected(data, n):
    if isinstance(data, str):
        data = data.encode()
    words = [w.decode().lower() for w in re.findall(rb"[A-Za-z]+", data)]
    items = sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"{c} {w}" for w, c in items[:n]]


@pytest.mark.core
def test_workspace_top_words():
    book = (Path.cwd() / "book.txt").read_bytes()
    assert hashlib.sha256(book).hexdigest() == BOOK_SHA256, "book.txt was modified"
    got = (Path.cwd() / "top_words.txt").read_text().splitlines()
    assert got == expected(book, 15)
    # The saved file must be what `./wordfreq.sh 15 < book.txt` prints, not a copy made by hand.
    rc, out = run(15, book)
    assert rc == 0
    assert out.splitlines() == got, "top_words.txt differs from ./wordfreq.sh 15 < book.txt"
    assert out.splitlines() == expected(book, 15)


@pytest.mark.core
def test_unseen_random_text():
    rng = random.Random(9001)
    vocab = ["Alpha", "beta", "GAMMA", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa",
             "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"]
    seps = [" ", "  ", "\n", ", ", ". ", "--", "'", "_", "3", "\t", "; ", "\u00e9", "!\n\n"]
    parts = []
    for _ in range(20000):
        w = rng.choice(vocab[: rng.randint(1, len(vocab))])
        if rng.random() < 0.3:
            w = w.upper() if rng.random() < 0.5 else w.capitalize()
        parts.append(w + rng.choice(seps))
    text = "".join(parts)
    for n in (1, 7, 100):
        rc, out = run(n, text)
        assert rc == 0
        assert out.splitlines() == expected(text, n)


@pytest.mark.core
def test_ties_and_case():
    text = "b A a B c C d\n"
    assert run(3, text)[1].splitlines() == ["2 a", "2 b", "2 c"]
    assert run(10, text)[1].splitlines() == ["2 a", "2 b", "2 c", "1 d"]


@pytest.mark.boundary
def test_separators_digits_apostrophes_unicode():
    text = "don't stop_me now2night x-ray Zo\u00eb caf\u00e9 CAF\u00c9 na\u00efve 42 "
    rc, out = run(20, text)
    assert rc == 0
    assert out.splitlines() == expected(text, 20)
    assert "2 caf" in out.splitlines()


@pytest.mark.boundary
def test_empty_and_zero():
    assert run(5, "")[1] == ""
    assert run(5, "123 -- 456 ...\n")[1] == ""
    assert run(0, "some words here\n")[1] == ""
