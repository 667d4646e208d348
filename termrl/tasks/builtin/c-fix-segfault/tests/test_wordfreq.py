import os
import random
import re
import shutil
import string
import subprocess
from collections import Counter
from pathlib import Path

import pytest

WS = Path.cwd()
SAN_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")


def compile_(tmp, extra):
    shutil.copy(WS / "wordfreq.c", tmp / "wordfreq.c")
    out = tmp / "wordfreq"
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-O1", "-g", *extra, "wordfreq.c", "-o", str(out)],
                       cwd=tmp, capture_output=True, text=True, timeout=60)
    return r, out


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    d = tmp_path_factory.mktemp("plain")
    r, out = compile_(d, [])
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def binaries(tmp_path_factory, plain):
    """The plain build plus, where the toolchain supports it here, a sanitizer build."""
    d = tmp_path_factory.mktemp("san")
    probe = d / "probe.c"
    probe.write_text("int main(void){return 0;}\n")
    ok = subprocess.run(["gcc", "-fsanitize=address,undefined", str(probe), "-o", str(d / "probe")],
                        capture_output=True, timeout=60).returncode == 0 and \
        subprocess.run([str(d / "probe")], capture_output=True, env=SAN_ENV, timeout=10).returncode == 0
    bins = [plain]
    if ok:
        r, out = compile_(d, ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
        assert r.returncode == 0, r.stderr
        bins.append(out)
    return bins


def expected(data: bytes, n=10):
    words = [w.lower().decode() for w in re.findall(rb"[A-Za-z]+", data)]
    items = sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))
    return [f"{c} {w}" for w, c in items[:n]]


def run(binary, *args):
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, env=SAN_ENV, timeout=20)


def check(binaries, path, n=None):
    data = path.read_bytes()
    for b in binaries:
        r = run(b, path) if n is None else run(b, path, n)
        assert r.returncode == 0, (b, r.stderr.decode(errors="replace")[-2000:])
        assert r.stdout.decode().splitlines() == expected(data, 10 if n is None else n), b


@pytest.mark.core
def test_random_text(binaries, tmp_path):
    rng = random.Random(31337)
    vocab = ["".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(1, 9))) for _ in range(300)]
    seps = [" ", "\n", ", ", ". ", "--", "'", "3", "\t", "\xe9", "_"]
    text = "".join(rng.choice(vocab[: rng.randint(5, 300)]) + rng.choice(seps) for _ in range(20000))
    p = tmp_path / "t.txt"
    p.write_bytes(text.encode("utf-8"))
    check(binaries, p)
    check(binaries, p, 37)


@pytest.mark.core
def test_long_words(binaries, tmp_path):
    rng = random.Random(7)
    long1 = "".join(rng.choice(string.ascii_letters) for _ in range(5000))
    long2 = "Q" * 300 + "z" * 90
    text = f"{long1} alpha {long2.lower()}\n{long1.upper()} beta\n{long2} alpha {long1}"
    p = tmp_path / "long.txt"
    p.write_text(text)
    check(binaries, p, 5)


@pytest.mark.core
def test_missing_file(binaries, tmp_path):
    missing = tmp_path / "no_such_dir" / "nothing.txt"
    for b in binaries:
        r = run(b, missing)
        assert r.returncode == 1
        assert f"wordfreq: cannot open {missing}" in r.stderr.decode()
        assert r.stdout == b""


@pytest.mark.boundary
def test_n_larger_than_vocabulary_and_last_word(binaries, tmp_path):
    p = tmp_path / "few.txt"
    p.write_bytes(b"Beta alpha\x00gamma\xffBETA 42alpha9ALPHA")  # no trailing separator
    check(binaries, p, 1000)
    check(binaries, p)
    check(binaries, p, 1)


@pytest.mark.boundary
def test_no_words(binaries, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    digits = tmp_path / "digits.txt"
    digits.write_bytes(b"123 456\n!!! \xc3\xa9\n")
    for b in binaries:
        for p in (empty, digits):
            r = run(b, p, 3)
            assert r.returncode == 0 and r.stdout == b"", r.stderr


@pytest.mark.boundary
def test_bad_n(binaries, tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("a b c\n")
    for b in binaries:
        for bad in ("0", "-3", "abc", "5x"):
            r = run(b, p, bad)
            assert r.returncode == 2, (bad, r.returncode)
            assert r.stdout == b"" and r.stderr.strip() != b""


@pytest.mark.core
def test_sanitizer_build_does_not_leak(binaries, tmp_path):
    """"Runs cleanly" under -fsanitize=address includes LeakSanitizer, which is on by default."""
    if len(binaries) < 2:
        pytest.skip("no sanitizer build here")
    rng = random.Random(99)
    words = ["".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(1, 200))) for _ in range(500)]
    p = tmp_path / "leak.txt"
    p.write_text(" ".join(rng.choice(words) for _ in range(3000)) + " " + "y" * 10000)
    env = dict(SAN_ENV, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0")
    for args in ((p,), (p, 3), (p, 100000)):
        r = subprocess.run([str(binaries[1]), *map(str, args)], capture_output=True, env=env, timeout=20)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
        assert r.stdout.decode().splitlines() == expected(p.read_bytes(), 10 if len(args) == 1 else args[1])


@pytest.mark.boundary
def test_wrong_number_of_arguments(binaries, tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("a b c\n")
    for b in binaries:
        for args in ((), (p, 3, 4), (p, 3, "extra", "more")):
            r = run(b, *args)
            assert r.returncode == 2, (args, r.returncode)
            assert r.stdout == b""
            assert f"usage: {b} FILE [N]" in r.stderr.decode(), (args, r.stderr)
        r = run(b, p, "abc")
        assert f"usage: {b} FILE [N]" in r.stderr.decode(), r.stderr


def _limit_address_space():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (60 << 20, 60 << 20))


@pytest.mark.boundary
def test_out_of_memory_exits_1(plain, tmp_path):
    """Under a 60 MiB address-space limit a 30 MiB or 34 MiB word may or may not fit, depending on
    how the program stores it: either the right answer or an error with status 1 is accepted."""
    for mib in (30, 34):
        p = tmp_path / f"w{mib}.txt"
        word = b"x" * (mib << 20)
        p.write_bytes(b"y " + word + b"\n")
        r = subprocess.run([str(plain), str(p)], capture_output=True, timeout=20,
                           preexec_fn=_limit_address_space)
        if r.returncode == 0:
            assert r.stdout == b"1 " + word + b"\n1 y\n", mib
        else:
            assert r.returncode == 1, (mib, r.returncode, r.stderr[-500:])
            assert r.stderr.strip() != b"", mib
