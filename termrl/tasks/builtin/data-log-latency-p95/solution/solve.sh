#!/bin/bash
cat > latency_report <<'PY'
#!/usr/bin/env python3
import csv, re, sys
from collections import defaultdict

LINE = re.compile(r'(\S+) \S+ \S+ \[([^]]+)\] "([A-Z]+) (\S+) HTTP/[0-9.]+" ([0-9]{3}) ([0-9]+|-) ([0-9]+)\.([0-9]{3})')
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
DIGITS = re.compile(r"[0-9]+")


def normalize(target):
    path = re.split(r"[?#]", target, maxsplit=1)[0]
    segs = []
    for s in path.split("/"):
        if not s:
            continue
        if DIGITS.fullmatch(s):
            s = "{id}"
        elif UUID.fullmatch(s):
            s = "{uuid}"
        segs.append(s)
    return "/" + "/".join(segs)


def pct(sorted_vals, p):
    n = len(sorted_vals)
    k = (p * n + 99) // 100
    return sorted_vals[k - 1]


times = defaultdict(list)
errors = defaultdict(int)
with open(sys.argv[1], "rb") as fh:
    for raw in fh:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        m = LINE.fullmatch(line)
        if not m:
            continue
        ep = m.group(3) + " " + normalize(m.group(4))
        times[ep].append(int(m.group(7)) * 1000 + int(m.group(8)))
        if int(m.group(5)) >= 500:
            errors[ep] += 1

rows = []
for ep, ts in times.items():
    ts.sort()
    rows.append([ep, len(ts), errors[ep], pct(ts, 50), pct(ts, 95), ts[-1]])
rows.sort(key=lambda r: (-r[1], r[0].encode()))
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["endpoint", "requests", "errors", "p50_ms", "p95_ms", "max_ms"])
w.writerows(rows)
PY
chmod +x latency_report
./latency_report logs/access.log > latency.csv
