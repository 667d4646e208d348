#!/bin/bash
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
git checkout -q main
git bisect start main v1.0 >/dev/null
# check.py exits 125 for revisions that cannot be tested: git bisect run skips those.
git bisect run python3 check.py >/dev/null
bad=$(git rev-parse refs/bisect/bad)
git bisect reset -q 2>/dev/null || git bisect reset >/dev/null
printf '%s\n' "$bad" > first_bad.txt
