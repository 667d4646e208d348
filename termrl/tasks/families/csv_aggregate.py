"""csv-aggregate: group a CSV file by a column and aggregate a numeric column.

Per seed: the columns (group column, value column, distractor columns, their order), the
delimiter, the data, the aggregate, an optional row filter, the output format (CSV sorted by
group, CSV sorted by value, JSON object, TSV, `group: value` text), number formatting, and file
names. The aggregate is the template (``Task.meta.template``):

- train seeds (and ``heldout-v1`` ones, generated as before) draw a *train* aggregate (sum,
  mean, max, min, count, median; ``OPS``) and a filter on status equality or a numeric
  threshold;
- heldout seeds draw only *held-out* aggregates (``HELDOUT_OPS``), which no train seed asks
  for: the number of distinct values (``distinct``), the largest minus the smallest
  (``range``), the group's percentage of the grand total (``share``), the most frequent value,
  smallest on ties (``mode``), the number of rows strictly above the group's mean
  (``above_mean``) and the sum of the two largest values, repeats counted (``top2_sum``). Their
  filters add two kinds of their own (a value between two inclusive bounds, a date range), and
  their instruction and reference program are written anew, not the train ones with another
  formula. ``distinct``, ``mode`` and ``top2_sum`` draw values from a pool so that repeats
  decide the answer.

Hidden tests: the output for the workspace CSV is checked against values computed at
generation time, and the agent's program is re-run on fresh CSVs (different rows, column
order and extra columns; header-only, single-row, everything-filtered edge cases; a held-out
aggregate adds one of its own at levels 2 and 3, e.g. a group whose largest value repeats).

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
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from typing import ClassVar

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone
from .base import Family, files, split_of

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
HELDOUT_OPS = {
    "distinct": "the number of distinct `{v}` values (values that are numerically equal count once)",
    "range": "the spread of `{v}`: the largest `{v}` value minus the smallest one (0 for a group "
             "whose counted rows all hold the same value)",
    "share": "the group's share of the grand total of `{v}`, as a percentage: 100 times the sum of "
             "the group's `{v}` values divided by the sum of `{v}` over every counted row of the file",
    "mode": "the `{v}` value that occurs in the most of the group's counted rows; when several "
            "values are equally frequent, the smallest of them",
    "above_mean": "the number of the group's counted rows whose `{v}` is strictly greater than "
                  "the mean of `{v}` over those same rows",
    "top2_sum": "the sum of the two largest `{v}` values (a value that occurs in two rows counts "
                "twice; a group with a single row gives that row's value)",
}
"""The held-out aggregates: heldout seeds draw only these, train seeds only ``OPS``."""
HELDOUT_NOTES = {"share": "Round only when writing: the unrounded shares of all groups add up to 100. ",
                 "distinct": "Compare values as numbers. ", "mode": "Compare values as numbers. "}
"""What a held-out aggregate's instruction adds after the definition."""
HELDOUT_OUT_NAME = {"distinct": "distinct_{v}", "range": "range_{v}", "share": "share_{v}_pct",
                    "mode": "mode_{v}", "above_mean": "above_avg_{v}", "top2_sum": "top2_{v}"}
POOLED = {"distinct": (0.25, 0.35, 0.5), "mode": (0.25, 0.35, 0.5), "top2_sum": (0.5, 0.75, 1.0)}
"""Held-out aggregates whose answer turns on repeated values, and the sizes (one drawn per
task) of the pool each input draws its value column from, relative to its row count: repeats
are common, yet groups still differ (see ``make_rows``)."""
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


