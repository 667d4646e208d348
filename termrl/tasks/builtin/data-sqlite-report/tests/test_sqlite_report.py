import csv
import hashlib
import io
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest

CWD = Path.cwd()
LOAD = CWD / "load_db.sh"
REPORT = CWD / "report.sh"
SHA = {
    "products.csv": "dd9fb632b421f5ce8a867f6c44134aa18952614acea4a7d527c5e5c16e22fb5a",
    "sales.csv": "595a1a09200c3e34df677233806b57900fd491e020425d00b378f465b17aab74",
}
HEADER = ["month", "category", "units", "revenue"]


def parse_csv(text):
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    assert rows, "no CSV header row"
    return rows[0], rows[1:]


def cents(price):
    whole, _, frac = price.partition(".")
    return int(whole) * 100 + int((frac + "00")[:2])


def expected_tables(products_text, sales_text):
    _, prows = parse_csv(products_text)
    _, srows = parse_csv(sales_text)
    products = sorted((int(i), n, c, cents(p)) for i, n, c, p in prows)
    sales = sorted((int(i), int(p), s, int(q)) for i, p, s, q in srows)
    return products, sales


def money(c):
    return ("-" if c < 0 else "") + f"{abs(c) // 100}.{abs(c) % 100:02d}"


def expected_report(products, sales):
    prod = {p[0]: p for p in products}
    agg = {}
    for _, pid, sold_at, q in sales:
        if pid not in prod:
            continue
        key = (sold_at[:7], prod[pid][2])
        u, c = agg.get(key, (0, 0))
        agg[key] = (u + q, c + q * prod[pid][3])
    rows = sorted(agg.items(), key=lambda kv: (kv[0][0], -kv[1][1], kv[0][1].encode()))
    return [HEADER] + [[m, cat, str(u), money(c)] for (m, cat), (u, c) in rows]


def db_tables(db):
    con = sqlite3.connect(db)
    try:
        products = con.execute(
            "SELECT id, name, category, price_cents, typeof(id), typeof(name), typeof(category),"
            " typeof(price_cents) FROM products ORDER BY id").fetchall()
        sales = con.execute(
            "SELECT id, product_id, sold_at, quantity, typeof(id), typeof(product_id),"
            " typeof(sold_at), typeof(quantity) FROM sales ORDER BY id").fetchall()
    finally:
        con.close()
    for r in products:
        assert r[4:] == ("integer", "text", "text", "integer"), r
    for r in sales:
        assert r[4:] == ("integer", "integer", "text", "integer"), r
    return [tuple(r[:4]) for r in products], [tuple(r[:4]) for r in sales]


