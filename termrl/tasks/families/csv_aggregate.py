"""csv-aggregate: group a CSV file by a column and aggregate a numeric column.

Per seed: the columns (group column, value column, distractor columns, their order), the
delimiter, the data, the aggregate (sum, mean, max, min, count, median), an optional row
filter (status equality or numeric threshold), the output format (CSV sorted by group, CSV
sorted by value, JSON object, TSV, `group: value` text), number formatting, and file names.

Hidden tests: the output for the workspace CSV is checked against values computed at
generation time, and the agent's program is re-run on fresh CSVs (different rows, column
order and extra columns; header-only, single-row, everything-filtered edge cases).

Levels: 1 drops the row filter, shrinks every input to 8-15 rows, keeps only the header-only
edge case and tips the agent off to Python's csv module. 2 is the family as it always was. 3
grows the inputs (200-400 rows in the workspace), adds a second run on a spreadsheet export
(UTF-8 BOM, CRLF), adds hidden edge cases (multi-line quoted fields, BOM+CRLF, look-alike
column names such as `old_<group>` placed first) and puts an older export and last year's
report in the workspace, which the hidden tests check were left byte-for-byte alone.
"""

from __future__ import annotations

import csv
import io
import json
import random
from decimal import ROUND_HALF_UP, Decimal
from typing import ClassVar

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone
from .base import Family, files

GROUP_COLS = {
    "region": ["north", "south", "east", "west", "central", "north-east"],
    "department": ["Sales", "Engineering", "Support", "Finance", "HR", "R&D"],
    "team": ["alpha", "beta", "gamma", "delta", "omega", "Alpha"],
    "category": ["books", "garden", "toys", "electronics", "food & drink", "sports"],
    "city": ["Lisbon", "São Paulo", "Zürich", "New York", "Kraków", "Osaka", "Austin, TX"],
    "store": ["S01", "S02", "S10", "S11", "S2", "S20"],
    "channel": ["web", "mobile", "retail", "partner", "email"],
    "project": ["apollo", "hermes", "zeus", "athena", "Apollo", "ares"],
}
# name, kind (int: whole numbers, dec: two decimals), low, high
VALUE_COLS = [("quantity", "int", 0, 500), ("amount", "dec", 0, 5000), ("score", "int", -50, 100),
              ("duration_ms", "int", 1, 20000), ("weight_kg", "dec", 0, 100),
              ("price", "dec", 1, 999), ("temperature", "dec", -25, 45), ("visits", "int", 0, 3000),
              ("balance", "dec", -500, 500)]
STATUSES = [["ok", "failed", "pending"], ["paid", "refunded", "open"],
            ["active", "inactive", "Active"], ["done", "todo", "blocked"]]
NOTES = ["", "rush order", "see ticket, urgent", 'said "hi"', "n/a", "ok; checked", "café",
         "follow-up, then close", "—"]
MULTILINE_NOTES = ["", "line one\nline two", 'called back,\nsaid "later"', "a\n\nb", "n/a"]
OPS = {"sum": "the sum of the `{v}` values", "mean": "the arithmetic mean of the `{v}` values",
       "max": "the largest `{v}` value", "min": "the smallest `{v}` value",
       "median": "the median of the `{v}` values", "count": "the number of rows"}
OUT_NAME = {"sum": "total_{v}", "mean": "avg_{v}", "max": "max_{v}", "min": "min_{v}",
            "median": "median_{v}", "count": "rows"}
FORMATS = ["csv_by_group", "csv_by_value", "json", "tsv", "text_by_value"]
DELIM_NAME = {",": "comma", ";": "semicolon", "\t": "tab"}


def rand_value(rng: random.Random, kind: str, lo: int, hi: int) -> Decimal:
    if kind == "int":
        return Decimal(rng.randint(lo, hi))
    return Decimal(rng.randint(lo * 100, hi * 100)) / 100


def fmt_value(v: Decimal, kind: str) -> str:
    return str(v) if kind == "int" else str(v.quantize(Decimal("0.01")))


# --------------------------------------------------------------------------- spec

