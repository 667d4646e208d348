#!/bin/bash
cat > load_db.sh <<'SH'
#!/bin/bash
set -e
exec python3 - "$1" "$2" <<'PY'
import csv, os, sqlite3, sys
from decimal import Decimal

data_dir, db_path = sys.argv[1], sys.argv[2]
if os.path.lexists(db_path):
    os.remove(db_path)
con = sqlite3.connect(db_path)
con.executescript("""
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                       category TEXT NOT NULL, price_cents INTEGER NOT NULL);
CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL,
                    sold_at TEXT NOT NULL, quantity INTEGER NOT NULL);
CREATE INDEX idx_sales_product ON sales(product_id);
""")


def rows(name):
    with open(os.path.join(data_dir, name), encoding="utf-8", newline="") as fh:
        r = csv.reader(fh)
        next(r, None)
        return [row for row in r if row]


con.executemany("INSERT INTO products VALUES (?, ?, ?, ?)",
                [(int(i), n, c, int(Decimal(p) * 100)) for i, n, c, p in rows("products.csv")])
con.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)",
                [(int(i), int(p), s, int(q)) for i, p, s, q in rows("sales.csv")])
con.commit()
con.close()
PY
SH
cat > report.sh <<'SH'
#!/bin/bash
set -e
exec python3 - "$1" <<'PY'
import csv, sqlite3, sys

con = sqlite3.connect(sys.argv[1])
rows = con.execute("""
    SELECT substr(s.sold_at, 1, 7) AS month, p.category, SUM(s.quantity), SUM(s.quantity * p.price_cents) AS cents
    FROM sales s JOIN products p ON p.id = s.product_id
    GROUP BY month, p.category
""").fetchall()
rows.sort(key=lambda r: (r[0], -r[3], r[1].encode()))


def money(c):
    sign = "-" if c < 0 else ""
    c = abs(c)
    return f"{sign}{c // 100}.{c % 100:02d}"


w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["month", "category", "units", "revenue"])
for m, cat, units, cents in rows:
    w.writerow([m, cat, units, money(cents)])
PY
SH
chmod +x load_db.sh report.sh
./load_db.sh data shop.db
./report.sh shop.db > report.csv
