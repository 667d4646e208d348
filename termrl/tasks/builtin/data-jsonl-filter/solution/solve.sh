#!/bin/bash
cat > filter_events <<'PY'
#!/usr/bin/env python3
import json, re, sys

TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
path, opts = sys.argv[1], sys.argv[2:]
flt = {}
for i in range(0, len(opts), 2):
    flt[opts[i]] = opts[i + 1]

skipped = 0
out = sys.stdout
with open(path, encoding="utf-8") as fh:
    for line in fh:
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not (isinstance(ev, dict) and isinstance(ev.get("ts"), str) and TS.fullmatch(ev["ts"])
                and isinstance(ev.get("type"), str)):
            skipped += 1
            continue
        if "--type" in flt and ev["type"] != flt["--type"]:
            continue
        if "--since" in flt and ev["ts"] < flt["--since"]:
            continue
        if "--until" in flt and ev["ts"] >= flt["--until"]:
            continue
        out.write(json.dumps(ev, ensure_ascii=False) + "\n")
print(f"skipped {skipped}", file=sys.stderr)
PY
chmod +x filter_events
./filter_events events.jsonl --type login --since 2024-05-02T00:00:00Z --until 2024-05-03T00:00:00Z > logins.jsonl
