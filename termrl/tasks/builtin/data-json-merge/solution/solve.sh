#!/bin/bash
cat > jsonmerge <<'PY'
#!/usr/bin/env python3
import json, sys
from decimal import Decimal


def merge(a, b):
    for k, v in b.items():
        if v is None:
            a.pop(k, None)
        elif k in a and isinstance(a[k], dict) and isinstance(v, dict):
            a[k] = merge(a[k], v)
        else:
            a[k] = v
    return a


def load(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh, parse_float=Decimal)
    except (OSError, ValueError) as e:
        print(f"jsonmerge: {path}: {e}", file=sys.stderr)
        sys.exit(2)
    if not isinstance(data, dict):
        print(f"jsonmerge: {path}: top level is not an object", file=sys.stderr)
        sys.exit(2)
    return data


def dump(o):
    if isinstance(o, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dump(v) for k, v in o.items()) + "}"
    if isinstance(o, list):
        return "[" + ",".join(dump(v) for v in o) + "]"
    if isinstance(o, Decimal):
        return str(o)
    return json.dumps(o, ensure_ascii=False)


if len(sys.argv) < 2:
    print("usage: jsonmerge FILE1 [FILE2 ...]", file=sys.stderr)
    sys.exit(2)
docs = [load(p) for p in sys.argv[1:]]
result = docs[0]
for d in docs[1:]:
    result = merge(result, d)
sys.stdout.write(dump(result) + "\n")
PY
chmod +x jsonmerge
./jsonmerge config/base.json config/prod.json config/local.json > config/merged.json
