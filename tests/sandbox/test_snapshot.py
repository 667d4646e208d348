"""Workspace snapshots: what the detectors read of links, hidden folders and very deep trees."""

from __future__ import annotations

import pytest

from termrl.protocols import Task, TaskFile
from termrl.sandbox.workspace import MAX_DEPTH, exact_files, snapshot
from termrl.tasks.runtime import open_sandbox

pytestmark = pytest.mark.sandbox


def test_links_inside_the_workspace_are_read_as_their_targets_and_links_out_are_not():
    task = Task(id="snap", instruction="x", workspace={"a.py": TaskFile(b"A = 1\n")})
    with open_sandbox(task) as box:
        res = box.exec("mkdir -p node_modules/.cache pkg_real && echo 'T = 2' > node_modules/.cache/impl.py && "
                       "echo 'x' > node_modules/.cache/data.js && ln -s node_modules/.cache/impl.py roman.py && "
                       "ln -s a.py b.py && ln -s /etc/hostname out.txt && echo 'P = 3' > pkg_real/m.py && "
                       "ln -s pkg_real pkg && ln -s loop loop && ln -s . self && ln -s .. pkg_real/up")
        assert res.exit_code == 0, res
        seen = snapshot(box)
        assert seen["roman.py"] == b"T = 2\n" and seen["b.py"] == b"A = 1\n" and seen["pkg/m.py"] == b"P = 3\n"
        assert seen["node_modules/.cache/impl.py"] == b"T = 2\n"  # importable, so read
        assert "node_modules/.cache/data.js" not in seen and "out.txt" not in seen and "loop" not in seen
        assert not [p for p in seen if p.startswith(("self/", "pkg_real/up/", "pkg/up/"))]  # no tree read twice
        copy = snapshot(box, links=False)  # to write back into another sandbox, which makes its own links
        assert not {"roman.py", "b.py", "pkg/m.py", "out.txt"} & set(copy) and copy["a.py"] == b"A = 1\n"


def test_a_tree_deeper_than_the_recursion_limit_is_walked_and_not_taken_for_exact():
    task = Task(id="deep", instruction="x")
    with open_sandbox(task) as box:
        make = "import os\nfor _ in range(1200):\n    os.mkdir('d')\n    os.chdir('d')\nopen('leaf', 'w').close()\n"
        assert box.exec(f"python3 -c \"{make}\" && echo 'x = 1' > top.py").exit_code == 0
        seen = snapshot(box)  # Python 3.11's os.walk raised RecursionError here
        assert seen["top.py"] == b"x = 1\n" and not any(p.endswith("leaf") for p in seen)
        assert max(p.count("/") for p in seen) <= MAX_DEPTH + 1
        assert exact_files(box) is None  # the pool cannot copy it whole: verified in its own sandbox


def test_a_link_the_harness_may_not_resolve_is_skipped_not_an_error(monkeypatch):
    """``ln -s /proc/1/root/etc/shadow`` made the whole verification fail: resolving it raised
    PermissionError (readlink of another process's root). Such a link leads nowhere."""
    import os

    real = os.path.realpath

    def denied(path, *args, **kwargs):
        if str(path).endswith("shadow-link"):
            raise PermissionError(13, "Permission denied", "/proc/1/root")
        return real(path, *args, **kwargs)

    task = Task(id="snap", instruction="x", workspace={"a.py": TaskFile(b"A = 1\n")})
    with open_sandbox(task) as box:
        assert box.exec("ln -s /proc/1/root/etc/shadow shadow-link && ln -s a.py b.py").exit_code == 0
        monkeypatch.setattr(os.path, "realpath", denied)
        seen = snapshot(box)
        assert "shadow-link" not in seen and seen["b.py"] == b"A = 1\n"
