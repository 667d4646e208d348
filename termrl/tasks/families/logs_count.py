"""logs-count: count the lines of a log that match a level/service criterion.

Per seed: the log line format (bracketed, delimited with a random separator and field
order, key=value with random key names and order, syslog style, JSON Lines), level
names and case, services, the criterion (level, service, both, either of two levels,
negations), the script's name and input mode (path argument or stdin), and file names.

Held-out templates: a ``heldout`` seed draws only these, a different question about a
different log. The log is a web service's request log whose records also carry an HTTP status,
in a format no train seed uses (logfmt with quoted, escaped values; CSV with a header and
RFC 4180 quoting; LTSV), and the question is one no train seed asks, one template each:
``level_at_least`` (records at a level or more severe in the log's stated severity order),
``status_class`` (records whose status is in a class: 2xx, 4xx, 5xx, or 400 and above),
``message_word`` (records whose message holds a word as a whole word, in any case),
``hour_range`` (records timestamped in an hour window, at level 2 and 3 possibly across
midnight) and ``distinct_services`` (how many services wrote a record at a level). Their hidden
logs carry look-alikes a grep over whole lines falls for: status codes, clock times, level and
``key=value`` text inside messages, the word inside longer words or as a service name, level
names in other cases, ``-`` statuses. Train (and ``heldout-v1``) seeds draw exactly as before.

Hidden tests: the output file for the workspace log holds the count computed at
generation time, and the agent's script is run on fresh logs (random, tricky with
look-alike names and level/service words inside messages, empty, no-match).

Levels: 1 cuts the criterion down to one field (level or service), shortens the log, gives
the script as a Python skeleton that already reads the input and prints the count (only
``matches(line)`` is left), and checks ordinary hidden logs plus an empty one; 2 is the family
as it always was; 3 lengthens every log, rotates the log into three files (``.1`` with CRLF
endings, ``.2.gz`` gzip-compressed) whose total is asked for, adds two distractor logs that
must not be counted (a stale ``.bak`` copy, another application's log), checks that every log
is left unchanged, and adds hidden edge cases (CRLF, lines of spaces, only blank lines, a large
log). The held-out templates keep these steps: level 1's skeleton leaves ``counts(line)`` (or
``counted_service(line)``, whose distinct values it counts), with one status class and an hour
window that does not wrap; level 3 asks for the answer over the three rotated files read as one
log (for ``distinct_services`` not a sum) and adds a hidden log of two joined logs (a CSV header
in the middle).
"""

from __future__ import annotations

import json
import random
import re
import struct
import zlib
from typing import ClassVar

from termrl.protocols import TaskFile

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone, md_code
from .base import Family, files, split_of

LEVELS = ["TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL"]
SERVICES = ["auth", "oauth", "billing", "api", "api-gateway", "db", "db-replica", "cache", "web",
            "worker", "scheduler", "mailer", "search", "payments", "gateway", "queue", "storage",
            "frontend", "backend", "metrics", "notifier", "ingest", "export", "reports", "login"]
USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
MESSAGES = [
    "request completed in {n} ms",
    "user {user} logged in",
    "cache miss for key {key}",
    "retrying call to {svc}",
    "{lvl} threshold reached on {svc}",
    "connection reset by peer",
    "disk usage at {pct}%",
    "job {key} finished with status {code}",
    "payload parsed: café ☕ naïve",
    "upstream {svc} returned {code}",
    "slow query on {svc}: {n} ms",
    "config reloaded",
    "failed to parse header, using default",
    "token expired for user={user}",
    "[{lvl}] marker forwarded from {svc}",
    "{svc}: {lvl} forwarded",
    "health check ok",
    "queue depth {n}; consumer {svc} lagging",
    "{lvl} {svc} {lvl}",
]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
DELIMS = {";": "semicolons (`;`)", "|": "vertical bars (`|`)", "\t": "tab characters",
          ",": "commas (`,`)"}
FIELD_NAMES = {"ts": "TIMESTAMP", "level": "LEVEL", "service": "SERVICE"}


# --------------------------------------------------------------------------- formats

def make_format(rng: random.Random) -> dict:
    kind = rng.choice(["bracket", "delim", "kv", "syslog", "json"])
    fmt: dict = {"kind": kind}
    if kind == "delim":
        fmt["delim"] = rng.choice(sorted(DELIMS))
        order = ["ts", "level", "service"]
        rng.shuffle(order)
        fmt["order"] = order
    elif kind in ("kv", "json"):
        keys = {"ts": rng.choice(["ts", "time", "timestamp", "at"]),
                "level": rng.choice(["level", "lvl", "severity", "loglevel"]),
                "service": rng.choice(["service", "svc", "component", "app", "source"]),
                "msg": rng.choice(["msg", "message", "text", "detail"])}
        order = ["ts", "level", "service", "msg"]
        rng.shuffle(order)
        fmt["keys"] = keys
        fmt["order"] = order
    return fmt


def render(fmt: dict, rec: dict) -> str:
    y, mo, d, h, mi, s = rec["t"]
    iso = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z"
    kind = fmt["kind"]
    lvl, svc, msg = rec["level"], rec["service"], rec["msg"]
    if kind == "bracket":
        return f"{iso} [{lvl}] {svc}: {msg}"
    if kind == "delim":
        vals = {"ts": f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}", "level": lvl,
                "service": svc}
        return fmt["delim"].join([vals[k] for k in fmt["order"]] + [msg.replace("\t", " ")])
    if kind == "kv":
        keys = fmt["keys"]
        vals = {"ts": iso, "level": lvl, "service": svc, "msg": '"' + msg.replace('"', "'") + '"'}
        return " ".join(f"{keys[k]}={vals[k]}" for k in fmt["order"])
    if kind == "syslog":
        return (f"{MONTHS[mo - 1]} {d:2d} {h:02d}:{mi:02d}:{s:02d} {rec['host']} "
                f"{svc}[{rec['pid']}]: {lvl}: {msg}")
    if kind == "json":
        keys = fmt["keys"]
        vals = {"ts": iso, "level": lvl, "service": svc, "msg": msg}
        return json.dumps({keys[k]: vals[k] for k in fmt["order"]}, ensure_ascii=False)
    raise ValueError(kind)


