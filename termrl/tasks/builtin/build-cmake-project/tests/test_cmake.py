import math
import random
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()


def copy_project(dst: Path) -> Path:
    ignore = shutil.ignore_patterns("build*", "CMakeCache.txt", "CMakeFiles", "_build*", "out")
    shutil.copytree(WS, dst, ignore=ignore)
    return dst


def sh(args, cwd=None, check=True):
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, f"{args} failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def configure_build(src: Path, bdir: Path, *defs):
    sh(["cmake", "-S", str(src), "-B", str(bdir), *defs])
    sh(["cmake", "--build", str(bdir), "-j", "8"])


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("copy")
    src = copy_project(root / "moved project")
    bdir = root / "bld-one"
    configure_build(src, bdir)
    return src, bdir


def heron(a, b, c):
    if a <= 0 or b <= 0 or c <= 0 or a + b <= c or a + c <= b or b + c <= a:
        return None
    s = (a + b + c) / 2
    return math.sqrt(s * (s - a) * (s - b) * (s - c))


def gen_cases(rng):
    lines, exp = [], []
    for _ in range(150):
        k = rng.choice(["circle", "rect", "tri", "dist", "bad"])
        if k == "circle":
            r = round(rng.uniform(0, 500), 3)
            lines.append(f"circle {r}")
            exp.append(("area", math.pi * r * r, "perimeter", 2 * math.pi * r))
        elif k == "rect":
            w, h = round(rng.uniform(0, 300), 2), round(rng.uniform(0, 300), 2)
            lines.append(f"rect {w} {h}")
            exp.append(("area", w * h, "perimeter", 2 * (w + h)))
        elif k == "tri":
            a, b, c = (round(rng.uniform(1, 50), 2) for _ in range(3))
            lines.append(f"tri {a} {b} {c}")
            ar = heron(a, b, c)
            exp.append(("invalid",) if ar is None else ("area", ar, "perimeter", a + b + c))
        elif k == "dist":
            p = [round(rng.uniform(-1000, 1000), 1) for _ in range(4)]
            lines.append("dist " + " ".join(map(str, p)))
            exp.append(("distance", math.hypot(p[2] - p[0], p[3] - p[1])))
        else:
            lines.append(rng.choice(["hexagon 3", "circle", "rect 1", "circle -2"]))
            exp.append(("invalid",))
    return lines, exp


def check_output(out_lines, exp, prec):
    assert len(out_lines) == len(exp)
    for line, e in zip(out_lines, exp):
        parts = line.split()
        assert len(parts) == len(e), (line, e)
        for got, want in zip(parts, e):
            if isinstance(want, str):
                assert got == want, (line, e)
            else:
                if prec == 0:
                    assert "." not in got, line
                else:
                    assert len(got.split(".")[1]) == prec, (line, prec)
                assert abs(float(got) - want) <= 0.51 * 10 ** -prec + 1e-9 * want, (line, e)


@pytest.mark.core
def test_build_and_run(project):
    src, bdir = project
    exe = bdir / "shapecalc"
    assert exe.is_file()
    lines, exp = gen_cases(random.Random(606))
    r = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=10)
    assert r.returncode == 0
    check_output(r.stdout.splitlines(), exp, 6)


@pytest.mark.core
def test_static_library_built(project):
    _, bdir = project
    libs = list(bdir.rglob("libgeom.a"))
    assert len(libs) == 1, libs
    assert libs[0].read_bytes()[:8] == b"!<arch>\n"
    assert not list(bdir.rglob("libgeom.so*"))
    members = sh(["ar", "t", str(libs[0])]).stdout.split()
    assert len(members) == 3, members


