import os
import random
import shutil
import stat
import string
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()


def fresh(dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(WS / "Makefile", dst / "Makefile")
    shutil.copytree(WS / "src", dst / "src")
    shutil.copytree(WS / "tests", dst / "tests")
    return dst


def make(d, *args, check=True):
    r = subprocess.run(["make", *args], cwd=d, capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, f"make {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"
    return r


def caesar_py(text, shift):
    s = shift % 26
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 + s) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 + s) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)


def run_caesar(binary, shift, text):
    r = subprocess.run([str(binary), str(shift)], input=text, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = fresh(tmp_path_factory.mktemp("w") / "proj")
    make(d, "-j8")
    return d


def set_times(d):
    """Give sources, objects and the binary well separated, increasing mtimes."""
    base = 1_600_000_000
    for p in (d / "src").iterdir():
        os.utime(p, (base, base))
    for p in (d / "build").rglob("*"):
        os.utime(p, (base + 100, base + 100))
    os.utime(d / "bin" / "caesar", (base + 200, base + 200))
    return base


def rebuilt_objects(d, base):
    return sorted(p.name for p in (d / "build").glob("*.o") if p.stat().st_mtime > base + 150)


@pytest.mark.core
def test_parallel_build_from_clean_tree(built):
    for name in ("main.o", "cipher.o", "cli.o"):
        assert (built / "build" / name).is_file(), name
    rng = random.Random(17)
    text = "".join(rng.choice(string.ascii_letters + " ,.!\n0123") for _ in range(2000))
    for shift in (rng.randint(1, 25), -rng.randint(27, 400), 26 * 7):
        assert run_caesar(built / "bin" / "caesar", shift, text) == caesar_py(text, shift)
    r = subprocess.run([str(built / "bin" / "caesar"), "--version"], capture_output=True, text=True)
    assert r.stdout == "caesar 1.0.0\n"


@pytest.mark.core
def test_up_to_date_after_build(built):
    assert make(built, "-q", check=False).returncode == 0
    before = {p.name: p.stat().st_mtime_ns for p in (built / "build").glob("*.o")}
    bin_before = (built / "bin" / "caesar").stat().st_mtime_ns
    make(built)
    assert {p.name: p.stat().st_mtime_ns for p in (built / "build").glob("*.o")} == before
    assert (built / "bin" / "caesar").stat().st_mtime_ns == bin_before


@pytest.mark.core
def test_header_change_rebuilds_exact_dependents(tmp_path):
    d = fresh(tmp_path / "p")
    make(d)
    base = set_times(d)
    os.utime(d / "src" / "cipher.h", (base + 300, base + 300))
    assert make(d, "-q", check=False).returncode != 0
    make(d)
    assert rebuilt_objects(d, base) == ["cipher.o", "main.o"]
    assert (d / "bin" / "caesar").stat().st_mtime > base + 250

    base = set_times(d)
    os.utime(d / "src" / "cli.h", (base + 300, base + 300))
    make(d)
    assert rebuilt_objects(d, base) == ["cli.o", "main.o"]

    base = set_times(d)
    os.utime(d / "src" / "cipher.c", (base + 300, base + 300))
    make(d)
    assert rebuilt_objects(d, base) == ["cipher.o"]
    assert (d / "bin" / "caesar").stat().st_mtime > base + 250


@pytest.mark.core
def test_header_edit_takes_effect(tmp_path):
    d = fresh(tmp_path / "p")
    make(d)
    # change behaviour through a header: a macro defined in cipher.h used by cipher.c
    h = d / "src" / "cipher.h"
    h.write_text(h.read_text().replace("#define CIPHER_H", "#define CIPHER_H\n#define CIPHER_EXTRA 1"))
    c = d / "src" / "cipher.c"
    c.write_text(c.read_text() + "\n#ifndef CIPHER_EXTRA\n#error stale\n#endif\n")
    base = set_times(d)
    os.utime(h, (base + 300, base + 300))
    os.utime(c, (base + 300, base + 300))
    make(d)
    h.write_text(h.read_text().replace("#define CIPHER_EXTRA 1", ""))
    base = set_times(d)
    os.utime(h, (base + 300, base + 300))
    r = make(d, check=False)
    assert r.returncode != 0 and "stale" in r.stdout + r.stderr, "header change did not trigger a rebuild"


@pytest.mark.core
def test_variables_are_honoured(tmp_path):
    d = fresh(tmp_path / "p")
    log = tmp_path / "cc.log"
    cc = tmp_path / "mycc"
    cc.write_text(f'#!/bin/bash\necho "$*" >> {log}\nexec gcc "$@"\n')
    cc.chmod(0o755)
    ver = "%d.%d.%d-%s" % (random.randint(2, 9), random.randint(0, 99), random.randint(0, 99),
                           "".join(random.choice(string.ascii_lowercase) for _ in range(4)))
    make(d, f"CC={cc}", "CFLAGS=-O1 -std=c11 -DZZ_FLAG_MARK", f"VERSION={ver}")
    lines = log.read_text().splitlines()
    compiles = [l for l in lines if " -c " in f" {l} "]
    assert len(compiles) >= 3, lines
    for name in ("main.c", "cipher.c", "cli.c"):
        assert any(name in l for l in compiles), (name, compiles)
    assert all("-DZZ_FLAG_MARK" in l for l in compiles), compiles
    r = subprocess.run([str(d / "bin" / "caesar"), "--version"], capture_output=True, text=True)
    assert r.stdout == f"caesar {ver}\n"
    assert run_caesar(d / "bin" / "caesar", 13, "Uryyb") == "Hello"


@pytest.mark.core
def test_new_source_file_is_picked_up(tmp_path):
    d = fresh(tmp_path / "p")
    make(d)
    (d / "src" / "zz_extra.c").write_text("int zz_extra_marker(void) { return 42; }\n")
    make(d)
    assert (d / "build" / "zz_extra.o").is_file()
    nm = subprocess.run(["nm", str(d / "bin" / "caesar")], capture_output=True, text=True)
    assert "zz_extra_marker" in nm.stdout


@pytest.mark.core
def test_test_target(tmp_path):
    d = fresh(tmp_path / "p")
    r = make(d, "test")
    assert "all tests passed" in r.stdout
    (d / "tests" / "run.sh").write_text(f'#!/bin/bash\necho "$@" > {tmp_path}/arg\nexit 3\n')
    r = make(d, "test", check=False)
    assert r.returncode != 0
    assert (tmp_path / "arg").read_text().strip() == "bin/caesar"


@pytest.mark.core
def test_install(tmp_path):
    d = fresh(tmp_path / "p")
    stage = tmp_path / "stage"
    make(d, "install", f"DESTDIR={stage}", "PREFIX=/opt/cz")
    target = stage / "opt" / "cz" / "bin" / "caesar"
    assert target.is_file()
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert run_caesar(target, 1, "Zz") == "Aa"
    stage2 = tmp_path / "stage2"
    make(d, "install", f"DESTDIR={stage2}")
    assert (stage2 / "usr" / "local" / "bin" / "caesar").is_file()


@pytest.mark.boundary
def test_clean_and_phony(tmp_path):
    d = fresh(tmp_path / "p")
    make(d)
    # files named like the targets must not stop them from running
    for name in ("clean", "all", "test", "install"):
        (d / name).write_text("")
    make(d, "clean")
    assert not (d / "build").exists() and not (d / "bin").exists()
    make(d, "all")
    assert (d / "bin" / "caesar").is_file()
    make(d, "clean")
    make(d, "clean")
    assert not (d / "build").exists() and not (d / "bin").exists()
