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

Levels: level 1 narrows the seed's rule to one condition, no derived field, no limit, a plain
JSON array in and a list out, on fewer records, hands the agent a Python skeleton that already
does the I/O, and drops the null/missing-with-ties hidden case. Level 3 always has two
conditions and a derived field, three times the records, records with extra keys that must
not leak into the output, more hidden edge cases, and look-alike data files (plus a stale
output) in the workspace; the tests check the look-alikes were left untouched.
"""

from __future__ import annotations

import json
import random
from typing import ClassVar

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone, md_code
from .base import Family, files

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


class JsonTransform(Family):
    name = "json-transform"
    category = "data"
    description = ("Write a program that filters, derives, projects, sorts and reshapes JSON "
                   "records according to a seeded rule.")
    difficulty = "medium"

    levels: ClassVar[dict[int, str]] = {
        1: ("one filter condition, no derived field or limit, a JSON array in and a list out, "
            "10-16 records, a Python skeleton that already reads INPUT and writes OUTPUT, and no "
            "hidden case with nulls, missing values and ties"),
        2: ("the family as it always was: one or two conditions, an optional derived field and "
            "limit, three input and output shapes, 18-35 records, hidden cases random, "
            "null/missing with ties, and empty"),
        3: ("always two conditions and a derived field, 60-100 records with extra keys to leave "
            "out, three more hidden edge cases, and look-alike data files and a stale output in "
            "the workspace; the tests check the look-alikes are untouched"),
    }

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
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
        jq = jq_program(spec)
        slurp = "-s " if spec["input_shape"] == "jsonl" else ""
        script = ("#!/bin/bash\nset -euo pipefail\n"
                  "mkdir -p \"$(dirname \"$2\")\"\n"
                  f"jq {slurp}'{jq.replace(chr(39), chr(39) + chr(92) + chr(39) + chr(39))}' "
                  "\"$1\" > \"$2\"\n")
        solution = ("#!/bin/bash\nset -e\n" + heredoc(program, script, executable=True)
                    + f"./'{program}' '{in_path}' '{out_path}'\n")
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
        }


FAMILY = JsonTransform()
