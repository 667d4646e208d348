#!/bin/bash
set -euo pipefail
f=tools/migrate.py
git checkout -q main
# Most recent commit that deleted the file; restore it from that commit's parent (keeps the mode).
del=$(git log --format=%H --diff-filter=D -n 1 -- "$f")
git checkout "$del^" -- "$f"
git commit -q -m "Restore $f"
