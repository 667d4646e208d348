import csv
import hashlib
import io
import random
import subprocess
from pathlib import Path

import pytest

PROG = Path.cwd() / "csvjoin"
SHA = {
    "customers.csv": "85dbe21ce375f45c5d6c52c8f6333bbbf491d8b326ddcd7e5434c823acfdd6d2",
    "orders.csv": "8e8e6c37aec6115f037beba9e2d4d51090d5a31461c1abeb19af32d9b08f4a68",
}


def read_rows(text):
    return list(csv.reader(io.StringIO(text, newline="")))


def reference(ltext, rtext, key, left):
    lrows, rrows = read_rows(ltext), read_rows(rtext)
    lh, rh = lrows[0], rrows[0]
    lk, rk = lh.index(key), rh.index(key)
    rcols = [i for i in range(len(rh)) if i != rk]
    out = [lh + [rh[i] + "_right" if rh[i] in lh else rh[i] for i in rcols]]
    for l in lrows[1:]:
        matched = False
        for r in rrows[1:]:
            if l[lk] != "" and r[rk] == l[lk]:
                out.append(l + [r[i] for i in rcols])
                matched = True
        if left and not matched:
            out.append(l + [""] * len(rcols))
    return out


def run(*args, ok=True):
    r = subprocess.run([str(PROG), *map(str, args)], capture_output=True, timeout=30)
    if ok:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r


def to_csv(rows, newline="\n"):
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator=newline).writerows(rows)
    return buf.getvalue()


@pytest.mark.core
def test_workspace_customer_orders():
    texts = {}
    for name, digest in SHA.items():
        raw = (Path.cwd() / name).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == digest, f"{name} was modified"
        texts[name] = raw.decode("utf-8")
    saved = (Path.cwd() / "customer_orders.csv").read_text(encoding="utf-8")
    want = reference(texts["customers.csv"], texts["orders.csv"], "customer_id", True)
    assert read_rows(saved) == want
    assert len(want) == 9
    # the saved file is the program's output, not a hand-written copy of it
    produced = run("--left", Path.cwd() / "customers.csv", Path.cwd() / "orders.csv", "customer_id")
    assert read_rows(produced.stdout.decode("utf-8")) == want


def random_tables(rng):
    keys = [f"K{i:03d}" for i in range(60)] + ["", " K001", "k001", "K\u00e9"]
    lh = ["id", "label", "key", "comment"]
    rh = ["value", "key", "label", "extra, col"]
    texts = ["a", "b,c", 'q"uote', "multi\nline", "", "\u2603", " sp "]
    lrows = [[str(i), rng.choice(texts), rng.choice(keys), rng.choice(texts)] for i in range(300)]
    rrows = [[str(rng.randint(0, 10**6)), rng.choice(keys), rng.choice(texts), rng.choice(texts)]
             for _ in range(500)]
    return to_csv([lh] + lrows, rng.choice(["\n", "\r\n"])), to_csv([rh] + rrows, rng.choice(["\n", "\r\n"]))


@pytest.mark.core
@pytest.mark.parametrize("seed,left", [(1, True), (2, False), (3, True)])
def test_unseen_random_tables(tmp_path, seed, left):
    rng = random.Random(seed)
    ltext, rtext = random_tables(rng)
    lp, rp = tmp_path / "left side.csv", tmp_path / "right.csv"
    lp.write_bytes(ltext.encode())
    rp.write_bytes(rtext.encode())
    args = (["--left"] if left else []) + [lp, rp, "key"]
    got = read_rows(run(*args).stdout.decode("utf-8"))
    assert got == reference(ltext, rtext, "key", left)


@pytest.mark.core
def test_inner_vs_left(tmp_path):
    (tmp_path / "l.csv").write_text("k,a\n1,x\n2,y\n1,z\n")
    (tmp_path / "r.csv").write_text("b,k\nB1,1\nB3,3\nB1b,1\n")
    inner = read_rows(run(tmp_path / "l.csv", tmp_path / "r.csv", "k").stdout.decode())
    assert inner == [["k", "a", "b"], ["1", "x", "B1"], ["1", "x", "B1b"],
                     ["1", "z", "B1"], ["1", "z", "B1b"]]
    left = read_rows(run("--left", tmp_path / "l.csv", tmp_path / "r.csv", "k").stdout.decode())
    assert left == [["k", "a", "b"], ["1", "x", "B1"], ["1", "x", "B1b"], ["2", "y", ""],
                    ["1", "z", "B1"], ["1", "z", "B1b"]]


@pytest.mark.boundary
def test_missing_key_column_exit_2(tmp_path):
    (tmp_path / "l.csv").write_text("id,a\n1,x\n")
    (tmp_path / "r.csv").write_text("ID,b\n1,y\n")
    r = run(tmp_path / "l.csv", tmp_path / "r.csv", "id", ok=False)
    assert r.returncode == 2
    assert r.stdout == b""
    assert r.stderr.strip() != b""


@pytest.mark.boundary
def test_header_only_and_empty_keys(tmp_path):
    (tmp_path / "l.csv").write_text("k,v\n,empty\n")
    (tmp_path / "r.csv").write_text("k,w\n,also empty\n")
    got = read_rows(run("--left", tmp_path / "l.csv", tmp_path / "r.csv", "k").stdout.decode())
    assert got == [["k", "v", "w"], ["", "empty", ""]]
    (tmp_path / "e.csv").write_text("k,z\n")
    got = read_rows(run(tmp_path / "l.csv", tmp_path / "e.csv", "k").stdout.decode())
    assert got == [["k", "v", "z"]]
