import json
import os
import random
import shutil
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

WS = Path.cwd()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Only the package directory, copied to a fresh location."""
    root = tmp_path_factory.mktemp("site")
    shutil.copytree(WS / "stockpile", root / "stockpile",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


@pytest.fixture
def elsewhere(tmp_path):
    d = tmp_path / "cwd"
    d.mkdir()
    return d


def py(site, cwd, *args, stdin=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(site),
           "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=20, input=stdin)


def write_csv(path, rows):
    path.write_text("sku,name,qty,price\n" + "".join(f"{s},{n},{q},{p}\n" for s, n, q, p in rows),
                    encoding="utf-8")


def rand_rows(rng, n):
    rows, used = [], set()
    while len(rows) < n:
        sku = rng.choice("ABCDEFGH") + str(rng.randint(1, 999))
        if sku in used:
            continue
        used.add(sku)
        name = rng.choice(["bolt", "nut", "washer", "gear", "spring", "pin", "valve"]) + str(rng.randint(1, 9))
        price = f"{rng.randint(0, 999)}.{rng.randint(0, 999):03d}"
        rows.append((sku, name, rng.randint(0, 40), price))
    return rows


def expected_report(rows, threshold):
    lines, total = [], Decimal("0.00")
    for sku, name, qty, price in sorted(rows, key=lambda r: r[0]):
        value = (Decimal(price) * qty).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        total += value
        lines.append(f"{sku} {name} {qty} {value} EUR" + (" LOW" if qty < threshold else ""))
    lines.append(f"TOTAL {len(rows)} items {total:.2f} EUR")
    return lines


@pytest.mark.core
def test_layout():
    for name in ("__init__.py", "__main__.py", "cli.py", "models.py", "storage.py", "report.py",
                 "data/defaults.json"):
        assert (WS / "stockpile" / name).is_file(), name
    for old in ("main.py", "cli.py", "models.py", "storage.py", "report.py", "defaults.json"):
        assert not (WS / old).exists(), f"{old} still at top level"
    data = json.loads((WS / "stockpile" / "data" / "defaults.json").read_text())
    assert data == {"low_stock": 5, "currency": "EUR"}


@pytest.mark.core
def test_report_from_other_directory(site, elsewhere):
    rng = random.Random(515)
    rows = rand_rows(rng, 25)
    write_csv(elsewhere / "inv.csv", rows)
    r = py(site, elsewhere, "-m", "stockpile", "report", "inv.csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == expected_report(rows, 5)
    r = py(site, elsewhere, "-m", "stockpile", "report", str(elsewhere / "inv.csv"), "--threshold", "17")
    assert r.stdout.splitlines() == expected_report(rows, 17)


@pytest.mark.core
def test_low_and_version(site, elsewhere):
    rng = random.Random(616)
    rows = rand_rows(rng, 30)
    write_csv(elsewhere / "x.csv", rows)
    r = py(site, elsewhere, "-m", "stockpile", "low", "x.csv", "--threshold", "12")
    assert r.returncode == 0
    assert r.stdout.splitlines() == sorted(s for s, _, q, _ in rows if q < 12)
    r = py(site, elsewhere, "-m", "stockpile", "--version")
    assert r.returncode == 0 and r.stdout.strip() == "stockpile 1.3.0"


@pytest.mark.core
def test_import_api_and_no_leaks(site, elsewhere):
    code = (
        "import sys, json\n"
        "before = list(sys.path)\n"
        "import stockpile\n"
        "from stockpile.cli import main\n"
        "import stockpile.report, stockpile.storage, stockpile.models\n"
        "leaked = sorted(m for m in ('models', 'storage', 'report', 'cli', 'main') if m in sys.modules)\n"
        "it = stockpile.Item('Z9', 'gizmo', 3, __import__('decimal').Decimal('2.50'))\n"
        "rc_ok = main(['report', 'inv.csv'])\n"
        "rc_bad = main(['report', 'missing.csv'])\n"
        "print(json.dumps({'v': stockpile.__version__, 'leaked': leaked, 'path_same': sys.path == before,\n"
        "  'value': str(it.value), 'rc_ok': repr(rc_ok), 'rc_bad': repr(rc_bad),\n"
        "  'file': stockpile.__file__}))\n")
    write_csv(elsewhere / "inv.csv", [("Q1", "cog", 2, "1.25")])
    r = py(site, elsewhere, "-c", code)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["v"] == "1.3.0"
    assert res["leaked"] == []
    assert res["path_same"] is True
    assert res["value"] == "7.50"
    assert res["rc_ok"] == "0" and res["rc_bad"] == "1"
    assert res["file"].startswith(str(site))
    assert r.stdout.strip().splitlines()[0] == "Q1 cog 2 2.50 EUR LOW"


def assert_regular_package(site, elsewhere):
    """`import stockpile` finds the copied package's own __init__.py (a regular package with the
    tool's version), not an empty namespace package made of a bare directory."""
    r = py(site, elsewhere, "-c", "import json, stockpile;"
           "print(json.dumps([stockpile.__file__, getattr(stockpile, '__version__', None)]))")
    assert r.returncode == 0, r.stderr
    file, version = json.loads(r.stdout.strip().splitlines()[-1])
    assert file is not None, "stockpile is a namespace package: stockpile/__init__.py is missing"
    assert Path(file) == site / "stockpile" / "__init__.py", file
    assert version == "1.3.0"