def describe_format(fmt: dict) -> str:
    kind = fmt["kind"]
    if kind == "bracket":
        return ("`TIMESTAMP [LEVEL] SERVICE: MESSAGE`: the timestamp contains no spaces, the level "
                "is in square brackets, the service name is followed by a colon and a space, and the "
                "rest of the line is the free-text message.")
    if kind == "delim":
        names = ", ".join(FIELD_NAMES[k] for k in fmt["order"])
        return (f"four fields separated by {DELIMS[fmt['delim']]}: {names}, and then MESSAGE. The "
                f"message is always the last field and may itself contain the separator; the other "
                f"fields never do.")
    if kind == "kv":
        keys = fmt["keys"]
        order = " ".join(f"`{keys[k]}=...`" for k in fmt["order"])
        return (f"space-separated `key=value` pairs, always in this order: {order}. The level is the "
                f"value of `{keys['level']}`, the service the value of `{keys['service']}`. The "
                f"`{keys['msg']}` value is wrapped in double quotes and may contain spaces (but never "
                f"a double quote); the other values contain no spaces.")
    if kind == "syslog":
        return ("`MON DAY HH:MM:SS HOST SERVICE[PID]: LEVEL: MESSAGE` (syslog style; DAY is padded "
                "with a space to two characters, so a single-digit day is preceded by two spaces).")
    keys = fmt["keys"]
    order = ", ".join(f"`{keys[k]}`" for k in fmt["order"])
    return (f"one JSON object per line (JSON Lines) with the keys {order}. The level is the string "
            f"under `{keys['level']}`, the service the string under `{keys['service']}`.")


def parser_source(fmt: dict) -> str:
    """Python source of ``fields(line) -> (level, service) | None`` for the reference solution."""
    kind = fmt["kind"]
    if kind == "bracket":
        return ("RX = re.compile(r'^\\S+ \\[([^\\]]*)\\] (\\S+): ')\n"
                "def fields(line):\n"
                "    m = RX.match(line)\n"
                "    return (m.group(1), m.group(2)) if m else None\n")
    if kind == "delim":
        return (f"D = {fmt['delim']!r}\nIL = {fmt['order'].index('level')}\n"
                f"IS = {fmt['order'].index('service')}\n"
                "def fields(line):\n"
                "    parts = line.split(D, 3)\n"
                "    return (parts[IL], parts[IS]) if len(parts) == 4 else None\n")
    if kind == "kv":
        return (f"LK = {fmt['keys']['level']!r}\nSK = {fmt['keys']['service']!r}\n"
                "RX = re.compile(r'(\\w+)=(\"[^\"]*\"|\\S*)')\n"
                "def fields(line):\n"
                "    d = dict(RX.findall(line))\n"
                "    return (d[LK], d[SK]) if LK in d and SK in d else None\n")
    if kind == "syslog":
        return ("RX = re.compile(r'^[A-Z][a-z]{2} +\\d+ \\d\\d:\\d\\d:\\d\\d \\S+ '\n"
                "                r'([^\\[\\s]+)\\[\\d+\\]: (\\S+): ')\n"
                "def fields(line):\n"
                "    m = RX.match(line)\n"
                "    return (m.group(2), m.group(1)) if m else None\n")
    return (f"LK = {fmt['keys']['level']!r}\nSK = {fmt['keys']['service']!r}\n"
            "def fields(line):\n"
            "    if not line.strip():\n"
            "        return None\n"
            "    o = json.loads(line)\n"
            "    return (o.get(LK), o.get(SK))\n")


# --------------------------------------------------------------------------- criteria

def make_criterion(rng: random.Random, levels: list[str], services: list[str]) -> dict:
    kind = rng.choice(["level", "service", "level_service", "levels", "service_not_level",
                       "level_not_service"])
    two = rng.sample(levels, 2)
    return {"kind": kind, "level": two[0], "level2": two[1], "service": rng.choice(services)}


def matches(c: dict, level: str, service: str) -> bool:
    k = c["kind"]
    if k == "level":
        return level == c["level"]
    if k == "service":
        return service == c["service"]
    if k == "level_service":
        return level == c["level"] and service == c["service"]
    if k == "levels":
        return level in (c["level"], c["level2"])
    if k == "service_not_level":
        return service == c["service"] and level != c["level"]
    return level == c["level"] and service != c["service"]


def criterion_source(c: dict) -> str:
    k, L, L2, S = c["kind"], c["level"], c["level2"], c["service"]
    expr = {"level": f"level == {L!r}", "service": f"service == {S!r}",
            "level_service": f"level == {L!r} and service == {S!r}",
            "levels": f"level in ({L!r}, {L2!r})",
            "service_not_level": f"service == {S!r} and level != {L!r}",
            "level_not_service": f"level == {L!r} and service != {S!r}"}[k]
    return f"def wanted(level, service):\n    return {expr}\n"


def describe_criterion(c: dict) -> str:
    k, L, L2, S = c["kind"], c["level"], c["level2"], c["service"]
    return {"level": f"whose level is exactly `{L}` (any service)",
            "service": f"whose service is exactly `{S}` (any level)",
            "level_service": f"whose level is exactly `{L}` AND whose service is exactly `{S}`",
            "levels": f"whose level is exactly `{L}` or exactly `{L2}` (any service)",
            "service_not_level": f"whose service is exactly `{S}` and whose level is anything "
                                 f"other than `{L}`",
            "level_not_service": f"whose level is exactly `{L}` and whose service is anything "
                                 f"other than `{S}`"}[k]


# --------------------------------------------------------------------------- data

def make_record(rng, levels, services, lvl_weights, msg_levels, msg_services) -> dict:
    tmpl = rng.choice(MESSAGES)
    msg = tmpl.format(n=rng.randint(1, 9999), user=rng.choice(USERS),
                      key=f"k{rng.randint(100, 999)}", pct=rng.randint(1, 99),
                      code=rng.choice([200, 404, 500, 503]),
                      svc=rng.choice(msg_services), lvl=rng.choice(msg_levels))
    return {"t": (2024, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                  rng.randint(0, 59), rng.randint(0, 59)),
            "level": rng.choices(levels, lvl_weights)[0], "service": rng.choice(services),
            "msg": msg, "host": f"node{rng.randint(1, 9)}", "pid": rng.randint(100, 65000)}


def make_log(rng, fmt, crit, levels, services, n, *, blank_p=0.0, lookalikes=False,
             no_final_newline=False, no_match=False) -> tuple[str, int]:
    lv, sv = list(levels), list(services)
    if lookalikes:
        L, S = crit["level"], crit["service"]
        extra_l = [L + ("s" if L.islower() else "S"), L.capitalize() if L.isupper() else L.upper()]
        for a, b in (("WARN", "WARNING"), ("warn", "warning")):
            if L == a:
                extra_l.append(b)
            if L == b:
                extra_l.append(a)
        lv += [x for x in extra_l if x not in lv]
        sv += [x for x in (S + "-v2", "x" + S, S.upper(), S + "_old") if x not in sv]
    weights = [rng.randint(1, 6) for _ in lv]
    msg_levels = lv + [crit["level"]] * 3
    msg_services = sv + [crit["service"]] * 3
    recs = []
    while len(recs) < n:
        r = make_record(rng, lv, sv, weights, msg_levels, msg_services)
        if no_match and matches(crit, r["level"], r["service"]):
            continue
        recs.append(r)
    if no_final_newline and n:
        while True:
            r = make_record(rng, lv, sv, weights, msg_levels, msg_services)
            if matches(crit, r["level"], r["service"]):
                recs[-1] = r
                break
    lines = []
    for r in recs:
        if blank_p and rng.random() < blank_p:
            lines.append("")
        lines.append(render(fmt, r))
    count = sum(matches(crit, r["level"], r["service"]) for r in recs)
    text = "\n".join(lines)
    if lines and not no_final_newline:
        text += "\n"
    return text, count


