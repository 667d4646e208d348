#!/bin/bash
cat > csvjoin <<'PY'
#!/usr/bin/env python3
import csv, sys
from collections import defaultdict

args = sys.argv[1:]
left_join = False
if args and args[0] == "--left":
    left_join = True
    args = args[1:]
if len(args) != 3:
    print("usage: csvjoin [--left] LEFT.csv RIGHT.csv KEY", file=sys.stderr)
    sys.exit(2)
lpath, rpath, key = args


def read(path):
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return (rows[0] if rows else []), rows[1:]


lh, lrows = read(lpath)
rh, rrows = read(rpath)
if key not in lh or key not in rh:
    print(f"csvjoin: key column {key!r} missing", file=sys.stderr)
    sys.exit(2)
lk, rk = lh.index(key), rh.index(key)
rcols = [i for i in range(len(rh)) if i != rk]
header = lh + [rh[i] + "_right" if rh[i] in lh else rh[i] for i in rcols]

index = defaultdict(list)
for r in rrows:
    if r and len(r) > rk and r[rk] != "":
        index[r[rk]].append(r)

w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(header)
for l in lrows:
    if not l:
        continue
    matches = index.get(l[lk], []) if l[lk] != "" else []
    for r in matches:
        w.writerow(l + [r[i] for i in rcols])
    if not matches and left_join:
        w.writerow(l + [""] * len(rcols))
PY
chmod +x csvjoin
./csvjoin --left customers.csv orders.csv customer_id > customer_orders.csv