@pytest.mark.core
def test_top_level_modules_not_importable(site, elsewhere):
    assert_regular_package(site, elsewhere)
    r = py(site, elsewhere, "-c", "import stockpile, importlib.util as u;"
           "print([m for m in ('models','storage','report','cli') if u.find_spec(m) is not None])")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.boundary
def test_import_has_no_side_effects(site, elsewhere):
    assert_regular_package(site, elsewhere)
    r = py(site, elsewhere, "-c", "import stockpile")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""


@pytest.mark.boundary
def test_errors_and_empty_inventory(site, elsewhere):
    r = py(site, elsewhere, "-m", "stockpile", "report", "nope.csv")
    assert r.returncode == 1 and r.stdout == "" and "stockpile: error:" in r.stderr
    (elsewhere / "bad.csv").write_text("sku,name,qty,price\nA1,x,two,1.00\n")
    r = py(site, elsewhere, "-m", "stockpile", "report", "bad.csv")
    assert r.returncode == 1 and "bad.csv:2" in r.stderr
    write_csv(elsewhere / "empty.csv", [])
    r = py(site, elsewhere, "-m", "stockpile", "report", "empty.csv")
    assert r.returncode == 0 and r.stdout.splitlines() == ["TOTAL 0 items 0.00 EUR"]
    r = py(site, elsewhere, "-m", "stockpile")
    assert r.returncode == 2 and r.stdout == ""


@pytest.mark.boundary
def test_value_checks_and_help_are_the_tools_own(site, elsewhere):
    """What `python3 main.py` did stays: a negative quantity or price is an error naming its line, a
    zero price is a valid (free) item, and --help shows the tool's name and its commands' help."""
    for bad in (("A1", "bolt", -1, "1.00"), ("A2", "nut", 3, "-0.50")):
        write_csv(elsewhere / "neg.csv", [("B1", "pin", 2, "1.00"), bad])
        r = py(site, elsewhere, "-m", "stockpile", "report", "neg.csv")
        assert r.returncode == 1 and r.stdout == "" and "neg.csv:3" in r.stderr, (bad, r.stderr)
    write_csv(elsewhere / "free.csv", [("C1", "gear", 5, "0.00")])
    r = py(site, elsewhere, "-m", "stockpile", "report", "free.csv")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[0].startswith("C1 gear 5 0.00 EUR") and lines[-1] == "TOTAL 1 items 0.00 EUR"
    r = py(site, elsewhere, "-m", "stockpile", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: stockpile ")
    assert "print a value report of a CSV inventory" in r.stdout
    assert "list the SKUs whose quantity is below the threshold" in r.stdout


@pytest.mark.boundary
def test_defaults_file_is_package_data(tmp_path, elsewhere):
    """Changing the packaged defaults changes the behaviour: they are really read from there."""
    root = tmp_path / "site2"
    shutil.copytree(WS / "stockpile", root / "stockpile", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "stockpile" / "data" / "defaults.json").write_text(json.dumps({"low_stock": 30, "currency": "NOK"}))
    (elsewhere / "defaults.json").write_text(json.dumps({"low_stock": 1, "currency": "XXX"}))
    rows = rand_rows(random.Random(3), 12)
    write_csv(elsewhere / "i.csv", rows)
    r = py(root, elsewhere, "-m", "stockpile", "report", "i.csv")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [l.replace(" EUR", " NOK") for l in expected_report(rows, 30)]
