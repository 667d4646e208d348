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


MAIN = "refs/heads/main"
FEATURE = "refs/heads/feature/csv-export"
MESSAGE = "Add CSV export"


def parse_commit(repo, rev):
    """(headers as list of (key, value), message) of a commit object."""
    raw = git(repo, "cat-file", "commit", rev)
    head, _, message = raw.partition("\n\n")
    headers = [tuple(line.split(" ", 1)) for line in head.splitlines() if not line.startswith(" ")]
    return headers, message


def author_ident(repo, rev):
    """'Name <email>' of a commit's author (without the date)."""
    (author,) = [v for k, v in parse_commit(repo, rev)[0] if k == "author"]
    return author.rsplit(">", 1)[0] + ">"


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    subprocess.run(["bash", str(HERE / "build_repo.sh")], cwd=d, env=ENV, check=True,
                   capture_output=True, timeout=60)
    main, feature = (git(d, "rev-parse", r).strip() for r in (MAIN, FEATURE))
    branch_commits = git(d, "rev-list", f"{main}..{feature}").split()
    assert len(branch_commits) > 1
    authors = {author_ident(d, c) for c in branch_commits}
    assert len(authors) == 1
    # expected content: the branch's changes applied on top of the current main
    git(d, "checkout", "-q", "-b", "expected", main)
    git(d, "merge", "--squash", "-q", feature)
    tree = git(d, "write-tree").strip()
    return {"main": main, "main_history": git(d, "rev-list", main).split(),
            "author": authors.pop(), "tree": tree}


def feature_commit():
    return git(REPO, "rev-parse", "--verify", FEATURE + "^{commit}").strip()


@pytest.mark.core
def test_branch_is_one_commit_on_top_of_main(ref):
    tip = feature_commit()
    assert git(REPO, "rev-list", f"{ref['main']}..{tip}").split() == [tip]
    assert git(REPO, "rev-list", "--parents", "-n", "1", tip).split()[1:] == [ref["main"]]


@pytest.mark.core
def test_squashed_content(ref):
    tree = git(REPO, "rev-parse", FEATURE + "^{tree}").strip()
    assert tree == ref["tree"], "the commit's files are not main + all of the branch's changes"


@pytest.mark.core
def test_message_and_author(ref):
    tip = feature_commit()
    _, message = parse_commit(REPO, tip)
    assert message.rstrip("\n") == MESSAGE
    assert author_ident(REPO, tip) == ref["author"]


@pytest.mark.boundary
def test_main_untouched(ref):
    assert git(REPO, "rev-parse", "--verify", MAIN + "^{commit}").strip() == ref["main"]
    assert git(REPO, "rev-list", MAIN).split() == ref["main_history"]


@pytest.mark.boundary
def test_no_operation_in_progress_and_clean(ref):
    gitdir = Path(git(REPO, "rev-parse", "--absolute-git-dir").strip())
    for name in ("rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD"):
        assert not (gitdir / name).exists(), f"{name}: an operation is still in progress"
    assert git(REPO, "status", "--porcelain", "--untracked-files=no") == ""
