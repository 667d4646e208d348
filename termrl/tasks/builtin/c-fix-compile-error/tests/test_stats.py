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


@pytest.fixture(scope="module")
def pattern_binary(tmp_path_factory):
    """The same sources built so that every uninitialised local holds a non-zero pattern
    (GCC >= 12): a program that forgets to initialise its state no longer passes by luck
    of zeroed stack pages."""
    d = tmp_path_factory.mktemp("pattern")
    copy_ws(d)
    # -Werror is already enforced by the other builds
    flags = [f for f in FLAGS if f != "-Werror"] + ["-ftrivial-auto-var-init=pattern"]
    probe = d / "probe.c"
    probe.write_text("int main(void){return 0;}\n")
    if subprocess.run(["gcc", *flags, str(probe), "-o", str(d / "probe")],
                      capture_output=True, timeout=60).returncode != 0:
        pytest.skip("gcc without -ftrivial-auto-var-init")
    r = subprocess.run(["gcc", *flags, "-o", "stats", *SOURCES, "-lm"], cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return d / "stats"


@pytest.mark.core
def test_state_is_initialised(pattern_binary):
    assert run(pattern_binary, "") == ["count 0", "skipped 0"]
    assert run(pattern_binary, "a b\n") == ["count 0", "skipped 2"]
    check(run(pattern_binary, "2 4 4 4 5 5 7 9 x\n"), expected([2.0, 4, 4, 4, 5, 5, 7, 9], 1))
    check(run(pattern_binary, "-3.75"), expected([-3.75], 0))
    rng = random.Random(5150)
    nums = [round(rng.uniform(-1e3, 1e3), 3) for _ in range(50)]
    check(run(pattern_binary, " ".join(f"{x:.3f}" for x in nums)), expected(nums, 0))


@pytest.mark.boundary
def test_small_variance(binary):
    for nums in ([1.0, 1.2], [10.0, 10.1, 10.2, 10.3], [5.0, 5.0, 5.0, 5.5], [-0.25, -0.3]):
        out = run(binary, " ".join(map(str, nums)) + "\n")
        check(out, expected(nums, 0))
        assert out[4] != "stddev 0.0000", out


@pytest.mark.boundary
def test_equal_values_have_zero_stddev(binary):
    # sum(x*x)/n - mean*mean rounds to a tiny negative number for these inputs
    for x, n in ((0.1, 3), (0.7, 7), (3.3, 7), (0.001, 10)):
        out = run(binary, " ".join([str(x)] * n) + "\n")
        check(out, expected([x] * n, 0))
        assert out[4] == "stddev 0.0000", out
