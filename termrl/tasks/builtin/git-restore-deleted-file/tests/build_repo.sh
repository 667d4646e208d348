#!/bin/bash
# Builds the task repository in the current directory (deterministic history).
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY 2>/dev/null || true
T=1709251200
commit() {  # commit "Name" email "message"
  T=$((T + 7200))
  git add -A
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2" \
  GIT_AUTHOR_DATE="@$T +0000" GIT_COMMITTER_DATE="@$T +0000" git commit -q -m "$3"
}
git -c init.defaultBranch=main init -q .
git symbolic-ref HEAD refs/heads/main
mkdir -p src tools

cat > README.md <<'X'
# ledger

Bookkeeping backend.

Tools:
- `tools/lint.sh`: style checks
X
cat > src/app.py <<'X'
def balance(entries):
    return sum(amount for _, amount in entries)
X
printf '#!/bin/sh\nexec python3 -m pyflakes src\n' > tools/lint.sh
chmod 755 tools/lint.sh
commit "Priya Raman" priya@example.com "Initial ledger backend"

cat > tools/migrate.py <<'X'
#!/usr/bin/env python3
"""Copy ledger rows from the old CSV export into the new schema."""
import csv
import sys


def convert(row):
    return {"account": row[0], "amount_cents": int(round(float(row[1]) * 100))}


def main(path):
    with open(path, newline="") as f:
        for row in csv.reader(f):
            print(convert(row))


if __name__ == "__main__":
    main(sys.argv[1])
X
chmod 755 tools/migrate.py
sed -i 's/^- `tools\/lint.sh`: style checks$/- `tools\/lint.sh`: style checks\n- `tools\/migrate.py`: import old CSV exports/' README.md
commit "Tomasz Wrona" tomasz@example.com "Add data migration tool"

python3 - <<'X'
p = "tools/migrate.py"
s = open(p).read()
s = s.replace("def main(path):\n", "def main(path, dry_run=False):\n")
s = s.replace("            print(convert(row))\n",
              "            record = convert(row)\n            if dry_run:\n                print(\"DRY\", record)\n            else:\n                print(record)\n")
s = s.replace("    main(sys.argv[1])\n", "    main(sys.argv[1], dry_run=\"--dry-run\" in sys.argv[2:])\n")
open(p, "w").write(s)
X
commit "Tomasz Wrona" tomasz@example.com "Support --dry-run in the migration tool"

git rm -q tools/migrate.py
commit "Priya Raman" priya@example.com "Remove migration tool (superseded by admin import)"

git checkout -q HEAD~1 -- tools/migrate.py
python3 - <<'X'
p = "tools/migrate.py"
s = open(p).read()
s = s.replace("import csv\n", "import csv\nimport decimal\n")
s = s.replace("int(round(float(row[1]) * 100))", "int(decimal.Decimal(row[1].strip()) * 100)")
open(p, "w").write(s)
X
commit "Tomasz Wrona" tomasz@example.com "Bring back the migration tool; parse amounts with Decimal"

cat >> src/app.py <<'X'


def debits(entries):
    return [e for e in entries if e[1] < 0]
X
commit "Priya Raman" priya@example.com "Add debits helper"

python3 - <<'X'
p = "tools/migrate.py"
s = open(p).read()
s = s.replace("def convert(row):\n", "def convert(row):\n    if len(row) < 2:\n        raise ValueError(f\"bad row: {row!r}\")\n")
s = s.replace("        for row in csv.reader(f):\n", "        for lineno, row in enumerate(csv.reader(f), 1):\n            if not row or row[0].startswith(\"#\"):\n                continue\n")
open(p, "w").write(s)
X
commit "Jonas Berg" jonas@example.com "Migration tool: skip comments and blank rows"

git rm -q tools/migrate.py
sed -i '/tools\/migrate.py/d' README.md
commit "Priya Raman" priya@example.com "Drop the migration tool again"

mkdir -p scripts
cat > scripts/migrate.py <<'X'
"""Placeholder: database schema migrations will live here."""
X
commit "Jonas Berg" jonas@example.com "Add placeholder for schema migrations"

cat >> src/app.py <<'X'


def credits(entries):
    return [e for e in entries if e[1] > 0]
X
commit "Jonas Berg" jonas@example.com "Add credits helper"
