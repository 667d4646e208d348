#!/bin/bash
# Builds the task repository in the current directory (deterministic history).
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY 2>/dev/null || true
T=1719792000
commit() {  # commit "Name" email "message"
  T=$((T + 2700))
  git add -A
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2" \
  GIT_AUTHOR_DATE="@$T +0000" GIT_COMMITTER_DATE="@$T +0000" git commit -q -m "$3"
}
dana() { commit "Dana Whitfield" dana@example.com "$1"; }
git -c init.defaultBranch=main init -q .
git symbolic-ref HEAD refs/heads/main
mkdir -p report tests

cat > README.md <<'X'
# report

Turns query results (lists of dicts) into files.

## Formats

- JSON: `report.json_export.to_json(rows)`

## Development

Run the tests with `python3 -m pytest tests`.
X
cat > report/__init__.py <<'X'
"""Report exporters."""
from .core import columns
from .json_export import to_json
X
cat > report/core.py <<'X'
def columns(rows):
    """Column names in first-seen order."""
    seen = []
    for row in rows:
        for key in row:
            if key not in seen:
                seen.append(key)
    return seen
X
cat > report/json_export.py <<'X'
import json


def to_json(rows):
    return json.dumps(rows, indent=2, sort_keys=True)
X
commit "Alice Moreau" alice@example.com "Initial report exporters"

cat > tests/test_json_export.py <<'X'
from report import to_json


def test_roundtrip():
    assert to_json([{"a": 1}]).startswith("[")
X
commit "Bob Okafor" bob@example.com "Add JSON exporter test"

# ---- feature branch: a messy series of work-in-progress commits
git checkout -q -b feature/csv-export
cat > report/csv_export.py <<'X'
from .core import columns


def to_csv(rows):
    cols = columns(rows)
    lines = [",".join(cols)]
    for row in rows:
        lines.append(",".join(str(row.get(c, "")) for c in cols))
    return "\n".join(lines)
X
dana "wip csv"

cat > debug_rows.txt <<'X'
[{'id': 1, 'name': 'Widget, large'}]
X
sed -i 's/    cols = columns(rows)/    cols = columns(rows)\n    print("DEBUG", cols)/' report/csv_export.py
dana "debugging"

cat > report/csv_export.py <<'X'
import csv
import io

from .core import columns


def to_csv(rows):
    """CSV text (with a header line) for a list of dicts; fields are quoted when needed."""
    cols = columns(rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return out.getvalue()
X
git rm -q debug_rows.txt
dana "use csv module, quoting"

cat > tests/test_csv_export.py <<'X'
from report.csv_export import to_csv


def test_header_and_quoting():
    assert to_csv([{"id": 1, "name": "a, b"}]) == 'id,name\n1,"a, b"\n'
X
dana "tests"

sed -i 's/^from .json_export import to_json$/from .json_export import to_json\nfrom .csv_export import to_csv/' report/__init__.py
dana "export to_csv"

sed -i 's/^- JSON: `report.json_export.to_json(rows)`$/- JSON: `report.json_export.to_json(rows)`\n- CSV: `report.csv_export.to_csv(rows)`/' README.md
dana "readme"

# ---- main moves on meanwhile
git checkout -q main
cat >> report/core.py <<'X'


def select(rows, keys):
    """Only the given keys of every row."""
    return [{k: row[k] for k in keys if k in row} for row in rows]
X
commit "Erik Lund" erik@example.com "Add select() helper"

cat > CONTRIBUTING.md <<'X'
# Contributing

Keep one logical change per commit and write a descriptive commit message.
X
sed -i 's/^Run the tests with `python3 -m pytest tests`.$/Run the tests with `python3 -m pytest tests`.\nSee CONTRIBUTING.md before opening a pull request./' README.md
commit "Alice Moreau" alice@example.com "Add contribution guidelines"
