import copy
import hashlib
import json
import random
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

PROG = Path.cwd() / "jsonmerge"
CONFIG = Path.cwd() / "config"
SHA = {
    "base.json": "d151e8f09201c6ff4a2ba846f41058d88ceb027da0df7514f833ebcb6a990033",
    "prod.json": "1690b3b5ebdb23eb8a61df692955230f346604d850ed9054f73691ff164a80ad",
    "local.json": "fc9c8b21cfe4caec821de768413c3ccd37461ab64f5b2ff60c751fccd0179954",
}


def merge(a, b):
    for k, v in b.items():
        if v is None:
            a.pop(k, None)
        elif k in a and isinstance(a[k], dict) and isinstance(v, dict):
            a[k] = merge(a[k], v)
        else:
            a[k] = copy.deepcopy(v)
    return a


def canon(v):
    """Canonical, order-independent, type-exact form (numbers compared by exact value)."""
    if isinstance(v, dict):
        return ["o", sorted(([k, canon(x)] for k, x in v.items()), key=lambda kv: kv[0])]
    if isinstance(v, list):
        return ["a", [canon(x) for x in v]]
    if v is None or type(v) is bool or type(v) is str:
        return ["s", v]
    if type(v) in (int, Decimal):
        d = Decimal(v)
        return ["n", "0" if d == 0 else str(d.normalize())]
    return ["?", repr(v)]


def load_text(text):
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def expected(docs):
    docs = [load_text(json.dumps(d)) if not isinstance(d, str) else load_text(d) for d in docs]
    res = docs[0]
    for d in docs[1:]:
        res = merge(res, d)
    return json.dumps(canon(res))


def run(*files):
    return subprocess.run([str(PROG), *map(str, files)], capture_output=True, timeout=30)


def write_docs(tmp_path, docs):
    paths = []
    for i, d in enumerate(docs):
        p = tmp_path / f"doc {i}.json"
        p.write_text(d if isinstance(d, str) else json.dumps(d, ensure_ascii=False), encoding="utf-8")
        paths.append(p)
    return paths


def check(tmp_path, docs):
    r = run(*write_docs(tmp_path, docs))
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    got = load_text(r.stdout.decode("utf-8"))
    assert json.dumps(canon(got)) == expected(docs)


@pytest.mark.core
def test_workspace_merged_config():
    texts = []
    for name in ("base.json", "prod.json", "local.json"):
        raw = (CONFIG / name).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == SHA[name], f"{name} was modified"
        texts.append(raw.decode("utf-8"))
    got = load_text((CONFIG / "merged.json").read_text(encoding="utf-8"))
    assert json.dumps(canon(got)) == expected(texts)
    # The saved file must be what the program prints for these inputs, not a copy made by hand.
    r = run(CONFIG / "base.json", CONFIG / "prod.json", CONFIG / "local.json")
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    produced = load_text(r.stdout.decode("utf-8"))
    assert json.dumps(canon(produced)) == json.dumps(canon(got)), "config/merged.json differs from ./jsonmerge output"
    assert json.dumps(canon(produced)) == expected(texts)


def rand_value(rng, depth):
    r = rng.random()
    if depth > 0 and r < 0.35:
        return rand_obj(rng, depth - 1)
    if r < 0.45:
        return None
    if r < 0.55:
        return [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]
    if r < 0.7:
        return rng.randint(-10**6, 10**6)
    if r < 0.8:
        return rng.choice([True, False])
    return rng.choice(["x", "y", "", "\u00e9t\u00e9", "\u2603", "a\"b"])


def rand_obj(rng, depth):
    keys = ["k1", "k2", "k3", "k4", "\u00fc", "nested", "list"]
    return {k: rand_value(rng, depth) for k in rng.sample(keys, rng.randint(0, len(keys)))}


@pytest.mark.core
@pytest.mark.parametrize("seed", range(6))
def test_unseen_random_documents(tmp_path, seed):
    rng = random.Random(seed)
    docs = [rand_obj(rng, 3) for _ in range(rng.randint(2, 5))]
    check(tmp_path, docs)


@pytest.mark.core
def test_semantics_examples(tmp_path):
    a = {"keep": 1, "obj": {"x": 1, "y": {"z": 2}}, "arr": [1, 2], "gone": "bye", "n": None}
    b = {"obj": {"y": {"w": 3}, "x": None}, "arr": [3], "gone": None, "absent": None,
         "new": {"inner": None, "v": [None]}}
    c = {"obj": 5, "arr": {"now": "object"}}
    r = run(*write_docs(tmp_path, [a, b, c]))
    assert r.returncode == 0
    got = load_text(r.stdout.decode())
    want = {"keep": 1, "obj": 5, "arr": {"now": "object"}, "n": None,
            "new": {"inner": None, "v": [None]}}
    assert json.dumps(canon(got)) == json.dumps(canon(load_text(json.dumps(want))))


@pytest.mark.boundary
def test_exact_numbers_and_unicode(tmp_path):
    docs = ['{"big": 123456789012345678901234567890, "f": 0.1, "s": "\\u65e5\\u672c", "k\u00e9y": 1}',
            '{"f2": 2.5e-3, "neg": -98765432109876543210987, "s2": "caf\u00e9 \u2615"}']
    check(tmp_path, docs)


@pytest.mark.boundary
def test_single_file_and_empty_objects(tmp_path):
    check(tmp_path, ['{"a": {"b": null}, "c": []}'])
    check(tmp_path, ['{}', '{}', '{"x": {}}', '{"x": {"y": {}}}'])


@pytest.mark.boundary
@pytest.mark.parametrize("bad", ['[1, 2]', '{"a": 1', '"str"', 'null'])
def test_errors_exit_2(tmp_path, bad):
    good = tmp_path / "good.json"
    good.write_text('{"a": 1}')
    badp = tmp_path / "bad.json"
    badp.write_text(bad)
    r = run(good, badp)
    assert r.returncode == 2
    assert r.stdout == b""
    assert r.stderr.strip() != b""
    r = run(good, tmp_path / "missing.json")
    assert r.returncode == 2 and r.stdout == b""