# --------------------------------------------------------------------------- levels

LOGNAMES = ["app", "service", "server", "events", "prod", "backend", "cluster"]
LOG_SIZES = {1: (20, 40), 2: (60, 150), 3: (150, 300)}
"""Lines of a workspace log (each of the rotated files at level 3), by level."""
BLANK_PS = {1: [0.0], 2: [0.0, 0.03], 3: [0.03, 0.06]}
"""Choices of the chance of a blank line before each line of a workspace log, by level."""
ONE_FIELD = {"level": "level", "service": "service", "level_service": "level", "levels": "level",
             "service_not_level": "service", "level_not_service": "level"}
"""Level 1's criterion: the same seed's criterion cut down to its first field."""
SPACES = [" ", "  ", "\t", " \t "]


def log_with_matches(rng, fmt, crit, levels, services, sizes, blank_ps, at_least,
                     log=make_log) -> tuple[str, int]:
    """A log of ``sizes`` lines (a randint range) with an answer of at least ``at_least``
    (``log`` makes it: ``make_log``, or ``heldout_log`` for a held-out template)."""
    while True:
        text, count = log(rng, fmt, crit, levels, services, rng.randint(*sizes),
                          blank_p=rng.choice(blank_ps))
        if count >= at_least:
            return text, count


def hidden_cases(rng, level, fmt, crit, levels, services, log=make_log) -> list[dict]:
    """The fresh logs the hidden tests run the script on: level 1 ordinary logs and an empty
    one, level 2 adds look-alikes, blank lines, a missing final newline and no match, level 3
    longer ordinary logs, CRLF line endings, lines of spaces, only blank lines and a large log.
    ``log`` makes each log (see ``log_with_matches``)."""

    def case(id, mark, sizes, **kw):
        text, count = log(rng, fmt, crit, levels, services, rng.randint(*sizes), **kw)
        return {"id": id, "mark": mark, "text": text, "count": count}

    ordinary = {1: (15, 40), 2: (40, 120), 3: (150, 400)}[level]
    cases = [case(f"random{i}", "core", ordinary) for i in range(2)]
    if level >= 2:
        cases.append(case("lookalikes_blank_lines_no_final_newline", "boundary", (50, 90),
                          blank_p=0.08, lookalikes=True, no_final_newline=True))
        cases.append(case("nothing_matches", "boundary", (10, 30), lookalikes=True,
                          no_match=True))
    cases.append({"id": "empty_log", "mark": "boundary", "text": "", "count": 0})
    if level == 3:
        crlf = case("crlf_line_endings", "boundary", (50, 90), blank_p=0.05, lookalikes=True)
        crlf["text"] = crlf["text"].replace("\n", "\r\n")
        spaces = case("lines_of_spaces", "boundary", (50, 90), lookalikes=True)
        spaces["text"] = add_space_lines(rng, spaces["text"], 0.15)
        blank = {"id": "only_blank_lines", "mark": "boundary", "count": 0,
                 "text": "\n".join(rng.choice(["", *SPACES]) for _ in range(6)) + "\n"}
        cases += [crlf, spaces, blank, case("large_log", "core", (800, 1200), blank_p=0.01)]
    return cases


def add_space_lines(rng, text: str, p: float) -> str:
    """``text`` with a line of only spaces and tabs before each line, with chance ``p``."""
    out = []
    for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
        if rng.random() < p:
            out.append(rng.choice(SPACES))
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def rotated_and_distractors(rng, scene, log_path, text,
                            log=make_log) -> tuple[dict[str, int], dict[str, bytes]]:
    """Level 3's log directory: ``({rotated path: matching lines}, {path: bytes})`` where the
    second holds every log (the current one, ``.1`` with CRLF endings, ``.2.gz``, and two
    distractors that must not be counted: a stale ``.bak`` copy and another application's log).
    ``log`` makes each log (see ``log_with_matches``)."""
    old, n_old = log_with_matches(rng, *scene, LOG_SIZES[3], BLANK_PS[3], 1, log)
    older, n_older = log_with_matches(rng, *scene, LOG_SIZES[3], BLANK_PS[3], 1, log)
    backup, _ = log_with_matches(rng, *scene, (40, 80), [0.0], 2, log)
    other_app, _ = log_with_matches(rng, *scene, (40, 80), [0.0], 2, log)
    logdir, logname = log_path.rsplit("/", 1)
    other = rng.choice([x for x in LOGNAMES if f"{x}.log" != logname])
    rotated = {f"{log_path}.1": n_old, f"{log_path}.2.gz": n_older}
    logs = {log_path: text.encode(),
                  f"{log_path}.1": old.replace("\n", "\r\n").encode(),
                  f"{log_path}.2.gz": gzip_stored(add_space_lines(rng, older, 0.03).encode()),
                  f"{log_path}.bak": backup.encode(),
                  f"{logdir}/{other}.log": other_app.encode()}
    return rotated, logs


