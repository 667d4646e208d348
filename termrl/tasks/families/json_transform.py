"""json-transform: filter, derive, project, sort and reshape JSON records by a seeded rule.

Per seed: the record schema (users, products, orders, events), the data, a field that may be
missing or null, the input shape (JSON array, JSON Lines, wrapped object), one or two filter
conditions (numeric/date comparisons, equality, membership, booleans, tag containment,
prefixes), an optional derived field, the kept and renamed fields, the sort key and
direction (ties by id), an optional limit, the output shape (list, object keyed by id,
wrapped with a count), and the file/program names.

Hidden tests: the workspace output is compared (type-exact, floats within 1e-6) with the
result computed at generation time, and the agent's program is re-run on fresh inputs
(random, null/missing values with ties, empty). The reference solution is a jq program,
an implementation independent of the generator's Python.

Templates: every train (and ``heldout-v1``) seed draws the one train template,
``filter_project``: the filter-derive-project-sort-reshape rule above. Heldout seeds draw only
the held-out templates, other computations on other schemas (books, flights, sensor readings):

- ``group_count``: group records by a field (exact values, letter case matters), output
  ``{group: count}``, ``{group: [ids]}`` or a list ranked by count; records without the field
  are dropped or counted under a named group;
- ``group_aggregate``: the sum, mean, maximum or minimum of a numeric field per group, as a list
  ranked by that aggregate (ties by group), records lacking either field left out;
- ``top_per_group``: the k records with the highest (or lowest) value of a field in each group,
  ties to the smaller id, as ``{group: [ids]}`` or ranked rows;
- ``explode_list``: one row per element of a list field, with the record's id, optionally the
  element's position and one carried field, ordered by element or by id;
- ``dedupe_versions``: ids repeat (versions of a record); keep the newest (or oldest) version of
  each by a date field, undated versions oldest and ties to the later (earlier) one in the file,
  optionally with the number of versions.

A held-out task may filter its records first by one of the train conditions (for
``dedupe_versions``, the kept versions). Hidden tests and the jq reference work as for the train
template.

Levels: level 1 narrows the seed's rule to one condition, no derived field, no limit, a plain
JSON array in and a list out, on fewer records, hands the agent a Python skeleton that already
does the I/O, and drops the null/missing-with-ties hidden case. Level 3 always has two
conditions and a derived field, three times the records, records with extra keys that must
not leak into the output, more hidden edge cases, and look-alike data files (plus a stale
output) in the workspace; the tests check the look-alikes were left untouched. The held-out
templates follow the same scheme: level 1 has no filter, a JSON array in, fewer records, a Python
skeleton (``compute(records)``) and no null/missing-with-ties case; level 3 always filters, has
three times the records with extra keys, four more hidden edge cases (many ties and nulls, the
nullable field never set, nothing passing the filter, a single record), look-alike files and a
stale output.
"""

from __future__ import annotations

import json
import random
import textwrap
from typing import ClassVar

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone, md_code
from .base import Family, files, split_of

FIRST = ["Ana", "Bo", "Chen", "Dmitri", "Élodie", "Farah", "Gus", "Hana", "Ines", "José", "Kai",
         "Lena", "Mo", "Nia", "Olu", "Pia", "Quinn", "Rui", "Sven", "Tomás", "Uma", "Vik", "Wen",
         "Xia", "Yusuf", "Zoë", "ana"]
LAST = ["Smith", "Ngata", "Kowalski", "Okafor", "Silva", "Tanaka", "Müller", "Haddad", "Berg",
        "Costa", "O'Neil"]
ADJ = ["Red", "Tiny", "Smart", "Eco", "Retro", "Ultra", "Quiet", "Solar", "Café"]
NOUN = ["Lamp", "Desk", "Kettle", "Chair", "Phone", "Backpack", "Clock", "Speaker", "Mug"]

# field -> (kind, parameters)
THEMES = {
    "users": {"name": ("name",), "age": ("int", 18, 80),
              "city": ("choice", ["Berlin", "Paris", "São Paulo", "Tokyo", "Lima", "Oslo"]),
              "active": ("bool",), "score": ("float1", 0, 100),
              "tags": ("tags", ["admin", "beta", "vip", "staff", "new"]), "joined": ("date",)},
    "products": {"title": ("title",), "price": ("float2", 1, 500), "stock": ("int", 0, 200),
                 "category": ("choice", ["kitchen", "office", "garden", "audio", "travel"]),
                 "rating": ("float1", 1, 5), "discontinued": ("bool",),
                 "tags": ("tags", ["sale", "new", "eco", "bundle", "refurb"]),
                 "added": ("date",)},
    "orders": {"customer": ("name",), "qty": ("int", 1, 20), "unit_price": ("float2", 1, 99),
               "status": ("choice", ["open", "paid", "shipped", "cancelled", "Paid"]),
               "priority": ("int", 1, 5), "express": ("bool",), "created": ("date",),
               "labels": ("tags", ["gift", "fragile", "b2b", "promo"])},
    "events": {"kind": ("choice", ["login", "logout", "error", "deploy", "alert"]),
               "user": ("name",), "duration_ms": ("int", 0, 5000), "severity": ("int", 1, 5),
               "resolved": ("bool",), "at": ("date",),
               "labels": ("tags", ["prod", "staging", "oncall", "noisy"])},
}
PRODUCTS = {"products": ("price", "stock", "stock_value"), "orders": ("qty", "unit_price", "total")}
RENAMES = {"name": "full_name", "city": "location", "score": "points", "title": "product",
           "price": "unit_cost", "category": "section", "customer": "client", "qty": "quantity",
           "status": "state", "kind": "event", "user": "actor", "duration_ms": "ms",
           "severity": "level", "age": "years", "stock": "in_stock", "rating": "stars",
           "created": "date", "at": "when", "unit_price": "price_each", "priority": "prio",
           "joined": "since", "added": "listed"}


