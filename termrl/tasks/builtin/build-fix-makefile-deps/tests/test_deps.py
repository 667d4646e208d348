import os
import random
import re
import shutil
import string
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()
BASE = 1_600_000_000


def fresh(dst: Path) -> Path:
    dst.mkdir(parents=True)
    for name in ("Makefile", "VERSION", "gen_version.sh"):
        shutil.copy2(WS / name, dst / name)
    shutil.copytree(WS / "src", dst / "src")
    return dst


def make(d, *args, check=True):
    r = subprocess.run(["make", *args], cwd=d, capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, f"make {' '.join(args)}:\n{r.stdout}\n{r.stderr}"
    return r


def age_everything(d):
    """Make all inputs old and all outputs a bit newer, so the next edit is clearly newer."""
    for p in [d / "Makefile", d / "VERSION", d / "gen_version.sh", *(d / "src").iterdir()]:
        os.utime(p, (BASE, BASE))
    outs = [d / "tabulate", *(d / "build").rglob("*")] if (d / "build").exists() else [d / "tabulate"]
    for p in outs:
        if p.exists():
            os.utime(p, (BASE + 100, BASE + 100))


def edit(path: Path, text: str):
    path.write_text(text)
    os.utime(path, (BASE + 200, BASE + 200))


def table(rows, width, sep, right=True):
    out = []
    for row in rows:
        cells = [(f"{c[:width]:>{width}}" if right else f"{c[:width]:<{width}}") for c in row]
        out.append(sep.join(cells))
    return out


def run_tab(d, rows):
    r = subprocess.run([str(d / "tabulate")], input="".join(",".join(r) + "\n" for r in rows),
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 0
    return r.stdout.splitlines()


def rand_rows(rng):
    return [["".join(rng.choice(string.ascii_letters + string.digits + " .") for _ in range(rng.randint(0, 16)))
             for _ in range(rng.randint(1, 6))] for _ in range(30)]


def set_config(d, width, sep):
    p = d / "src" / "config.h"
    t = re.sub(r"#define COL_WIDTH \d+", f"#define COL_WIDTH {width}", p.read_text())
    t = re.sub(r'#define SEP ".*"', f'#define SEP "{sep}"', t)
    edit(p, t)


@pytest.fixture
def built(tmp_path):
    d = fresh(tmp_path / "proj")
    make(d)
    return d


@pytest.mark.core
def test_parallel_clean_build(tmp_path):
    d = fresh(tmp_path / "proj")
    make(d, "-j8")
    rows = rand_rows(random.Random(1))
    assert run_tab(d, rows) == table(rows, 10, " | ")
    r = subprocess.run([str(d / "tabulate"), "--version"], capture_output=True, text=True)
    assert r.stdout == "tabulate 2.4.1\n"


@pytest.mark.core
def test_single_object_from_clean_tree(tmp_path):
    d = fresh(tmp_path / "proj")
    make(d, "build/main.o")
    assert (d / "build" / "main.o").is_file()
    assert (d / "build" / "version.h").is_file()


@pytest.mark.core
def test_up_to_date_after_build(built):
    assert make(built, "-q", check=False).returncode == 0
    age_everything(built)
    assert make(built, "-q", check=False).returncode == 0
    make(built)
    assert (built / "tabulate").stat().st_mtime == BASE + 100
    assert (built / "build" / "version.h").stat().st_mtime == BASE + 100


@pytest.mark.core
def test_config_header_change_is_picked_up(built):
    rng = random.Random(2)
    rows = rand_rows(rng)
    for width, sep in ((rng.randint(3, 8), "#"), (rng.randint(11, 20), " :: ")):
        age_everything(built)
        set_config(built, width, sep)
        assert make(built, "-q", check=False).returncode != 0
        make(built)
        assert run_tab(built, rows) == table(rows, width, sep)


@pytest.mark.core
def test_format_header_change_is_picked_up(built):
    age_everything(built)
    p = built / "src" / "format.h"
    edit(p, p.read_text().replace("#define ALIGN_RIGHT 1", "#define ALIGN_RIGHT 0"))
    make(built)
    rows = rand_rows(random.Random(3))
    assert run_tab(built, rows) == table(rows, 10, " | ", right=False)


@pytest.mark.core
def test_version_change_is_picked_up(built):
    ver = "%d.%d.%d" % tuple(random.Random(4).randint(3, 99) for _ in range(3))
    age_everything(built)
    edit(built / "VERSION", ver + "\n")
    make(built)
    r = subprocess.run([str(built / "tabulate"), "--version"], capture_output=True, text=True)
    assert r.stdout == f"tabulate {ver}\n"


@pytest.mark.boundary
def test_parse_header_change_and_source_change(built):
    age_everything(built)
    p = built / "src" / "parse.h"
    edit(p, p.read_text().replace("#define MAX_FIELDS 64", "#define MAX_FIELDS 2"))
    make(built)
    assert run_tab(built, [["a", "b", "c", "d"]]) == table([["a", "b,c,d"]], 10, " | ")
    age_everything(built)
    p = built / "src" / "format.c"
    edit(p, p.read_text().replace("fputc('\\n', out);", "fputs(\"$\\n\", out);"))
    make(built)
    assert run_tab(built, [["x"]]) == [table([["x"]], 10, " | ")[0] + "$"]


@pytest.mark.boundary
def test_clean_removes_everything(built):
    make(built, "clean")
    assert not (built / "tabulate").exists()
    assert not (built / "build").exists()
    assert make(built, "-q", check=False).returncode != 0
    make(built, "-j8")
    assert (built / "tabulate").is_file()