def gzip_stored(data: bytes) -> bytes:
    """``data`` as a gzip file of stored (uncompressed) deflate blocks: the same bytes on every
    machine, unlike compressed output, which depends on the zlib build."""
    out = bytearray(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")  # no name, mtime 0
    blocks = [data[i:i + 0xFFFF] for i in range(0, len(data), 0xFFFF)] or [b""]
    for i, block in enumerate(blocks):
        out.append(i == len(blocks) - 1)  # BFINAL on the last block, BTYPE 00 (stored)
        out += struct.pack("<HH", len(block), len(block) ^ 0xFFFF) + block
    out += struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return bytes(out)


def skeleton(mode: str) -> str:
    """Level 1's script to complete: the input and the count are done, ``matches`` is not."""
    read = ("open(sys.argv[1], 'rb').read()" if mode == "arg" else "sys.stdin.buffer.read()")
    return f"""\
#!/usr/bin/env python3
import json
import re
import sys


def matches(line):
    \"\"\"True if this log line (without its newline) is one to count.\"\"\"
    raise NotImplementedError("complete matches(line)")


def main():
    data = {read}
    lines = data.decode("utf-8", "replace").split("\\n")
    print(sum(1 for line in lines if line and matches(line)))


main()
"""


def total_of_rotated(script: str, mode: str, log_path: str, output: str) -> str:
    """Bash lines of level 3's reference: run the script on the three rotated files, sum."""
    def run(path):
        return f"./'{script}' '{path}'" if mode == "arg" else f"./'{script}' < '{path}'"

    gz = f"gzip -dc '{log_path}.2.gz' | " + (f"./'{script}' /dev/stdin" if mode == "arg"
                                             else f"./'{script}'")
    return (f"a=$({run(log_path)})\nb=$({run(log_path + '.1')})\nc=$({gz})\n"
            f"echo $((a + b + c)) > '{output}'\n")


TEST_BODY = r'''
import re
import subprocess
from pathlib import Path

import pytest

WORKDIR = Path.cwd()
SCRIPT = WORKDIR / CONFIG["script"]


def run_script(tmp_path, text):
    log = tmp_path / "fresh_input.log"
    log.write_bytes(text.encode("utf-8"))
    if CONFIG["mode"] == "arg":
        r = subprocess.run([str(SCRIPT), str(log)], cwd=tmp_path, capture_output=True, timeout=30)
    else:
        with open(log, "rb") as fh:
            r = subprocess.run([str(SCRIPT)], cwd=tmp_path, stdin=fh, capture_output=True,
                               timeout=30)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-2000:]
    out = r.stdout.decode("utf-8", "replace").strip()
    assert re.fullmatch(r"[0-9]+", out), f"expected one integer, got {out[:200]!r}"
    return int(out)


@pytest.mark.core
def test_output_file_has_count_of_workspace_log():
    p = WORKDIR / CONFIG["output"]
    assert p.is_file(), f"{CONFIG['output']} is missing"
    text = p.read_text(encoding="utf-8", errors="replace").strip()
    assert re.fullmatch(r"[0-9]+", text), f"not a single integer: {text[:200]!r}"
    assert int(text) == CONFIG["expected"]


def _cases(mark):
    return [pytest.param(c["text"], c["count"], id=c["id"]) for c in CONFIG["cases"]
            if c["mark"] == mark]


@pytest.mark.core
@pytest.mark.parametrize("text,count", _cases("core"))
def test_script_on_fresh_logs(tmp_path, text, count):
    assert run_script(tmp_path, text) == count


@pytest.mark.boundary
@pytest.mark.parametrize("text,count", _cases("boundary"))
def test_script_on_edge_case_logs(tmp_path, text, count):
    assert run_script(tmp_path, text) == count
'''


# --------------------------------------------------------------------------- held-out templates
#
# Held-out seeds ask a different question about a different log: a web service's request log
# whose records also carry an HTTP status, in a format no train seed uses (logfmt, CSV with a
# header, LTSV). The question is one of HELDOUT_KINDS, none of which a train seed asks.

HELDOUT_KINDS = ("level_at_least", "status_class", "message_word", "hour_range",
                 "distinct_services")
HELDOUT_KEYS = {"ts": ["time", "ts", "timestamp", "at"], "level": ["level", "lvl", "severity"],
                "service": ["service", "svc", "app", "component"],
                "status": ["status", "code", "http_status", "resp"],
                "msg": ["msg", "message", "text"]}
STATUSES = [200, 201, 204, 301, 302, 304, 400, 401, 403, 404, 409, 429, 500, 502, 503, 504]
STATUS_CLASSES = {"2": "a success (`2xx`: 200 to 299)", "4": "a client error (`4xx`: 400 to 499)",
                  "5": "a server error (`5xx`: 500 to 599)",
                  "45": "400 or higher (a `4xx` client error or a `5xx` server error)"}
WORDS = ["timeout", "retry", "cache", "token", "queue", "quota", "session", "backup", "search",
         "refund", "upload", "lock"]
WORD_FORMS = ["{w}", "{w}", "{u}", "{c}", "({w})", "{w}:", "{w}-{o}", "'{c}'", "{w}s", "pre_{w}",
              "{w}_id", "{w}2", "{o}{w}", "{u}ED"]
"""How a word appears in a message: as a whole word (in any case, next to punctuation) or inside
a longer word (which never counts)."""
HELDOUT_MESSAGES = [
    "GET /api/{key} took {n} ms",
    "upstream {svc} answered {code}",
    "proxy saw {skv} {lkv} from {svc}",
    "{lvl}: {word} while calling {svc}",
    "{word} after {n} ms, giving up",
    "nightly job ran at {clock}",
    'client sent "{word}", rejected',
    "{svc}, {svc}: handshake done",
    "user {user} hit the {word} limit (HTTP {code})",
    "no {word} configured; using C:\\{key}\\defaults",
    "{code} {lvl} {svc} {clock}",
    "ok",
    "payload parsed: café ☕ naïve",
    "retry {n}/5 [{lvl}] {word}",
]


def make_heldout_format(rng: random.Random) -> dict:
    order = ["ts", "level", "service", "status", "msg"]
    kind = rng.choice(["logfmt", "csv", "ltsv"])
    keys = {k: rng.choice(names) for k, names in HELDOUT_KEYS.items()}
    rng.shuffle(order)
    return {"kind": kind, "keys": keys, "order": order}


def make_heldout_criterion(rng: random.Random, levels: list[str], services: list[str]) -> dict:
    """A held-out question; ``levels`` is in severity order. Every value is drawn whatever the
    kind, so a seed's scenario does not depend on which kind it drew."""
    kind = rng.choice(HELDOUT_KINDS)
    at = rng.randint(1, len(levels) - 1)
    start, width = rng.randint(0, 23), rng.randint(1, 5)
    return {"kind": kind, "levels": list(levels), "severe": levels[at:], "level": rng.choice(levels),
            "classes": rng.choice(sorted(STATUS_CLASSES)), "word": rng.choice(WORDS),
            "hours": (start, (start + width) % 24), "service": rng.choice(services)}


def heldout_level_one(c: dict) -> dict:
    """Level 1's question: one status class, and an hour window that does not wrap past midnight."""
    start, end = c["hours"]
    return dict(c, classes=c["classes"][-1], hours=(start, end if end > start else 23))


def in_hours(c: dict, hour: int) -> bool:
    start, end = c["hours"]
    return start <= hour <= end if start <= end else hour >= start or hour <= end


def word_rx(word: str) -> str:
    return rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])"


def heldout_hit(c: dict, rec: dict) -> bool:
    """Whether the record is one the answer counts (for distinct_services: one whose service it
    counts)."""
    k = c["kind"]
    if k == "level_at_least":
        return rec["level"] in c["severe"]
    if k == "status_class":
        return rec["status"].isdigit() and rec["status"][0] in c["classes"]
    if k == "message_word":
        return re.search(word_rx(c["word"]), rec["msg"], re.IGNORECASE) is not None
    if k == "hour_range":
        return in_hours(c, rec["t"][3])
    return rec["level"] == c["level"]


class Answer(int):
    """A log's answer that keeps the records it counts, so that ``Answer.of`` can give the answer
    for several logs read as one (the union of services for distinct_services, not a sum)."""

    hits: list

    @classmethod
    def of(cls, c: dict, recs: list[dict]) -> Answer:
        hits = [r for r in recs if heldout_hit(c, r)]
        n = len({r["service"] for r in hits}) if c["kind"] == "distinct_services" else len(hits)
        answer = cls(n)
        answer.hits = hits
        return answer


