import contextlib
import importlib
import io
import os
import re
import runpy
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


def listing(repo, rev):
    """{path: (mode, type, object)} for every entry of rev's tree, recursively."""
    out = {}
    for rec in git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        if rec:
            meta, path = rec.split("\t", 1)
            mode, typ, obj = meta.split()
            out[path] = (mode, typ, obj)
    return out


def materialize(repo, commit, dest):
    """Write the tree of `commit` (a trusted reference commit) into `dest`."""
    entries = [(p, e[2]) for p, e in listing(repo, commit).items() if e[1] == "blob"]
    r = subprocess.run(["git", *SAFE, "cat-file", "--batch"], cwd=repo, env=ENV, timeout=60,
                       input="".join(obj + "\n" for _, obj in entries).encode(), capture_output=True)
    data, pos = r.stdout, 0
    for path, obj in entries:
        nl = data.index(b"\n", pos)
        size = int(data[pos:nl].split()[2])
        body = data[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


def run_check(dest):
    """Equivalent of `python3 check.py` run in `dest`: returns its exit status."""
    for name in list(sys.modules):
        if name == "textstats" or name.startswith("textstats."):
            del sys.modules[name]
    sys.path.insert(0, str(dest))
    importlib.invalidate_caches()
    old_cwd = os.getcwd()
    os.chdir(dest)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(str(dest / "check.py"), run_name="__main__")
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(old_cwd)
        sys.path.remove(str(dest))
        for name in list(sys.modules):
            if name == "textstats" or name.startswith("textstats."):
                del sys.modules[name]


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    """Rebuild the history and find the first bad commit by running the check on every commit."""
    d = tmp_path_factory.mktemp("ref")
    # the history starts at a random time (hashes differ per episode): rebuild it from the same start
    first = int(git(REPO, "log", "--reverse", "--format=%at", "refs/tags/v1.0").split()[0])
    subprocess.run(["bash", str(HERE / "build_repo.sh")], cwd=d, env={**ENV, "TERMRL_T0": str(first - 4000)},
                   check=True, capture_output=True, timeout=60)
    main = git(d, "rev-parse", "refs/heads/main").strip()
    good = git(d, "rev-parse", "refs/tags/v1.0^{commit}").strip()
    commits = [good] + git(d, "rev-list", "--reverse", "--first-parent", f"{good}..{main}").split()
    sys.dont_write_bytecode = True
    status = []
    for i, c in enumerate(commits):
        dest = tmp_path_factory.mktemp(f"c{i:03d}")
        materialize(d, c, dest)
        status.append(run_check(dest))
    assert status[0] == 0 and status[-1] == 1 and set(status) <= {0, 1, 125}
    first = min(i for i in range(len(status)) if all(s != 0 for s in status[i:]) and status[i] == 1)
    assert status[first - 1] == 0, "ambiguous history"
    assert 125 in status[:first], "history must contain untestable commits before the bug"
    return {"main": main, "good": good, "first_bad": commits[first]}


def answer():
    path = REPO / "first_bad.txt"
    assert path.is_file(), "first_bad.txt is missing"
    return path.read_text()


@pytest.mark.core
def test_first_bad_commit_identified(ref):
    assert answer().strip() == ref["first_bad"]


@pytest.mark.boundary
def test_answer_is_full_hash_on_one_line(ref):
    text = answer()
    assert re.fullmatch(r"[0-9a-f]{40}\n?", text), repr(text)
    assert git(REPO, "cat-file", "-t", text.strip()).strip() == "commit"


@pytest.mark.boundary
def test_repository_left_as_found(ref):
    assert git(REPO, "rev-parse", "--verify", "refs/heads/main^{commit}").strip() == ref["main"]
    assert git(REPO, "rev-parse", "--verify", "refs/tags/v1.0^{commit}").strip() == ref["good"]
    assert git(REPO, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    gitdir = Path(git(REPO, "rev-parse", "--absolute-git-dir").strip())
    assert not (gitdir / "BISECT_START").exists(), "a bisect session is still in progress"
    assert git(REPO, "status", "--porcelain", "--untracked-files=no") == ""
