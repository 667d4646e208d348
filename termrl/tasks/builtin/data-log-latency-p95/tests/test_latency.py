import csv
import hashlib
import io
import random
import re
import subprocess
from pathlib import Path

import pytest

PROG = Path.cwd() / "latency_report"
LOG_SHA256 = "cba345b022d2aff7361c508f0d49e6236fb3690d322d2bb2cd7fc10bc68d616a"
HEADER = ["endpoint", "requests", "errors", "p50_ms", "p95_ms", "max_ms"]

_LINE = re.compile(
    r'(\S+) \S+ \S+ \[([^]]+)\] "([A-Z]+) (\S+) HTTP/[0-9.]+" ([0-9]{3}) ([0-9]+|-) ([0-9]+)\.([0-9]{3})')
_UUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _path(target):
    cut = len(target)
    for ch in "?#":
        i = target.find(ch)
        if i != -1:
            cut = min(cut, i)
    segs = []
    for s in target[:cut].split("/"):
        if s == "":
            continue
        if re.fullmatch(r"[0-9]+", s):
            segs.append("{id}")
        elif _UUID.fullmatch(s):
            segs.append("{uuid}")
        else:
            segs.append(s)
    return "/" + "/".join(segs)


def expected_rows(data: bytes):
    per = {}
    for raw in data.split(b"\n"):
        m = _LINE.fullmatch(raw.decode("utf-8", "replace"))
        if not m:
            continue
        ep = f"{m.group(3)} {_path(m.group(4))}"
        ms = int(m.group(7)) * 1000 + int(m.group(8))
        d = per.setdefault(ep, [[], 0])
        d[0].append(ms)
        d[1] += int(m.group(5)) >= 500
    rows = []
    for ep, (ts, errs) in per.items():
        ts.sort()
        n = len(ts)
        k50, k95 = -(-50 * n // 100), -(-95 * n // 100)
        rows.append([ep, str(n), str(errs), str(ts[k50 - 1]), str(ts[k95 - 1]), str(ts[-1])])
    rows.sort(key=lambda r: (-int(r[1]), r[0].encode()))
    return [HEADER] + rows


def parse_csv(text):
    return [row for row in csv.reader(io.StringIO(text, newline="")) if row]


def run(path):
    r = subprocess.run([str(PROG), str(path)], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return parse_csv(r.stdout.decode("utf-8"))


def line(method, target, status, secs, ip="10.1.2.3", size="512"):
    return f'{ip} - - [02/Apr/2024:10:00:00 +0000] "{method} {target} HTTP/1.1" {status} {size} {secs}'


@pytest.mark.core
def test_workspace_latency_csv():
    data = (Path.cwd() / "logs" / "access.log").read_bytes()
    assert hashlib.sha256(data).hexdigest() == LOG_SHA256, "access.log was modified"
    got = parse_csv((Path.cwd() / "latency.csv").read_text(encoding="utf-8"))
    assert got == expected_rows(data)
    # The saved file must be what the program prints for the log, not a copy made by hand.
    produced = run(Path.cwd() / "logs" / "access.log")
    assert produced == got, "latency.csv differs from ./latency_report logs/access.log"
    assert produced == expected_rows(data)


def random_uuid(rng, upper=False):
    s = "%08x-%04x-%04x-%04x-%012x" % tuple(rng.getrandbits(b) for b in (32, 16, 16, 16, 48))
    return s.upper() if upper else s


@pytest.mark.core
@pytest.mark.parametrize("seed", [7, 8])
def test_unseen_random_log(tmp_path, seed):
    rng = random.Random(seed)
    templates = ["/v2/items/{n}", "/v2/items", "/v2/items/{n}/reviews/{n}", "/files/{u}",
                 "/files/{U}/raw", "/Search", "/search", "/a/b1/{n}", "/0/x", "/users/{n}abc",
                 "/files/{u}x", "/"]
    methods = ["GET", "GET", "POST", "PATCH", "DELETE"]
    out = []
    for _ in range(3000):
        t = rng.choice(templates)
        t = t.replace("{n}", str(rng.randint(0, 10**7)), 1).replace("{n}", str(rng.randint(0, 99)))
        t = t.replace("{u}", random_uuid(rng)).replace("{U}", random_uuid(rng, True))
        r = rng.random()
        if r < 0.1:
            t += "?q=1/2&x=3"
        elif r < 0.15:
            t += "#frag/9"
        elif r < 0.2:
            t = t.replace("/", "//")
        elif r < 0.25:
            t += "/"
        ms = rng.choice([rng.randint(0, 99), rng.randint(0, 5000), rng.randint(10000, 99999)])
        secs = "%d.%03d" % divmod(ms, 1000)
        status = rng.choice([200, 200, 201, 302, 404, 499, 500, 503, 599])
        ln = line(rng.choice(methods), t, status, secs, size=rng.choice(["0", "-", "1234"]))
        k = rng.random()
        if k < 0.02:
            ln = ln[:-1]
        elif k < 0.04:
            ln = ln + " "
        elif k < 0.05:
            ln = ln.replace(" HTTP/1.1", " HTTP/2")
        elif k < 0.06:
            ln = ln.replace('"GET', '"get')
        elif k < 0.07:
            ln = ln.replace("] ", "]  ")
        out.append(ln)
    data = ("\n".join(out) + "\n").encode()
    p = tmp_path / "access.log"
    p.write_bytes(data)
    assert run(p) == expected_rows(data)


@pytest.mark.core
def test_percentiles_nearest_rank(tmp_path):
    lines = [line("GET", "/twenty", 200, "0.%03d" % ms) for ms in rng_perm(range(1, 21))]
    lines += [line("GET", "/one", 200, "7.250")]
    lines += [line("POST", "/two", 500, "0.010"), line("POST", "/two", 200, "0.002")]
    lines += [line("PUT", "/three", 502, "0.001"), line("PUT", "/three", 503, "0.003"),
              line("PUT", "/three", 404, "0.002")]
    p = tmp_path / "a.log"
    p.write_text("\n".join(lines) + "\n")
    assert run(p) == [HEADER,
                      ["GET /twenty", "20", "0", "10", "19", "20"],
                      ["PUT /three", "3", "2", "2", "3", "3"],
                      ["POST /two", "2", "1", "2", "10", "10"],
                      ["GET /one", "1", "0", "7250", "7250", "7250"]]


def rng_perm(values):
    values = list(values)
    random.Random(3).shuffle(values)
    return values


@pytest.mark.boundary
def test_ties_normalisation_and_quoting(tmp_path):
    lines = [
        line("GET", "/b", 200, "0.001"),
        line("GET", "/B", 200, "0.001"),
        line("DELETE", "/b", 200, "0.001"),
        line("GET", "/q,x?z=1", 200, "0.004"),
        line("GET", '/say"hi"', 200, "0.005"),
        line("GET", "//", 200, "0.100"),
        line("GET", "/?a=b", 200, "0.300"),
        line("GET", "/#top", 200, "0.200"),
        line("GET", "/items/123", 200, "12.345"),
        line("GET", "/items/00/", 200, "0.000"),
        line("GET", "/items/12a", 200, "0.000"),
        line("GET", "/items/12-3", 200, "0.000"),
        line("GET", "/x", 200, "0.01"),
        line("GET", "/x", 200, "1.0000"),
        "garbage line",
        "",
    ]
    p = tmp_path / "b.log"
    p.write_text("\n".join(lines) + "\n")
    got = run(p)
    assert got == [HEADER,
                   ["GET /", "3", "0", "200", "300", "300"],
                   ["GET /items/{id}", "2", "0", "0", "12345", "12345"],
                   ["DELETE /b", "1", "0", "1", "1", "1"],
                   ["GET /B", "1", "0", "1", "1", "1"],
                   ["GET /b", "1", "0", "1", "1", "1"],
                   ["GET /items/12-3", "1", "0", "0", "0", "0"],
                   ["GET /items/12a", "1", "0", "0", "0", "0"],
                   ["GET /q,x", "1", "0", "4", "4", "4"],
                   ['GET /say"hi"', "1", "0", "5", "5", "5"]]


@pytest.mark.boundary
def test_no_request_lines(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("not a request\n\n")
    assert run(p) == [HEADER]