def gen_value(rng: random.Random, spec: tuple, pool=None):
    kind = spec[0]
    if kind == "name":
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind == "title":
        return f"{rng.choice(ADJ)} {rng.choice(NOUN)}"
    if kind == "int":
        return rng.randint(spec[1], spec[2]) if pool is None else rng.choice(pool)
    if kind == "float1":
        return rng.randint(spec[1] * 10, spec[2] * 10) / 10 if pool is None else rng.choice(pool)
    if kind == "float2":
        return rng.randint(spec[1] * 100, spec[2] * 100) / 100 if pool is None else rng.choice(pool)
    if kind == "choice":
        return rng.choice(spec[1])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "tags":
        return rng.sample(spec[1], rng.randint(0, min(3, len(spec[1]))))
    if kind == "date":
        return (f"{rng.randint(2021, 2024)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                if pool is None else rng.choice(pool))
    raise ValueError(kind)


# --------------------------------------------------------------------------- spec

def make_condition(rng: random.Random, theme: dict, field: str) -> dict:
    spec = theme[field]
    kind = spec[0]
    if kind in ("int", "float1", "float2"):
        v = gen_value(rng, spec)
        ops = [">", ">=", "<", "<="] + (["=="] if kind == "int" and spec[2] - spec[1] < 10 else [])
        return {"field": field, "op": rng.choice(ops), "value": v}
    if kind == "date":
        return {"field": field, "op": rng.choice([">=", "<"]), "value": gen_value(rng, spec)}
    if kind == "choice":
        op = rng.choice(["==", "!=", "in"])
        if op == "in":
            return {"field": field, "op": "in", "value": sorted(rng.sample(spec[1], 2))}
        return {"field": field, "op": op, "value": rng.choice(spec[1])}
    if kind == "bool":
        return {"field": field, "op": rng.choice(["is_true", "is_false"]), "value": None}
    if kind == "tags":
        return {"field": field, "op": "contains", "value": rng.choice(spec[1])}
    letters = sorted({gen_value(rng, spec)[0] for _ in range(3)})
    return {"field": field, "op": "startswith", "value": rng.choice(letters)}


def make_spec(rng: random.Random) -> dict:
    theme_name = rng.choice(sorted(THEMES))
    theme = THEMES[theme_name]
    fields = list(theme)
    sortable = [f for f in fields if theme[f][0] in ("int", "float1", "float2", "date", "name",
                                                      "title", "choice")]
    sort_field = rng.choice(sortable)
    nullable = rng.choice([f for f in fields if f != sort_field])
    cond_fields = rng.sample(fields, rng.choice([1, 1, 2]))
    conds = [make_condition(rng, theme, f) for f in cond_fields]
    derived = None
    dkind = rng.choice(["none", "none", "count", "product", "length", "year"])
    if dkind == "count":
        src = next(f for f in fields if theme[f][0] == "tags")
        derived = {"kind": "count", "src": src, "name": rng.choice(["n_" + src, src + "_count"])}
    elif dkind == "product" and theme_name in PRODUCTS and nullable not in PRODUCTS[theme_name][:2]:
        a, b, nm = PRODUCTS[theme_name]
        derived = {"kind": "product", "a": a, "b": b, "name": nm}
    elif dkind == "length":
        src = [f for f in fields if theme[f][0] in ("name", "title")]
        if src and src[0] != nullable:
            derived = {"kind": "length", "src": src[0], "name": src[0] + "_length"}
    elif dkind == "year":
        src = next(f for f in fields if theme[f][0] == "date")
        if src != nullable:
            derived = {"kind": "year", "src": src, "name": src + "_year"}
    keep = ["id"] + rng.sample(fields, rng.randint(1, 3))
    if rng.random() < 0.5:
        rn = rng.choice(keep[1:])
        rename = {rn: RENAMES.get(rn, rn + "_value")}
    else:
        rename = {}
    return {
        "theme": theme_name, "nullable": nullable, "conds": conds, "derived": derived,
        "keep": keep, "rename": rename,
        "sort": {"field": sort_field, "desc": rng.random() < 0.5},
        "limit": rng.choice([None, None, rng.randint(3, 8)]),
        "input_shape": rng.choice(["array", "jsonl", "wrapped"]),
        "input_key": rng.choice(["records", "data", "items", "rows"]),
        "output_shape": rng.choice(["list", "list", "by_id", "wrapped"]),
        "count_key": rng.choice(["count", "total", "n"]),
        "items_key": rng.choice(["results", "items", "matches"]),
    }


def make_records(rng: random.Random, spec: dict, n: int, tricky: bool = False) -> list[dict]:
    theme = THEMES[spec["theme"]]
    sf = spec["sort"]["field"]
    pool = None
    if tricky and theme[sf][0] in ("int", "float1", "float2", "date"):
        pool = [gen_value(rng, theme[sf]) for _ in range(3)]
    ids = rng.sample(range(1, 10000), n)
    recs = []
    for i in ids:
        r = {"id": i}
        for f, fs in theme.items():
            r[f] = gen_value(rng, fs, pool if f == sf else None)
        nf = spec["nullable"]
        p = rng.random()
        if p < (0.3 if tricky else 0.12):
            del r[nf]
        elif p < (0.6 if tricky else 0.25):
            r[nf] = None
        if tricky and theme[sf][0] in ("name", "title", "choice") and recs and rng.random() < 0.4:
            r[sf] = rng.choice(recs)[sf]
        recs.append(r)
    return recs


# --------------------------------------------------------------------------- levels

RECORDS = {1: (10, 16), 2: (18, 35), 3: (60, 100)}
"""How many records the workspace input has, per level."""
FRESH = {1: (6, 12), 2: (10, 30), 3: (30, 60)}
"""How many records each random fresh input of the hidden tests has, per level."""
PYTHON_NAMES = {"transform.sh": "transform.py", "jq_filter.sh": "filter_records.py"}
"""Level 1's program is a Python skeleton: names that promise a shell script are renamed."""


def at_level(spec: dict, level: int, extra: random.Random) -> dict:
    """The seed's rule, narrowed at level 1 and filled out at level 3 (level 2: unchanged)."""
    if level == 1:
        return {**spec, "conds": spec["conds"][:1], "derived": None, "limit": None,
                "input_shape": "array", "output_shape": "list"}
    if level == 3:
        theme = THEMES[spec["theme"]]
        conds = list(spec["conds"])
        if len(conds) == 1:
            field = extra.choice([f for f in theme if f != conds[0]["field"]])
            conds.append(make_condition(extra, theme, field))
        derived = spec["derived"]
        if derived is None:
            src = next(f for f in theme if theme[f][0] == "tags")
            derived = {"kind": "count", "src": src,
                       "name": extra.choice(["n_" + src, src + "_count"])}
        return {**spec, "conds": conds, "derived": derived}
    return spec


def with_extra_keys(rng: random.Random, recs: list[dict]) -> list[dict]:
    """Level 3: about half the records carry keys outside the schema (never in the output)."""
    for r in recs:
        if rng.random() < 0.5:
            r["note"] = rng.choice(["imported", "checked by ops", "", "müssen prüfen"])
        if rng.random() < 0.3:
            r["meta"] = {"source": rng.choice(["crm", "csv", "api"]), "rev": rng.randint(1, 9)}
    return recs


def records_at(level: int, rng: random.Random, spec: dict, n: int,
               tricky: bool = False) -> list[dict]:
    """``make_records``, with keys outside the schema at level 3."""
    recs = make_records(rng, spec, n, tricky)
    return with_extra_keys(rng, recs) if level == 3 else recs


def n_results(spec: dict, result) -> int:
    return len(result if spec["output_shape"] != "wrapped" else result[spec["items_key"]])


def data_at(base: dict, level: int, extra: random.Random) -> tuple[dict, list[dict], object]:
    """Level 1's or 3's rule, workspace records and expected output for the seed's level-2 rule
    ``base``, drawn from ``extra`` alone (level 2's file and program names stay the same)."""
    while True:
        spec = at_level(base, level, extra)
        recs = records_at(level, extra, spec, extra.randint(*RECORDS[level]))
        expected = transform(spec, recs)
        if n_results(spec, expected) >= 2:
            return spec, recs, expected


def level3_cases(extra: random.Random, spec: dict) -> list[dict]:
    """Level 3's further hidden edge cases: many ties, the nullable field never set, records
    that all fail the filter."""
    def case(case_id: str, recs: list[dict]) -> dict:
        return {"id": case_id, "mark": "boundary", "text": serialize(spec, recs),
                "expected": transform(spec, recs)}

    many = records_at(3, extra, spec, extra.randint(40, 60), tricky=True)
    unset = records_at(3, extra, spec, extra.randint(15, 25))
    for r in unset:
        if extra.random() < 0.5:
            r.pop(spec["nullable"], None)
        else:
            r[spec["nullable"]] = None
    rejected = [r for r in make_records(extra, spec, 30)
                if not all(cond_ok(c, r) for c in spec["conds"])]
    return [case("many_ties_and_nulls", many), case("nullable_never_set", unset),
            case("nothing_passes_the_filter", with_extra_keys(extra, rejected))]


def look_alikes(extra: random.Random, spec: dict, in_path: str) -> dict[str, list[dict]]:
    """Level 3: data files next to the input that look like it and must stay untouched."""
    in_dir, _, name = in_path.partition("/")
    stem, dot, ext = name.partition(".")
    other_dir = extra.choice([d for d in ("data", "input", "export", "backup") if d != in_dir])
    return {path: records_at(3, extra, spec, extra.randint(20, 40))
            for path in (f"{in_dir}/{stem}_archive{dot}{ext}", f"{other_dir}/{name}")}


def jq_solution(jq: str, spec: dict, program: str, in_path: str, out_path: str) -> str:
    """The reference solution: write ``program``, a bash wrapper running the jq program ``jq`` on
    its input (slurped for JSON Lines), then run it on the workspace input."""
    slurp = "-s " if spec["input_shape"] == "jsonl" else ""
    script = ("#!/bin/bash\nset -euo pipefail\n"
              "mkdir -p \"$(dirname \"$2\")\"\n"
              f"jq {slurp}'{jq.replace(chr(39), chr(39) + chr(92) + chr(39) + chr(39))}' "
              "\"$1\" > \"$2\"\n")
    return ("#!/bin/bash\nset -e\n" + heredoc(program, script, executable=True)
            + f"./'{program}' '{in_path}' '{out_path}'\n")


SKELETON = '''\
#!/usr/bin/env python3
"""Usage: ./PROGRAM INPUT OUTPUT"""

import json
import sys
from pathlib import Path


def transform(records):
    """Return what OUTPUT holds, given the input's records (a list of dicts).

    record.get(field) is None both when the field is missing and when it is null.
    """
    raise NotImplementedError("TODO: filter, sort and turn the records into the output")


def main():
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    result = transform(json.loads(src.read_text(encoding="utf-8")))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\\n", encoding="utf-8")


if __name__ == "__main__":
    main()
'''

# --------------------------------------------------------------------------- semantics

def cond_ok(c: dict, r: dict) -> bool:
    v = r.get(c["field"])
    if v is None:
        return False
    op, x = c["op"], c["value"]
    if op == ">":
        return v > x
    if op == ">=":
        return v >= x
    if op == "<":
        return v < x
    if op == "<=":
        return v <= x
    if op == "==":
        return v == x
    if op == "!=":
        return v != x
    if op == "in":
        return v in x
    if op == "is_true":
        return v is True
    if op == "is_false":
        return v is False
    if op == "contains":
        return x in v
    if op == "startswith":
        return v.startswith(x)
    raise ValueError(op)


def derive(d: dict, r: dict):
    if d["kind"] == "count":
        return len(r.get(d["src"]) or [])
    if d["kind"] == "product":
        return round(r[d["a"]] * r[d["b"]], 2)
    if d["kind"] == "length":
        return len(r[d["src"]])
    return int(r[d["src"]][:4])


def transform(spec: dict, recs: list[dict]):
    rows = [r for r in recs if all(cond_ok(c, r) for c in spec["conds"])]
    sf, desc = spec["sort"]["field"], spec["sort"]["desc"]
    rows.sort(key=lambda r: r["id"])
    rows.sort(key=lambda r: r[sf], reverse=desc)  # stable: ties stay by id ascending
    if spec["limit"] is not None:
        rows = rows[:spec["limit"]]
    out = []
    for r in rows:
        o = {spec["rename"].get(f, f): r.get(f) for f in spec["keep"]}
        if spec["derived"]:
            o[spec["derived"]["name"]] = derive(spec["derived"], r)
        out.append(o)
    shape = spec["output_shape"]
    if shape == "by_id":
        return {str(o["id"]): {k: v for k, v in o.items() if k != "id"} for o in out}
    if shape == "wrapped":
        return {spec["count_key"]: len(out), spec["items_key"]: out}
    return out


def serialize(spec: dict, recs: list[dict]) -> str:
    shape = spec["input_shape"]
    if shape == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    if shape == "wrapped":
        return json.dumps({"exported_at": "2024-06-01T12:00:00Z", spec["input_key"]: recs},
                          ensure_ascii=False, indent=2) + "\n"
    return json.dumps(recs, ensure_ascii=False, indent=2) + "\n"


# --------------------------------------------------------------------------- jq reference

def jq_str(x) -> str:
    return json.dumps(x, ensure_ascii=False)


def jq_cond(c: dict) -> str:
    f, op, x = "." + c["field"], c["op"], c["value"]
    nn = f"({f} != null)"
    if op in (">", ">=", "<", "<=", "==", "!="):
        return f"({nn} and {f} {op} {jq_str(x)})"
    if op == "in":
        return f"({nn} and ({' or '.join(f'{f} == {jq_str(v)}' for v in x)}))"
    if op == "is_true":
        return f"({f} == true)"
    if op == "is_false":
        return f"({f} == false)"
    if op == "contains":
        return f"({nn} and any({f}[]; . == {jq_str(x)}))"
    return f"({nn} and ({f} | startswith({jq_str(x)})))"


def jq_program(spec: dict) -> str:
    src = {"array": ".", "jsonl": ".", "wrapped": "." + spec["input_key"]}[spec["input_shape"]]
    parts = [src]
    if spec["conds"]:
        parts.append("map(select(" + " and ".join(jq_cond(c) for c in spec["conds"]) + "))")
    sf = "." + spec["sort"]["field"]
    if spec["sort"]["desc"]:
        parts.append(f"sort_by(.id) | reverse | sort_by({sf}) | reverse")
    else:
        parts.append(f"sort_by(.id) | sort_by({sf})")
    if spec["limit"] is not None:
        parts.append(f".[:{spec['limit']}]")
    keys = [f"{jq_str(spec['rename'].get(f, f))}: .{f}" for f in spec["keep"]]
    d = spec["derived"]
    if d:
        expr = {"count": lambda: f"((.{d.get('src')} // []) | length)",
                "product": lambda: f"((.{d.get('a')} * .{d.get('b')} * 100 | round) / 100)",
                "length": lambda: f"(.{d.get('src')} | length)",
                "year": lambda: f"(.{d.get('src')}[0:4] | tonumber)"}[d["kind"]]()
        keys.append(f"{jq_str(d['name'])}: {expr}")
    parts.append("map({" + ", ".join(keys) + "})")
    if spec["output_shape"] == "by_id":
        parts.append("map({key: (.id | tostring), value: del(.id)}) | from_entries")
    elif spec["output_shape"] == "wrapped":
        parts.append(f"{{{jq_str(spec['count_key'])}: length, {jq_str(spec['items_key'])}: .}}")
    return " | ".join(parts)


# --------------------------------------------------------------------------- text

def describe_cond(c: dict) -> str:
    f, op, x = c["field"], c["op"], c["value"]
    if op in (">", ">=", "<", "<="):
        word = {">": "greater than", ">=": "greater than or equal to", "<": "less than",
                "<=": "less than or equal to"}[op]
        if isinstance(x, str):
            word = {">": "after", ">=": "on or after", "<": "before", "<=": "on or before"}[op]
        return f"`{f}` is {word} `{jq_str(x)}`"
    if op == "==":
        return f"`{f}` is exactly `{jq_str(x)}`"
    if op == "!=":
        return f"`{f}` is present, not null and different from `{jq_str(x)}`"
    if op == "in":
        return f"`{f}` is one of {', '.join(f'`{jq_str(v)}`' for v in x)}"
    if op == "is_true":
        return f"`{f}` is `true`"
    if op == "is_false":
        return f"`{f}` is `false`"
    if op == "contains":
        return f"the list `{f}` contains `{jq_str(x)}`"
    return f"`{f}` starts with `{jq_str(x)}` (case-sensitive)"


def describe_derived(d: dict) -> str:
    if d["kind"] == "count":
        return f"`{d['name']}`: the number of elements of `{d['src']}` (0 when it is missing or null)"
    if d["kind"] == "product":
        return f"`{d['name']}`: `{d['a']}` times `{d['b']}`, rounded to 2 decimal places"
    if d["kind"] == "length":
        return f"`{d['name']}`: the number of characters (Unicode code points) of `{d['src']}`"
    return f"`{d['name']}`: the year of `{d['src']}` (its first four characters) as an integer"


TEST_BODY = r'''
import json
import subprocess
from pathlib import Path

import pytest

WORKDIR = Path.cwd()
PROG = WORKDIR / CONFIG["program"]


def same(got, want, path="$"):
    if type(want) is float:
        assert type(got) in (int, float), f"{path}: expected a number, got {got!r}"
        assert abs(got - want) <= 1e-6, f"{path}: {got!r} != {want!r}"
    elif type(want) is list:
        assert type(got) is list, f"{path}: expected a list, got {type(got).__name__}"
        assert len(got) == len(want), f"{path}: {len(got)} elements, expected {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{path}[{i}]")
    elif type(want) is dict:
        assert type(got) is dict, f"{path}: expected an object, got {type(got).__name__}"
        assert sorted(got) == sorted(want), f"{path}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            same(got[k], want[k], f"{path}.{k}")
    else:
        assert type(got) is type(want) and got == want, f"{path}: {got!r} != {want!r}"


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def run_prog(tmp_path, text):
    src = tmp_path / ("fresh" + CONFIG["input_ext"])
    src.write_text(text, encoding="utf-8")
    dst = tmp_path / "out_dir" / "fresh_result.json"
    r = subprocess.run([str(PROG), str(src), str(dst)], cwd=tmp_path, capture_output=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-2000:]
    assert dst.is_file(), "the program did not write OUTPUT"
    return load(dst)


@pytest.mark.core
def test_workspace_output():
    p = WORKDIR / CONFIG["output"]
    assert p.is_file(), f"{CONFIG['output']} is missing"
    same(load(p), CONFIG["expected"])


def _cases(mark):
    return [pytest.param(c["text"], c["expected"], id=c["id"]) for c in CONFIG["cases"]
            if c["mark"] == mark]


@pytest.mark.core
@pytest.mark.parametrize("text,expected", _cases("core"))
def test_program_on_fresh_input(tmp_path, text, expected):
    same(run_prog(tmp_path, text), expected)


@pytest.mark.boundary
@pytest.mark.parametrize("text,expected", _cases("boundary"))
def test_program_on_edge_cases(tmp_path, text, expected):
    same(run_prog(tmp_path, text), expected)
'''


# --------------------------------------------------------------------------- held-out templates

HELDOUT_THEMES = {
    "books": {"title": ("words", ["The Silent", "A Distant", "Paper", "Winter", "Hidden", "Última"],
                        ["River", "Garden", "Empire", "Letters", "Orchard", "Café"]),
              "author": ("name",),
              "genre": ("choice", ["fantasy", "history", "poetry", "crime", "science", "Crime"]),
              "format": ("choice", ["hardcover", "paperback", "ebook", "audio"]),
              "pages": ("int", 60, 900), "copies": ("int", 0, 12), "price": ("float2", 3, 60),
              "in_print": ("bool",),
              "subjects": ("tags", ["classic", "award", "series", "translated", "signed"]),
              "shelved": ("date",)},
    "flights": {"code": ("words", ["LX", "KL", "AF", "JL", "LA", "SK"],
                         ["104", "212", "388", "415", "730", "951"]),
                "carrier": ("choice", ["SkyWays", "NordAir", "AeroSul", "Kumo", "Ostra"]),
                "origin": ("choice", ["ZRH", "AMS", "CDG", "NRT", "LIM", "GRU", "zrh"]),
                "seats": ("int", 40, 320), "delay_min": ("int", 0, 240),
                "fare": ("float2", 29, 900), "cancelled": ("bool",),
                "services": ("tags", ["wifi", "meals", "lounge", "priority"]),
                "departs": ("date",)},
    "readings": {"sensor": ("choice", ["t-01", "t-02", "h-11", "p-20", "T-01"]),
                 "site": ("choice", ["north", "harbor", "ridge", "delta", "Ålesund"]),
                 "value": ("float1", -20, 45), "samples": ("int", 1, 60),
                 "battery": ("int", 0, 100), "valid": ("bool",),
                 "flags": ("tags", ["spike", "drift", "manual", "calibrated"]),
                 "operator": ("name",), "taken": ("date",)},
}
"""Held-out schemas, used by no train task. Group fields hold values that differ only in case
(``Crime``/``crime``): distinct groups."""
SINGULAR = {"subjects": "subject", "services": "service", "flags": "flag"}
FILTERABLE = ("int", "float1", "float2", "date", "choice", "bool", "tags", "name")
"""Field kinds ``make_condition`` can draw a condition on."""
HELDOUT_PROGRAMS = ["convert", "rollup.sh", "build_view", "query.sh", "process_export",
                    "compute.py"]
HELDOUT_PYTHON_NAMES = {"rollup.sh": "rollup.py", "query.sh": "query.py"}


def fields_of(theme: dict, *kinds: str) -> list[str]:
    return [f for f in theme if theme[f][0] in kinds]


def group_count_params(rng: random.Random, theme: dict) -> dict:
    g = rng.choice(fields_of(theme, "choice"))
    return {"group": g, "form": rng.choice(["counts", "ids", "ranked"]),
            "missing": rng.choice([None, "(none)", "unknown", "_missing"]),
            "count_key": rng.choice(["count", "n", "records"]),
            "nullable": g if rng.random() < 0.7 else rng.choice([f for f in theme if f != g])}


def group_aggregate_params(rng: random.Random, theme: dict) -> dict:
    """``sum`` and ``avg`` take integer fields only: exact sums, so equal aggregates tie exactly
    whatever order a program adds in."""
    g = rng.choice(fields_of(theme, "choice"))
    agg = rng.choice(["sum", "avg", "max", "min"])
    v = rng.choice(fields_of(theme, "int") if agg in ("sum", "avg")
                   else fields_of(theme, "int", "float1", "float2"))
    return {"group": g, "agg": agg, "value": v, "out_key": f"{agg}_{v}",
            "n_key": rng.choice(["n", "records", "used"]), "desc": rng.random() < 0.5,
            "nullable": rng.choice([g, v, v])}


def top_per_group_params(rng: random.Random, theme: dict) -> dict:
    g = rng.choice(fields_of(theme, "choice"))
    v = rng.choice(fields_of(theme, "int", "float1", "float2"))
    return {"group": g, "value": v, "k": rng.randint(1, 3), "highest": rng.random() < 0.5,
            "form": rng.choice(["ids", "rows"]), "nullable": rng.choice([g, v, v])}


def explode_list_params(rng: random.Random, theme: dict) -> dict:
    lst = fields_of(theme, "tags")[0]
    carry = rng.choice(fields_of(theme, "words", "name", "choice"))
    return {"list": lst, "elem_key": SINGULAR[lst], "carry": carry,
            "position": rng.choice([None, "position", "pos", "index"]),
            "order": rng.choice(["element", "id"]), "nullable": rng.choice([lst, lst, carry])}


def dedupe_versions_params(rng: random.Random, theme: dict) -> dict:
    d = fields_of(theme, "date")[0]
    keep = ["id"] + rng.sample([f for f in theme if f != d], rng.randint(1, 2)) + [d]
    return {"date": d, "newest": rng.random() < 0.7, "keep": keep,
            "versions_key": rng.choice([None, "versions", "n_versions"]),
            "nullable": rng.choice([d, d, keep[1]])}


HELDOUT_PARAMS = {"group_count": group_count_params, "group_aggregate": group_aggregate_params,
                  "top_per_group": top_per_group_params, "explode_list": explode_list_params,
                  "dedupe_versions": dedupe_versions_params}
HELDOUT_TEMPLATES = tuple(HELDOUT_PARAMS)
"""What a heldout seed's task computes (no train task computes any of it): counts or id lists
per group, a per-group aggregate ranked, the top records of each group, one row per element of
a list field, and the newest (or oldest) version of records whose ids repeat."""


def filter_fields(spec: dict) -> list[str]:
    """The fields a held-out filter may test: not the group field (one group would be left)."""
    theme = HELDOUT_THEMES[spec["theme"]]
    return [f for f in fields_of(theme, *FILTERABLE) if f != spec.get("group")]


def make_heldout_spec(rng: random.Random) -> dict:
    template = rng.choice(HELDOUT_TEMPLATES)
    theme_name = rng.choice(sorted(HELDOUT_THEMES))
    theme = HELDOUT_THEMES[theme_name]
    spec = {"template": template, "theme": theme_name, **HELDOUT_PARAMS[template](rng, theme)}
    cond = make_condition(rng, theme, rng.choice(filter_fields(spec)))
    return {**spec, "filter": cond if rng.random() < 0.5 else None,
            "input_shape": rng.choice(["array", "jsonl", "wrapped"]),
            "input_key": rng.choice(["records", "entries", "export", "rows"])}


def heldout_value(rng: random.Random, spec: tuple, pool=None):
    if spec[0] == "words":
        return f"{rng.choice(spec[1])} {rng.choice(spec[2])}"
    return gen_value(rng, spec, pool)


def make_heldout_records(rng: random.Random, spec: dict, n: int,
                         tricky: bool = False) -> list[dict]:
    """``n`` records of the spec's theme; ``tricky``: the ranked field draws from 3 values (ties)
    and the nullable field is missing or null more often. Ids repeat for ``dedupe_versions``."""
    theme = HELDOUT_THEMES[spec["theme"]]
    tied = spec.get("value") or spec.get("date")
    pool = [heldout_value(rng, theme[tied]) for _ in range(3)] if tricky and tied else None
    if spec["template"] == "dedupe_versions":
        distinct = rng.sample(range(1, 1000), max(2, n // (3 if tricky else 2)))
        ids = [rng.choice(distinct) for _ in range(n)]
    else:
        ids = rng.sample(range(1, 10000), n)
    recs = []
    for i in ids:
        r = {"id": i}
        for f, fs in theme.items():
            r[f] = heldout_value(rng, fs, pool if f == tied else None)
        p = rng.random()
        if p < (0.3 if tricky else 0.12):
            del r[spec["nullable"]]
        elif p < (0.6 if tricky else 0.25):
            r[spec["nullable"]] = None
        recs.append(r)
    return recs


def heldout_records_at(level: int, rng: random.Random, spec: dict, n: int,
                       tricky: bool = False) -> list[dict]:
    recs = make_heldout_records(rng, spec, n, tricky)
    return with_extra_keys(rng, recs) if level == 3 else recs


def heldout_at_level(spec: dict, level: int, extra: random.Random) -> dict:
    """Level 1: no filter, a plain JSON array in. Level 3: always a filter."""
    if level == 1:
        return {**spec, "filter": None, "input_shape": "array"}
    if level == 3 and spec["filter"] is None:
        theme = HELDOUT_THEMES[spec["theme"]]
        return {**spec, "filter": make_condition(extra, theme, extra.choice(filter_fields(spec)))}
    return spec


# semantics (the expected outputs)

def group_count(spec: dict, rows: list[dict]):
    groups: dict[str, list[int]] = {}
    for r in rows:
        key = r.get(spec["group"])
        if key is None:
            if spec["missing"] is None:
                continue
            key = spec["missing"]
        groups.setdefault(key, []).append(r["id"])
    if spec["form"] == "counts":
        return {k: len(v) for k, v in groups.items()}
    if spec["form"] == "ids":
        return {k: sorted(v) for k, v in groups.items()}
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{spec["group"]: k, spec["count_key"]: len(v)} for k, v in ranked]


def grouped(spec: dict, rows: list[dict]) -> dict[str, list[dict]]:
    """Records with both the group and the value field set, by group value, sorted by it."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r.get(spec["group"]) is not None and r.get(spec["value"]) is not None:
            groups.setdefault(r[spec["group"]], []).append(r)
    return dict(sorted(groups.items()))


def group_aggregate(spec: dict, rows: list[dict]):
    out = []
    for key, rs in grouped(spec, rows).items():
        vs = [r[spec["value"]] for r in rs]
        agg = {"sum": sum, "avg": lambda x: sum(x) / len(x), "max": max, "min": min}[spec["agg"]]
        out.append({spec["group"]: key, spec["out_key"]: agg(vs), spec["n_key"]: len(vs)})
    sign = -1 if spec["desc"] else 1
    return sorted(out, key=lambda o: (sign * o[spec["out_key"]], o[spec["group"]]))


def top_per_group(spec: dict, rows: list[dict]):
    v, sign = spec["value"], -1 if spec["highest"] else 1
    best = {key: sorted(rs, key=lambda r: (sign * r[v], r["id"]))[:spec["k"]]
            for key, rs in grouped(spec, rows).items()}
    if spec["form"] == "ids":
        return {key: [r["id"] for r in rs] for key, rs in best.items()}
    return [{spec["group"]: key, "rank": i + 1, "id": r["id"], v: r[v]}
            for key, rs in best.items() for i, r in enumerate(rs)]


def explode_list(spec: dict, rows: list[dict]):
    out = []
    for r in rows:
        for i, x in enumerate(r.get(spec["list"]) or []):
            o = {"id": r["id"], spec["elem_key"]: x}
            if spec["position"]:
                o[spec["position"]] = i + 1
            o[spec["carry"]] = r.get(spec["carry"])
            out.append((x, r["id"], i, o))
    order = (lambda t: (t[0], t[1])) if spec["order"] == "element" else (lambda t: (t[1], t[2]))
    return [t[3] for t in sorted(out, key=order)]


def dedupe_versions(spec: dict, recs: list[dict]):
    versions: dict[int, list[tuple[int, dict]]] = {}
    for i, r in enumerate(recs):
        versions.setdefault(r["id"], []).append((i, r))
    d = spec["date"]

    def age(p):  # a missing or null date is older than every date; ties by position in INPUT
        return (p[1].get(d) is not None, p[1].get(d) or "", p[0])

    out = []
    for rid in sorted(versions):
        _, r = (max if spec["newest"] else min)(versions[rid], key=age)
        if spec["filter"] is not None and not cond_ok(spec["filter"], r):
            continue
        o = {f: r.get(f) for f in spec["keep"]}
        if spec["versions_key"]:
            o[spec["versions_key"]] = len(versions[rid])
        out.append(o)
    return out


def heldout_result(spec: dict, recs: list[dict]):
    """What OUTPUT holds for the records ``recs`` (the filter comes first, except for
    ``dedupe_versions`` where it applies to the version kept)."""
    if spec["template"] == "dedupe_versions":
        return dedupe_versions(spec, recs)
    rows = [r for r in recs if spec["filter"] is None or cond_ok(spec["filter"], r)]
    return {"group_count": group_count, "group_aggregate": group_aggregate,
            "top_per_group": top_per_group, "explode_list": explode_list}[spec["template"]](spec, rows)


# jq reference

def jq_key(name: str) -> str:
    return f".[{jq_str(name)}]"


def jq_group_count(spec: dict) -> str:
    g = "." + spec["group"]
    if spec["missing"] is None:
        head, key = f"map(select({g} != null)) | group_by({g})", g
    else:
        key = f"({g} // {jq_str(spec['missing'])})"
        head = f"group_by({key})"
    if spec["form"] == "counts":
        return f"{head} | map({{key: (.[0] | {key}), value: length}}) | from_entries"
    if spec["form"] == "ids":
        return f"{head} | map({{key: (.[0] | {key}), value: (map(.id) | sort)}}) | from_entries"
    gk, ck = spec["group"], spec["count_key"]
    return (f"{head} | map({{{jq_str(gk)}: (.[0] | {key}), {jq_str(ck)}: length}}) "
            f"| sort_by([(0 - {jq_key(ck)}), {jq_key(gk)}])")


def jq_group_aggregate(spec: dict) -> str:
    g, v, out = spec["group"], spec["value"], spec["out_key"]
    agg = {"sum": "add", "avg": "add / length", "max": "max", "min": "min"}[spec["agg"]]
    rank = f"(0 - {jq_key(out)})" if spec["desc"] else jq_key(out)
    return (f"map(select(.{g} != null and .{v} != null)) | group_by(.{g}) "
            f"| map({{{jq_str(g)}: .[0].{g}, {jq_str(out)}: (map(.{v}) | {agg}), "
            f"{jq_str(spec['n_key'])}: length}}) | sort_by([{rank}, {jq_key(g)}])")


def jq_top_per_group(spec: dict) -> str:
    g, v, k = spec["group"], spec["value"], spec["k"]
    order = f"sort_by([(0 - .{v}), .id])" if spec["highest"] else f"sort_by([.{v}, .id])"
    head = f"map(select(.{g} != null and .{v} != null)) | group_by(.{g})"
    if spec["form"] == "ids":
        return f"{head} | map({{key: .[0].{g}, value: ({order} | .[:{k}] | map(.id))}}) | from_entries"
    return (f"[{head} | .[] | .[0].{g} as $g | {order} | .[:{k}] | to_entries[] "
            f"| {{{jq_str(g)}: $g, \"rank\": (.key + 1), \"id\": .value.id, {jq_str(v)}: .value.{v}}}]")


def jq_explode_list(spec: dict) -> str:
    pos = spec["position"] or "__position"
    row = (f"{{\"id\": $r.id, {jq_str(spec['elem_key'])}: .value, {jq_str(pos)}: (.key + 1), "
           f"{jq_str(spec['carry'])}: $r.{spec['carry']}}}")
    order = (f"sort_by([{jq_key(spec['elem_key'])}, .id])" if spec["order"] == "element"
             else f"sort_by([.id, {jq_key(pos)}])")
    tail = "" if spec["position"] else f" | map(del({jq_key(pos)}))"
    return f"[.[] | . as $r | (.{spec['list']} // []) | to_entries[] | {row}] | {order}{tail}"


def jq_dedupe_versions(spec: dict) -> str:
    pick = "max_by" if spec["newest"] else "min_by"
    parts = [(f"to_entries | group_by(.value.id) "
              f"| map({{kept: ({pick}([.value.{spec['date']}, .key]) | .value), n: length}})")]
    if spec["filter"] is not None:
        parts.append(f"map(select(.kept | {jq_cond(spec['filter'])}))")
    keys = [f"{jq_str(f)}: $r.{f}" for f in spec["keep"]]
    if spec["versions_key"]:
        keys.append(f"{jq_str(spec['versions_key'])}: .n")
    parts.append("map(.kept as $r | {" + ", ".join(keys) + "})")
    return " | ".join(parts)


def jq_heldout(spec: dict) -> str:
    parts = ["." + spec["input_key"] if spec["input_shape"] == "wrapped" else "."]
    if spec["filter"] is not None and spec["template"] != "dedupe_versions":
        parts.append(f"map(select({jq_cond(spec['filter'])}))")
    parts.append({"group_count": jq_group_count, "group_aggregate": jq_group_aggregate,
                  "top_per_group": jq_top_per_group, "explode_list": jq_explode_list,
                  "dedupe_versions": jq_dedupe_versions}[spec["template"]](spec))
    return " | ".join(parts)


# instruction text

def text_group_count(spec: dict) -> str:
    g, m = spec["group"], spec["missing"]
    unset = (f"A record whose `{g}` is missing or `null` is left out." if m is None else
             f"A record whose `{g}` is missing or `null` belongs to the group `{jq_str(m)}`.")
    what = {
        "counts": "a JSON object with one key per group, mapped to the number of records in it",
        "ids": "a JSON object with one key per group, mapped to the list of its records' `id`s "
               "in increasing order",
        "ranked": f"a JSON array holding one object `{{\"{g}\": GROUP, \"{spec['count_key']}\": N}}` "
                  f"per group, N its number of records; largest N first, groups with equal N "
                  f"in increasing order of GROUP (code point order)",
    }[spec["form"]]
    return (f"Put the records into groups by their `{g}` value: values are compared exactly, "
            f"so values that differ only in letter case are different groups. {unset} "
            f"OUTPUT is {what}. A group with no record does not appear.")


def text_group_aggregate(spec: dict) -> str:
    g, v, out = spec["group"], spec["value"], spec["out_key"]
    agg = {"sum": f"the total of `{v}`", "max": f"the largest `{v}`",
           "min": f"the smallest `{v}`",
           "avg": f"the mean of `{v}` (not rounded: compared within 1e-6)"}[spec["agg"]]
    order = "from the largest AGG to the smallest" if spec["desc"] else \
        "from the smallest AGG to the largest"
    return (f"Ignore every record whose `{g}` or `{v}` is missing or `null`. Collect the remaining "
            f"records by their exact `{g}` value (letter case matters) and compute, for each "
            f"`{g}` value, AGG = {agg} over its records. OUTPUT is a JSON array with one object "
            f"`{{\"{g}\": VALUE, \"{out}\": AGG, \"{spec['n_key']}\": N}}` per `{g}` value, N being "
            f"how many records it covers; ordered {order}, equal AGG by VALUE in increasing code "
            f"point order. A total or extreme of integers is an integer.")


def text_top_per_group(spec: dict) -> str:
    g, v, k = spec["group"], spec["value"], spec["k"]
    which = "highest" if spec["highest"] else "lowest"
    what = {
        "ids": f"a JSON object mapping each `{g}` value to the list of the `id`s of its picks, "
               f"best first",
        "rows": f"a JSON array of objects `{{\"{g}\": VALUE, \"rank\": R, \"id\": ID, \"{v}\": X}}`, "
                f"one per pick (R is 1 for a value's best pick, then 2, ...), ordered by VALUE in "
                f"increasing code point order, then by R",
    }[spec["form"]]
    return (f"Records whose `{g}` or `{v}` is missing or `null` take no part. For every distinct "
            f"`{g}` value (exact match, letter case matters) pick the {k} record"
            f"{'s' if k > 1 else ''} with the {which} `{v}` (all of them when there are fewer); "
            f"between records with equal `{v}` the smaller `id` is the better pick. OUTPUT is "
            f"{what}.")


def text_explode_list(spec: dict) -> str:
    lst, e, c, pos = spec["list"], spec["elem_key"], spec["carry"], spec["position"]
    row = f"\"id\": ID, \"{e}\": ELEMENT" + (f", \"{pos}\": P" if pos else "") + f", \"{c}\": C"
    where = ", P the element's position in the list counting from 1," if pos else ","
    order = ("by ELEMENT in increasing code point order, then by ID" if spec["order"] == "element"
             else "by ID, then by the element's position in the list")
    return (f"Unnest the list field `{lst}`: every element of a record's `{lst}` becomes one row "
            f"`{{{row}}}`, where ID is the record's `id`{where} and C the record's `{c}` (`null` "
            f"when it is missing). A record whose `{lst}` is missing, `null` or empty gives no "
            f"row. OUTPUT is a JSON array of all rows, ordered {order}.")


def text_dedupe_versions(spec: dict) -> str:
    d = spec["date"]
    which, tie = ("latest", "later") if spec["newest"] else ("earliest", "earlier")
    keys = ", ".join(f"`{f}`" for f in spec["keep"])
    count = (f", plus `{spec['versions_key']}`: how many records of INPUT have that `id`"
             if spec["versions_key"] else "")
    cond = (f" Then drop every `id` whose kept version does not satisfy: "
            f"{describe_cond(spec['filter'])} (false when that field is missing or `null`)."
            if spec["filter"] is not None else "")
    return (f"INPUT is a log of revisions: the same `id` may occur in several records, each one a "
            f"version of that record. For every `id` keep exactly one version, the one with the "
            f"{which} `{d}`. A version whose `{d}` is missing or `null` is older than any dated "
            f"one; between versions with the same `{d}` (or both without one) the one found "
            f"{tie} in INPUT wins.{cond} OUTPUT is a JSON array with one object per remaining "
            f"`id`, in increasing `id` order, with exactly the keys {keys} taken from the kept "
            f"version (`null` when it lacks the field){count}.")


HELDOUT_TEXT = {"group_count": text_group_count, "group_aggregate": text_group_aggregate,
                "top_per_group": text_top_per_group, "explode_list": text_explode_list,
                "dedupe_versions": text_dedupe_versions}

HELDOUT_SKELETON = '''\
#!/usr/bin/env python3
"""Usage: ./PROGRAM INPUT OUTPUT"""

import json
import sys
from pathlib import Path


def compute(records):
    """The value to save in OUTPUT, given the list of records (dicts) read from INPUT.

    Use record.get(key): it is None for a key that is absent as well as for a null one.
    """
    raise NotImplementedError("TODO: compute the result from the records")


def main():
    records = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = Path(sys.argv[2])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(compute(records), ensure_ascii=False) + "\\n", encoding="utf-8")


if __name__ == "__main__":
    main()
'''


def heldout_data(level: int, rng: random.Random, draw_spec) -> tuple[dict, list[dict], object]:
    """A spec from ``draw_spec()``, workspace records for it and their result, all drawn again
    until the result has 2 entries or more (a filter may pass no record at all)."""
    while True:
        spec = draw_spec()
        recs = heldout_records_at(level, rng, spec, rng.randint(*RECORDS[level]))
        expected = heldout_result(spec, recs)
        if len(expected) >= 2:
            return spec, recs, expected


def heldout_cases(level: int, draw: random.Random, extra: random.Random, spec: dict) -> list[dict]:
    """The hidden inputs the agent's program is re-run on, with their expected results."""
    def case(case_id: str, mark: str, recs: list[dict]) -> dict:
        return {"id": case_id, "mark": mark, "text": serialize(spec, recs),
                "expected": heldout_result(spec, recs)}

    cases = [case(f"random{i}", "core", heldout_records_at(level, draw, spec, draw.randint(*FRESH[level])))
             for i in range(2)]
    if level > 1:
        cases.append(case("nulls_missing_and_ties", "boundary",
                          heldout_records_at(level, draw, spec, draw.randint(12, 25), tricky=True)))
    if level == 3:
        unset = heldout_records_at(3, extra, spec, extra.randint(15, 25))
        for r in unset:
            if extra.random() < 0.5:
                r.pop(spec["nullable"], None)
            else:
                r[spec["nullable"]] = None
        rejected = [r for r in make_heldout_records(extra, spec, 30)
                    if not cond_ok(spec["filter"], r)]
        cases += [case("many_ties_and_nulls", "boundary",
                       heldout_records_at(3, extra, spec, extra.randint(40, 60), tricky=True)),
                  case("nullable_never_set", "boundary", unset),
                  case("nothing_passes_the_filter", "boundary", with_extra_keys(extra, rejected)),
                  case("one_record", "boundary", heldout_records_at(3, extra, spec, 1))]
    cases.append(case("no_records", "boundary", []))
    return cases


def heldout_look_alikes(extra: random.Random, spec: dict, in_path: str) -> dict[str, list[dict]]:
    """Level 3: data files next to the input that look like it and must stay untouched."""
    in_dir, _, name = in_path.partition("/")
    stem, dot, ext = name.partition(".")
    other_dir = extra.choice([d for d in ("data", "input", "export", "backup") if d != in_dir])
    return {path: heldout_records_at(3, extra, spec, extra.randint(20, 40))
            for path in (f"{in_dir}/{stem}_old{dot}{ext}", f"{other_dir}/{name}")}


def wrap(text: str) -> str:
    """``text`` as lines of at most 92 characters, words (and code spans' words) kept whole."""
    return textwrap.fill(text, 92, break_long_words=False, break_on_hyphens=False)


def build_heldout(name: str, rng: random.Random, seed: int, level: int) -> dict:
    """A heldout seed's task: one of ``HELDOUT_TEMPLATES`` on a ``HELDOUT_THEMES`` schema.
    Level 2's draws come from ``rng`` at every level, the other levels' from their own
    generator, as for the train template."""
    extra = random.Random(f"{name}@{level}:{seed}")
    spec, recs, expected = heldout_data(2, rng, lambda: make_heldout_spec(rng))
    if level != 2:
        base = spec
        spec, recs, expected = heldout_data(level, extra, lambda: heldout_at_level(base, level, extra))
    program = rng.choice(HELDOUT_PROGRAMS)
    if level == 1:
        program = HELDOUT_PYTHON_NAMES.get(program, program)
    in_ext = ".jsonl" if spec["input_shape"] == "jsonl" else ".json"
    in_path = f"{rng.choice(['data', 'input', 'export'])}/{spec['theme']}{in_ext}"
    out_path = f"{rng.choice(['out', 'reports', 'dist'])}/{rng.choice(['summary', 'result', 'table'])}.json"
    cases = heldout_cases(level, rng if level == 2 else extra, extra, spec)

    theme = HELDOUT_THEMES[spec["theme"]]
    example = next((r for r in recs if all(r.get(f) is not None for f in theme)), recs[0])
    shape = {"array": "a JSON array of objects",
             "jsonl": "JSON Lines (one object per line)",
             "wrapped": f"one JSON object whose key `{spec['input_key']}` holds the array of "
                        f"records (its other keys are metadata)"}[spec["input_shape"]]
    ids = ("an integer `id` (repeated across versions of a record)"
           if spec["template"] == "dedupe_versions" else "a unique integer `id`")
    extra_keys = ("\nSome records also carry keys that are not part of this schema; ignore them.\n"
                  if level == 3 else "")
    steps = []
    if spec["filter"] is not None and spec["template"] != "dedupe_versions":
        steps.append(f"First discard every record except those where "
                     f"{describe_cond(spec['filter'])}; a test on a field that is missing or "
                     f"`null` fails.")
    steps.append(HELDOUT_TEXT[spec["template"]](spec))
    work = "\n\n".join(wrap(step) for step in steps)
    if level == 1:
        program_text = f"""\
There is a Python program `{program}` here, used as `./{program} INPUT OUTPUT`. It already loads
INPUT (a file like `{in_path}`) and saves, as JSON in OUTPUT, the value its function
`compute(records)` returns; that function is still missing. Write it (or rewrite the whole
program) so that OUTPUT holds the result described below."""
    else:
        program_text = f"""\
Create an executable program `{program}` here (any language, starting with a shebang line).
Used as `./{program} INPUT OUTPUT`, it reads INPUT (a file like `{in_path}`), computes the
result described below and saves it as JSON in OUTPUT, creating OUTPUT's directory when it
does not exist."""
    leave_alone = ("\nOther data files in the workspace are not the input of this task; do not "
                   "modify, move or delete them.\n" if level == 3 else "")
    header = wrap(f"The {spec['theme']} export `{in_path}` is {shape}. Each record has {ids} "
                  f"and the fields {', '.join(f'`{f}`' for f in theme)}. `{spec['nullable']}` "
                  f"is absent or `null` in some records; every other field is always there. "
                  f"For example:")
    instruction = f"""\
{header}

{md_code(json.dumps(example, ensure_ascii=False))}
{extra_keys}
{program_text}

{work}

Keep JSON number types (an integer stays an integer). INPUT with no records still gives a result
of the same type (an empty array or object). Finally run `./{program} {in_path} {out_path}`.
{leave_alone}"""
    solution = jq_solution(jq_heldout(spec), spec, program, in_path, out_path)
    config = {"program": program, "output": out_path, "expected": expected, "cases": cases,
              "input_ext": in_ext}
    workspace = {in_path: serialize(spec, recs)}
    body = TEST_BODY
    if level == 1:
        workspace[program] = HELDOUT_SKELETON.replace("PROGRAM", program)
    if level == 3:
        others = heldout_look_alikes(extra, spec, in_path)
        kept = {path: serialize(spec, r) for path, r in others.items()}
        config["left_alone"] = left_alone(kept)
        workspace.update(kept)
        stale = heldout_result(spec, next(iter(others.values())))
        if stale == expected:
            stale = heldout_result(spec, [])
        workspace[out_path] = json.dumps(stale, ensure_ascii=False, indent=2) + "\n"
        body += LEFT_ALONE_TEST
    return {
        "instruction": instruction,
        "workspace": files(workspace, executable=(program,)),
        "tests": files({"test_json_transform.py": hidden_test_source(config, body)}),
        "solution": solution,
        "tags": ["json", "jq", spec["theme"], spec["template"]],
        "template": spec["template"],
    }



class JsonTransform(Family):
    name = "json-transform"
    category = "data"
    description = ("Write a program that filters, derives, projects, sorts and reshapes JSON "
                   "records according to a seeded rule.")
    difficulty = "medium"

    levels: ClassVar[dict[int, str]] = {
        1: ("one filter condition, no derived field or limit, a JSON array in and a list out, "
            "10-16 records, a Python skeleton that already reads INPUT and writes OUTPUT, and no "
            "hidden case with nulls, missing values and ties (held-out templates: no filter)"),
        2: ("the family as it always was: one or two conditions, an optional derived field and "
            "limit, three input and output shapes, 18-35 records, hidden cases random, "
            "null/missing with ties, and empty (held-out templates: an optional filter)"),
        3: ("always two conditions and a derived field, 60-100 records with extra keys to leave "
            "out, three more hidden edge cases, and look-alike data files and a stale output in "
            "the workspace; the tests check the look-alikes are untouched (held-out templates: "
            "always a filter, and a single-record case)"),
    }

    train_templates = ("filter_project",)
    heldout_templates = HELDOUT_TEMPLATES

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        if split_of(seed) == "heldout":
            return build_heldout(self.name, rng, seed, level)
        extra = random.Random(f"{self.name}@{level}:{seed}")
        while True:  # level 2's draws, made at every level: the same seed keeps its names
            spec = make_spec(rng)
            recs = make_records(rng, spec, rng.randint(*RECORDS[2]))
            expected = transform(spec, recs)
            if n_results(spec, expected) >= 2:
                break
        if level != 2:
            spec, recs, expected = data_at(spec, level, extra)
        program = rng.choice(["transform", "transform.sh", "select_records", "jq_filter.sh",
                              "reshape", "process.py"])
        if level == 1:
            program = PYTHON_NAMES.get(program, program)
        in_ext = ".jsonl" if spec["input_shape"] == "jsonl" else ".json"
        in_path = f"{rng.choice(['data', 'input', 'export'])}/{spec['theme']}{in_ext}"
        out_dir = rng.choice(["out", "result", "build"])
        out_path = f"{out_dir}/{rng.choice(['selected', 'report', 'view'])}.json"
        draw = rng if level == 2 else extra
        cases = []
        for i in range(2):
            r = records_at(level, draw, spec, draw.randint(*FRESH[level]))
            cases.append({"id": f"random{i}", "mark": "core", "text": serialize(spec, r),
                          "expected": transform(spec, r)})
        if level > 1:
            r = records_at(level, draw, spec, draw.randint(12, 25), tricky=True)
            cases.append({"id": "nulls_missing_and_ties", "mark": "boundary",
                          "text": serialize(spec, r), "expected": transform(spec, r)})
        if level == 3:
            cases += level3_cases(extra, spec)
        cases.append({"id": "no_records", "mark": "boundary", "text": serialize(spec, []),
                      "expected": transform(spec, [])})

        theme = THEMES[spec["theme"]]
        example = next((r for r in recs if all(r.get(f) is not None for f in theme)), recs[0])
        shape = {"array": "a JSON array of record objects",
                 "jsonl": "JSON Lines: one record object per line",
                 "wrapped": f"a JSON object whose `{spec['input_key']}` key holds the array of "
                            f"record objects (other keys are metadata)"}[spec["input_shape"]]
        nf = spec["nullable"]
        conds = " AND ".join(describe_cond(c) for c in spec["conds"])
        keys = ", ".join(f"`{spec['rename'].get(f, f)}`" + (f" (the record's `{f}`)"
                                                              if f in spec["rename"] else "")
                         for f in spec["keep"])
        dtext = (f"\n   plus the computed key {describe_derived(spec['derived'])}"
                 if spec["derived"] else "")
        sort_dir = "descending" if spec["sort"]["desc"] else "ascending"
        limit = (f"\n4. Keep only the first {spec['limit']} records (all of them if there are "
                 f"fewer)." if spec["limit"] is not None else "")
        n = 5 if spec["limit"] is not None else 4
        out_shape = {
            "list": "a JSON array of these objects, in order",
            "by_id": ("a JSON object that maps each record's `id`, as a string (e.g. `\"42\"`), "
                      "to its object without the `id` key (key order does not matter)"),
            "wrapped": (f"a JSON object `{{\"{spec['count_key']}\": N, \"{spec['items_key']}\": "
                        f"[...]}}` where the array holds these objects in order and N is their "
                        f"number"),
        }[spec["output_shape"]]
        extra_keys = ("\nRecords may also carry keys outside this schema; they never appear in "
                      "OUTPUT.\n" if level == 3 else "")
        if level == 1:
            program_text = f"""\
`{program}` in the current directory is a Python program, run as

    ./{program} INPUT OUTPUT

that already reads INPUT (same format as `{in_path}`) and writes OUTPUT as JSON; only its
function `transform(records)` is not written yet. Fill it in (or replace the whole program) so
that the program does, in this order:"""
        else:
            program_text = f"""\
Write an executable program `{program}` in the current directory (any language; start it with a
shebang line), run as

    ./{program} INPUT OUTPUT

that reads INPUT (same format as `{in_path}`) and writes OUTPUT as JSON (create its
directory if needed), doing in this order:"""
        leave_alone = ("\nThe other data files in the workspace are not this task's input: leave "
                       "them unchanged.\n" if level == 3 else "")
        instruction = f"""\
`{in_path}` holds {spec['theme'][:-1]} records as {shape}. Each record has an integer `id` (unique)
and these fields: {', '.join(f'`{f}`' for f in theme)}. The field `{nf}` may be missing
or `null` in some records; the other fields are always present. A record looks like:

{md_code(json.dumps(example, ensure_ascii=False))}
{extra_keys}
{program_text}

1. Keep only the records where {conds}. A condition on a field that is missing or `null` in a
   record is false.
2. Sort them by `{spec['sort']['field']}` in {sort_dir} order (numbers numerically, strings by
   code point); records with equal `{spec['sort']['field']}` are ordered by `id` ascending.
3. Turn every record into an object with exactly the keys {keys}{dtext}.
   A kept field that is missing in the record is written as `null`.{limit}
{n}. OUTPUT is {out_shape}.

Numbers keep their JSON type: integers stay integers. An input with no records gives an empty
result of the same shape. Then run it on `{in_path}` with the output path `{out_path}`.
{leave_alone}"""
        solution = jq_solution(jq_program(spec), spec, program, in_path, out_path)
        config = {"program": program, "output": out_path, "expected": expected, "cases": cases,
                  "input_ext": in_ext}
        workspace = {in_path: serialize(spec, recs)}
        body = TEST_BODY
        if level == 1:
            workspace[program] = SKELETON.replace("PROGRAM", program)
        if level == 3:
            others = look_alikes(extra, spec, in_path)
            kept = {path: serialize(spec, r) for path, r in others.items()}
            config["left_alone"] = left_alone(kept)
            workspace.update(kept)
            stale = transform(spec, next(iter(others.values())))
            workspace[out_path] = json.dumps(stale, ensure_ascii=False, indent=2) + "\n"
            body += LEFT_ALONE_TEST
        return {
            "instruction": instruction,
            "workspace": files(workspace, executable=(program,)),
            "tests": files({"test_json_transform.py": hidden_test_source(config, body)}),
            "solution": solution,
            "tags": ["json", "jq", spec["theme"], spec["output_shape"]],
            "template": "filter_project",
        }


FAMILY = JsonTransform()