def make_spec(rng: random.Random) -> dict:
    group = rng.choice(sorted(GROUP_COLS))
    vals = rng.sample(VALUE_COLS, 2)
    value, other = vals
    op = rng.choice(sorted(OPS))
    extras = rng.sample(["id", "date", "note", "status"], rng.randint(1, 3))
    fkind = rng.choice(["none", "none", "status", "num_ge", "num_lt"])
    filt: dict = {"kind": fkind}
    if fkind == "status":
        statuses = rng.choice(STATUSES)
        filt.update(column="status", value=rng.choice(statuses[:2]))
        if "status" not in extras:
            extras.append("status")
    elif fkind != "none":
        col = rng.choice([value, other])
        name, _kind, lo, hi = col
        t = Decimal(rng.randint(lo + (hi - lo) // 5, hi - (hi - lo) // 4))
        filt.update(column=name, threshold=str(t))
        statuses = rng.choice(STATUSES)
    else:
        statuses = rng.choice(STATUSES)
    dec_result = op in ("mean", "median") or (op != "count" and value[1] == "dec")
    delim = rng.choice([",", ",", ",", ";", "\t"])
    return {"group": group, "groups": rng.sample(GROUP_COLS[group], rng.randint(3, len(GROUP_COLS[group]))),
            "value": list(value), "other": list(other), "op": op, "extras": extras,
            "statuses": statuses, "filter": filt, "dec": dec_result, "delim": delim,
            "format": rng.choice(FORMATS),
            "out_name": OUT_NAME[op].format(v=value[0])}


def columns_for(rng: random.Random, spec: dict) -> list[str]:
    cols = [spec["group"], spec["value"][0], spec["other"][0]] + list(spec["extras"])
    for extra in ("region_code", "comment", "batch"):
        if rng.random() < 0.2:
            cols.append(extra)
    rng.shuffle(cols)
    return cols


def make_rows(rng: random.Random, spec: dict, n: int, groups: list[str]) -> list[dict]:
    rows = []
    for i in range(n):
        r = {spec["group"]: rng.choice(groups), "id": str(1000 + i),
             "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
             "note": rng.choice(NOTES), "status": rng.choice(spec["statuses"]),
             "region_code": rng.choice(["EU", "US", "APAC"]), "comment": rng.choice(NOTES),
             "batch": str(rng.randint(1, 9))}
        for name, kind, lo, hi in (spec["value"], spec["other"]):
            r[name] = fmt_value(rand_value(rng, kind, lo, hi), kind)
        rows.append(r)
    return rows


def keep(spec: dict, row: dict) -> bool:
    f = spec["filter"]
    if f["kind"] == "status":
        return row["status"] == f["value"]
    if f["kind"] == "num_ge":
        return Decimal(row[f["column"]]) >= Decimal(f["threshold"])
    if f["kind"] == "num_lt":
        return Decimal(row[f["column"]]) < Decimal(f["threshold"])
    return True


def aggregate(spec: dict, rows: list[dict]) -> list[list]:
    """Expected output rows ``[group, exact value as str, kind]`` in output order."""
    groups: dict[str, list[Decimal]] = {}
    for r in rows:
        if keep(spec, r):
            groups.setdefault(r[spec["group"]], []).append(Decimal(r[spec["value"][0]]))
    out = []
    for g, vs in groups.items():
        op = spec["op"]
        if op == "sum":
            v = sum(vs)
        elif op == "mean":
            v = sum(vs) / len(vs)
        elif op == "max":
            v = max(vs)
        elif op == "min":
            v = min(vs)
        elif op == "count":
            v = Decimal(len(vs))
        else:
            s = sorted(vs)
            m = len(s) // 2
            v = s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
        out.append((g, v))
    if spec["format"] in ("csv_by_value", "text_by_value"):
        out.sort(key=lambda gv: (-gv[1], gv[0]))
    else:
        out.sort(key=lambda gv: gv[0])
    kind = "dec" if spec["dec"] else "int"
    return [[g, str(v), kind] for g, v in out]


def risky_ties(spec: dict, expected: list[list]) -> bool:
    """Exact ties between groups that float arithmetic might order differently."""
    if spec["format"] not in ("csv_by_value", "text_by_value"):
        return False
    if spec["op"] in ("max", "min", "count") or (spec["op"] == "sum" and not spec["dec"]):
        return False
    vals = [Decimal(e[1]) for e in expected]
    return len(set(vals)) != len(vals)


def to_csv(rows: list[dict], cols: list[str], delim: str, newline: str = "\n") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delim, lineterminator=newline)
    w.writerow(cols)
    for r in rows:
        w.writerow([r[c] for c in cols])
    return buf.getvalue()


def make_case(rng: random.Random, spec: dict, n: int, groups=None) -> tuple[str, list]:
    while True:
        rows = make_rows(rng, spec, n, groups or spec["groups"])
        expected = aggregate(spec, rows)
        if not risky_ties(spec, expected):
            return to_csv(rows, columns_for(rng, spec), spec["delim"]), expected


def make_odd_case(rng: random.Random, spec: dict, n: int, odd: str) -> tuple[str, list]:
    """A level-3 input with at least one counted group and one oddity: ``multiline`` quoted
    notes, a ``bom_crlf`` spreadsheet export (group column first, so the BOM sticks to its
    name), or ``lookalike`` columns whose names contain the real ones, placed first."""
    while True:
        rows = make_rows(rng, spec, n, spec["groups"])
        expected = aggregate(spec, rows)
        if expected and not risky_ties(spec, expected):
            break
    cols = columns_for(rng, spec)
    g, (v, kind, lo, hi) = spec["group"], spec["value"]
    if odd == "multiline":
        for r in rows:
            r["note"] = rng.choice(MULTILINE_NOTES)
        if "note" not in cols:
            cols.insert(rng.randint(0, len(cols)), "note")
    elif odd == "bom_crlf":
        cols.remove(g)
        cols.insert(0, g)
        return "\ufeff" + to_csv(rows, cols, spec["delim"], "\r\n"), expected
    elif odd == "lookalike":
        for r in rows:
            r[f"old_{g}"] = rng.choice(spec["groups"])
            r[f"{v}_est"] = fmt_value(rand_value(rng, kind, lo, hi), kind)
        cols = [f"{v}_est", f"old_{g}"] + cols
    return to_csv(rows, cols, spec["delim"]), expected


def render(spec: dict, expected: list[list]) -> str:
    """``expected`` written in the task's output format, as the reference program writes it."""
    def text(v: str) -> str:
        if spec["dec"]:
            return str(Decimal(v).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
        return str(int(Decimal(v)))

    fmt = spec["format"]
    if fmt == "json":
        return json.dumps({g: float(text(v)) if spec["dec"] else int(Decimal(v))
                           for g, v, _ in expected}, ensure_ascii=False)
    if fmt.startswith("csv"):
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([spec["group"], spec["out_name"]])
        w.writerows([g, text(v)] for g, v, _ in expected)
        return buf.getvalue()
    sep = "\t" if fmt == "tsv" else ": "
    return "".join(f"{g}{sep}{text(v)}\n" for g, v, _ in expected)


# --------------------------------------------------------------------------- text

def describe_filter(spec: dict) -> str:
    f = spec["filter"]
    if f["kind"] == "status":
        return (f"Only rows whose `status` is exactly `{f['value']}` (case-sensitive) count; "
                "ignore all other rows. ")
    if f["kind"] == "num_ge":
        return f"Only rows whose `{f['column']}` is >= {f['threshold']} count; ignore all other rows. "
    if f["kind"] == "num_lt":
        return f"Only rows whose `{f['column']}` is < {f['threshold']} count; ignore all other rows. "
    return ""


def describe_output(spec: dict) -> str:
    fmt, g, o = spec["format"], spec["group"], spec["out_name"]
    if fmt == "csv_by_group":
        return (f"a comma-separated CSV file with the header line `{g},{o}` and then one row per "
                f"group, sorted by group value in ascending code-point order (like `LC_ALL=C "
                f"sort`). Quote a field only when needed (standard CSV quoting, e.g. when a "
                f"group value contains a comma).")
    if fmt == "csv_by_value":
        return (f"a comma-separated CSV file with the header line `{g},{o}` and then one row per "
                f"group, sorted by the aggregated value in descending order; groups with equal "
                f"values are ordered by group value in ascending code-point order. Quote a field "
                f"only when needed (standard CSV quoting, e.g. when a group value contains a "
                f"comma).")
    if fmt == "json":
        return ("a JSON object that maps each group value (string) to its aggregated value (a JSON "
                "number). Key order does not matter.")
    if fmt == "tsv":
        return ("one line per group, `GROUP<TAB>VALUE`, with no header line, sorted by group "
                "value in ascending code-point order (like `LC_ALL=C sort`).")
    return ("one line per group, `GROUP: VALUE` (a colon and one space), with no header line, "
            "sorted by the aggregated value in descending order; groups with equal values are "
            "ordered by group value in ascending code-point order.")


def describe_number(spec: dict) -> str:
    if spec["format"] == "json":
        if spec["dec"]:
            return "Values are numbers rounded to 2 decimal places."
        return "Values are JSON integers (no decimal point)."
    if spec["dec"]:
        return ("Write every value with exactly 2 digits after the decimal point (e.g. `12.50`, "
                "`-3.00`), rounded to the nearest hundredth.")
    return "Write every value as a plain integer (e.g. `42`, `-7`), with no decimal point."


def empty_output(spec: dict) -> str:
    fmt = spec["format"]
    if fmt.startswith("csv"):
        return "contains just the header line"
    if fmt == "json":
        return "is the empty JSON object `{}`"
    return "is empty"


TEST_BODY = r'''
import csv
import io
import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

WORKDIR = Path.cwd()
PROG = WORKDIR / CONFIG["program"]
TOL = Decimal("0.00500001")


def parse(text):
    fmt = CONFIG["format"]
    if fmt == "json":
        obj = json.loads(text)
        assert type(obj) is dict, "output is not a JSON object"
        return list(obj.items())
    if fmt.startswith("csv"):
        rows = [r for r in csv.reader(io.StringIO(text)) if r]
        assert rows, "output is empty (expected at least the header line)"
        assert rows[0] == CONFIG["header"], f"bad header {rows[0]!r}"
        body = rows[1:]
    elif fmt == "tsv":
        body = [line.split("\t") for line in text.split("\n") if line.strip()]
    else:
        body = [line.rsplit(": ", 1) for line in text.split("\n") if line.strip()]
    for r in body:
        assert len(r) == 2, f"bad output row {r!r}"
    return [(g, v) for g, v in body]


def check_value(value, exact, kind):
    exact = Decimal(exact)
    if CONFIG["format"] == "json":
        if kind == "int":
            assert type(value) is int and value == int(exact), (value, str(exact))
        else:
            assert type(value) in (int, float), f"not a number: {value!r}"
            assert abs(Decimal(repr(value)) - exact) <= TOL, (value, str(exact))
        return
    assert type(value) is str
    if kind == "int":
        assert re.fullmatch(r"-?[0-9]+", value), f"not an integer: {value!r}"
        assert int(value) == int(exact), (value, str(exact))
    else:
        assert re.fullmatch(r"-?[0-9]+\.[0-9]{2}", value), f"not 2-decimal: {value!r}"
        assert abs(Decimal(value) - exact) <= TOL, (value, str(exact))


def check(text, expected):
    got = parse(text)
    groups = [g for g, _ in got]
    want = [e[0] for e in expected]
    if CONFIG["ordered"]:
        assert groups == want, f"groups/order differ: got {groups!r}, want {want!r}"
    else:
        assert len(groups) == len(set(groups)), "duplicate groups"
        assert sorted(groups) == sorted(want), f"groups differ: got {groups!r}, want {want!r}"
    by_group = dict(got)
    for g, exact, kind in expected:
        check_value(by_group[g], exact, kind)


def run_prog(tmp_path, text):
    src = tmp_path / ("fresh_input" + CONFIG["input_ext"])
    src.write_bytes(text.encode("utf-8"))
    dst = tmp_path / "result_dir" / ("fresh_output" + CONFIG["output_ext"])
    dst.parent.mkdir()
    r = subprocess.run([str(PROG), str(src), str(dst)], cwd=tmp_path, capture_output=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-2000:]
    assert dst.is_file(), "the program did not write the output file"
    return dst.read_text(encoding="utf-8")


@pytest.mark.core
def test_workspace_output():
    p = WORKDIR / CONFIG["output"]
    assert p.is_file(), f"{CONFIG['output']} is missing"
    check(p.read_text(encoding="utf-8"), CONFIG["expected"])


def _cases(mark):
    return [pytest.param(c["text"], c["expected"], id=c["id"]) for c in CONFIG["cases"]
            if c["mark"] == mark]


@pytest.mark.core
@pytest.mark.parametrize("text,expected", _cases("core"))
def test_program_on_fresh_csv(tmp_path, text, expected):
    check(run_prog(tmp_path, text), expected)


@pytest.mark.boundary
@pytest.mark.parametrize("text,expected", _cases("boundary"))
def test_program_on_edge_cases(tmp_path, text, expected):
    check(run_prog(tmp_path, text), expected)
'''


def solver_source(spec: dict, encoding: str = "utf-8") -> str:
    f = spec["filter"]
    if f["kind"] == "status":
        keep_expr = f"r['status'] == {f['value']!r}"
    elif f["kind"] == "num_ge":
        keep_expr = f"Decimal(r[{f['column']!r}]) >= Decimal({f['threshold']!r})"
    elif f["kind"] == "num_lt":
        keep_expr = f"Decimal(r[{f['column']!r}]) < Decimal({f['threshold']!r})"
    else:
        keep_expr = "True"
    return f'''#!/usr/bin/env python3
import csv
import json
import os
import sys
from decimal import ROUND_HALF_UP, Decimal

GROUP = {spec["group"]!r}
VALUE = {spec["value"][0]!r}
OP = {spec["op"]!r}
DELIM = {spec["delim"]!r}
FORMAT = {spec["format"]!r}
HEADER = [GROUP, {spec["out_name"]!r}]
DEC = {spec["dec"]!r}


def keep(r):
    return {keep_expr}


def agg(vs):
    if OP == "sum":
        return sum(vs)
    if OP == "mean":
        return sum(vs) / len(vs)
    if OP == "max":
        return max(vs)
    if OP == "min":
        return min(vs)
    if OP == "count":
        return Decimal(len(vs))
    s = sorted(vs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def text(v):
    if DEC:
        return str(v.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
    return str(int(v))


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, newline="", encoding="{encoding}") as fh:
        rows = list(csv.DictReader(fh, delimiter=DELIM))
    groups = {{}}
    for r in rows:
        if keep(r):
            groups.setdefault(r[GROUP], []).append(Decimal(r[VALUE]) if OP != "count" else 0)
    res = [(g, agg(vs)) for g, vs in groups.items()]
    if FORMAT.endswith("by_value"):
        res.sort(key=lambda gv: (-gv[1], gv[0]))
    else:
        res.sort(key=lambda gv: gv[0])
    if os.path.dirname(dst):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "w", newline="", encoding="utf-8") as out:
        if FORMAT == "json":
            json.dump({{g: (float(text(v)) if DEC else int(v)) for g, v in res}}, out,
                      ensure_ascii=False)
        elif FORMAT.startswith("csv"):
            w = csv.writer(out, lineterminator="\\n")
            w.writerow(HEADER)
            for g, v in res:
                w.writerow([g, text(v)])
        elif FORMAT == "tsv":
            for g, v in res:
                out.write(g + "\\t" + text(v) + "\\n")
        else:
            for g, v in res:
                out.write(g + ": " + text(v) + "\\n")


main()
'''


LEVEL3_TESTS = r"""

@pytest.mark.core
def test_spreadsheet_export_output():
    p = WORKDIR / CONFIG["second_output"]
    assert p.is_file(), f"{CONFIG['second_output']} is missing"
    check(p.read_text(encoding="utf-8"), CONFIG["second_expected"])

"""

WS_ROWS = {1: (8, 15), 2: (25, 60), 3: (200, 400)}
"""Rows of the workspace CSV, per level."""
CASE_ROWS = {1: (8, 15), 2: (20, 70), 3: (100, 250)}
"""Rows of each fresh CSV the hidden tests run the program on, per level."""


def workspace_case(rng: random.Random, spec: dict, rows: tuple[int, int]) -> tuple[str, list]:
    """An input with at least two counted groups."""
    while True:
        text, expected = make_case(rng, spec, rng.randint(*rows))
        if len(expected) >= 2:
            return text, expected


def hidden_cases(rng: random.Random, spec: dict, level: int) -> list[dict]:
    """The fresh inputs of the hidden tests: random ones (core), then edge cases (boundary).
    Level 1 has only the header-only edge case; level 3 adds multi-line fields, a BOM+CRLF
    export and look-alike column names."""
    cases = []
    for i in range(3 if level == 3 else 2):
        t, e = make_case(rng, spec, rng.randint(*CASE_ROWS[level]))
        cases.append({"id": f"random{i}", "mark": "core", "text": t, "expected": e})
    if level == 1:
        t, e = make_case(rng, spec, 0)
        return cases + [{"id": "header_only", "mark": "boundary", "text": t, "expected": e}]
    tricky_groups = spec["groups"] + [g for g in ("Austin, TX", "São Paulo", 'the "best"')
                                      if g not in spec["groups"]]
    t, e = make_case(rng, spec, rng.randint(15, 30), tricky_groups)
    cases.append({"id": "quoted_and_unicode_groups", "mark": "boundary", "text": t,
                  "expected": e})
    t, e = make_case(rng, spec, 0)
    cases.append({"id": "header_only", "mark": "boundary", "text": t, "expected": e})
    while True:
        t, e = make_case(rng, spec, 1)
        if e or spec["filter"]["kind"] != "none":
            break
    cases.append({"id": "single_row", "mark": "boundary", "text": t, "expected": e})
    if spec["filter"]["kind"] != "none":
        for _ in range(200):
            t, e = make_case(rng, spec, rng.randint(2, 6))
            if not e:
                cases.append({"id": "everything_filtered_out", "mark": "boundary",
                              "text": t, "expected": e})
                break
    if level == 3:
        for odd in ("multiline", "bom_crlf", "lookalike"):
            t, e = make_odd_case(rng, spec, rng.randint(20, 40), odd)
            cases.append({"id": f"{odd}_fields" if odd == "multiline" else odd,
                          "mark": "boundary", "text": t, "expected": e})
    return cases


class CsvAggregate(Family):
    name = "csv-aggregate"
    category = "data"
    description = ("Write a program that groups a CSV by a column and aggregates a numeric column "
                   "(sum/mean/max/min/median/count, optional filter) into a specified format.")
    difficulty = "medium"
    levels: ClassVar[dict[int, str]] = {
        1: "no row filter, 8-15-row inputs, hidden tests with only ordinary inputs plus the "
           "header-only file, and a tip that Python's csv module reads the quoting",
        2: "the family as it always was: a 25-60-row CSV, an optional row filter, hidden fresh "
           "CSVs plus quoted/unicode-group, header-only, single-row and all-filtered edge cases",
        3: "200-400-row inputs, a second file to run on (a spreadsheet export with a UTF-8 BOM "
           "and CRLF), more hidden edge cases (multi-line quoted fields, BOM+CRLF, look-alike "
           "column names), and an older export and last year's report to leave untouched",
    }

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        spec = make_spec(rng)
        if level == 1:
            spec["filter"] = {"kind": "none"}
        program = rng.choice(["aggregate", "summarize.py", "rollup.sh", "group_stats",
                              "make_report", "agg.py"])
        in_ext = ".tsv" if spec["delim"] == "\t" else ".csv"
        out_ext = {"json": ".json", "tsv": ".tsv", "text_by_value": ".txt"}.get(spec["format"], ".csv")
        in_dir = rng.choice(["data", "input", "raw"])
        in_name = rng.choice(["sales", "metrics", "records", "export", "ledger"])
        out_dir = rng.choice(["out", "reports", "build"])
        out_name = rng.choice(["summary", "by_group", "result"])
        in_path, out_path = f"{in_dir}/{in_name}{in_ext}", f"{out_dir}/{out_name}{out_ext}"

        ws_text, ws_expected = workspace_case(rng, spec, WS_ROWS[level])
        cases = hidden_cases(rng, spec, level)
        workspace = {in_path: ws_text}
        config_extra: dict = {}
        runs, run_also = [(in_path, out_path)], ""
        if level == 3:
            in_path2 = f"{in_dir}/{in_name}_excel{in_ext}"
            out_path2 = f"{out_dir}/{out_name}_excel{out_ext}"
            while True:
                text2, expected2 = make_odd_case(rng, spec, rng.randint(*WS_ROWS[3]), "bom_crlf")
                old_text, old_expected = workspace_case(rng, spec, WS_ROWS[3])
                if len(expected2) >= 2 and ws_expected != old_expected != expected2:
                    break
            untouched = {f"{in_dir}/{in_name}_old{in_ext}": old_text,
                         f"{out_dir}/{out_name}_last_year{out_ext}": render(spec, old_expected)}
            workspace.update({in_path2: text2, **untouched})
            config_extra = {"second_output": out_path2, "second_expected": expected2,
                            "left_alone": left_alone(untouched)}
            runs.append((in_path2, out_path2))
            run_also = (f"\nAlso run it on `{in_path2}` (a spreadsheet export) with the output "
                        f"path\n`{out_path2}`. The other files already in the workspace (an "
                        f"older export, last\nyear's report) are not part of this job: leave "
                        f"them exactly as they are.\n")

        value = spec["value"][0]
        what = OPS[spec["op"]].format(v=value)
        extra = ""
        if spec["op"] == "median":
            extra = ("The median of an even number of values is the mean of the two middle "
                     "values. ")
        about_input = {
            1: "\nTip: Python's `csv` module (`csv.DictReader`) reads this quoting for you.\n",
            2: "",
            3: ("\nQuoted fields may also contain line breaks. Some input files are spreadsheet "
                "exports:\nthey start with a UTF-8 byte-order mark (not part of the first "
                "column's name) and end\ntheir lines with CRLF.\n"),
        }[level]
        instruction = f"""\
`{in_path}` is a {DELIM_NAME[spec['delim']]}-separated file with a header line (standard CSV
quoting: a field may be wrapped in double quotes, and may then contain the separator or doubled
`""` quotes). Numeric columns hold plain decimal numbers such as `42`, `-7` or `1499.95`.
{about_input}
Write an executable program `{program}` in the current directory (any language; start it with
a shebang line) that is run as

    ./{program} INPUT OUTPUT

It reads the {DELIM_NAME[spec['delim']]}-separated file INPUT (same kind of data as
`{in_path}`) and writes OUTPUT, creating its directory if needed. For every distinct value of
the `{spec['group']}` column (compared exactly, case-sensitively), compute {what} in that group.
{describe_filter(spec)}{extra}Groups with no counted rows do not appear in the output.

OUTPUT is {describe_output(spec)}
{describe_number(spec)}

Find columns by their header names: in other input files the columns can come in a different
order and there can be other extra columns. If INPUT has no data rows (or none is counted),
OUTPUT {empty_output(spec)}.

Then run it on `{in_path}` with the output path `{out_path}`.
{run_also}"""
        solver = solver_source(spec, "utf-8-sig" if level == 3 else "utf-8")
        solution = ("#!/bin/bash\nset -e\n" + heredoc(program, solver, executable=True)
                    + "".join(f"./'{program}' '{src}' '{dst}'\n" for src, dst in runs))
        config = {"program": program, "output": out_path, "format": spec["format"],
                  "header": [spec["group"], spec["out_name"]],
                  "ordered": spec["format"] != "json", "expected": ws_expected, "cases": cases,
                  "input_ext": in_ext, "output_ext": out_ext, **config_extra}
        body = TEST_BODY + LEVEL3_TESTS + LEFT_ALONE_TEST if level == 3 else TEST_BODY
        return {
            "instruction": instruction,
            "workspace": files(workspace),
            "tests": files({"test_csv_aggregate.py": hidden_test_source(config, body)}),
            "solution": solution,
            "tags": ["csv", "aggregation", spec["op"], spec["format"]],
        }


FAMILY = CsvAggregate()
