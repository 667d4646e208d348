import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "rename_ext.sh"


def run(*args):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=20)


def listing(root):
    """Sorted relative paths of all files/links (dirs suffixed with '/')."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out.append(os.path.relpath(os.path.join(dirpath, d), root) + "/")
        for f in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def make(root, files):
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


@pytest.mark.core
def test_workspace_photos_renamed():
    root = Path.cwd() / "photos"
    assert listing(root) == [
        "2023/",
        "2023/new year/",
        "2023/new year/fireworks 01.jpg",
        "2023/party.JPEG",
        "album.jpeg/",
        "album.jpeg/cover.jpg",
        "beach.jpg",
        "dup.jpeg",
        "dup.jpg",
        "notes.jpeg.txt",
        "raw/",
        "raw/-dash.jpg",
        "raw/sunset.jpg",
    ]
    assert (root / "dup.jpg").read_text() == "new dup\n"
    assert (root / "dup.jpeg").read_text() == "old dup\n"
    assert (root / "2023/new year/fireworks 01.jpg").read_text() == "fireworks\n"


@pytest.mark.core
def test_unseen_tree(tmp_path):
    make(tmp_path, {
        "a.md": "A", "b c.md": "B", "deep/er/x.md": "X", "deep/y.md.bak": "Y",
        "deep/Z.MD": "Z", "keep.txt": "K", "sub dir/--weird name.md": "W",
    })
    r = run(tmp_path, "md", "markdown")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "4"
    assert listing(tmp_path) == [
        "a.markdown",
        "b c.markdown",
        "deep/",
        "deep/Z.MD",
        "deep/er/",
        "deep/er/x.markdown",
        "deep/y.md.bak",
        "keep.txt",
        "sub dir/",
        "sub dir/--weird name.markdown",
    ]
    assert (tmp_path / "b c.markdown").read_text() == "B"
    assert (tmp_path / "deep/er/x.markdown").read_text() == "X"


@pytest.mark.core
def test_no_overwrite(tmp_path):
    make(tmp_path, {"r.log": "one", "r.txt": "two", "s.log": "three"})
    r = run(tmp_path, "log", "txt")
    assert r.returncode == 0
    assert r.stdout.strip() == "1"
    assert (tmp_path / "r.log").read_text() == "one"
    assert (tmp_path / "r.txt").read_text() == "two"
    assert (tmp_path / "s.txt").read_text() == "three"
    assert not (tmp_path / "s.log").exists()


@pytest.mark.boundary
def test_dirs_and_symlinks_not_renamed(tmp_path):
    make(tmp_path, {"pkg.tar/inner.tar": "i", "real.dat": "r"})
    (tmp_path / "link.tar").symlink_to("real.dat")
    r = run(tmp_path, "tar", "tgz")
    assert r.returncode == 0
    assert r.stdout.strip() == "1"
    assert (tmp_path / "pkg.tar").is_dir()
    assert (tmp_path / "pkg.tar/inner.tgz").read_text() == "i"
    assert (tmp_path / "link.tar").is_symlink()


@pytest.mark.boundary
def test_nothing_to_do(tmp_path):
    make(tmp_path, {"a.txt": "a", "b.jpegx": "b"})
    r = run(tmp_path, "jpeg", "jpg")
    assert r.returncode == 0
    assert r.stdout.strip() == "0"
    assert listing(tmp_path) == ["a.txt", "b.jpegx"]
