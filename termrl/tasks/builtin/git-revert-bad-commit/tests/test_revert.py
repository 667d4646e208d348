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


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    """Pristine copy of the original history, plus the expected result of reverting the bad commit."""
    d = tmp_path_factory.mktemp("ref")
    subprocess.run(["bash", str(HERE / "build_repo.sh")], cwd=d, env=ENV, check=True,
                   capture_output=True, timeout=60)
    tip = git(d, "rev-parse", "refs/heads/main").strip()
    history = git(d, "rev-list", tip).split()
    bad = git(d, "log", "--format=%H", "-S", "MAX_RETRIES = 0", "--", "app/config.py").split()
    assert len(bad) == 1
    git(d, "revert", "--no-edit", bad[0])
    return {"tip": tip, "history": history, "bad": bad[0],
            "tree": git(d, "rev-parse", "HEAD^{tree}").strip()}


def main_commit():
    return git(REPO, "rev-parse", "--verify", "refs/heads/main^{commit}").strip()


def parents(commit):
    return git(REPO, "rev-list", "--parents", "-n", "1", commit).split()[1:]


@pytest.mark.core
def test_one_new_commit_on_top_of_original_main(ref):
    head = main_commit()
    assert head != ref["tip"], "main still points at the original commit"
    assert parents(head) == [ref["tip"]], "main must be exactly one new commit on top of the original main"


@pytest.mark.core
def test_tree_is_original_main_without_bad_commit(ref):
    tree = git(REPO, "rev-parse", "refs/heads/main^{tree}").strip()
    assert tree == ref["tree"], "main's files are not the original main minus the bad commit's changes"


@pytest.mark.boundary
def test_history_not_rewritten(ref):
    head = main_commit()
    assert git(REPO, "rev-list", head + "^").split() == ref["history"]
    assert ref["bad"] in ref["history"]


@pytest.mark.boundary
def test_main_checked_out_and_clean(ref):
    assert git(REPO, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(REPO, "status", "--porcelain", "--untracked-files=no") == ""
    assert (REPO / "app" / "config.py").read_text() == git(REPO, "show", "HEAD:app/config.py")
