import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()


@pytest.fixture(scope="module")
def mywc(tmp_path_factory):
    d = tmp_path_factory.mktemp("build")
    shutil.copy(WS / "mywc.c", d / "mywc.c")
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-O2", "mywc.c", "-o", "mywc"], cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return d / "mywc"


def counts(data: bytes):
    return [data.count(b"\n"), len(re.findall(rb"[^ \t\n\v\f\r]+", data)), len(data)]


def line(vals, sel="lwc", name=None):
    picked = [str(v) for v, k in zip(vals, "lwc") if k in sel]
    return " ".join(picked) + (f" {name}" if name is not None else "")


def run(binary, args, cwd, stdin=b""):
    return subprocess.run([str(binary), *args], cwd=cwd, input=stdin, capture_output=True, timeout=20)


def rand_bytes(rng, n):
    alphabet = b"ab xyz\t\n\n\r\x0b\x0c\x00\xff\xc3\xa9  \n"
    return bytes(rng.choice(alphabet) for _ in range(n))


@pytest.mark.core
def test_make_builds(tmp_path):
    shutil.copy(WS / "mywc.c", tmp_path)
    shutil.copy(WS / "Makefile", tmp_path)
    r = subprocess.run(["make"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    data = b"one two\nthree\n"
    r = run(tmp_path / "mywc", [], tmp_path, data)
    assert r.stdout.decode() == "2 3 14\n"


@pytest.mark.core
def test_multiple_files_with_total(mywc, tmp_path):
    rng = random.Random(11)
    names = ["a.txt", "b.bin", "c d.txt"]
    datas = [rand_bytes(rng, rng.randint(50, 3000)) for _ in names]
    for n, d in zip(names, datas):
        (tmp_path / n).write_bytes(d)
    r = run(mywc, names, tmp_path)
    assert r.returncode == 0
    tot = [sum(col) for col in zip(*map(counts, datas))]
    exp = [line(counts(d), name=n) for n, d in zip(names, datas)] + [line(tot, name="total")]
    assert r.stdout.decode().splitlines() == exp


@pytest.mark.core
def test_option_selection(mywc, tmp_path):
    rng = random.Random(12)
    data = rand_bytes(rng, 5000)
    (tmp_path / "f").write_bytes(data)
    c = counts(data)
    for opts, sel in ([["-l"], "l"], [["-w"], "w"], [["-c"], "c"], [["-c", "-l"], "lc"],
                      [["-w", "-c", "-l"], "lwc"], [["-w", "-w"], "w"]):
        r = run(mywc, opts + ["f"], tmp_path)
        assert r.returncode == 0
        assert r.stdout.decode() == line(c, sel, "f") + "\n", opts


@pytest.mark.core
def test_stdin(mywc, tmp_path):
    rng = random.Random(13)
    data = rand_bytes(rng, 777)
    r = run(mywc, [], tmp_path, data)
    assert r.stdout.decode() == line(counts(data)) + "\n"
    r = run(mywc, ["-w"], tmp_path, data)
    assert r.stdout.decode() == f"{counts(data)[1]}\n"


@pytest.mark.core
def test_large_file(mywc, tmp_path):
    rng = random.Random(14)
    chunk = rand_bytes(rng, 4096) + b"word"
    data = chunk * 5000
    (tmp_path / "big").write_bytes(data)
    r = run(mywc, ["big"], tmp_path)
    assert r.stdout.decode() == line(counts(data), name="big") + "\n"


@pytest.mark.boundary
def test_empty_and_no_trailing_newline(mywc, tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "tail").write_bytes(b"\x00\x00 last")
    (tmp_path / "ws").write_bytes(b" \t\r\n\x0b\x0c ")
    r = run(mywc, ["empty", "tail", "ws"], tmp_path)
    assert r.stdout.decode().splitlines() == ["0 0 0 empty", "0 2 7 tail", "1 0 7 ws", "1 2 14 total"]
    r = run(mywc, [], tmp_path, b"")
    assert r.stdout.decode() == "0 0 0\n"


@pytest.mark.boundary
def test_missing_file(mywc, tmp_path):
    (tmp_path / "ok1").write_bytes(b"x y\n")
    (tmp_path / "ok2").write_bytes(b"z\n\n")
    r = run(mywc, ["-l", "-c", "ok1", "nope", "ok2"], tmp_path)
    assert r.returncode == 1
    assert r.stdout.decode().splitlines() == ["1 4 ok1", "2 3 ok2", "3 7 total"]
    assert "mywc: nope: cannot open" in r.stderr.decode()
    r = run(mywc, ["nope"], tmp_path)
    assert r.returncode == 1 and r.stdout == b""


@pytest.mark.boundary
def test_single_file_has_no_total_and_bad_option(mywc, tmp_path):
    (tmp_path / "one").write_bytes(b"hello\n")
    r = run(mywc, ["one"], tmp_path)
    assert r.stdout.decode() == "1 1 6 one\n"
    for bad in (["-x", "one"], ["-lw", "one"], ["-l", "--", "one"]):
        r = run(mywc, bad, tmp_path)
        assert r.returncode == 2 and r.stdout == b"", bad
