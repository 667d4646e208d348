import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()
SOURCES = ["main.c", "stats.c", "parse.c"]
FLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"]


def copy_ws(dst):
    for name in SOURCES + ["stats.h", "parse.h", "Makefile"]:
        shutil.copy(WS / name, dst / name)


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    d = tmp_path_factory.mktemp("gccbuild")
    copy_ws(d)
    r = subprocess.run(["gcc", *FLAGS, "-o", "stats", *SOURCES, "-lm"], cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return d / "stats"


def run(binary, text):
    r = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def expected(nums, skipped):
    if not nums:
        return [("count", 0), ("skipped", skipped)]
    n = len(nums)
    s = sum(nums)
    sq = 0.0
    for x in nums:
        sq += x * x
    mean = s / n
    var = max(sq / n - mean * mean, 0.0)
    return [("count", n), ("min", min(nums)), ("max", max(nums)), ("mean", mean),
            ("stddev", math.sqrt(var)), ("skipped", skipped)]


def check(lines, exp):
    assert len(lines) == len(exp), lines
    for line, (key, val) in zip(lines, exp):
        parts = line.split()
        assert len(parts) == 2 and parts[0] == key, line
        if key in ("count", "skipped"):
            assert parts[1] == str(val), line
        else:
            assert "." in parts[1] and len(parts[1].split(".")[1]) == 4, line
            assert abs(float(parts[1]) - val) <= 1e-3 + 1e-9 * abs(val), (line, val)


@pytest.mark.core
def test_make_builds_with_original_flags(tmp_path):
    copy_ws(tmp_path)
    mk = (tmp_path / "Makefile").read_text()
    for flag in FLAGS + ["-lm"]:
        assert flag in mk, f"flag {flag} removed from Makefile"
    r = subprocess.run(["make"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    out = run(tmp_path / "stats", "2 4 4 4 5 5 7 9\n")
    check(out, expected([2.0, 4, 4, 4, 5, 5, 7, 9], 0))


@pytest.mark.core
def test_random_numbers_double_precision(binary):
    rng = random.Random(90210)
    nums = [round(rng.uniform(-2e6, 2e6), 2) for _ in range(400)]
    text = "\n".join(" ".join(f"{x:.2f}" for x in nums[i:i + 7]) for i in range(0, len(nums), 7)) + "\n"
    check(run(binary, text), expected(nums, 0))


@pytest.mark.core
def test_skipped_tokens_and_formats(binary):
    toks = ["1e3", "abc", "-7.25", "12x", "+3", "--4", "0.5", "x1", ".25", "1.5.2", "nan", "inf"]
    nums = [1000.0, -7.25, 3.0, 0.5, 0.25]
    check(run(binary, "\t".join(toks) + "\n"), expected(nums, 7))


@pytest.mark.boundary
def test_empty_and_only_junk(binary):
    assert run(binary, "") == ["count 0", "skipped 0"]
    assert run(binary, "  foo\n\n bar  \n") == ["count 0", "skipped 2"]


@pytest.mark.boundary
def test_single_value(binary):
    check(run(binary, "-3.75"), expected([-3.75], 0))
