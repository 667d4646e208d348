import hashlib
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


SECRET_FILE = "config/secrets.env"
REFS = ["refs/heads/main", "refs/heads/develop", "refs/tags/v1.0"]


def git_bytes(repo, *args, input=None):
    r = subprocess.run(["git", *SAFE, *args], cwd=repo, env=ENV, capture_output=True, input=input, timeout=60)
    assert r.returncode == 0, f"git {' '.join(args)} failed: {r.stderr.decode(errors='replace')}"
    return r.stdout


def parse_batch(data):
    """Objects of `git cat-file --batch` output: list of (oid, type, content)."""
    out, pos = [], 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        assert len(header) == 3, header
        size = int(header[2])
        out.append((header[0].decode(), header[1].decode(), data[nl + 1:nl + 1 + size]))
        pos = nl + 1 + size + 1
    return out


def blobs(repo, oids):
    oids = sorted(set(oids))
    if not oids:
        return {}
    data = git_bytes(repo, "cat-file", "--batch", input="".join(o + "\n" for o in oids).encode())
    return {oid: content for oid, _, content in parse_batch(data)}


def snapshot(repo, commit, redact=None):
    """Sorted (path, mode, type, sha256 of content) of a commit's files; with redact=KEY,
    the expected state after removing the secrets file and redacting KEY."""
    entries = []
    for rec in git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
        if rec:
            meta, path = rec.split("\t", 1)
            mode, typ, obj = meta.split()
            entries.append((path, mode, typ, obj))
    data = blobs(repo, [e[3] for e in entries if e[2] == "blob"])
    snap = []
    for path, mode, typ, obj in sorted(entries):
        if redact is not None and path == SECRET_FILE:
            continue
        content = data.get(obj, obj.encode())
        if redact is not None:
            content = content.replace(redact.encode(), b"REDACTED")
        snap.append((path, mode, typ, hashlib.sha256(content).hexdigest()))
    return tuple(snap)


def commit_info(repo, commit):
    raw = git(repo, "cat-file", "commit", commit)
    head, _, message = raw.partition("\n\n")
    headers = [tuple(line.split(" ", 1)) for line in head.splitlines() if not line.startswith(" ")]
    parents = [v for k, v in headers if k == "parent"]
    (author,) = [v for k, v in headers if k == "author"]
    return parents, author, message


def history(repo, ref, redact=None):
    """[(author, message, snapshot)] of the linear history of ref, oldest first. With redact,
    the expected rewritten history: commits whose rewritten content equals their parent's
    are dropped."""
    out, prev = [], None
    for c in git(repo, "rev-list", "--reverse", "--topo-order", ref).split():
        parents, author, message = commit_info(repo, c)
        assert len(parents) <= 1, f"{ref}: unexpected merge commit {c}"
        snap = snapshot(repo, c, redact)
        if redact is None or prev is None or snap != prev:
            out.append((author, message, snap))
        prev = snap
    return out


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    subprocess.run(["bash", str(HERE / "build_repo.sh")], cwd=d, env=ENV, check=True,
                   capture_output=True, timeout=60)
    versions = git(d, "rev-list", "--all", "--", SECRET_FILE).split()
    assert len(versions) >= 3
    secrets = set()
    for c in versions:
        for line in git_bytes(d, "cat-file", "blob", f"{c}:{SECRET_FILE}").decode().splitlines():
            name, _, value = line.partition("=")
            if ("KEY" in name or "PASSWORD" in name) and value:
                secrets.add(value)
    keys = {line.split("=", 1)[1] for c in versions
            for line in git(d, "show", f"{c}:{SECRET_FILE}").splitlines() if line.startswith("API_KEY=")}
    assert len(keys) == 1 and len(secrets) >= 3
    key = keys.pop()
    expected = {r: history(d, r, redact=key) for r in REFS}
    originals = {r: history(d, r) for r in REFS}
    assert all(len(expected[r]) < len(originals[r]) for r in REFS[:2])
    tag = git(d, "cat-file", "tag", "refs/tags/v1.0")
    return {"key": key, "secrets": sorted(secrets), "expected": expected,
            "tag_message": tag.partition("\n\n")[2]}


@pytest.mark.core
@pytest.mark.parametrize("name", REFS)
def test_rewritten_history(ref, name):
    got = history(REPO, name)
    exp = ref["expected"][name]
    assert [m for _, m, _ in got] == [m for _, m, _ in exp], "commit list/messages differ"
    assert [a for a, _, _ in got] == [a for a, _, _ in exp], "authors or author dates differ"
    for (_, msg, s_got), (_, _, s_exp) in zip(got, exp):
        assert s_got == s_exp, f"files of commit {msg.splitlines()[0]!r} are not as expected"


@pytest.mark.core
def test_no_object_contains_a_secret(ref):
    data = git_bytes(REPO, "cat-file", "--batch-all-objects", "--batch")
    objects = parse_batch(data)
    assert len(objects) > 10
    for secret in ref["secrets"]:
        leaking = [f"{t} {o}" for o, t, content in objects if secret.encode() in content]
        assert not leaking, f"a secret is still stored in: {leaking[:5]}"


@pytest.mark.boundary
def test_no_secret_in_plain_files(ref):
    for root, dirs, files in os.walk(REPO):
        for f in files:
            p = Path(root) / f
            if p.is_symlink() or not p.is_file():
                continue
            data = p.read_bytes()
            for secret in ref["secrets"]:
                assert secret.encode() not in data, f"a secret is still in {p}"


@pytest.mark.boundary
def test_tag_and_branches_share_rewritten_commits(ref):
    assert git(REPO, "cat-file", "-t", "refs/tags/v1.0").strip() == "tag", "v1.0 must stay annotated"
    tag = git(REPO, "cat-file", "tag", "refs/tags/v1.0")
    assert tag.partition("\n\n")[2] == ref["tag_message"]
    tagged = git(REPO, "rev-parse", "refs/tags/v1.0^{commit}").strip()
    base = git(REPO, "merge-base", "refs/heads/main", "refs/heads/develop").strip()
    assert base == tagged, "main and develop must share the rewritten commits up to v1.0"


@pytest.mark.boundary
def test_main_checked_out_and_clean(ref):
    assert git(REPO, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(REPO, "status", "--porcelain", "--untracked-files=no") == ""
    assert not (REPO / SECRET_FILE).exists()
