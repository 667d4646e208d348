import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()


def fresh_copy(dst):
    for f in WS.iterdir():
        if f.is_file() and (f.suffix in (".c", ".h") or f.name == "Makefile"):
            shutil.copy(f, dst / f.name)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("make")
    fresh_copy(d)
    r = subprocess.run(["make"], cwd=d, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (d / "rpncalc").is_file()
    return d


@pytest.fixture(scope="module")
def gcc_bin(tmp_path_factory):
    d = tmp_path_factory.mktemp("gcc")
    fresh_copy(d)
    srcs = sorted(p.name for p in d.glob("*.c"))
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-O2", "-fno-common", "-o", "rpncalc", *srcs],
                       cwd=d, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return d / "rpncalc"


def run(binary, text, *args):
    r = subprocess.run([str(binary), *args], input=text, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    return r


def c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a, b):
    return a - c_div(a, b) * b


def py_eval(tokens):
    st = []
    for t in tokens:
        if t in ("+", "-", "*", "/", "%"):
            if len(st) < 2:
                return "error"
            b, a = st.pop(), st.pop()
            if t in "/%" and b == 0:
                return "error"
            st.append({"+": a + b, "-": a - b, "*": a * b,
                       "/": c_div(a, b) if b else 0, "%": c_mod(a, b) if b else 0}[t])
            if abs(st[-1]) >= 2 ** 62:
                return None
        elif re.fullmatch(r"[+-]?\d+", t):
            st.append(int(t))
        else:
            return "error"
    return str(st[0]) if len(st) == 1 else "error"


def random_expr(rng):
    # build a valid expression tree with small values so nothing overflows 64 bits
    def gen(depth):
        if depth == 0 or rng.random() < 0.3:
            v = rng.randint(-999, 999)
            return [("+" if v >= 0 and rng.random() < 0.1 else "") + str(v)]
        op = rng.choice("+-*/%")
        return gen(depth - 1) + gen(depth - 1) + [op]
    while True:
        toks = gen(rng.randint(1, 4))
        if py_eval(toks) is not None:
            return toks


@pytest.mark.core
def test_makefile_has_no_linker_workarounds():
    mk = (WS / "Makefile").read_text()
    for bad in ("fcommon", "muldefs", "allow-multiple-definition", "unresolved-symbols", "noinhibit"):
        assert bad not in mk


@pytest.mark.core
def test_make_from_clean_tree_and_random_expressions(made):
    rng = random.Random(4242)
    lines, exp = [], []
    for _ in range(300):
        toks = random_expr(rng)
        if rng.random() < 0.15:
            toks = toks + [rng.choice(["+", "7", "*", "x", "0x1", "1e2"])]
        sep = rng.choice([" ", "  ", "\t"])
        lines.append(sep.join(toks))
        exp.append(py_eval(toks))
    out = run(made / "rpncalc", "\n".join(lines) + "\n").stdout.splitlines()
    assert out == exp


@pytest.mark.core
def test_plain_gcc_link(gcc_bin):
    out = run(gcc_bin, "6 7 *\n-17 5 %\n-17 5 /\n1 0 /\n").stdout.splitlines()
    assert out == ["42", "-2", "-3", "error"]


@pytest.mark.core
def test_make_clean_then_make(made):
    r = subprocess.run(["make", "clean"], cwd=made, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert not (made / "rpncalc").exists() and not list(made.glob("*.o"))
    r = subprocess.run(["make"], cwd=made, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert run(made / "rpncalc", "100 7 - 3 *\n").stdout == "279\n"


@pytest.mark.boundary
def test_invalid_and_blank_lines(made):
    text = "\n   \n+\n1 +\n2 3\n12a 1 +\n5 0 %\n 8   2 / \n-0 +4 +\n\t\n9 -\n"
    out = run(made / "rpncalc", text).stdout.splitlines()
    assert out == ["error", "error", "error", "error", "error", "4", "4", "error"]


@pytest.mark.boundary
def test_verbose_flag_keeps_stdout(made):
    text = "3 4 + 2 *\n1 2 3\n"
    plain = run(made / "rpncalc", text)
    verbose = run(made / "rpncalc", text, "-v")
    assert plain.stdout == verbose.stdout == "14\nerror\n"
    assert verbose.stderr.strip() != "" and plain.stderr == ""


def checked_build(tmp_path_factory, name, flags):
    """Build the sources with extra FLAGS, or None when this gcc does not support them."""
    d = tmp_path_factory.mktemp(name)
    probe = d / "probe.c"
    probe.write_text("int main(void){return 0;}\n")
    if subprocess.run(["gcc", *flags, str(probe), "-o", str(d / "probe")],
                      capture_output=True, timeout=60).returncode != 0 or \
            subprocess.run([str(d / "probe")], capture_output=True, timeout=10).returncode != 0:
        return None
    fresh_copy(d)
    srcs = sorted(p.name for p in d.glob("*.c") if p.name != "probe.c")
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-O1", "-g", "-fno-common", *flags, "-o", "rpncalc", *srcs],
                       cwd=d, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return d / "rpncalc"


@pytest.fixture(scope="module")
def checked_bins(tmp_path_factory, made):
    """The make build plus, where this gcc supports them, a build whose uninitialised locals hold
    a non-zero pattern and a build with address and undefined-behaviour sanitizers."""
    bins = [made / "rpncalc"]
    for name, flags in (("pattern", ["-ftrivial-auto-var-init=pattern"]),
                        ("san", ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])):
        b = checked_build(tmp_path_factory, name, flags)
        if b is not None:
            bins.append(b)
    return bins


SAN_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0", UBSAN_OPTIONS="halt_on_error=1")


@pytest.mark.core
def test_deep_stacks_and_state_between_lines(checked_bins):
    rng = random.Random(777)
    lines, exp = [], []
    for depth in (15, 16, 17, 33, 100, 500):
        vals = [rng.randint(-99, 99) for _ in range(depth)]
        toks = [str(v) for v in vals] + ["+"] * (depth - 1)
        lines.append(" ".join(toks))
        exp.append(str(sum(vals)))
        lines.append(" ".join(toks[:-1]))  # one value too many left: error
        exp.append("error")
        toks = [str(v) for v in vals] + [rng.choice("+-") for _ in range(depth - 1)]
        lines.append("\t".join(toks))
        exp.append(py_eval(toks))
    for _ in range(100):
        toks = random_expr(rng)
        lines.append(" ".join(toks))
        exp.append(py_eval(toks))
    assert max(map(len, lines)) < 4000  # the program reads lines of up to 4095 bytes
    text = "\n".join(lines) + "\n"
    for b in checked_bins:
        r = subprocess.run([str(b)], input=text, capture_output=True, text=True, timeout=20, env=SAN_ENV)
        assert r.returncode == 0, (b, r.stderr[-2000:])
        assert r.stdout.splitlines() == exp, b


@pytest.mark.boundary
def test_bad_argument_prints_usage_and_exits_2(made):
    prog = str(made / "rpncalc")
    for args in (["-x"], ["-v", "extra"], ["--verbose"]):
        r = subprocess.run([prog, *args], input="1 2 +\n", capture_output=True, text=True, timeout=10)
        assert r.returncode == 2, (args, r.returncode)
        assert r.stdout == "", args
        assert f"usage: {prog} [-v]" in r.stderr, (args, r.stderr)