def make_heldout_spec(rng: random.Random) -> dict:
    """A spec for a heldout seed: a held-out aggregate and a filter of any kind (held-out only:
    a value between two bounds, a date range). ``share`` takes a column with no negative values;
    ``POOLED`` aggregates draw a pool size (``repeats``), so that values repeat."""
    op = rng.choice(sorted(HELDOUT_OPS))
    group = rng.choice(sorted(GROUP_COLS))
    choices = [c for c in VALUE_COLS if op != "share" or c[2] >= 0]
    value = rng.choice(choices)
    other = rng.choice([c for c in VALUE_COLS if c != value])
    extras = rng.sample(["id", "date", "note", "status"], rng.randint(1, 3))
    statuses = rng.choice(STATUSES)
    fkind = rng.choice(["none", "none", "status", "num_between", "date_range"])
    filt: dict = {"kind": fkind}
    if fkind == "status":
        filt.update(column="status", value=rng.choice(statuses[:2]))
    elif fkind == "num_between":
        name, _kind, lo, hi = rng.choice([value, other])
        span = hi - lo
        low = rng.randint(lo + span // 10, lo + span // 2)
        filt.update(column=name, low=str(low),
                    high=str(rng.randint(low + span // 4, min(hi, low + span * 2 // 3))))
    elif fkind == "date_range":
        first = rng.randint(1, 7)
        last = first + rng.randint(3, 5)
        filt.update(column="date", low=f"2024-{first:02d}-{rng.randint(1, 28):02d}",
                    high=f"2024-{last:02d}-{rng.randint(1, 28):02d}")
    if filt.get("column") in ("status", "date") and filt["column"] not in extras:
        extras.append(filt["column"])
    dec = op == "share" or (op in ("range", "mode", "top2_sum") and value[1] == "dec")
    return {"group": group, "groups": rng.sample(GROUP_COLS[group], rng.randint(3, len(GROUP_COLS[group]))),
            "value": list(value), "other": list(other), "op": op, "extras": extras,
            "statuses": statuses, "filter": filt, "dec": dec,
            "repeats": rng.choice(POOLED[op]) if op in POOLED else None,
            "delim": rng.choice([",", ",", ",", ";", "\t"]), "format": rng.choice(FORMATS),
            "out_name": HELDOUT_OUT_NAME[op].format(v=value[0])}


def columns_for(rng: random.Random, spec: dict) -> list[str]:
    cols = [spec["group"], spec["value"][0], spec["other"][0]] + list(spec["extras"])
    for extra in ("region_code", "comment", "batch"):
        if rng.random() < 0.2:
            cols.append(extra)
    rng.shuffle(cols)
    return cols


def value_pool(rng: random.Random, spec: dict, k: int) -> list[str]:
    """``k`` distinct values of the value column, ascending (fewer if its range is smaller)."""
    _name, kind, lo, hi = spec["value"]
    k = min(k, (hi - lo + 1) * (1 if kind == "int" else 100))
    pool: set[Decimal] = set()
    while len(pool) < k:
        pool.add(rand_value(rng, kind, lo, hi))
    return [fmt_value(v, kind) for v in sorted(pool)]


def make_rows(rng: random.Random, spec: dict, n: int, groups: list[str]) -> list[dict]:
    """``n`` random rows. A spec with ``repeats`` (held-out ``POOLED`` aggregates) draws the
    value column from a pool of ``n * repeats`` values (at least 3), or from ``pool`` when the
    spec names one."""
    pool = spec.get("pool") or (value_pool(rng, spec, max(3, round(n * spec["repeats"])))
                                if spec.get("repeats") else None)
    rows = []
    for i in range(n):
        r = {spec["group"]: rng.choice(groups), "id": str(1000 + i),
             "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
             "note": rng.choice(NOTES), "status": rng.choice(spec["statuses"]),
             "region_code": rng.choice(["EU", "US", "APAC"]), "comment": rng.choice(NOTES),
             "batch": str(rng.randint(1, 9))}
        for name, kind, lo, hi in (spec["value"], spec["other"]):
            r[name] = fmt_value(rand_value(rng, kind, lo, hi), kind)
        if pool:
            r[spec["value"][0]] = rng.choice(pool)
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
    if f["kind"] == "num_between":
        return Decimal(f["low"]) <= Decimal(row[f["column"]]) <= Decimal(f["high"])
    if f["kind"] == "date_range":
        return f["low"] <= row["date"] <= f["high"]
    return True


def statistic(op: str, vs: list[Decimal], total: Decimal) -> Decimal:
    """``op`` of one group's values ``vs``, exactly; ``total``: the sum over every group."""
    if op == "sum":
        return sum(vs)
    if op == "mean":
        return sum(vs) / len(vs)
    if op == "max":
        return max(vs)
    if op == "min":
        return min(vs)
    if op == "count":
        return Decimal(len(vs))
    if op == "median":
        s = sorted(vs)
        m = len(s) // 2
        return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
    if op == "distinct":
        return Decimal(len(set(vs)))
    if op == "range":
        return max(vs) - min(vs)
    if op == "share":
        return 100 * sum(vs) / total
    if op == "mode":
        counts = Counter(vs)
        return min(v for v, n in counts.items() if n == max(counts.values()))
    if op == "above_mean":
        return Decimal(sum(1 for v in vs if v * len(vs) > sum(vs)))
    if op == "top2_sum":
        return sum(sorted(vs)[-2:])
    raise ValueError(f"unknown aggregate {op!r}")


def ill_posed(spec: dict, groups: dict[str, list[Decimal]]) -> bool:
    """Inputs a held-out aggregate cannot be checked on: ``share`` of a zero grand total, or
    ``above_mean`` of 2-decimal values where one equals a mean of three or more (float
    arithmetic may put that mean on either side of it)."""
    if spec["op"] == "share":
        return bool(groups) and sum(sum(vs) for vs in groups.values()) == 0
    if spec["op"] == "above_mean" and spec["value"][1] == "dec":
        return any(v * len(vs) == sum(vs) for vs in groups.values() if len(vs) >= 3 for v in vs)
    return False


def aggregate(spec: dict, rows: list[dict]) -> list[list] | None:
    """Expected output rows ``[group, exact value as str, kind]`` in output order; None when
    the rows are ``ill_posed``."""
    groups: dict[str, list[Decimal]] = {}
    for r in rows:
        if keep(spec, r):
            groups.setdefault(r[spec["group"]], []).append(Decimal(r[spec["value"][0]]))
    if ill_posed(spec, groups):
        return None
    total = sum((sum(vs) for vs in groups.values()), Decimal(0))
    out = [(g, statistic(spec["op"], vs, total)) for g, vs in groups.items()]
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
    exact = ("max", "min", "count", "distinct", "mode", "above_mean")
    if spec["op"] in exact or (spec["op"] in ("sum", "range", "top2_sum") and not spec["dec"]):
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


def make_case(rng: random.Random, spec: dict, n: int, groups=None, tweak=None) -> tuple[str, list]:
    """An input of ``n`` rows and its expected output; ``tweak(spec, rows)`` edits the rows
    first (see ``heldout_edge_case``)."""
    while True:
        rows = make_rows(rng, spec, n, groups or spec["groups"])
        if tweak:
            tweak(spec, rows)
        expected = aggregate(spec, rows)
        if expected is not None and not risky_ties(spec, expected):
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
    if f["kind"] == "num_between":
        return (f"A row is counted only when its `{f['column']}` lies between {f['low']} and "
                f"{f['high']}, both bounds included; every other row is skipped. ")
    if f["kind"] == "date_range":
        return (f"A row is counted only when its `date` (written YYYY-MM-DD) falls between "
                f"{f['low']} and {f['high']}, both days included; every other row is skipped. ")
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


ABOUT_INPUT = {
    1: "\nTip: Python's `csv` module (`csv.DictReader`) reads this quoting for you.\n",
    2: "",
    3: ("\nQuoted fields may also contain line breaks. Some input files are spreadsheet "
        "exports:\nthey start with a UTF-8 byte-order mark (not part of the first "
        "column's name) and end\ntheir lines with CRLF.\n"),
}
"""What the instruction adds about the input files, per level."""


def train_instruction(spec: dict, level: int, program: str, in_path: str, out_path: str,
                      run_also: str) -> str:
    """The instruction of a train aggregate (``OPS``)."""
    value = spec["value"][0]
    what = OPS[spec["op"]].format(v=value)
    extra = ""
    if spec["op"] == "median":
        extra = ("The median of an even number of values is the mean of the two middle "
                 "values. ")
    about_input = ABOUT_INPUT[level]
    return f"""\
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


def heldout_instruction(spec: dict, level: int, program: str, in_path: str, out_path: str,
                        run_also: str) -> str:
    """The instruction of a held-out aggregate (``HELDOUT_OPS``)."""
    group, delim = spec["group"], DELIM_NAME[spec["delim"]]
    what = HELDOUT_OPS[spec["op"]].format(v=spec["value"][0])
    return f"""\
Summarise `{in_path}` per `{group}`: for each group, report {what}.

The data. `{in_path}` holds {delim}-separated records under one header line. Fields follow the
usual CSV quoting rules (a field wrapped in double quotes may contain the separator, and `""`
inside it stands for one quote). Number fields look like `42`, `-7` or `1499.95`.
{ABOUT_INPUT[level]}
The program. Create `{program}` in the current directory: executable, in any language, its
first line a shebang. It is called as

    ./{program} INPUT OUTPUT

where INPUT is any file of the same kind as `{in_path}` and OUTPUT is the file to write (make
its parent directory when it is missing). Look columns up by their header names, since another
INPUT may order its columns differently and carry more of them.

The groups. Rows with the same `{group}` value (exact, case-sensitive comparison) form a group.
{describe_filter(spec) or "Every data row is counted. "}{HELDOUT_NOTES.get(spec["op"], "")}\
Only groups with at least one counted row are reported.

The report. OUTPUT is {describe_output(spec)}
{describe_number(spec)}

When INPUT has only its header line, or no row is counted, OUTPUT {empty_output(spec)}.

To finish, run `./{program} {in_path} {out_path}`.
{run_also}"""


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


def keep_expression(f: dict, row: str = "r") -> str:
    """Python source of filter ``f`` applied to the CSV row (a dict) named ``row``."""
    if f["kind"] == "status":
        return f"{row}['status'] == {f['value']!r}"
    if f["kind"] == "num_ge":
        return f"Decimal({row}[{f['column']!r}]) >= Decimal({f['threshold']!r})"
    if f["kind"] == "num_lt":
        return f"Decimal({row}[{f['column']!r}]) < Decimal({f['threshold']!r})"
    if f["kind"] == "num_between":
        return f"Decimal({f['low']!r}) <= Decimal({row}[{f['column']!r}]) <= Decimal({f['high']!r})"
    if f["kind"] == "date_range":
        return f"{f['low']!r} <= {row}['date'] <= {f['high']!r}"
    return "True"


def solver_source(spec: dict, encoding: str = "utf-8") -> str:
    keep_expr = keep_expression(spec["filter"])
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


STAT_SOURCE = {
    "distinct": "return Decimal(len(set(values)))",
    "range": "return max(values) - min(values)",
    "share": "return Decimal(100) * sum(values) / grand_total",
    "mode": ("tally = Counter(values)\n    most = max(tally.values())\n"
             "    return min(v for v, n in tally.items() if n == most)"),
    "above_mean": ("n, total = len(values), sum(values)\n"
                   "    return Decimal(sum(1 for v in values if v * n > total))"),
    "top2_sum": "return sum(sorted(values, reverse=True)[:2])",
}
"""The body of the held-out reference's ``statistic(values, grand_total)``, per aggregate."""


def heldout_solver_source(spec: dict, encoding: str = "utf-8") -> str:
    """The reference program of a held-out aggregate: buckets the counted rows' values by
    group, applies ``STAT_SOURCE[op]`` to each bucket, and writes the pairs in the format."""
    return f"""#!/usr/bin/env python3
\"\"\"Per-{spec['group']} {spec['op']} of the {spec['value'][0]} column of a delimited file.\"\"\"
import csv
import json
import os
import sys
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal

KEY, COLUMN, LABEL = {spec['group']!r}, {spec['value'][0]!r}, {spec['out_name']!r}
SEPARATOR, LAYOUT, TWO_DECIMALS = {spec['delim']!r}, {spec['format']!r}, {spec['dec']!r}


def counted(row):
    return {keep_expression(spec['filter'], 'row')}


def statistic(values, grand_total):
    {STAT_SOURCE[spec['op']]}


def shown(number):
    if TWO_DECIMALS:
        return format(number.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP), "f")
    return str(int(number))


def load(path):
    with open(path, newline="", encoding={encoding!r}) as handle:
        return [row for row in csv.DictReader(handle, delimiter=SEPARATOR) if counted(row)]


def summarise(rows):
    buckets = defaultdict(list)
    for row in rows:
        buckets[row[KEY]].append(Decimal(row[COLUMN]))
    grand_total = sum((v for values in buckets.values() for v in values), Decimal(0))
    pairs = [(key, statistic(values, grand_total)) for key, values in buckets.items()]
    if LAYOUT.endswith("by_value"):
        return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))
    return sorted(pairs, key=lambda pair: pair[0])


def save(pairs, path):
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as sink:
        if LAYOUT == "json":
            numbers = {{key: float(shown(v)) if TWO_DECIMALS else int(v) for key, v in pairs}}
            sink.write(json.dumps(numbers, ensure_ascii=False))
        elif LAYOUT.startswith("csv"):
            writer = csv.writer(sink, lineterminator="\\n")
            writer.writerow([KEY, LABEL])
            writer.writerows([key, shown(v)] for key, v in pairs)
        else:
            glue = "\\t" if LAYOUT == "tsv" else ": "
            sink.writelines(f"{{key}}{{glue}}{{shown(v)}}\\n" for key, v in pairs)


if __name__ == "__main__":
    save(summarise(load(sys.argv[1])), sys.argv[2])
"""


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


def first_group_rows(spec: dict, rows: list[dict]) -> list[dict]:
    """The counted rows of the group of the first counted row."""
    counted = [r for r in rows if keep(spec, r)]
    return [r for r in counted if r[spec["group"]] == counted[0][spec["group"]]] if counted else []


def repeat_largest(spec: dict, rows: list[dict]) -> None:
    """Give a second row of the first counted group that group's largest value."""
    mine, value = first_group_rows(spec, rows), spec["value"][0]
    if len(mine) >= 2:
        top = max(mine, key=lambda r: Decimal(r[value]))
        next(r for r in mine if r is not top)[value] = top[value]


def flatten_first_group(spec: dict, rows: list[dict]) -> None:
    """Give every counted row of the first counted group the same value."""
    mine, value = first_group_rows(spec, rows), spec["value"][0]
    for r in mine:
        r[value] = mine[0][value]


def heldout_edge_case(rng: random.Random, spec: dict) -> dict | None:
    """The hidden edge case of a held-out aggregate (levels 2 and 3), with at least one counted
    row: a group whose largest value occurs twice (``top2_sum``), a group of one repeated value
    (``range``), only two distinct values in the whole file (``distinct``, ``mode``), one group
    holding every row (``share``). None for ``above_mean``, whose random inputs hold its edges
    (values on either side of the mean, single-row groups)."""
    op = spec["op"]
    if op == "above_mean":
        return None
    name = {"top2_sum": "repeated_largest", "range": "constant_group", "share": "single_group"}
    for _ in range(200):
        if op in ("distinct", "mode"):
            two = {**spec, "pool": value_pool(rng, spec, 2)}
            t, e = make_case(rng, two, rng.randint(15, 30))
        elif op == "share":
            t, e = make_case(rng, spec, rng.randint(5, 12), [rng.choice(spec["groups"])])
        else:
            tweak = repeat_largest if op == "top2_sum" else flatten_first_group
            t, e = make_case(rng, spec, rng.randint(15, 30), tweak=tweak)
        if e:
            return {"id": name.get(op, "two_values_only"), "mark": "boundary", "text": t,
                    "expected": e}
    return None


def hidden_cases(rng: random.Random, spec: dict, level: int) -> list[dict]:
    """The fresh inputs of the hidden tests: random ones (core), then edge cases (boundary).
    Level 1 has only the header-only edge case; level 3 adds multi-line fields, a BOM+CRLF
    export and look-alike column names. A held-out aggregate adds its own edge case (levels 2
    and 3; see ``heldout_edge_case``)."""
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
    if spec["op"] in HELDOUT_OPS and (edge := heldout_edge_case(rng, spec)):
        cases.append(edge)
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
                   "(sum/mean/max/min/median/count; held out: distinct/range/share/mode/"
                   "above-mean/top-2 sum; optional filter) into a specified format.")
    difficulty = "medium"
    levels: ClassVar[dict[int, str]] = {
        1: "no row filter, 8-15-row inputs, hidden tests with only ordinary inputs plus the "
           "header-only file, and a tip that Python's csv module reads the quoting",
        2: "the family as it always was: a 25-60-row CSV, an optional row filter, hidden fresh "
           "CSVs plus quoted/unicode-group, header-only, single-row and all-filtered edge cases "
           "(and a held-out aggregate's own edge case)",
        3: "200-400-row inputs, a second file to run on (a spreadsheet export with a UTF-8 BOM "
           "and CRLF), more hidden edge cases (multi-line quoted fields, BOM+CRLF, look-alike "
           "column names), and an older export and last year's report to leave untouched",
    }

    train_templates = tuple(sorted(OPS))
    heldout_templates = tuple(sorted(HELDOUT_OPS))

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        spec = make_heldout_spec(rng) if split_of(seed) == "heldout" else make_spec(rng)
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

        heldout = split_of(seed) == "heldout"
        write = heldout_instruction if heldout else train_instruction
        instruction = write(spec, level, program, in_path, out_path, run_also)
        source = heldout_solver_source if heldout else solver_source
        solver = source(spec, "utf-8-sig" if level == 3 else "utf-8")
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
            "template": spec["op"],
        }


FAMILY = CsvAggregate()
