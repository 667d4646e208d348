import os
import random
import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "fixperms.sh"


def run(d):
    return subprocess.run([str(SCRIPT), str(d)], capture_output=True, text=True, timeout=30)


def mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def wanted(root, p):
    rel = os.path.relpath(p, root)
    priv = rel != "." and "private" in rel.split(os.sep)
    if os.path.isdir(p):
        script = True
    else:
        with open(p, "rb") as fh:
            script = fh.read(2) == b"#!"
    if script:
        return 0o700 if priv else 0o755
    return 0o600 if priv else 0o644


def entries(root):
    out = [str(root)]
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                out.append(p)
    return out


@pytest.mark.core
def test_workspace_site():
    site = Path.cwd() / "site"
    expect = {
        ".": 0o755, "README": 0o644, "assets": 0o755, "assets/logo.svg": 0o644,
        "assets/style css.css": 0o644, "cgi-bin": 0o755, "cgi-bin/run.py": 0o755,
        "deploy.sh": 0o755, "index.html": 0o644, "private": 0o700,
        "private/keys.txt": 0o600, "private/old": 0o700, "private/old/backup.tar": 0o600,
        "private/rotate.sh": 0o700,
    }
    got = {os.path.relpath(p, site): mode(p) for p in entries(site)}
    assert {k: oct(v) for k, v in got.items()} == {k: oct(v) for k, v in expect.items()}
    assert (site / "link-outside").is_symlink()
    assert mode(Path.cwd() / "outside.txt") == 0o600


def build_random_tree(root, rng):
    dirs = [root]
    names = ["a", "b c", "private", "-x", "lib", "Private", "private_not", "deep"]
    for i in range(25):
        parent = rng.choice(dirs)
        d = parent / f"{rng.choice(names)}{'' if rng.random() < 0.5 else i}"
        if d.exists():
            continue
        d.mkdir()
        dirs.append(d)
    for i in range(60):
        parent = rng.choice(dirs)
        f = parent / f"file {i}{rng.choice(['.sh', '.txt', '', '.py'])}"
        f.write_bytes(rng.choice([b"#!/bin/sh\necho\n", b"#!", b"plain\n", b"", b"#", b" #!x", b"!#"]))
    for p in entries(root):
        os.chmod(p, rng.choice([0o777, 0o755, 0o700, 0o644, 0o600, 0o640, 0o750, 0o666, 0o711, 0o555]))
    os.chmod(root, 0o755)
    # make sure "private" appears at several depths
    for sub in ("private", "lib/private", "lib/x/private/y"):
        (root / sub).mkdir(parents=True, exist_ok=True)
        (root / sub / "f").write_bytes(b"#!/bin/true\n")
        os.chmod(root / sub / "f", 0o644)


@pytest.mark.core
@pytest.mark.parametrize("seed", [11, 12])
def test_unseen_random_tree(tmp_path, seed):
    rng = random.Random(seed)
    root = tmp_path / "tree"
    root.mkdir()
    build_random_tree(root, rng)
    outside = tmp_path / "outside.sh"
    outside.write_bytes(b"#!/bin/sh\n")
    os.chmod(outside, 0o640)
    (root / "lib" / "ln").symlink_to(outside)
    (root / "dirlink").symlink_to(tmp_path)
    os.chmod(tmp_path, 0o711)

    before = {p: mode(p) for p in entries(root)}
    expect = {p: wanted(root, p) for p in before}
    changed = sum(1 for p in before if before[p] != expect[p])
    r = run(root)
    assert r.returncode == 0, r.stderr
    after = {p: oct(mode(p)) for p in before}
    assert after == {p: oct(v) for p, v in expect.items()}
    assert r.stdout.strip() == str(changed)
    assert mode(outside) == 0o640
    assert mode(tmp_path) == 0o711
    r2 = run(root)
    assert r2.stdout.strip() == "0"


@pytest.mark.boundary
def test_root_named_private_is_not_private(tmp_path):
    root = tmp_path / "private"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x").write_bytes(b"data")
    (root / "private").mkdir()
    (root / "private" / "y").write_bytes(b"data")
    os.chmod(root / "sub" / "x", 0o600)
    r = run(root)
    assert r.returncode == 0
    assert mode(root) == 0o755
    assert mode(root / "sub") == 0o755
    assert mode(root / "sub" / "x") == 0o644
    assert mode(root / "private") == 0o700
    assert mode(root / "private" / "y") == 0o600
    # root 755 already, sub 755 already, x changed, private dir changed, y changed
    assert r.stdout.strip() == "3"


@pytest.mark.boundary
def test_empty_dir_already_correct(tmp_path):
    root = tmp_path / "e"
    root.mkdir()
    os.chmod(root, 0o755)
    r = run(root)
    assert r.stdout.strip() == "0"
    os.chmod(root, 0o700)
    r = run(root)
    assert r.stdout.strip() == "1"
    assert mode(root) == 0o755