def logfmt_value(v: str) -> str:
    if v and not any(ch in v for ch in ' "=\\'):
        return v
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def csv_value(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"') else v


def heldout_header(fmt: dict) -> str | None:
    """The CSV header line (None for the other formats)."""
    return ",".join(fmt["keys"][k] for k in fmt["order"]) if fmt["kind"] == "csv" else None


def heldout_render(fmt: dict, rec: dict) -> str:
    y, mo, d, h, mi, s = rec["t"]
    keys, kind = fmt["keys"], fmt["kind"]
    vals = {"ts": f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}Z", "level": rec["level"],
            "service": rec["service"], "status": rec["status"], "msg": rec["msg"]}
    if kind == "logfmt":
        vals["msg"] = logfmt_value(rec["msg"])
        return " ".join(f"{keys[k]}={vals[k]}" for k in fmt["order"])
    if kind == "csv":
        vals["ts"] = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
        vals["msg"] = csv_value(rec["msg"])
        return ",".join(vals[k] for k in fmt["order"])
    vals["ts"] = f"[{d:02d}/{MONTHS[mo - 1]}/{y:04d}:{h:02d}:{mi:02d}:{s:02d} +0000]"
    return "\t".join(f"{keys[k]}:{vals[k]}" for k in fmt["order"])


def describe_heldout_format(fmt: dict) -> str:
    keys, kind = fmt["keys"], fmt["kind"]
    names = {"ts": "timestamp", "level": "level", "service": "service", "status": "HTTP status",
             "msg": "message"}
    fields = ", ".join(f"`{keys[k]}` (the {names[k]})" for k in fmt["order"])
    if kind == "logfmt":
        return (f"logfmt: `key=value` pairs separated by single spaces, always the keys {fields}, "
                f"in that order. A value that contains a space, `=`, `\"` or `\\` is written in "
                f"double quotes, with `\\\"` for a double quote and `\\\\` for a backslash inside "
                f"them; other values are written bare. Only the message is ever quoted. The "
                f"timestamp looks like `2024-03-05T14:22:01Z`.")
    if kind == "csv":
        return (f"CSV. The first line of the file is the header `{heldout_header(fmt)}`; every "
                f"other non-blank line is one record with the columns {fields}. A message that "
                f"contains a comma or a double quote is enclosed in double quotes, and a double "
                f"quote inside it is doubled (`\"\"`); no other column is ever quoted. The timestamp "
                f"looks like `2024-03-05 14:22:01`. The header is not a record.")
    return (f"LTSV (labeled tab-separated values): `label:value` fields separated by tab "
            f"characters, always the labels {fields}, in that order. A label ends at the first "
            f"colon of its field; the value may contain colons and spaces but never a tab. The "
            f"timestamp looks like `[05/Mar/2024:14:22:01 +0000]`.")


def heldout_question(c: dict) -> str:
    k = c["kind"]
    if k == "level_at_least":
        return f"the number of records whose level is `{c['severe'][0]}` or more severe"
    if k == "status_class":
        return f"the number of records whose HTTP status is {STATUS_CLASSES[c['classes']]}"
    if k == "message_word":
        return (f"the number of records whose message contains the word `{c['word']}` as a whole "
                f"word, in any letter case")
    if k == "hour_range":
        start, end = c["hours"]
        if start <= end:
            return (f"the number of records whose timestamp is from {start:02d}:00:00 to "
                    f"{end:02d}:59:59 inclusive, on any day")
        return (f"the number of records whose timestamp is from {start:02d}:00:00 to "
                f"{end:02d}:59:59 inclusive across midnight (so {start:02d}:00:00 to 23:59:59 or "
                f"00:00:00 to {end:02d}:59:59), on any day")
    return (f"the number of different services that wrote at least one record at level "
            f"`{c['level']}` (services, not records)")


def heldout_rules(c: dict) -> str:
    k = c["kind"]
    if k == "level_at_least":
        order = " < ".join(f"`{x}`" for x in c["levels"])
        return (f"From least to most severe, this application's levels are {order}. A level is "
                f"matched as a whole field, exactly and case-sensitively: any other level value "
                f"never counts, and level names inside a message do not count.")
    if k == "status_class":
        return ("The status is its own field: three digits, or `-` when no response was sent "
                "(which never counts). Numbers in the message, even ones that look like a status, "
                "do not count.")
    if k == "message_word":
        w = c["word"]
        return (f"Only the message is searched, never the service or another field. A whole word: "
                f"the characters right before and after it (if any) are not letters, digits or "
                f"underscores, so `{w.upper()}`, `({w})` and `{w}-x` count but `{w}s`, `pre_{w}` "
                f"and `x{w}` do not.")
    if k == "hour_range":
        return ("Only the hour of the record's own timestamp field matters; times written inside "
                "a message do not count.")
    return (f"Service names are whole fields, compared exactly and case-sensitively (`api` and "
            f"`api-v2` are two services). The level `{c['level']}` is matched exactly and "
            f"case-sensitively; level names inside a message do not count.")


def heldout_record(rng, fmt, c, levels, services, weights, msg_levels, lookalikes) -> dict:
    """One request record. Its message mentions levels, services, status codes, clock times,
    ``key=value`` look-alikes of the format and forms of a word (of ``c['word']`` half the time)."""
    start, end = c["hours"]
    word = c["word"] if rng.random() < 0.5 else rng.choice(WORDS)
    form = rng.choice(WORD_FORMS).format(w=word, u=word.upper(), c=word.capitalize(),
                                         o=rng.choice(WORDS))
    code = rng.choice(STATUSES)
    sep = {"logfmt": "=", "ltsv": ":", "csv": ","}[fmt["kind"]]
    clock_hour = rng.choice([start, end]) if lookalikes else rng.randint(0, 23)
    msg = rng.choice(HELDOUT_MESSAGES).format(
        n=rng.randint(1, 9999), user=rng.choice(USERS), key=f"k{rng.randint(100, 999)}",
        code=code, svc=rng.choice(services), lvl=rng.choice(msg_levels), word=form,
        clock=f"{clock_hour:02d}:{rng.randint(0, 59):02d}",
        skv=f"{fmt['keys']['status']}{sep}{code}",
        lkv=f"{fmt['keys']['level']}{sep}{rng.choice(msg_levels)}")
    hour = rng.randint(0, 23)
    if lookalikes and rng.random() < 0.4:
        hour = rng.choice([(start - 1) % 24, start, end, (end + 1) % 24])
    edge = [0, 59] if lookalikes else range(60)
    minute, second = rng.choice(edge), rng.choice(edge)
    status = "-" if rng.random() < 0.05 else str(rng.choice(STATUSES))
    return {"t": (2024, rng.randint(1, 12), rng.randint(1, 28), hour, minute, second),
            "level": rng.choices(levels, weights)[0], "service": rng.choice(services),
            "status": status, "msg": msg}


