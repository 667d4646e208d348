#!/usr/bin/env bash
# Reproduces results/real-tasks/README.md's tables. DATASETS: the datasets/ folder of a checkout of
# rese1f/terminal-bench-datasets (Apache-2.0), snapshot 17d2b935. Hours on 2 cores; prepare needs
# Debian's archive, PyPI and the npm registry.
set -euo pipefail
DATASETS=${1:?usage: make_tables.sh DATASETS_DIR}
out=$(dirname "$0")
for ds in aider_polyglot evoeval deveval; do
  termrl tasks prepare "$DATASETS/$ds" --json > /dev/null || true   # exits 1 while any task is unsupported
  termrl tasks validate "$DATASETS/$ds" --json > "$out/$ds.json" || true
done
python "$(dirname "$0")/../../scripts/real_tasks_table.py" \
  aider_polyglot="$out/aider_polyglot.json" evoeval="$out/evoeval.json" deveval="$out/deveval.json"
