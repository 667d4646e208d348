import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")

HEADER = r"""
#ifndef RLE_H
#define RLE_H
#include <stddef.h>
size_t rle_max_encoded(size_t n);
size_t rle_encode(const unsigned char *in, size_t n, unsigned char *out);
long rle_decode(const unsigned char *in, size_t n, unsigned char *out, size_t cap);
#endif
"""

# Reads commands from stdin:  E <hex>  |  D <cap> <hex>  |  M <n>
# (hex "-" = empty). Buffers are malloc'd with exactly the permitted size so that
# AddressSanitizer catches any write past the end.
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rle.h"

static unsigned char *unhex(const char *s, size_t *n) {
    size_t len = strcmp(s, "-") == 0 ? 0 : strlen(s) / 2;
    unsigned char *b = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++) { unsigned v; sscanf(s + 2 * i, "%2x", &v); b[i] = (unsigned char)v; }
    *n = len;
    return b;
}

static void phex(const unsigned char *b, size_t n) {
    if (n == 0) fputs("-", stdout);
    for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
    putchar('\n');
}

static char line[1 << 22];

int main(void) {
    char cmd[8];
    while (scanf("%7s", cmd) == 1) {
        if (cmd[0] == 'M') {
            size_t n; scanf("%zu", &n);
            printf("%zu\n", rle_max_encoded(n));
        } else if (cmd[0] == 'E') {
            size_t n; scanf("%s", line);
            unsigned char *in = unhex(line, &n);
            size_t cap = rle_max_encoded(n);
            unsigned char *out = malloc(cap ? cap : 1);
            size_t r = rle_encode(in, n, out);
            if (r > cap) { printf("toolong %zu\n", r); return 4; }
            phex(out, r);
            free(in); free(out);
        } else if (cmd[0] == 'D') {
            size_t n, cap; scanf("%zu %s", &cap, line);
            unsigned char *in = unhex(line, &n);
            unsigned char *out = malloc(cap ? cap : 1);
            long r = rle_decode(in, n, out, cap);
            if (r < 0) printf("%ld\n", r); else phex(out, (size_t)r);
            free(in); free(out);
        }
        fflush(stdout);
    }
    return 0;
}
"""


def py_encode(data: bytes) -> bytes:
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        r = 1
        while i + r < n and r < 129 and data[i + r] == data[i]:
            r += 1
        if r >= 2:
            out += bytes([r + 126, data[i]])
            i += r
        else:
            j = i
            while j < n and j - i < 128 and not (j + 1 < n and data[j] == data[j + 1]):
                j += 1
            out.append(j - i - 1)
            out += data[i:j]
            i = j
    return bytes(out)


def py_decode(enc: bytes, cap=None):
    out = bytearray()
    i = 0
    while i < len(enc):
        h = enc[i]
        i += 1
        if h < 128:
            ln = h + 1
            if len(enc) - i < ln:
                return -1
            chunk = enc[i:i + ln]
            i += ln
        else:
            if i >= len(enc):
                return -1
            chunk = bytes([enc[i]]) * (h - 126)
            i += 1
        if cap is not None and len(out) + len(chunk) > cap:
            return -2
        out += chunk
    return bytes(out)


def runny(rng, n):
    out = bytearray()
    while len(out) < n:
        kind = rng.random()
        if kind < 0.3:
            out += bytes([rng.randrange(256)]) * rng.choice([1, 2, 3, 127, 128, 129, 130, 131, 258, rng.randint(2, 600)])
        elif kind < 0.6:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))
        else:
            out += bytes(rng.choice(b"ab") for _ in range(rng.randint(1, 40)))
    return bytes(out[:n])


def random_stream(rng, packets):
    """A valid, not necessarily canonical, encoded stream."""
    enc = bytearray()
    for _ in range(packets):
        if rng.random() < 0.5:
            ln = rng.randint(1, 128)
            enc.append(ln - 1)
            enc += bytes(rng.choice(b"\x00\x01x") for _ in range(ln))
        else:
            enc += bytes([rng.randint(128, 255), rng.randrange(256)])
    return bytes(enc)


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    d = tmp_path_factory.mktemp("make")
    for name in ("main.c", "rle.c", "Makefile"):
        shutil.copy(WS / name, d / name)
    (d / "rle.h").write_text(HEADER)
    r = subprocess.run(["make"], cwd=d, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return d / "rle"


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    def build(d, flags):
        shutil.copy(WS / "rle.c", d / "rle.c")
        (d / "rle.h").write_text(HEADER)
        (d / "driver.c").write_text(DRIVER)
        r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", *flags, "driver.c", "rle.c", "-o", "drv"],
                           cwd=d, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return d / "drv"

    bins = [build(tmp_path_factory.mktemp("plain"), ["-O2"])]
    d = tmp_path_factory.mktemp("probe")
    (d / "p.c").write_text("int main(void){return 0;}\n")
    if subprocess.run(["gcc", "-fsanitize=address,undefined", "p.c", "-o", "p"], cwd=d,
                      capture_output=True, timeout=60).returncode == 0 and \
            subprocess.run([str(d / "p")], capture_output=True, env=ENV, timeout=10).returncode == 0:
        bins.append(build(tmp_path_factory.mktemp("asan"),
                          ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]))
    return bins


def drive(drivers, cmds):
    outs = []
    for b in drivers:
        r = subprocess.run([str(b)], input="\n".join(cmds) + "\n", capture_output=True, text=True,
                           timeout=30, env=ENV)
        assert r.returncode == 0, (b.parent.name, r.stdout[-300:], r.stderr[-2000:])
        outs.append(r.stdout.splitlines())
    assert all(o == outs[0] for o in outs)
    return outs[0]


def hx(b: bytes) -> str:
    return b.hex() if b else "-"


@pytest.mark.core
def test_library_encode_exact(drivers):
    rng = random.Random(1234)
    inputs = [runny(rng, rng.randint(1, 3000)) for _ in range(60)]
    inputs += [bytes(rng.randrange(256) for _ in range(1000)), b"\x00" * 1000, b"\x07" * 129, b"\x07" * 130]
    inputs += [b"abb" * 700, b"abb" * 300 + b"c", b"xyy" * 333 + b"cd", b"p" + b"qq" * 50 + b"r"]
    out = drive(drivers, [f"E {hx(d)}" for d in inputs])
    assert out == [hx(py_encode(d)) for d in inputs]


@pytest.mark.core
def test_library_decode(drivers):
    rng = random.Random(4321)
    streams = [random_stream(rng, rng.randint(1, 60)) for _ in range(60)]
    cmds, exp = [], []
    for s in streams:
        full = py_decode(s)
        cmds.append(f"D {len(full)} {hx(s)}")
        exp.append(hx(full))
        cmds.append(f"D {len(full) + 100} {hx(s)}")
        exp.append(hx(full))
    assert drive(drivers, cmds) == exp


@pytest.mark.boundary
def test_library_decode_errors_and_caps(drivers):
    rng = random.Random(99)
    cmds, exp = [], []
    for _ in range(60):
        s = random_stream(rng, rng.randint(1, 20))
        cut = s[:rng.randint(1, len(s))]
        cap = rng.randint(0, len(py_decode(s)) + 5)
        cmds.append(f"D {cap} {hx(cut)}")
        r = py_decode(cut, cap)
        exp.append(str(r) if isinstance(r, int) else hx(r))
    fixed = [(0, b""), (0, b"\x80"), (5, b"\x05abc"), (2, b"\x05abc"), (3, b"\x02abc"), (2, b"\x02abc"),
             (129, b"\xffz"), (128, b"\xffz"), (0, b"\x00"), (10, b"\x81q\x00"), (1, b"\x81q\x00")]
    for cap, s in fixed:
        cmds.append(f"D {cap} {hx(s)}")
        r = py_decode(s, cap)
        exp.append(str(r) if isinstance(r, int) else hx(r))
    assert drive(drivers, cmds) == exp


@pytest.mark.boundary
def test_max_encoded_bound(drivers):
    sizes = [0, 1, 2, 63, 64, 127, 128, 129, 1000, 123457]
    out = drive(drivers, [f"M {n}" for n in sizes])
    for n, got in zip(sizes, out):
        v = int(got)
        assert v <= n + n // 2 + 2, (n, v)
        # the worst case ("abbabb...": a 1-byte literal before every 2-byte run) must fit
        assert v >= n + (n + 2) // 3, (n, v)


@pytest.mark.core
def test_tool_files_roundtrip(tool, tmp_path):
    rng = random.Random(777)
    data = runny(rng, 3_000_000)
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    r = subprocess.run([str(tool), "encode", str(src), str(tmp_path / "enc")], capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    enc = (tmp_path / "enc").read_bytes()
    assert enc == py_encode(data)
    r = subprocess.run([str(tool), "decode", str(tmp_path / "enc"), str(tmp_path / "dec")], capture_output=True,
                       timeout=20)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "dec").read_bytes() == data


@pytest.mark.core
def test_tool_decode_highly_compressed(tool, tmp_path):
    stream = b"\xff\x00" * 200000 + b"\x02xyz"  # ~25 MB of zeros from 400 KB
    (tmp_path / "z.rle").write_bytes(stream)
    r = subprocess.run([str(tool), "decode", "z.rle", "z.out"], cwd=tmp_path, capture_output=True, timeout=20)
    assert r.returncode == 0, r.stderr
    out = (tmp_path / "z.out").read_bytes()
    assert len(out) == 129 * 200000 + 3 and out.endswith(b"\x00xyz") and out.count(0) == 129 * 200000


@pytest.mark.core
def test_tool_stdin_stdout(tool, tmp_path):
    rng = random.Random(55)
    data = runny(rng, 50000)
    r = subprocess.run([str(tool), "encode", "-", "-"], input=data, capture_output=True, timeout=20)
    assert r.returncode == 0 and r.stdout == py_encode(data)
    stream = random_stream(rng, 500)
    r = subprocess.run([str(tool), "decode", "-", "-"], input=stream, capture_output=True, timeout=20)
    assert r.returncode == 0 and r.stdout == py_decode(stream)
    # empty input both ways
    for mode in ("encode", "decode"):
        r = subprocess.run([str(tool), mode, "-", "-"], input=b"", capture_output=True, timeout=20)
        assert r.returncode == 0 and r.stdout == b""


@pytest.mark.boundary
def test_tool_errors(tool, tmp_path):
    (tmp_path / "bad.rle").write_bytes(b"\x81a\x05abc")
    r = subprocess.run([str(tool), "decode", "bad.rle", "o"], cwd=tmp_path, capture_output=True, timeout=20)
    assert r.returncode == 1 and r.stderr.strip()
    r = subprocess.run([str(tool), "decode", "-", "-"], input=b"\x00", capture_output=True, timeout=20)
    assert r.returncode == 1
    r = subprocess.run([str(tool), "encode", "missing.bin", "o"], cwd=tmp_path, capture_output=True, timeout=20)
    assert r.returncode == 1 and r.stderr.strip()
    (tmp_path / "x").write_bytes(b"abc")
    r = subprocess.run([str(tool), "encode", "x", str(tmp_path / "nodir" / "o")], capture_output=True, timeout=20)
    assert r.returncode == 1
    for args in (["frob", "x", "y"], ["encode", "x"], []):
        r = subprocess.run([str(tool), *args], cwd=tmp_path, capture_output=True, timeout=20)
        assert r.returncode == 2 and r.stderr.strip() and r.stdout == b"", args
