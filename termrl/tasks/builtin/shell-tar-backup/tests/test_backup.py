import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "backup.sh"


def run(*args, cwd=None):
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=30, cwd=cwd)


def members(archive):
    with tarfile.open(archive, "r:gz") as tf:
        return {m.name.rstrip("/"): m for m in tf.getmembers()}


def contents(archive):
    out = {}
    with tarfile.open(archive, "r:gz") as tf:
        for m in tf.getmembers():
            if m.isfile():
                out[m.name] = tf.extractfile(m).read()
    return out


def make(root, files):
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


WORKSPACE_FILES = [
    "project/.env",
    "project/build/out.bin",
    "project/docs/README.md",
    "project/run.sh",
    "project/src/lib/util.py",
    "project/src/main.py",
    "project/web/index.html",
]


@pytest.mark.core
def test_workspace_backup(tmp_path):
    arc = Path.cwd() / "backups" / "project.tar.gz"
    got = contents(arc)
    assert sorted(got) == WORKSPACE_FILES
    assert got["project/src/main.py"] == b'print("hi")\n'
    assert members(arc)["project/run.sh"].mode & 0o111
    # The saved archive must be what the script makes of project/, not a copy: back project/
    # up again into a fresh directory and compare.
    dest = tmp_path / "backups"
    r = run("project", dest)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{dest}/project.tar.gz"
    new = dest / "project.tar.gz"
    assert contents(new) == got, "backups/project.tar.gz differs from ./backup.sh project backups"
    assert sorted(members(new)) == sorted(members(arc))
    assert sorted(contents(new)) == WORKSPACE_FILES
    assert members(new)["project/run.sh"].mode & 0o111


@pytest.mark.core
def test_unseen_tree(tmp_path):
    src = tmp_path / "Quarterly Data"
    make(src, {
        "a.csv": b"1,2\n",
        "nested/deep/b.txt": b"deep\n",
        "nested/c.tmp": b"skip",
        "nested/c.tmp.keep": b"keep",
        ".hidden/conf": b"h",
        ".cache/z": b"no",
        "lib/node_modules/pkg/i.js": b"no",
        "node_modules_notes.txt": b"yes",
        "x/.cache_info": b"yes",
    })
    tool = src / "tool.sh"
    tool.write_bytes(b"#!/bin/sh\n")
    tool.chmod(0o750)
    (src / "link-to-a").symlink_to("a.csv")
    dest = tmp_path / "out" / "nested dest"
    r = run(src, dest)
    assert r.returncode == 0, r.stderr
    arc = dest / "Quarterly Data.tar.gz"
    assert r.stdout.strip() == f"{dest}/Quarterly Data.tar.gz"
    got = contents(arc)
    assert sorted(got) == sorted([
        "Quarterly Data/a.csv",
        "Quarterly Data/nested/deep/b.txt",
        "Quarterly Data/nested/c.tmp.keep",
        "Quarterly Data/.hidden/conf",
        "Quarterly Data/node_modules_notes.txt",
        "Quarterly Data/x/.cache_info",
        "Quarterly Data/tool.sh",
    ])
    assert got["Quarterly Data/nested/deep/b.txt"] == b"deep\n"
    mem = members(arc)
    assert stat.S_IMODE(mem["Quarterly Data/tool.sh"].mode) == 0o750
    link = mem["Quarterly Data/link-to-a"]
    assert link.issym() and link.linkname == "a.csv"
    for name in mem:
        assert name.startswith("Quarterly Data"), name
    for name in mem:
        parts = name.split("/")
        assert "node_modules" not in parts and ".cache" not in parts, name


@pytest.mark.boundary
def test_trailing_slash_relative_paths_and_replace(tmp_path):
    make(tmp_path / "site", {"index.html": b"v1"})
    (tmp_path / "bk").mkdir()
    (tmp_path / "bk" / "site.tar.gz").write_bytes(b"garbage, not an archive")
    r = run("site/", "bk", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("bk/site.tar.gz", "bk//site.tar.gz")
    assert contents(tmp_path / "bk" / "site.tar.gz") == {"site/index.html": b"v1"}
    assert sorted(os.listdir(tmp_path)) == ["bk", "site"]