def heldout_lookalikes(c: dict, levels: list[str], services: list[str]) -> tuple[list, list]:
    """``levels`` and ``services`` plus names that look like the ones asked about: other cases
    and suffixes of the severe or asked level, variants of a service, the word as a service."""
    extra_l = []
    for name in (c["severe"][0], c["severe"][-1], c["level"]):
        extra_l += [name + ("s" if name.islower() else "S"),
                    name.capitalize() if name.isupper() else name.upper()]
    S = c["service"]
    extra_s = [S + "-v2", "x" + S, S.upper(), c["word"]]
    return (levels + [x for x in dict.fromkeys(extra_l) if x not in levels],
            services + [x for x in dict.fromkeys(extra_s) if x not in services])


def heldout_log(rng, fmt, c, levels, services, n, *, blank_p=0.0, lookalikes=False,
                no_final_newline=False, no_match=False, parts=1) -> tuple[str, Answer]:
    """A held-out log of ``n`` records and its answer (``make_log``'s counterpart); ``parts`` > 1
    joins that many logs (each with its CSV header)."""
    lv, sv = heldout_lookalikes(c, levels, services) if lookalikes else (list(levels), list(services))
    weights = [rng.randint(1, 6) for _ in lv]
    msg_levels = lv + [c["severe"][0], c["level"]] * 2
    recs = []
    while len(recs) < n:
        r = heldout_record(rng, fmt, c, lv, sv, weights, msg_levels, lookalikes)
        if not (no_match and heldout_hit(c, r)):
            recs.append(r)
    while no_final_newline and n and not heldout_hit(c, recs[-1]):
        recs[-1] = heldout_record(rng, fmt, c, lv, sv, weights, msg_levels, lookalikes)
    starts = {j * n // parts for j in range(parts)} if heldout_header(fmt) else set()
    lines = []
    for i, r in enumerate(recs):
        if i in starts:
            lines.append(heldout_header(fmt))
        if blank_p and rng.random() < blank_p:
            lines.append("")
        lines.append(heldout_render(fmt, r))
    text = "\n".join(lines) + ("\n" if lines and not no_final_newline else "")
    return text, Answer.of(c, recs)


def heldout_parser_source(fmt: dict) -> str:
    """Python source of ``parse(line) -> record dict | None`` for the reference solution."""
    keys = {k: fmt["keys"][k] for k in ("ts", "level", "service", "status", "msg")}
    head = f"K = {keys!r}\n"
    if fmt["kind"] == "logfmt":
        return head + ("PAIR = re.compile(r'([^\\s=]+)=(\"(?:[^\"\\\\]|\\\\.)*\"|[^\\s\"]*)')\n\n\n"
                       "def parse(line):\n"
                       "    d = {}\n"
                       "    for key, value in PAIR.findall(line):\n"
                       "        if value.startswith('\"'):\n"
                       "            value = re.sub(r'\\\\(.)', r'\\1', value[1:-1])\n"
                       "        d[key] = value\n"
                       "    if any(name not in d for name in K.values()):\n"
                       "        return None\n"
                       "    r = {field: d[name] for field, name in K.items()}\n"
                       "    r['hour'] = int(r['ts'][11:13])\n"
                       "    return r\n")
    if fmt["kind"] == "csv":
        return head + (f"HEADER = {[fmt['keys'][k] for k in fmt['order']]!r}\n\n\n"
                       "def parse(line):\n"
                       "    row = next(csv.reader([line]))\n"
                       "    if len(row) != len(HEADER) or row == HEADER:\n"
                       "        return None\n"
                       "    d = dict(zip(HEADER, row))\n"
                       "    r = {field: d[name] for field, name in K.items()}\n"
                       "    r['hour'] = int(r['ts'][11:13])\n"
                       "    return r\n")
    return head + ("\n\ndef parse(line):\n"
                   "    d = dict(f.split(':', 1) for f in line.split('\\t') if ':' in f)\n"
                   "    if any(name not in d for name in K.values()):\n"
                   "        return None\n"
                   "    r = {field: d[name] for field, name in K.items()}\n"
                   "    r['hour'] = int(r['ts'].split(':')[1])\n"
                   "    return r\n")


def heldout_wanted_source(c: dict) -> str:
    """Python source of ``wanted(record)`` and ``ANSWER`` (the expression printed, over ``hits``)."""
    k = c["kind"]
    answer = "ANSWER = len\n"
    if k == "level_at_least":
        body = f"SEVERE = {tuple(c['severe'])!r}\n\n\ndef wanted(r):\n    return r['level'] in SEVERE\n"
    elif k == "status_class":
        body = (f"CLASSES = {c['classes']!r}\n\n\ndef wanted(r):\n"
                "    return r['status'].isdigit() and r['status'][0] in CLASSES\n")
    elif k == "message_word":
        body = (f"WORD = re.compile(r'{word_rx(c['word'])}', re.IGNORECASE)\n\n\n"
                "def wanted(r):\n    return WORD.search(r['msg']) is not None\n")
    elif k == "hour_range":
        start, end = c["hours"]
        test = (f"{start} <= r['hour'] <= {end}" if start <= end
                else f"r['hour'] >= {start} or r['hour'] <= {end}")
        body = f"def wanted(r):\n    return {test}\n"
    else:
        body = f"def wanted(r):\n    return r['level'] == {c['level']!r}\n"
        answer = "def ANSWER(hits):\n    return len({r['service'] for r in hits})\n"
    return body + "\n\n" + answer


def heldout_solver(fmt: dict, c: dict) -> str:
    return ("#!/usr/bin/env python3\nimport csv\nimport re\nimport sys\n\n"
            + heldout_parser_source(fmt) + "\n\n" + heldout_wanted_source(c) + "\n\n"
            "def main():\n"
            "    raw = open(sys.argv[1], 'rb').read() if len(sys.argv) > 1 else sys.stdin.buffer.read()\n"
            "    hits = []\n"
            "    for line in raw.decode('utf-8', 'replace').split('\\n'):\n"
            "        line = line.rstrip('\\r')\n"
            "        record = parse(line) if line.strip() else None\n"
            "        if record is not None and wanted(record):\n"
            "            hits.append(record)\n"
            "    print(ANSWER(hits))\n\n\nmain()\n")


def heldout_skeleton(mode: str, c: dict) -> tuple[str, str]:
    """Level 1's program to complete and the name of its one unfinished function."""
    read = "open(sys.argv[1], 'rb').read()" if mode == "arg" else "sys.stdin.buffer.read()"
    if c["kind"] == "distinct_services":
        func, doc = "counted_service", ("The service of this record (one line, without its "
                                        "newline) if the record counts, else None.")
        total = "len({s for s in map(counted_service, lines) if s is not None})"
    else:
        func, doc = "counts", "True if this record (one line, without its newline) counts."
        total = "sum(1 for line in lines if counts(line))"
    return func, f"""\
#!/usr/bin/env python3
import csv
import re
import sys


def {func}(line):
    \"\"\"{doc}\"\"\"
    raise NotImplementedError("write {func}(line)")


def main():
    raw = {read}
    lines = [line for line in raw.decode("utf-8", "replace").split("\\n") if line.strip()]
    print({total})


main()
"""


def heldout_task(rng: random.Random, level: int) -> dict:
    """A held-out seed's task (``LogsCount.build``'s counterpart): the same steps per level as
    the train templates, asking one of ``HELDOUT_KINDS`` about a held-out format."""
    fmt = make_heldout_format(rng)
    levels = sorted(rng.sample(LEVELS, rng.randint(4, 6)), key=LEVELS.index)
    if rng.choice(["upper", "upper", "lower"]) == "lower":
        levels = [x.lower() for x in levels]
    services = rng.sample(SERVICES, rng.randint(4, 7))
    crit = make_heldout_criterion(rng, levels, services)
    if level == 1:
        crit = heldout_level_one(crit)
    script = rng.choice(["count_matches.sh", "count.sh", "tally.sh", "logcount", "match_count.py",
                         "count_lines.sh", "filter_count"])
    mode = rng.choice(["arg", "stdin"])
    logdir = rng.choice(["logs", "var/log", "data", "input"])
    log_path = f"{logdir}/{rng.choice(LOGNAMES)}.log"
    output = rng.choice(["answer.txt", "count.txt", "result.txt", "matches.txt", "out/count.txt",
                         "report/total.txt"])
    scene = (fmt, crit, levels, services)
    at_least = 2 if crit["kind"] == "distinct_services" else 3
    text, expected = log_with_matches(rng, *scene, LOG_SIZES[level], BLANK_PS[level], at_least,
                                      heldout_log)
    cases = hidden_cases(rng, level, *scene, log=heldout_log)
    if level == 3:
        joined = heldout_log(rng, *scene, rng.randint(60, 120), blank_p=0.03, lookalikes=True,
                             parts=2)
        cases.append({"id": "two_logs_joined", "mark": "boundary", "text": joined[0],
                      "count": joined[1]})
        text = add_space_lines(rng, text, 0.03)
    cases = [dict(c, count=int(c["count"])) for c in cases]

    shown = [line for line in text.splitlines() if line.strip()][:4 if fmt["kind"] == "csv" else 3]
    how = ("reads the log file named by its only command-line argument" if mode == "arg"
           else "reads the log from standard input (it gets no arguments)")
    mkdir_note = " (make the directory if it does not exist)" if "/" in output else ""
    usage = f"./{script} {log_path}" if mode == "arg" else f"./{script} < {log_path}"
    question = heldout_question(crit)
    head = f"""\
`{log_path}` is the request log of a web service, one record per line, in this format:
{describe_heldout_format(fmt)}

The file begins like this:

{md_code(chr(10).join(shown))}

"""
    program = f"""\
Create `{script}`, an executable program in the current directory (any language; give it a
shebang line and the executable bit). It {how} and prints {question}:
one integer and a newline. It will also be run on other logs in this format, so build
nothing about this particular file into it.
"""
    store = f"""
Then store what it prints for `{log_path}` in `{output}`{mkdir_note}, e.g. `{usage} > {output}`.
"""
    rules = f"""
{heldout_rules(crit)}
Blank lines are not records. The last line may have no newline at its end. A log with no
records gives 0.
"""
    workspace = files({log_path: text})
    config = {"script": script, "mode": mode, "output": output, "expected": int(expected),
              "cases": cases}
    test_body = TEST_BODY
    if level == 1:
        func, stub = heldout_skeleton(mode, crit)
        workspace = files({log_path: text, script: stub}, executable=(script,))
        reads = ("the log file named by its only command-line argument" if mode == "arg"
                 else "the log from standard input")
        prints = ("how many distinct values other than None it returned"
                  if crit["kind"] == "distinct_services" else "how many lines it returned True for")
        program = f"""\
`{script}` in the current directory is a Python program, already executable and finished
except for one function, `{func}(line)`: it reads {reads}, calls `{func}` on every
non-blank line and prints {prints}. Write `{func}` so that the
program prints {question}.
It must work for any log in this format, not only for this file.
"""
        rules = f"""
{heldout_rules(crit)}
An empty log gives 0.
"""
    elif level == 3:
        rotated, logs = rotated_and_distractors(rng, scene, log_path, text, heldout_log)
        workspace = {path: TaskFile(data) for path, data in logs.items()}
        config["expected"] = int(Answer.of(crit, expected.hits + [r for a in rotated.values()
                                                                  for r in a.hits]))
        config["left_alone"] = left_alone(logs)
        test_body = TEST_BODY + LEFT_ALONE_TEST
        others = " and ".join(f"`{p}`" for p in logs if p not in rotated and p != log_path)
        once = (" (a service found in several of them is still one service)"
                if crit["kind"] == "distinct_services" else "")
        store = f"""
The log has been rotated: older records are in `{log_path}.1` and, compressed with gzip, in
`{log_path}.2.gz`. Store in `{output}`{mkdir_note} the answer for these three files taken
together as one log{once}, one integer.
Leave {others} out of it, and leave every file in `{logdir}/` exactly as it is: do not
change, move, delete or unpack any of them in place.
"""
        rules += """Lines may end with `\\r\\n`: the `\\r` is part of no field. A line of only spaces or
tabs is a blank line too.
"""
    solver = heldout_solver(fmt, crit)
    run = f"./'{script}' /dev/stdin" if mode == "arg" else f"./'{script}'"
    solution = ("#!/bin/bash\nset -e\n" + heredoc(script, solver, executable=True)
                + f"mkdir -p \"$(dirname '{output}')\"\n")
    if level == 3:
        solution += (f"{{ gzip -dc '{log_path}.2.gz'; cat '{log_path}.1' '{log_path}'; }} "
                     f"| {run} > '{output}'\n")
    else:
        solution += (f"./'{script}' '{log_path}' > '{output}'\n" if mode == "arg"
                     else f"./'{script}' < '{log_path}' > '{output}'\n")
    return {
        "instruction": head + program + store + rules,
        "workspace": workspace,
        "tests": files({"test_logs_count.py": hidden_test_source(config, test_body)}),
        "solution": solution,
        "tags": ["logs", "text", "parsing", fmt["kind"], crit["kind"]],
        "template": crit["kind"],
    }


class LogsCount(Family):
    name = "logs-count"
    category = "shell"
    description = ("Write a script that counts the log lines matching a level/service criterion "
                   "in a seeded log format, and record the count for a given log (held-out: other "
                   "questions about request logs in other formats).")
    difficulty = "easy"
    levels: ClassVar[dict[int, str]] = {
        1: "a one-field criterion (level or service), a short log, a Python skeleton that already "
           "reads the input and prints the count, and hidden logs of ordinary lines plus an empty one "
           "(held-out: the same skeleton for its question, one status class, no hour window past midnight)",
        2: "the family as it always was: write the script from scratch, run it on one log, hidden "
           "logs with look-alike names, blank lines, no match and an empty log",
        3: "longer logs, rotated into three files (one gzip-compressed, one with CRLF endings) whose "
           "total is asked for, distractor logs that must not be counted, every log left unchanged, "
           "and more hidden edge cases (CRLF, lines of spaces, only blank lines, a large log; "
           "held-out: the answer over the three files read as one log, and two joined logs)",
    }

    train_templates = ("level", "service", "level_service", "levels", "service_not_level",
                       "level_not_service")
    heldout_templates = HELDOUT_KINDS

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        if split_of(seed) == "heldout":
            return heldout_task(rng, level)
        fmt = make_format(rng)
        case = rng.choice(["upper", "upper", "lower"])
        levels = rng.sample(LEVELS, rng.randint(4, 6))
        if case == "lower":
            levels = [x.lower() for x in levels]
        services = rng.sample(SERVICES, rng.randint(4, 7))
        crit = make_criterion(rng, levels, services)
        if level == 1:
            crit = dict(crit, kind=ONE_FIELD[crit["kind"]])
        script = rng.choice(["count_matches.sh", "count.sh", "tally.sh", "logcount",
                             "match_count.py", "count_lines.sh", "filter_count"])
        mode = rng.choice(["arg", "stdin"])
        logdir = rng.choice(["logs", "var/log", "data", "input"])
        logname = rng.choice(LOGNAMES)
        log_path = f"{logdir}/{logname}.log"
        output = rng.choice(["answer.txt", "count.txt", "result.txt", "matches.txt",
                             "out/count.txt", "report/total.txt"])
        scene = (fmt, crit, levels, services)

        text, expected = log_with_matches(rng, *scene, LOG_SIZES[level], BLANK_PS[level], 3)
        cases = hidden_cases(rng, level, *scene)
        if level == 3:
            text = add_space_lines(rng, text, 0.03)

        sample_lines = "\n".join(line for line in text.splitlines() if line.strip())
        sample_lines = "\n".join(sample_lines.splitlines()[:3])
        how = ("reads the log file whose path is given as its only command-line argument"
               if mode == "arg" else
               "reads the log from standard input (it is run without arguments)")
        mkdir_note = " (create the directory if needed)" if "/" in output else ""
        usage = f"./{script} {log_path}" if mode == "arg" else f"./{script} < {log_path}"
        head = f"""\
`{log_path}` is an application log. Every non-blank line has this format:
{describe_format(fmt)}

For example, the first lines of the file are:

{md_code(sample_lines)}

"""
        write_script = f"""\
1. Write an executable script `{script}` in the current directory (any language; start it
   with a shebang line and make it executable). It {how}.
   It prints the number of lines {describe_criterion(crit)}:
   only that integer, followed by a newline. It must work on any log in this format,
   not only on this file.
"""
        run_it = f"""\
2. Run it on `{log_path}` (e.g. `{usage}`) and save its output in `{output}`{mkdir_note}.
"""
        notes = """
Compare the level and the service as whole fields, exactly and case-sensitively: messages
may mention level or service names, and other services can have names that contain the
service name. Blank lines can occur and never match. The last line may lack a trailing
newline. An empty log has 0 matching lines.
"""
        solver_loop = "        f = fields(line) if line else None\n"
        workspace = files({log_path: text})
        config = {"script": script, "mode": mode, "output": output, "expected": expected,
                  "cases": cases}
        test_body = TEST_BODY
        if level == 1:
            workspace = files({log_path: text, script: skeleton(mode)}, executable=(script,))
            reads = ("the log file whose path is its only command-line argument" if mode == "arg"
                     else "the log from standard input")
            write_script = f"""\
1. `{script}` in the current directory is an executable Python skeleton: it already
   reads {reads}
   and prints how many of its lines `matches(line)` accepts. Complete `matches(line)` so
   that it returns True exactly for the lines {describe_criterion(crit)}.
   It must work on any log in this format, not only on this file.
"""
            notes = """
Compare the level and the service as whole fields, exactly and case-sensitively: messages
may mention level or service names. An empty log has 0 matching lines.
"""
        elif level == 3:
            rotated, logs = rotated_and_distractors(rng, scene, log_path, text)
            workspace = {path: TaskFile(data) for path, data in logs.items()}
            config["expected"] = expected + sum(rotated.values())
            config["left_alone"] = left_alone(logs)
            test_body = TEST_BODY + LEFT_ALONE_TEST
            others = " or ".join(f"`{p}`" for p in logs if p not in rotated and p != log_path)
            run_it = f"""\
2. The log has been rotated: its older lines are in `{log_path}.1` and, gzip-compressed,
   in `{log_path}.2.gz`. Run the script on these three files and save the total number of
   matching lines in them, one integer, in `{output}`{mkdir_note}.
   Count exactly these three files, not {others}.
   Leave every file in `{logdir}/` as it is: do not change, decompress in place, move or
   delete any of them.
"""
            notes += """
Lines may end with `\\r\\n` (Windows line endings): the `\\r` belongs to no field. Lines
holding only spaces or tabs are blank lines too.
"""
            solver_loop = ("        line = line.rstrip('\\r')\n"
                           "        f = fields(line) if line.strip() else None\n")
        instruction = head + write_script + run_it + notes
        solver = ("#!/usr/bin/env python3\nimport json\nimport re\nimport sys\n\n"
                  + parser_source(fmt) + "\n" + criterion_source(crit) + "\n"
                  "def main():\n"
                  "    if len(sys.argv) > 1:\n"
                  "        data = open(sys.argv[1], 'rb').read()\n"
                  "    else:\n"
                  "        data = sys.stdin.buffer.read()\n"
                  "    n = 0\n"
                  "    for line in data.decode('utf-8', 'replace').split('\\n'):\n"
                  + solver_loop +
                  "        if f is not None and wanted(*f):\n"
                  "            n += 1\n"
                  "    print(n)\n\n\nmain()\n")
        solution = ("#!/bin/bash\nset -e\n" + heredoc(script, solver, executable=True)
                    + f"mkdir -p \"$(dirname '{output}')\"\n")
        if level == 3:
            solution += total_of_rotated(script, mode, log_path, output)
        else:
            solution += (f"./'{script}' '{log_path}' > '{output}'\n" if mode == "arg"
                         else f"./'{script}' < '{log_path}' > '{output}'\n")
        return {
            "instruction": instruction,
            "workspace": workspace,
            "tests": files({"test_logs_count.py": hidden_test_source(config, test_body)}),
            "solution": solution,
            "tags": ["logs", "text", "parsing", fmt["kind"], crit["kind"]],
            "template": crit["kind"],
        }


FAMILY = LogsCount()
