import json
import os
import random
import sys
import subprocess
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = Path.cwd()
ENV = {
    "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
    "HOME": tempfile.mkdtemp(prefix="githome-"),
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": "/nonexistent-graft-file",
    "GIT_CEILING_DIRECTORIES": str(REPO.parent),
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_AUTHOR_NAME": "verifier", "GIT_AUTHOR_EMAIL": "verifier@example.com",
    "GIT_COMMITTER_NAME": "verifier", "GIT_COMMITTER_EMAIL": "verifier@example.com",
}
SAFE = ["-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]


def git(repo, *args):
    r = subprocess.run(["git", *SAFE, *args], cwd=repo, env=ENV, capture_output=True, timeout=60)
    assert r.returncode == 0, f"git {' '.join(args)} failed: {r.stderr.decode(errors='replace')}"
    return r.stdout.decode()


MAIN = "refs/heads/main"
FEATURE = "refs/heads/feature/discount"
CONFLICTED = {"shop/pricing.py", "CHANGELOG.md"}


def listing(repo, rev):
    """{path: (mode, type, object)} for every entry of rev's tree, recursively."""
    out = {}
    for rec in git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        if rec:
            meta, path = rec.split("\t", 1)
            mode, typ, obj = meta.split()
            out[path] = (mode, typ, obj)
    return out


def unreleased(text):
    """(entries of the '## Unreleased' section, the file without those entries, blank lines squeezed)."""
    entries, rest, inside = [], [], False
    for line in text.splitlines():
        line = line.rstrip()
        if line.startswith("## "):
            inside = line == "## Unreleased"
        if inside and line.startswith("- "):
            entries.append(line)
            continue
        if line or (rest and rest[-1]):
            rest.append(line)
    while rest and not rest[-1]:
        rest.pop()
    return entries, rest


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    subprocess.run(["bash", str(HERE / "build_repo.sh")], cwd=d, env=ENV, check=True,
                   capture_output=True, timeout=60)
    main, feature = (git(d, "rev-parse", r).strip() for r in (MAIN, FEATURE))
    base = git(d, "merge-base", main, feature).strip()
    lb, lm, lf = listing(d, base), listing(d, main), listing(d, feature)
    expected = {}
    for path in set(lb) | set(lm) | set(lf):
        b, m, f = lb.get(path), lm.get(path), lf.get(path)
        if path in CONFLICTED:
            assert b != m and b != f and m != f
            continue
        assert m == b or f == b or m == f, path
        new = f if m == b else m
        if new is not None:
            expected[path] = new
    m_entries, m_rest = unreleased(git(d, "show", main + ":CHANGELOG.md"))
    f_entries, _ = unreleased(git(d, "show", feature + ":CHANGELOG.md"))
    assert m_entries and f_entries
    return {"main": main, "feature": feature, "others": expected,
            "changelog": m_entries + [e for e in f_entries if e not in m_entries],
            "changelog_rest": m_rest}


def head_file(path):
    return git(REPO, "show", f"{MAIN}:{path}")


RUNNER = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("pricing_under_test", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = []
for fn, args in json.loads(sys.stdin.read()):
    try:
        out.append(["ok", getattr(mod, fn)(*args)])
    except Exception as e:
        out.append(["err", type(e).__name__])
sys.stdout.write("\n@@RESULT@@" + json.dumps(out))
"""


def call_pricing(tmp_path, calls):
    src = tmp_path / "pricing_under_test.py"
    src.write_text(head_file("shop/pricing.py"))
    r = subprocess.run([sys.executable, "-c", RUNNER, str(src)], input=json.dumps(calls),
                       capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.rsplit("@@RESULT@@", 1)[1])


def expected_total(lines, discount=0.0):
    if not 0 <= discount <= 0.5:
        return ["err", "ValueError"]
    if any(q < 0 for _, q in lines):
        return ["err", "ValueError"]
    subtotal = sum(p * q for p, q in lines) * (1 - discount)
    shipping = 0.0 if subtotal >= 50.0 else 4.99
    return ["ok", round(subtotal * 1.2 + shipping, 2)]


def check_calls(tmp_path, cases):
    calls = [["order_total", [lines, disc]] if disc is not None else ["order_total", [lines]]
             for lines, disc in cases]
    got = call_pricing(tmp_path, calls)
    for (lines, disc), g in zip(cases, got):
        exp = expected_total(lines, disc or 0.0)
        assert g[0] == exp[0], (lines, disc, g, exp)
        if exp[0] == "ok":
            assert type(g[1]) in (int, float) and abs(g[1] - exp[1]) < 0.011, (lines, disc, g, exp)
        else:
            assert g[1] == exp[1], (lines, disc, g, exp)


@pytest.mark.core
def test_main_is_merge_of_both_branches(ref):
    head = git(REPO, "rev-parse", "--verify", MAIN + "^{commit}").strip()
    assert git(REPO, "rev-list", "--parents", "-n", "1", head).split()[1:] == [ref["main"], ref["feature"]]
    assert git(REPO, "rev-parse", "--verify", FEATURE + "^{commit}").strip() == ref["feature"]


@pytest.mark.core
def test_order_total_combines_discount_and_shipping(ref, tmp_path):
    rng = random.Random(8675309)
    cases = []
    for _ in range(60):
        lines = [[rng.randint(50, 4000) / 100, rng.randint(0, 4)] for _ in range(rng.randint(1, 4))]
        cases.append((lines, rng.choice([None, 0.0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5])))
    check_calls(tmp_path, cases)


@pytest.mark.core
def test_changelog_keeps_entries_of_both_branches(ref):
    entries, rest = unreleased(head_file("CHANGELOG.md"))
    assert entries == ref["changelog"]
    assert rest == ref["changelog_rest"]


@pytest.mark.boundary
def test_pricing_edge_cases(ref, tmp_path):
    cases = [
        ([[25.0, 4]], 0.5),        # discounted subtotal exactly 50 -> free shipping
        ([[50.0, 1]], None),       # exactly at the threshold without discount
        ([[60.0, 1]], 0.2),        # 48 after discount -> shipping again
        ([[49.99, 1]], 0.0),
        ([], None),
        ([[10.0, 0]], 0.1),
        ([[10.0, 1]], 0.51),       # too much discount
        ([[10.0, 1]], -0.1),
        ([[10.0, -1]], None),      # negative quantity
    ]
    check_calls(tmp_path, cases)
    got = call_pricing(tmp_path, [["line_total", [2.5, 4]], ["line_total", [3.0, -2]]])
    assert got[0][0] == "ok" and abs(got[0][1] - 10.0) < 1e-9
    assert got[1] == ["err", "ValueError"]


@pytest.mark.boundary
def test_other_files_merged_and_no_conflict_markers(ref):
    entries = listing(REPO, MAIN)
    others = {p: e for p, e in entries.items() if p not in CONFLICTED}
    assert others == ref["others"]
    for path, (mode, typ, obj) in entries.items():
        text = git(REPO, "cat-file", "blob", obj)
        for marker in ("<<<<<<<", ">>>>>>>", "\n=======\n"):
            assert marker not in text, f"conflict marker left in {path}"


@pytest.mark.boundary
def test_merge_concluded_and_clean(ref):
    assert git(REPO, "symbolic-ref", "HEAD").strip() == MAIN
    gitdir = Path(git(REPO, "rev-parse", "--absolute-git-dir").strip())
    assert not (gitdir / "MERGE_HEAD").exists()
    assert git(REPO, "status", "--porcelain", "--untracked-files=no") == ""
