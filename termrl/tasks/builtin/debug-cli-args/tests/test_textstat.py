import os
import random
import string
import subprocess
import sys
from collections import Counter

import pytest

WORKDIR = os.getcwd()


def run_tool(args, cwd, stdin=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = WORKDIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run([sys.executable, "-m", "textstat"] + args, cwd=cwd, input=stdin,
                          capture_output=True, text=True, encoding="utf-8", timeout=30, env=env)


WORDS = ["apple", "Apple", "pear", "kiwi", "fig", "plum", "Fig", "grape", "\u00e9clair", "na\u00efve",
         "don't", "x", "42", "co-op", "\u65e5\u672c"]
PUNCT = ["", "", "", ",", ".", "!", "?!", "(", ")", '"', "...", "--"]
SPACES = [" ", " ", " ", "  ", "\t", " \t ", "\n", "\n\n", "   \n  "]


def random_text(rng):
    parts = []
    for _ in range(rng.randint(0, 60)):
        w = rng.choice(WORDS)
        parts.append(rng.choice(PUNCT) + w + rng.choice(PUNCT))
        parts.append(rng.choice(SPACES))
    if rng.random() < 0.2:
        parts.insert(0, rng.choice(SPACES))
    if rng.random() < 0.3:
        parts.append(rng.choice(["-", "...", " ; "]))
    if parts and rng.random() < 0.5:
        parts[-1] = "\n"
    return "".join(parts)


def stats(text):
    return {"lines": text.count("\n"), "words": len(text.split()), "chars": len(text)}


def ranking(texts, top, ignore_case):
    c = Counter()
    for t in texts:
        for tok in t.split():
            w = tok.strip(string.punctuation)
            if w:
                c[w.lower() if ignore_case else w] += 1
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def expected_output(names, texts, fields, top=0, ignore_case=False):
    fields = fields or ["lines", "words", "chars"]
    lines, tot = [], Counter()
    for name, text in zip(names, texts):
        s = stats(text)
        tot.update(s)
        lines.append(" ".join(str(s[f]) for f in fields) + " " + name)
    if len(names) > 1:
        lines.append(" ".join(str(tot[f]) for f in fields) + " total")
    for w, n in ranking(texts, top, ignore_case):
        lines.append(f"{n} {w}")
    return "".join(l + "\n" for l in lines)


FLAGSETS = [([], []), (["-l"], ["lines"]), (["-w"], ["words"]), (["-c"], ["chars"]),
            (["-lw"], ["lines", "words"]), (["-c", "-l"], ["lines", "chars"]),
            (["--words", "--chars"], ["words", "chars"]), (["-wcl"], ["lines", "words", "chars"])]


def write_files(tmp_path, rng, n):
    names, texts = [], []
    for i in range(n):
        name = rng.choice(["notes", "a", "data file", "x.txt", "sub/inner"]) + f"{i}.txt"
        text = random_text(rng)
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
        names.append(name)
        texts.append(text)
    return names, texts


@pytest.mark.core
def test_single_file_all_flag_combinations(tmp_path):
    rng = random.Random(11)
    names, texts = write_files(tmp_path, rng, 1)
    for flags, fields in FLAGSETS:
        r = run_tool(flags + names, tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == expected_output(names, texts, fields), (flags, texts[0])


@pytest.mark.core
def test_multiple_files_with_total(tmp_path):
    rng = random.Random(12)
    for n in (2, 3, 5):
        names, texts = write_files(tmp_path / f"set{n}", rng, n)
        flags, fields = rng.choice(FLAGSETS)
        r = run_tool(flags + names, tmp_path / f"set{n}")
        assert r.returncode == 0, r.stderr
        assert r.stdout == expected_output(names, texts, fields), (flags, names)


@pytest.mark.core
def test_top_words_ranking(tmp_path):
    rng = random.Random(13)
    for k in range(6):
        d = tmp_path / f"t{k}"
        names, texts = write_files(d, rng, rng.randint(1, 3))
        top = rng.randint(1, 12)
        ic = k % 2 == 1
        args = ["--top", str(top)] + (["-i"] if ic else []) + ["-w"] + names
        r = run_tool(args, d)
        assert r.returncode == 0, r.stderr
        assert r.stdout == expected_output(names, texts, ["words"], top, ic), args


@pytest.mark.boundary
def test_stdin_and_dash(tmp_path):
    rng = random.Random(14)
    text = random_text(rng) + "tail without newline"
    r = run_tool([], tmp_path, stdin=text)
    assert r.returncode == 0 and r.stdout == expected_output(["-"], [text], []), r.stderr
    names, texts = write_files(tmp_path, rng, 1)
    r = run_tool(["-l", names[0], "-", "--top=2"], tmp_path, stdin=text)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected_output([names[0], "-"], [texts[0], text], ["lines"], 2)


@pytest.mark.boundary
def test_empty_and_whitespace_only_files(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text(" \n\t\n   \n\n")
    r = run_tool(["empty.txt", "blank.txt", "--top", "3"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "0 0 0 empty.txt\n4 0 9 blank.txt\n4 0 9 total\n"


@pytest.mark.boundary
def test_missing_file_is_reported_and_skipped(tmp_path):
    rng = random.Random(15)
    names, texts = write_files(tmp_path, rng, 2)
    r = run_tool([names[0], "no-such-file.txt", names[1], "--top", "1"], tmp_path)
    assert r.returncode == 1
    assert "textstat: no-such-file.txt: No such file or directory" in r.stderr
    assert "Traceback" not in r.stderr
    exp = expected_output(names, texts, [], 1)
    # the total line is still printed because three FILEs were given
    assert r.stdout == exp, r.stdout


@pytest.mark.boundary
def test_invalid_top_values_are_usage_errors(tmp_path):
    (tmp_path / "f.txt").write_text("a b c\n")
    for bad in ["abc", "-1", "2.5", ""]:
        r = run_tool(["--top", bad, "f.txt"], tmp_path)
        assert r.returncode == 2, (bad, r.returncode, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.strip(), bad
    r = run_tool(["--top", "0", "f.txt"], tmp_path)
    assert r.returncode == 0 and r.stdout == "1 3 6 f.txt\n"
