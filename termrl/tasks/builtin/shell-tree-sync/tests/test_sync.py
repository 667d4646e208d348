import os
import random
import stat
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "sync.sh"


def run(src, dst):
    return subprocess.run([str(SCRIPT), str(src), str(dst)], capture_output=True, text=True, timeout=60)


def snapshot(root):
    root = str(root)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as fh:
                    out[rel] = ("file", fh.read(), oct(stat.S_IMODE(st.st_mode)))
    return out


def write(p, data, mode=0o644, mtime=None):
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    os.chmod(p, mode)
    if mtime is not None:
        os.utime(p, (mtime, mtime))


@pytest.mark.core
def test_workspace_mirror():
    src, mirror = Path.cwd() / "src", Path.cwd() / "mirror"
    snap = snapshot(src)
    assert sorted(snap) == sorted([
        ".htaccess", "build.sh", "css", "css/site.css", "empty-dir", "home.html", "img",
        "img/icons", "img/icons/home icon.svg", "index.html", "js", "js/app.js"])
    assert snap["css/site.css"][1] == b"body { color: black; }\n"
    assert snap["build.sh"][2] == "0o755"
    assert snapshot(mirror) == snap


def build_case(tmp_path, seed):
    rng = random.Random(seed)
    src, dst = tmp_path / "src tree", tmp_path / "dst"
    same = []      # files identical in both trees: (path in dst)
    old = 1_000_000_000
    for i in range(30):
        d = rng.choice(["", "a/", "a/b/", "c d/", ".hid/", "e/f/g/"])
        rel = f"{d}{rng.choice(['f', '.dot', 'sp ace', 'x'])}{i}"
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
        mode = rng.choice([0o644, 0o600, 0o755, 0o750, 0o640])
        write(src / rel, data, mode)
        kind = rng.choice(["same", "same", "samemode", "content", "missing", "sizesame"])
        if kind == "same":
            write(dst / rel, data, mode, mtime=old + i)
            same.append(rel)
        elif kind == "samemode":
            write(dst / rel, data, 0o666, mtime=old + i)
            same.append(rel)
        elif kind == "content":
            write(dst / rel, data + b"!", mode)
        elif kind == "sizesame" and data:
            flipped = bytes([data[0] ^ 1]) + data[1:]
            write(dst / rel, flipped, mode, mtime=old)
            os.utime(src / rel, (old, old))
    # same size, same mtime, different content: must still be updated
    write(src / "same-size.bin", b"AAAA", 0o644, mtime=old)
    write(dst / "same-size.bin", b"AAAB", 0o644, mtime=old)
    (src / "empty" / "nested").mkdir(parents=True)
    (src / "lnk").symlink_to("a/b")
    (src / "dangling").symlink_to("does/not exist")
    (dst / "lnk").symlink_to("elsewhere")
    write(dst / "zz extra.txt", b"extra")
    write(dst / "gone" / "deep" / "x", b"x")
    write(dst / ".hidden-extra", b"h")
    (dst / "stale-link").symlink_to("zz extra.txt")
    # type conflicts
    write(src / "conflict1", b"now a file")
    write(dst / "conflict1" / "inner", b"was a dir")
    write(src / "conflict2" / "inner", b"now a dir")
    write(dst / "conflict2", b"was a file")
    write(src / "conflict3", b"now a file")
    (dst / "conflict3").symlink_to("a")
    return src, dst, same


@pytest.mark.core
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_unseen_trees(tmp_path, seed):
    src, dst, same = build_case(tmp_path, seed)
    before_src = snapshot(src)
    ident = {rel: (os.stat(dst / rel).st_ino, os.stat(dst / rel).st_mtime_ns) for rel in same}
    r = run(src, dst)
    assert r.returncode == 0, r.stderr
    assert snapshot(src) == before_src, "SRC was modified"
    assert snapshot(dst) == before_src
    for rel, (ino, mtime) in ident.items():
        st = os.stat(dst / rel)
        assert (st.st_ino, st.st_mtime_ns) == (ino, mtime), f"unchanged file rewritten: {rel}"
    # second run is a no-op
    ident2 = {rel: os.stat(dst / rel).st_mtime_ns for rel, v in before_src.items() if v[0] == "file"}
    assert run(src, dst).returncode == 0
    assert snapshot(dst) == before_src
    for rel, m in ident2.items():
        assert os.stat(dst / rel).st_mtime_ns == m


@pytest.mark.boundary
def test_missing_destination_and_relative_paths(tmp_path):
    write(tmp_path / "s" / ".only-hidden", b"1", 0o600)
    (tmp_path / "s" / "empty").mkdir()
    r = subprocess.run([str(SCRIPT), "s", "new/dest dir"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert snapshot(tmp_path / "new" / "dest dir") == {
        ".only-hidden": ("file", b"1", "0o600"), "empty": ("dir",)}


@pytest.mark.boundary
def test_empty_source_clears_destination(tmp_path):
    (tmp_path / "s").mkdir()
    write(tmp_path / "d" / "x" / "y", b"y")
    write(tmp_path / "d" / ".z", b"z")
    r = run(tmp_path / "s", tmp_path / "d")
    assert r.returncode == 0
    assert (tmp_path / "d").is_dir()
    assert snapshot(tmp_path / "d") == {}
