import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()
MAX = 2 ** 64 - 1
ENV = dict(os.environ, UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    d = tmp_path_factory.mktemp("build")
    shutil.copy(WS / "numtool.c", d / "numtool.c")
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-O2", "numtool.c", "-o", "plain"],
                       cwd=d, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    bins = [d / "plain"]
    (d / "probe.c").write_text("int main(void){return 0;}\n")
    probe = subprocess.run(["gcc", "-fsanitize=undefined", "probe.c", "-o", "probe"], cwd=d,
                           capture_output=True, timeout=60).returncode == 0 and \
        subprocess.run([str(d / "probe")], capture_output=True, timeout=10, env=ENV).returncode == 0
    if probe:
        r = subprocess.run(["gcc", "-std=c11", "-O1", "-fsanitize=undefined", "-fno-sanitize-recover=all",
                            "numtool.c", "-o", "ubsan"], cwd=d, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        bins.append(d / "ubsan")
    return bins


def run(binary, args, stdin=""):
    # a fixed program answers in milliseconds, sanitized or not; an unfixed one loops until the
    # timeout, so it is short: every episode that leaves the bug in would burn it per test
    return subprocess.run([str(binary), *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=2, env=ENV)


def out_of(binaries, args, stdin=""):
    outs = set()
    for b in binaries:
        r = run(b, args, stdin)
        assert r.returncode == 0, (b.name, args, r.stderr[-1500:])
        assert r.stderr == "", (b.name, r.stderr[-1500:])
        outs.add(r.stdout)
    assert len(outs) == 1
    return outs.pop()


def exp_binom(n, k):
    if k > n:
        return "0"
    k = min(k, n - k)
    if k > 70:  # C(n, k) >= C(140, 70) > 2^64 whenever n >= 2k > 140
        return "overflow"
    c = math.comb(n, k)
    return str(c) if c <= MAX else "overflow"


@pytest.mark.core
def test_isqrt_full_range(binaries):
    rng = random.Random(2718)
    values = [rng.randrange(0, MAX + 1) for _ in range(20)] + [rng.randrange(0, 10 ** 6) for _ in range(5)]
    r32 = rng.randrange(2 ** 31, 2 ** 32)
    values += [r32 * r32, r32 * r32 - 1, (2 ** 32 - 1) ** 2, (2 ** 32 - 1) ** 2 - 1, 2 ** 63, 2 ** 62 + 12345]
    for v in values:
        assert out_of(binaries, ["isqrt", v]) == f"{math.isqrt(v)}\n", v


@pytest.mark.boundary
def test_isqrt_extremes(binaries):
    for v in (0, 1, 2, 3, 4, MAX, MAX - 1, 2 ** 64 - 2 ** 33 + 1, 2 ** 64 - 2 ** 33):
        assert out_of(binaries, ["isqrt", v]) == f"{math.isqrt(v)}\n", v


@pytest.mark.core
def test_binom_values(binaries):
    rng = random.Random(1618)
    cases = [(rng.randint(0, 70), rng.randint(0, 40)) for _ in range(25)]
    cases += [(67, 33), (68, 34), (66, 33), (62, 31), (1000, 7), (4000000, 3), (2 ** 32, 2), (2 ** 33, 2)]
    cases += [(rng.randrange(2 ** 40, 2 ** 64), 1) for _ in range(3)]
    cases += [(n, n - 1) for n in (MAX, 2 ** 63 + 5)]
    for n, k in cases:
        assert out_of(binaries, ["binom", n, k]) == exp_binom(n, k) + "\n", (n, k)


@pytest.mark.boundary
def test_binom_edges(binaries):
    cases = [(0, 0), (5, 6), (MAX, 0), (MAX, MAX), (MAX, 1), (MAX, 2), (MAX, MAX - 2), (MAX, 2 ** 63),
             (2 ** 64 - 2, 2 ** 62), (6074001000, 2), (6074001001, 2), (3, MAX)]
    for n, k in cases:
        assert out_of(binaries, ["binom", n, k]) == exp_binom(n, k) + "\n", (n, k)


def floor_mean(xs):
    return sum(xs) // len(xs)


@pytest.mark.core
def test_mean_large_values(binaries):
    rng = random.Random(5772)
    lo, hi = -2 ** 63, 2 ** 63 - 1
    xs = [rng.choice([hi, hi - rng.randrange(1000), rng.randrange(lo, hi)]) for _ in range(3000)]
    stdin = " ".join(map(str, xs)) + "\n"
    assert out_of(binaries, ["mean"], stdin) == f"{floor_mean(xs)}\n"
    neg = [rng.choice([lo, lo + rng.randrange(1000)]) for _ in range(2001)] + [3]
    assert out_of(binaries, ["mean"], "\n".join(map(str, neg))) == f"{floor_mean(neg)}\n"


@pytest.mark.core
def test_mean_many_values(binaries):
    rng = random.Random(99)
    xs = [rng.randrange(-2 ** 63, 2 ** 63) for _ in range(300000)]
    stdin = "\n".join(map(str, xs)) + "\n"
    assert out_of(binaries, ["mean"], stdin) == f"{floor_mean(xs)}\n"


@pytest.mark.boundary
def test_mean_rounding_and_empty(binaries):
    for xs in ([-7, 2], [-1, -2], [7, 2], [-3], [5, -5, 1], [-2 ** 63], [2 ** 63 - 1, 2 ** 63 - 2]):
        assert out_of(binaries, ["mean"], "\t".join(map(str, xs)) + "\n") == f"{floor_mean(xs)}\n", xs
    assert out_of(binaries, ["mean"], "") == "empty\n"
    assert out_of(binaries, ["mean"], " \n\n ") == "empty\n"


@pytest.mark.boundary
def test_invalid_arguments(binaries):
    bad = [["isqrt", "-5"], ["isqrt", "+5"], ["isqrt", "12x"], ["isqrt", ""], ["isqrt", str(2 ** 64)],
           ["isqrt", "99999999999999999999999"], ["binom", "5", "-1"], ["binom", "5"], ["frob", "1"],
           ["isqrt", " 7"]]
    for b in binaries:
        for args in bad:
            r = run(b, args)
            assert r.returncode == 2, (args, r.returncode, r.stdout)
            assert r.stdout == "" and r.stderr.strip() != "", args
