"""logs-count: count the lines of a log that match a level/service criterion.

Per seed: the log line format (bracketed, delimited with a random separator and field
order, key=value with random key names and order, syslog style, JSON Lines), level
names and case, services, the criterion (level, service, both, either of two levels,
negations), the script's name and input mode (path argument or stdin), and file names.

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
log).
"""

from __future__ import annotations

import json
import random
import struct
import zlib
from typing import ClassVar

from termrl.protocols import TaskFile

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone, md_code
from .base import Family, files

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


def log_with_matches(rng, fmt, crit, levels, services, sizes, blank_ps, at_least) -> tuple[str, int]:
    """A log of ``sizes`` lines (a randint range) with at least ``at_least`` matching lines."""
    while True:
        text, count = make_log(rng, fmt, crit, levels, services, rng.randint(*sizes),
                               blank_p=rng.choice(blank_ps))
        if count >= at_least:
            return text, count


def hidden_cases(rng, level, fmt, crit, levels, services) -> list[dict]:
    """The fresh logs the hidden tests run the script on: level 1 ordinary logs and an empty
    one, level 2 adds look-alikes, blank lines, a missing final newline and no match, level 3
    longer ordinary logs, CRLF line endings, lines of spaces, only blank lines and a large log."""

    def case(id, mark, sizes, **kw):
        text, count = make_log(rng, fmt, crit, levels, services, rng.randint(*sizes), **kw)
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


def rotated_and_distractors(rng, scene, log_path, text) -> tuple[dict[str, int], dict[str, bytes]]:
    """Level 3's log directory: ``({rotated path: matching lines}, {path: bytes})`` where the
    second holds every log (the current one, ``.1`` with CRLF endings, ``.2.gz``, and two
    distractors that must not be counted: a stale ``.bak`` copy and another application's log)."""
    old, n_old = log_with_matches(rng, *scene, LOG_SIZES[3], BLANK_PS[3], 1)
    older, n_older = log_with_matches(rng, *scene, LOG_SIZES[3], BLANK_PS[3], 1)
    backup, _ = log_with_matches(rng, *scene, (40, 80), [0.0], 2)
    other_app, _ = log_with_matches(rng, *scene, (40, 80), [0.0], 2)
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


class LogsCount(Family):
    name = "logs-count"
    category = "shell"
    description = ("Write a script that counts the log lines matching a level/service criterion "
                   "in a seeded log format, and record the count for a given log.")
    difficulty = "easy"
    levels: ClassVar[dict[int, str]] = {
        1: "a one-field criterion (level or service), a short log, a Python skeleton that already "
           "reads the input and prints the count, and hidden logs of ordinary lines plus an empty one",
        2: "the family as it always was: write the script from scratch, run it on one log, hidden "
           "logs with look-alike names, blank lines, no match and an empty log",
        3: "longer logs, rotated into three files (one gzip-compressed, one with CRLF endings) whose "
           "total is asked for, distractor logs that must not be counted, every log left unchanged, "
           "and more hidden edge cases (CRLF, lines of spaces, only blank lines, a large log)",
    }

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
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
        }


FAMILY = LogsCount()
