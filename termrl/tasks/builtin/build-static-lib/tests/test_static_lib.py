import math
import random
import shutil
import string
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()


def fresh(dst: Path) -> Path:
    dst.mkdir(parents=True)
    shutil.copy(WS / "Makefile", dst / "Makefile")
    for sub in ("lib", "include", "demo"):
        shutil.copytree(WS / sub, dst / sub)
    return dst


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("w")
    d = fresh(root / "proj")
    log = root / "cc.log"
    cc = root / "logcc"
    cc.write_text(f'#!/bin/bash\necho "$*" >> {log}\nexec gcc "$@"\n')
    cc.chmod(0o755)
    r = subprocess.run(["make", f"CC={cc}"], cwd=d, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return d, log.read_text().splitlines() if log.exists() else []


def expected_demo(lines):
    out, prev = [], 0
    for line in lines:
        s = f"words={len(line.split())} rev=[{line[::-1]}] upper=[{line.upper()}]"
        try:
            v = int(line.strip(" \t"))
            ok = line.strip(" \t") != "" and "_" not in line
        except ValueError:
            ok = False
        if ok:
            ds = sum(int(ch) for ch in str(abs(v)))
            s += f" int={v} digits={ds} gcd_prev={math.gcd(v, prev)}"
            prev = v
        out.append(s)
    return out


@pytest.mark.core
def test_archive_contents(built):
    d, _ = built
    lib = d / "build" / "libtextkit.a"
    assert lib.read_bytes()[:8] == b"!<arch>\n"
    members = subprocess.run(["ar", "t", str(lib)], capture_output=True, text=True).stdout.split()
    assert sorted(members) == ["numutil.o", "strutil.o"], members
    nm = subprocess.run(["nm", "-s", str(lib)], capture_output=True, text=True).stdout
    assert "Archive index" in nm
    for sym in ("tk_reverse", "tk_word_count", "tk_upper", "tk_parse_int", "tk_digit_sum", "tk_gcd"):
        assert f" T {sym}" in nm, sym


@pytest.mark.core
def test_demo_links_against_archive(built):
    d, log = built
    demo = d / "build" / "demo"
    assert demo.is_file()
    links = [l for l in log if "demo" in l and " -c " not in f" {l} "]
    assert links, log
    link = links[-1]
    assert "-ltextkit" in link or "libtextkit.a" in link, link
    assert "strutil" not in link and "numutil" not in link, link
    assert "libtextkit" not in subprocess.run(["ldd", str(demo)], capture_output=True, text=True).stdout


@pytest.mark.core
def test_demo_behaviour(built):
    d, _ = built
    rng = random.Random(2024)
    lines = []
    for _ in range(60):
        if rng.random() < 0.4:
            lines.append(rng.choice(["", " ", "\t"]) + str(rng.randint(-10 ** 12, 10 ** 12)) + rng.choice(["", "  "]))
        else:
            lines.append("".join(rng.choice(string.ascii_letters + "  \t,.!0123") for _ in range(rng.randint(0, 40))))
    lines += ["12 34", "-0", "+17", "99x", "   "]
    r = subprocess.run([str(d / "build" / "demo")], input="\n".join(lines) + "\n", capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 0
    assert r.stdout.splitlines() == expected_demo(lines)


DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "textkit.h"
int main(void) {
    char buf[512];
    long a, b;
    while (fgets(buf, sizeof buf, stdin)) {
        buf[strcspn(buf, "\n")] = 0;
        if (buf[0] == 'G' && sscanf(buf + 1, "%ld %ld", &a, &b) == 2) { printf("%ld\n", tk_gcd(a, b)); continue; }
        if (buf[0] == 'P') { long v = 0; int rc = tk_parse_int(buf + 1, &v); printf("%d %ld\n", rc, rc ? 0L : v); continue; }
        if (buf[0] == 'W') { printf("%zu\n", tk_word_count(buf + 1)); continue; }
    }
    return 0;
}
"""


@pytest.mark.boundary
def test_library_api_with_own_program(built, tmp_path):
    d, _ = built
    (tmp_path / "drv.c").write_text(DRIVER)
    r = subprocess.run(["gcc", "-std=c11", "-I", str(d / "include"), "drv.c", str(d / "build" / "libtextkit.a"),
                        "-o", "drv"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rng = random.Random(7)
    cmds, exp = [], []
    for _ in range(40):
        a, b = rng.randint(-10 ** 9, 10 ** 9), rng.choice([0, rng.randint(-10 ** 6, 10 ** 6)])
        cmds.append(f"G{a} {b}")
        exp.append(str(math.gcd(a, b)))
    for s, want in ((" 42 ", "0 42"), ("\t-7 \t", "0 -7"), ("", "-1 0"), ("4 2", "-1 0"),
                    ("99999999999999999999", "-1 0"), ("-9223372036854775808", "0 -9223372036854775808"),
                    ("0x10", "-1 0")):
        cmds.append("P" + s)
        exp.append(want)
    for s in ("a\rb c", "  ", "x\ty\tz "):
        cmds.append("W" + s)
        exp.append(str(len([w for w in s.replace("\r", " ").replace("\t", " ").split(" ") if w])))
    r = subprocess.run([str(tmp_path / "drv")], input="\n".join(cmds) + "\n", capture_output=True, text=True,
                       timeout=10)
    assert r.stdout.splitlines() == exp


@pytest.mark.boundary
def test_clean(tmp_path):
    d = fresh(tmp_path / "p")
    assert subprocess.run(["make"], cwd=d, capture_output=True, timeout=60).returncode == 0
    assert (d / "build" / "demo").is_file()
    assert subprocess.run(["make", "clean"], cwd=d, capture_output=True, timeout=60).returncode == 0
    assert not (d / "build").exists()
