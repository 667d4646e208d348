import hashlib
import json
import random
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

PROG = Path.cwd() / "filter_events"
EVENTS_SHA256 = "68aca68b0ec8ef1ef175fc572d7bb8f33b6168fd7e0bd46bcc2dd08c9e2fa1b2"
TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def loads(s):
    return json.loads(s, parse_float=Decimal)


def canon(v):
    if isinstance(v, dict):
        return ["o", sorted(([k, canon(x)] for k, x in v.items()), key=lambda kv: kv[0])]
    if isinstance(v, list):
        return ["a", [canon(x) for x in v]]
    if type(v) in (int, Decimal):
        d = Decimal(v)
        return ["n", "0" if d == 0 else str(d.normalize())]
    return ["s", v]


def reference(text, type_=None, since=None, until=None):
    out, skipped = [], 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            ev = loads(line)
        except ValueError:
            skipped += 1
            continue
        if not (isinstance(ev, dict) and isinstance(ev.get("ts"), str) and TS.fullmatch(ev["ts"])
                and isinstance(ev.get("type"), str)):
            skipped += 1
            continue
        if type_ is not None and ev["type"] != type_:
            continue
        if since is not None and ev["ts"] < since:
            continue
        if until is not None and ev["ts"] >= until:
            continue
        out.append(canon(ev))
    return json.dumps(out), skipped


def run(*args):
    r = subprocess.run([str(PROG), *map(str, args)], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    lines = [l for l in r.stdout.decode("utf-8").split("\n") if l.strip()]
    objs = [canon(loads(l)) for l in lines]
    return json.dumps(objs), r.stderr.decode("utf-8").strip().splitlines()


@pytest.mark.core
def test_workspace_logins():
    text = (Path.cwd() / "events.jsonl").read_bytes()
    assert hashlib.sha256(text).hexdigest() == EVENTS_SHA256, "events.jsonl was modified"
    got = [canon(loads(l)) for l in (Path.cwd() / "logins.jsonl").read_text(encoding="utf-8").splitlines()
           if l.strip()]
    want, skipped = reference(text.decode("utf-8"), "login", "2024-05-02T00:00:00Z", "2024-05-03T00:00:00Z")
    assert json.dumps(got) == want
    # The saved file must be what the program prints for this query, not a copy made by hand.
    produced, err = run(Path.cwd() / "events.jsonl", "--type", "login", "--since", "2024-05-02T00:00:00Z",
                        "--until", "2024-05-03T00:00:00Z")
    assert produced == json.dumps(got), "logins.jsonl differs from ./filter_events output"
    assert produced == want
    assert err == [f"skipped {skipped}"]


def random_events(rng):
    lines = []
    for i in range(800):
        ts = "2031-%02d-%02dT%02d:%02d:%02dZ" % (rng.randint(1, 2), rng.randint(1, 28), rng.randint(0, 23),
                                               rng.randint(0, 59), rng.randint(0, 59))
        ev = {"ts": ts, "type": rng.choice(["deploy", "rollback", "Deploy", "alert", "deploy "]),
              "svc": rng.choice(["api", "web", "d\u00e9j\u00e0", "\u65e5\u672c"]), "seq": i}
        if rng.random() < 0.3:
            ev["cost"] = rng.choice([0.1, 2.50, 1e-7, 123456789012345678901234, -3, None, True])
        if rng.random() < 0.2:
            ev["nested"] = {"list": [1, "two", {"three": 3.0}], "empty": {}}
        k = rng.random()
        if k < 0.03:
            line = json.dumps(ev)[:-3]
        elif k < 0.05:
            ev["ts"] = ts.replace("Z", "+00:00")
            line = json.dumps(ev)
        elif k < 0.06:
            ev["ts"] = ts.replace("T", " ")
            line = json.dumps(ev)
        elif k < 0.07:
            del ev["type"]
            line = json.dumps(ev)
        elif k < 0.08:
            ev["type"] = 5
            line = json.dumps(ev)
        elif k < 0.09:
            line = json.dumps([ev])
        elif k < 0.10:
            line = rng.choice(["", "   ", "\t"])
        elif k < 0.11:
            line = "null"
        else:
            line = json.dumps(ev, ensure_ascii=rng.random() < 0.5,
                              separators=rng.choice([(",", ":"), (", ", ": ")]))
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.core
@pytest.mark.parametrize("opts", [
    {},
    {"type": "deploy"},
    {"since": "2031-02-01T00:00:00Z"},
    {"until": "2031-01-15T12:00:00Z", "type": "alert"},
    {"since": "2031-01-10T00:00:00Z", "until": "2031-02-10T00:00:00Z", "type": "rollback"},
])
def test_unseen_events(tmp_path, opts):
    rng = random.Random(str(sorted(opts.items())))
    text = random_events(rng)
    p = tmp_path / "ev.jsonl"
    p.write_text(text, encoding="utf-8")
    args = []
    items = list(opts.items())
    rng.shuffle(items)
    for k, v in items:
        args += [f"--{k}", v]
    got, err = run(p, *args)
    want, skipped = reference(text, opts.get("type"), opts.get("since"), opts.get("until"))
    assert got == want
    assert err == [f"skipped {skipped}"]


@pytest.mark.boundary
def test_inclusive_exclusive_bounds(tmp_path):
    evs = [{"ts": "2030-01-01T00:00:00Z", "type": "a"}, {"ts": "2030-01-01T00:00:01Z", "type": "a"},
           {"ts": "2030-01-01T23:59:59Z", "type": "a"}, {"ts": "2030-01-02T00:00:00Z", "type": "a"}]
    p = tmp_path / "b.jsonl"
    p.write_text("\r\n".join(json.dumps(e) for e in evs) + "\r\n")
    got, err = run(p, "--since", "2030-01-01T00:00:01Z", "--until", "2030-01-02T00:00:00Z")
    assert got == json.dumps([canon(evs[1]), canon(evs[2])])
    assert err == ["skipped 0"]


@pytest.mark.boundary
def test_empty_file(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text("")
    got, err = run(p, "--type", "x")
    assert got == "[]"
    assert err == ["skipped 0"]