@pytest.mark.core
def test_ctest_smoke(project, tmp_path):
    src, bdir = project
    r = sh(["ctest", "--test-dir", str(bdir), "-R", "^smoke$", "--output-on-failure"])
    assert "1 tests passed" in r.stdout or "100% tests passed" in r.stdout, r.stdout
    listing = sh(["ctest", "--test-dir", str(bdir), "-N"]).stdout
    assert "smoke" in listing
    # the test must really compare: break the expected output and it must fail
    exp = src / "tests" / "sample.expected"
    saved = exp.read_text()
    try:
        exp.write_text(saved.replace("area 12.000000", "area 13.000000"))
        r = sh(["ctest", "--test-dir", str(bdir), "-R", "^smoke$"], check=False)
        assert r.returncode != 0
    finally:
        exp.write_text(saved)


@pytest.mark.core
def test_install_and_link_against_installed_library(project, tmp_path):
    _, bdir = project
    prefix = tmp_path / "pfx"
    sh(["cmake", "--install", str(bdir), "--prefix", str(prefix)])
    assert (prefix / "bin" / "shapecalc").is_file()
    assert (prefix / "lib" / "libgeom.a").is_file()
    assert (prefix / "include" / "geom" / "geom.h").is_file()
    drv = tmp_path / "drv.c"
    drv.write_text(
        "#include <stdio.h>\n#include <geom/geom.h>\n"
        "int main(void){ double a,b,c; while (scanf(\"%lf %lf %lf\",&a,&b,&c)==3)"
        " printf(\"%.9f %.9f %.9f\\n\", geom_triangle_area(a,b,c), geom_circle_area(a), geom_distance(a,b,c,a));"
        " return 0; }\n")
    sh(["gcc", "-I", str(prefix / "include"), str(drv), str(prefix / "lib" / "libgeom.a"), "-lm",
        "-o", str(tmp_path / "drv")])
    rng = random.Random(9)
    rows = [[round(rng.uniform(0.5, 40), 3) for _ in range(3)] for _ in range(50)]
    r = subprocess.run([str(tmp_path / "drv")], input="\n".join(" ".join(map(str, x)) for x in rows),
                       capture_output=True, text=True, timeout=10)
    for line, (a, b, c) in zip(r.stdout.splitlines(), rows):
        t, ci, d = map(float, line.split())
        ar = heron(a, b, c)
        assert abs(t - (-1.0 if ar is None else ar)) < 1e-6
        assert abs(ci - math.pi * a * a) < 1e-6
        assert abs(d - math.hypot(c - a, a - b)) < 1e-6
    r = subprocess.run([str(prefix / "bin" / "shapecalc")], input="rect 2 2.5\n", capture_output=True, text=True)
    assert r.stdout == "area 5.000000 perimeter 9.000000\n"


@pytest.mark.core
def test_linking_geom_target_brings_libm(project, tmp_path):
    """A consumer project that only links the `geom` target must link (needs -lm)."""
    src, _ = project
    cons = tmp_path / "consumer"
    cons.mkdir()
    (cons / "use.c").write_text(
        "#include <stdio.h>\n#include <geom/geom.h>\n"
        "int main(int c, char **v){ (void)v; printf(\"%.4f\\n\", geom_distance(0, 0, c * 3.0, c * 4.0)); return 0; }\n")
    (cons / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(consumer C)\n"
        f"add_subdirectory(\"{src.as_posix()}\" geomlib)\n"
        "add_executable(use use.c)\ntarget_link_libraries(use PRIVATE geom)\n")
    configure_build(cons, cons / "b")
    exe = next(p for p in (cons / "b").rglob("use") if p.is_file())
    assert sh([str(exe), "x", "y"]).stdout == "15.0000\n"


@pytest.mark.boundary
def test_precision_option(tmp_path):
    src = copy_project(tmp_path / "p")
    prec = random.Random(77).choice([2, 3, 4])
    configure_build(src, tmp_path / "b", f"-DGEOM_PRECISION={prec}")
    lines, exp = gen_cases(random.Random(prec * 1000 + 1))
    r = subprocess.run([str(tmp_path / "b" / "shapecalc")], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=10)
    check_output(r.stdout.splitlines(), exp, prec)