def check_schema(db):
    con = sqlite3.connect(db)
    try:
        tables = sorted(r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"))
        assert tables == ["products", "sales"]

        def info(t):
            return [(name, typ.upper(), bool(notnull) or bool(pk), pk)
                    for _, name, typ, notnull, _, pk in con.execute(f"PRAGMA table_info({t})")]

        assert info("products") == [("id", "INTEGER", True, 1), ("name", "TEXT", True, 0),
                                    ("category", "TEXT", True, 0), ("price_cents", "INTEGER", True, 0)]
        assert info("sales") == [("id", "INTEGER", True, 1), ("product_id", "INTEGER", True, 0),
                                 ("sold_at", "TEXT", True, 0), ("quantity", "INTEGER", True, 0)]
        idx = [r[1] for r in con.execute("PRAGMA index_list(sales)")]
        assert "idx_sales_product" in idx
        cols = [r[2] for r in con.execute("PRAGMA index_info(idx_sales_product)")]
        assert cols == ["product_id"]
    finally:
        con.close()


def run(script, *args):
    r = subprocess.run([str(script), *map(str, args)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout.decode("utf-8")


def workspace_inputs():
    texts = {}
    for name, digest in SHA.items():
        raw = (CWD / "data" / name).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == digest, f"data/{name} was modified"
        texts[name] = raw.decode("utf-8")
    return expected_tables(texts["products.csv"], texts["sales.csv"])


@pytest.mark.core
def test_workspace_db_and_report(tmp_path):
    products, sales = workspace_inputs()
    check_schema(CWD / "shop.db")
    assert db_tables(CWD / "shop.db") == (products, sales)
    header, rows = parse_csv((CWD / "report.csv").read_text(encoding="utf-8"))
    assert [header] + rows == expected_report(products, sales)
    # shop.db and report.csv must be what the scripts produce from data/, not copies made by
    # hand: rebuild the database elsewhere with the loader and report on it.
    db = tmp_path / "rebuilt shop.db"
    run(LOAD, CWD / "data", db)
    check_schema(db)
    assert db_tables(db) == db_tables(CWD / "shop.db"), "shop.db differs from ./load_db.sh data"
    produced = parse_csv(run(REPORT, db))
    assert [produced[0]] + produced[1] == [header] + rows, "report.csv differs from ./report.sh output"
    assert [produced[0]] + produced[1] == expected_report(products, sales)


CATEGORIES = ["Books", "books", "Tools, Hardware", 'Say "cheese"', "\u00c9picerie", "Z", "A"]


def random_data(rng):
    products = []
    for i in rng.sample(range(1, 10**6), 40):
        c = rng.choice([rng.randint(1, 99), rng.randint(100, 10**7), rng.randint(1, 50) * 100])
        whole, frac = divmod(c, 100)
        price = rng.choice([f"{whole}.{frac:02d}", f"{whole}.{frac:02d}".rstrip("0").rstrip(".")])
        if price == "":
            price = "0"
        name = rng.choice(["Item", "Gadget, small", 'The "Best" one', "Stift\u00e9", "x"]) + f" {i}"
        products.append([str(i), name, rng.choice(CATEGORIES), price])
    ids = [int(p[0]) for p in products]
    sales = []
    for sid in rng.sample(range(1, 10**7), 1200):
        pid = rng.choice(ids) if rng.random() > 0.05 else rng.randint(10**6, 2 * 10**6)
        sold = "20%02d-%02d-%02dT%02d:%02d:%02d" % (rng.choice([23, 24, 25]), rng.randint(1, 12), rng.randint(1, 28),
                                                 rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
        sales.append([str(sid), str(pid), sold, str(rng.choice([1, 2, 3, 7, 20, -1, -2, 0]))])
    return products, sales


def write_csv(path, header, rows, newline):
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator=newline)
    w.writerow(header)
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode())


@pytest.mark.core
@pytest.mark.parametrize("seed,newline", [(5, "\n"), (6, "\r\n")])
def test_unseen_load_and_report(tmp_path, seed, newline):
    rng = random.Random(seed)
    products, sales = random_data(rng)
    d = tmp_path / "my data"
    d.mkdir()
    write_csv(d / "products.csv", ["id", "name", "category", "price"], products, newline)
    write_csv(d / "sales.csv", ["id", "product_id", "sold_at", "quantity"], sales, newline)
    db = tmp_path / "out dir" / "new shop.db"
    db.parent.mkdir()
    db.write_bytes(b"this is not a database")
    run(LOAD, d, db)
    check_schema(db)
    exp_products, exp_sales = expected_tables((d / "products.csv").read_text(), (d / "sales.csv").read_text())
    assert db_tables(db) == (exp_products, exp_sales)
    header, rows = parse_csv(run(REPORT, db))
    assert [header] + rows == expected_report(exp_products, exp_sales)


def make_db(path, products, sales):
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
                               category TEXT NOT NULL, price_cents INTEGER NOT NULL);
        CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL,
                            sold_at TEXT NOT NULL, quantity INTEGER NOT NULL);
        CREATE INDEX idx_sales_product ON sales(product_id);
    """)
    con.executemany("INSERT INTO products VALUES (?,?,?,?)", products)
    con.executemany("INSERT INTO sales VALUES (?,?,?,?)", sales)
    con.commit()
    con.close()


@pytest.mark.boundary
def test_report_formatting_and_ordering(tmp_path):
    products = [(1, "p1", "Neg, Small", 5), (2, "p2", 'Q"uote', 333), (3, "p3", "Zero", 250),
                (4, "p4", "B", 100), (5, "p5", "A", 100), (6, "p6", "Big", 987654321)]
    sales = [(10, 1, "2030-02-01T00:00:00", -1),          # -0.05
             (11, 2, "2030-02-28T23:59:59", 3),           # 9.99
             (12, 3, "2030-02-10T10:00:00", 2),
             (13, 3, "2030-02-11T10:00:00", -2),          # Zero: 0 units, 0.00
             (14, 4, "2030-01-05T00:00:00", 1),           # B 1.00 (tie with A)
             (15, 5, "2030-01-06T00:00:00", 1),           # A 1.00
             (16, 6, "2030-01-07T00:00:00", 1000),        # Big
             (17, 42, "2030-01-07T00:00:00", 5),          # unknown product
             (18, 1, "2029-12-31T23:59:59", 20)]          # 1.00 in 2029-12
    db = tmp_path / "t.db"
    make_db(db, products, sales)
    header, rows = parse_csv(run(REPORT, db))
    assert [header] + rows == [
        HEADER,
        ["2029-12", "Neg, Small", "20", "1.00"],
        ["2030-01", "Big", "1000", "9876543210.00"],
        ["2030-01", "A", "1", "1.00"],
        ["2030-01", "B", "1", "1.00"],
        ["2030-02", 'Q"uote', "3", "9.99"],
        ["2030-02", "Zero", "0", "0.00"],
        ["2030-02", "Neg, Small", "-1", "-0.05"],
    ]


@pytest.mark.boundary
def test_load_replaces_existing_database(tmp_path):
    db = tmp_path / "x.db"
    make_db(db, [(7, "old", "Old", 1)], [(8, 7, "2000-01-01T00:00:00", 1)])
    d = tmp_path / "d"
    d.mkdir()
    (d / "products.csv").write_text("id,name,category,price\n1,New,Cat,0.07\n2,Two,Cat,10\n")
    (d / "sales.csv").write_text("id,product_id,sold_at,quantity\n")
    run(LOAD, d, db)
    check_schema(db)
    assert db_tables(db) == ([(1, "New", "Cat", 7), (2, "Two", "Cat", 1000)], [])
    assert parse_csv(run(REPORT, db)) == (HEADER, [])
