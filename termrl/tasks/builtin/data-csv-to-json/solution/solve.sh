#!/bin/bash
cat > csv2json <<'PY'
#!/usr/bin/env python3
import csv, json, re, sys

INT = re.compile(r"-?(0|[1-9][0-9]*)")
FLOAT = re.compile(r"-?(0|[1-9][0-9]*)\.[0-9]+")


def convert(v):
    if v == "":
        return None
    if INT.fullmatch(v):
        return int(v)
    if FLOAT.fullmatch(v):
        return float(v)
    if v == "true":
        return True
    if v == "false":
        return False
    return v


with open(sys.argv[1], encoding="utf-8-sig", newline="") as fh:
    rows = [r for r in csv.reader(fh) if r]
out = []
if rows:
    header = rows[0]
    for r in rows[1:]:
        out.append({k: convert(v) for k, v in zip(header, r)})
json.dump(out, sys.stdout, ensure_ascii=False, indent=2)
sys.stdout.write("\n")
PY
chmod +x csv2json
./csv2json inventory.csv > inventory.json
