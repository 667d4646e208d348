import os
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


FILE = "tools/migrate.py"


def listing(repo, rev):
    """{path: (mode, type, object)} for every entry of rev's tree, recursively."""
    out = {}
    for rec in git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        if rec:
            meta, path = rec.split("\t", 1)
            mode, typ, obj = meta.split()
            out[path] = (mode, typ, obj)
    return out


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    """Pristine copy of the original history; the expected file is recomputed from it."""
    d = tmp_path_factory.mktemp("ref")
    subprocess.run(["bash", str(HERE / "build_repo.sh")], cwd=d, env=ENV, check=True,
                   capture_output=True, timeout=60)
    tip = git(d, "rev-parse", "refs/heads/main").strip()
    deletions = git(d, "log", "--format=%H", "--diff-filter=D", tip, "--", FILE).split()
    assert len(deletions) >= 2
    before = listing(d, deletions[0] + "^")
    assert FILE not in listing(d, tip)
    return {"tip": tip, "history": git(d, "rev-list", tip).split(),
            "tip_listing": listing(d, tip), "entry": before[FILE],
            "content": git(d, "cat-file", "blob", before[FILE][2])}


def main_commit():
    return git(REPO, "rev-parse", "--verify", "refs/heads/main^{commit}").strip()


@pytest.mark.core
def test_one_new_commit_on_top_of_original_main(ref):
    head = main_commit()
    assert head != ref["tip"], "main still points at the original commit"
    assert git(REPO, "rev-list", "--parents", "-n", "1", head).split()[1:] == [ref["tip"]]
    assert git(REPO, "rev-list", head + "^").split() == ref["history"]


@pytest.mark.core
def test_file_restored_with_last_content(ref):
    entries = listing(REPO, main_commit())
    assert FILE in entries, f"{FILE} is not in main's latest commit"
    assert entries[FILE][1] == "blob"
    assert git(REPO, "cat-file", "blob", entries[FILE][2]) == ref["content"]


@pytest.mark.core
def test_no_other_file_changed(ref):
    entries = listing(REPO, main_commit())
    entries.pop(FILE, None)
    assert entries == ref["tip_listing"]


@pytest.mark.boundary
def test_file_mode_preserved(ref):
    entries = listing(REPO, main_commit())
    assert entries[FILE][0] == ref["entry"][0] == "100755"


@pytest.mark.boundary
def test_main_checked_out_and_clean(ref):
    assert git(REPO, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(REPO, "status", "--porcelain", "--untracked-files=no") == ""
    path = REPO / FILE
    assert path.is_file() and path.read_text() == ref["content"]
    assert os.access(path, os.X_OK)
