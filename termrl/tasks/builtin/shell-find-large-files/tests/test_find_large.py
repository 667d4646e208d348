import os
import random
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "find_large.sh"


def run(d, kib):
    return subprocess.run([str(SCRIPT), str(d), str(kib)], capture_output=True, text=True, timeout=30)


def expected(root, kib):
    rows = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for f in filenames:
            p = os.path.join(dirpath, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            size = os.path.getsize(p)
            if size > kib * 1024:
                rows.append((size, os.path.relpath(p, root)))
    rows.sort(key=lambda r: (-r[0], r[1].encode()))
    lines = [f"{s}\t{p}" for s, p in rows]
    lines.append(f"TOTAL\t{sum(s for s, _ in rows)}")
    return lines


def make(root, sizes):
    for rel, size in sizes.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * size)


WORKSPACE_EXPECTED = [
    "200000\tmedia/video.bin",
    "150000\tmedia/clip0.mov",
    "150000\tmedia/raw clips/clip 1.mov",
    "65537\tlogs/app.log",
    "TOTAL\t565537",
]


@pytest.mark.core
def test_workspace_output_file():
    lines = (Path.cwd() / "large_files.txt").read_text().splitlines()
    assert lines == WORKSPACE_EXPECTED
    # The saved file must be what the script prints for `./find_large.sh data 64`, not a copy.
    r = run("data", 64)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == lines, "large_files.txt differs from ./find_large.sh data 64"
    assert r.stdout.splitlines() == WORKSPACE_EXPECTED


@pytest.mark.core
def test_unseen_random_tree(tmp_path):
    rng = random.Random(4242)
    sizes = {}
    dirs = ["", "alpha/", "alpha/beta/", "gamma delta/", ".config/", ".github/", "z/"]
    for i in range(40):
        d = rng.choice(dirs)
        sizes[f"{d}f{i:02d}{rng.choice(['.dat', '.log', ' copy.bin', ''])}"] = rng.choice(
            [0, 1, 1023, 1024, 1025, 5 * 1024, 5 * 1024 + 1, 7777, 20000, 20000, 65000])
    sizes["alpha/.git/objects/big"] = 90000
    sizes["z/.gitignore"] = 9000
    make(tmp_path, sizes)
    (tmp_path / "alpha" / "biglink").symlink_to(tmp_path / "alpha/.git/objects/big")
    for kib in (5, 1):
        r = run(tmp_path, kib)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == expected(tmp_path, kib)


@pytest.mark.core
def test_ties_sorted_by_path(tmp_path):
    make(tmp_path, {"b/x": 3000, "a b/y": 3000, "a/z": 3000, "B": 3000, "c": 5000})
    r = run(tmp_path, 2)
    assert r.stdout.splitlines() == [
        "5000\tc", "3000\tB", "3000\ta b/y", "3000\ta/z", "3000\tb/x", "TOTAL\t17000"]


@pytest.mark.boundary
def test_zero_threshold_and_exact_boundary(tmp_path):
    make(tmp_path, {"empty": 0, "one": 1, "k/exact": 2048, "k/over": 2049})
    assert run(tmp_path, 0).stdout.splitlines() == [
        "2049\tk/over", "2048\tk/exact", "1\tone", "TOTAL\t4098"]
    assert run(tmp_path, 2).stdout.splitlines() == ["2049\tk/over", "TOTAL\t2049"]


@pytest.mark.boundary
def test_no_match_and_trailing_slash(tmp_path):
    make(tmp_path, {"s/small": 10})
    r = run(str(tmp_path) + "/", 1)
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["TOTAL\t0"]
    r = run(str(tmp_path) + "/", 0)
    assert r.stdout.splitlines() == ["10\ts/small", "TOTAL\t10"]
