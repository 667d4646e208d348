import csv
import hashlib
import io
import json
import random
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

PROG = Path.cwd() / "csv2json"
INPUT_SHA256 = "b7c58437ccc21d3514c72cc859443046ba276934c44f579e1ed81039bbdfe68a"
INT = re.compile(r"-?(0|[1-9][0-9]*)")
FLOAT = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]+")


def num(d):
    return "0" if d == 0 else str(d.normalize())


def canon_expected(v):
    if v == "":
        return ["null"]
    if INT.fullmatch(v) or FLOAT.fullmatch(v):
        return ["num", num(Decimal(v))]
    if v in ("true", "false"):
        return ["bool", v == "true"]
    return ["str", v]


def canon_json(v):
    if v is None:
        return ["null"]
    if type(v) is bool:
        return ["bool", v]
    if type(v) is Decimal:
        return ["num", num(v)]
    if type(v) is str:
        return ["str", v]
    return ["other", repr(v)]


def expected(raw: bytes):
    text = raw.decode("utf-8-sig")
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    if not rows:
        return []
    header = rows[0]
    return [[[k, canon_expected(v)] for k, v in zip(header, r)] for r in rows[1:]]


def parse_output(text):
    data = json.loads(text, object_pairs_hook=lambda pairs: ["__obj__", pairs],
                      parse_float=Decimal, parse_int=Decimal)
    assert type(data) is list, "top level must be a JSON array"
    out = []
    for obj in data:
        assert type(obj) is list and obj and obj[0] == "__obj__", "records must be objects"
        out.append([[k, canon_json(v)] for k, v in obj[1]])
    return out


def run(path):
    r = subprocess.run([str(PROG), str(path)], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout.decode("utf-8")


@pytest.mark.core
def test_workspace_inventory_json():
    raw = (Path.cwd() / "inventory.csv").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == INPUT_SHA256, "inventory.csv was modified"
    got = parse_output((Path.cwd() / "inventory.json").read_text(encoding="utf-8"))
    assert json.dumps(got) == json.dumps(expected(raw))
    assert len(got) == 7
    # The saved file must be what the program prints for inventory.csv, not a copy made by hand.
    produced = parse_output(run(Path.cwd() / "inventory.csv"))
    assert json.dumps(produced) == json.dumps(got), "inventory.json differs from ./csv2json inventory.csv"
    assert json.dumps(produced) == json.dumps(expected(raw))


FIELDS = ["0", "-0", "7", "-15", "007", "3.14", "-0.5", "2.", ".5", "1e3", "true", "false",
          "True", "FALSE", "", " ", "x, y", 'he said "hi"', "multi\nline", "crlf\r\ninside",
          "\u00fcber", "\u65e5\u672c", "98765432109876543210", "1.000", "+5", "5 ", "null", "-"]


@pytest.mark.core
@pytest.mark.parametrize("seed,newline,quoting", [
    (1, "\n", csv.QUOTE_MINIMAL), (2, "\r\n", csv.QUOTE_ALL), (3, "\r\n", csv.QUOTE_MINIMAL)])
def test_unseen_random_csv(tmp_path, seed, newline, quoting):
    rng = random.Random(seed)
    header = ["id", "name, full", "val\u00fce", "x"]
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator=newline, quoting=quoting)
    w.writerow(header)
    for i in range(200):
        w.writerow([str(i)] + [rng.choice(FIELDS) for _ in header[1:]])
    raw = buf.getvalue().encode()
    p = tmp_path / "in put.csv"
    p.write_bytes(raw)
    got = parse_output(run(p))
    assert json.dumps(got) == json.dumps(expected(raw))


@pytest.mark.boundary
def test_header_only(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes(b"a,b,c\n")
    assert parse_output(run(p)) == []


@pytest.mark.boundary
def test_bom_blank_lines_no_trailing_newline(tmp_path):
    raw = "\ufeffk,v\r\n\r\n1,a\n\n2,\"\"\r\n3,true".encode()
    p = tmp_path / "b.csv"
    p.write_bytes(raw)
    got = parse_output(run(p))
    assert json.dumps(got) == json.dumps([
        [["k", ["num", "1"]], ["v", ["str", "a"]]],
        [["k", ["num", "2"]], ["v", ["null"]]],
        [["k", ["num", "3"]], ["v", ["bool", True]]],
    ])
