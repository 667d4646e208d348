"""Snapshots of a sandbox's workspace and the diff between two of them."""

from __future__ import annotations

import base64
import difflib
import hashlib
import io
import os
import re
import shutil
import stat
import tarfile
from collections.abc import Mapping
from pathlib import Path

from termrl.protocols import Sandbox, SandboxError

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", "node_modules", ".mypy_cache", ".ruff_cache"}
PYTHON_IN = {"node_modules"}
"""Skipped folders whose Python files snapshots still read: a module hidden there is importable."""


MAX_DEPTH = 128
"""Folders deeper than this below the walked root are not entered (nor read into snapshots)."""


def walk(root: Path | str, max_depth: int = MAX_DEPTH):
    """``os.walk(root)`` (top-down, links not followed, ``dirnames`` prunable in place) without
    recursion: Python 3.11's ``os.walk`` recurses once per level, so a workspace folder a
    thousand levels deep (an agent can make one in a line of shell) raised ``RecursionError`` in
    the harness instead of being read. Folders more than ``max_depth`` levels down are listed in
    their parent's ``dirnames`` but not entered (their paths would outgrow ``PATH_MAX``)."""
    stack = [(str(root), 0)]
    while stack:
        top, depth = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        dirnames, filenames = [], []
        for entry in entries:
            try:
                (dirnames if entry.is_dir(follow_symlinks=False) else filenames).append(entry.name)
            except OSError:
                filenames.append(entry.name)
        yield top, dirnames, filenames
        if depth < max_depth:
            stack.extend((os.path.join(top, d), depth + 1) for d in reversed(dirnames))
MAX_FILE = 1 << 20
"""Files larger than this are hashed by size only in the diff (binary data, build outputs)."""


def snapshot(box: Sandbox, links: bool = True) -> dict[str, bytes]:
    """Every regular file of the workdir (not .git and caches), path -> bytes (big files truncated).
    With ``links`` (what the detectors read), a link to a file inside the workspace is read as
    that file; without (a copy to write back into another sandbox), links are left out.

    Raises:
        SandboxError: the workspace could not be read.
    """
    host = getattr(box, "host_workspace", None)
    try:
        if host is not None:
            return _walk(host(), links=links)
        return _tar(box, box.workdir, "--exclude=.git")
    except (OSError, ValueError, tarfile.TarError) as e:
        raise SandboxError(f"could not read the workspace: {type(e).__name__}: {e}") from e


EXACT_LIMIT = 64 << 20
"""Bytes of a workspace ``exact_files`` copies at most."""


def exact_files(box: Sandbox) -> tuple[dict[str, bytes], dict[str, int], dict[str, int]] | None:
    """The whole workdir as files and their permission bits, and every folder with its own
    (empty ones too: a copy of the files alone would not make them), or None when that is not all
    of it (a link, a special file, a folder its owner cannot read, write and enter, more than
    ``EXACT_LIMIT`` bytes) or the backend gives no host path: what a warm verifier may verify in
    the episode's stead.

    >>> exact_files(object()) is None
    True
    """
    host = getattr(box, "host_workspace", None)
    if host is None:
        return None
    root, files, modes, folders, total = host(), {}, {}, {}, 0
    try:
        for dirpath, dirnames, filenames in walk(root):
            here = Path(dirpath)
            if here != root:
                mode = stat.S_IMODE(here.lstat().st_mode)
                if mode & 0o700 != 0o700:
                    return None  # a copy made and wiped by the verifier must be able to enter it
                folders[here.relative_to(root).as_posix()] = mode
            if dirnames and len(here.relative_to(root).parts) >= MAX_DEPTH:
                return None  # deeper than a walk goes
            for name in dirnames:
                if (here / name).is_symlink():
                    return None
            for name in filenames:
                path = here / name
                st = path.lstat()
                if not stat.S_ISREG(st.st_mode):
                    return None
                total += st.st_size
                if total > EXACT_LIMIT:
                    return None
                rel = path.relative_to(root).as_posix()
                files[rel], modes[rel] = path.read_bytes(), stat.S_IMODE(st.st_mode)
    except OSError:
        return None
    return files, modes, folders


def drop_bytecode(box: Sandbox) -> None:
    """Remove every ``__pycache__`` of the workdir (folders and links of that name): Python
    loads a ``.pyc`` there in place of its source when its stamp says the source is unchanged,
    and an agent can stamp one so (an unchecked-hash ``.pyc``). Run before the tests, after the
    snapshot the detectors read; the tests' processes write no bytecode (``-B``).

    Raises:
        SandboxError: the workdir could not be cleaned.
    """
    host = getattr(box, "host_workspace", None)
    if host is None:
        res = box.run(["find", box.workdir, "-name", "__pycache__", "-prune", "-exec", "rm", "-rf", "{}", "+"],
                      timeout=60)
        if res.exit_code != 0:
            raise SandboxError(f"could not remove the workspace's __pycache__ folders: {res.stderr.strip()[-300:]}")
        return
    try:
        for dirpath, dirnames, filenames in walk(host()):
            if "__pycache__" in dirnames:
                dirnames.remove("__pycache__")
                shutil.rmtree(os.path.join(dirpath, "__pycache__"))
            if "__pycache__" in filenames:
                os.unlink(os.path.join(dirpath, "__pycache__"))
    except OSError as e:
        raise SandboxError(f"could not remove the workspace's __pycache__ folders: {type(e).__name__}: {e}") from e


def home_snapshot(box: Sandbox) -> dict[str, bytes]:
    """Every regular file of the agent's HOME (dotfiles, ~/.local), path relative to HOME.

    Raises:
        SandboxError: HOME could not be read.
    """
    host = getattr(box, "host_home", None)
    try:
        if host is not None:
            return _walk(host(), skip=set())
        return _tar(box, "")  # "": the sandbox's own $HOME
    except (OSError, ValueError, tarfile.TarError) as e:
        raise SandboxError(f"could not read HOME: {type(e).__name__}: {e}") from e


def fingerprint(box: Sandbox) -> str | None:
    """A digest of everything in the workdir that verification can see: every entry (``.git``
    and caches included), its type, mode bits, a regular file's whole content, a link's target.
    Two workspaces with the same fingerprint verify alike. None when the backend has no host
    path to the workspace.

    Git's clock-dependent bookkeeping is read as what it means, not as bytes (``git_canonical``):
    the index without its stat cache, reflogs without their timestamps. Two sandboxes whose setup
    built the same repository a second apart differ in nothing else, and git's results do not
    depend on either (a stale stat cache only makes git re-read the file).
    """
    host = getattr(box, "host_workspace", None)
    if host is None:
        return None
    root = Path(host())
    digest = hashlib.sha256()
    try:
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                path = Path(dirpath) / name
                info = path.lstat()
                rel = path.relative_to(root).as_posix()
                digest.update(f"{rel}\0{stat.S_IFMT(info.st_mode)}\0{stat.S_IMODE(info.st_mode):o}\0".encode())
                if stat.S_ISLNK(info.st_mode):
                    digest.update(os.readlink(path).encode() + b"\0")
                elif stat.S_ISREG(info.st_mode):
                    canonical = git_canonical(rel, path)
                    if canonical is not None:
                        digest.update(canonical)
                    else:
                        with open(path, "rb") as f:
                            for chunk in iter(lambda: f.read(1 << 20), b""):
                                digest.update(chunk)
                    digest.update(b"\0")
    except OSError as e:
        raise SandboxError(f"could not read the workspace: {type(e).__name__}: {e}") from e
    return digest.hexdigest()


_REFLOG_TIME = re.compile(rb"(> )\d+ [+-]\d{4}(\t|\n|$)", re.MULTILINE)


def git_canonical(rel: str, path: Path) -> bytes | None:
    """What ``fingerprint`` hashes for a git bookkeeping file at workdir path ``rel``, or None
    to hash its bytes: for an index (``.git/index``, a worktree's), its entries without the stat
    cache (times, device, inode, owner, size); for a reflog (``.git/logs/...``), its lines without
    the time of each entry. An index this cannot parse is hashed whole."""
    parts = rel.split("/")
    if ".git" not in parts[:-1]:
        return None
    inside = parts[parts.index(".git") + 1:]
    if inside == ["index"] or (len(inside) == 3 and inside[0] == "worktrees" and inside[2] == "index"):
        return _index_entries(path.read_bytes())
    if "logs" in inside[:-1]:
        return _REFLOG_TIME.sub(rb"\1\2", path.read_bytes())
    return None


def _index_entries(data: bytes) -> bytes | None:
    """A git index (versions 2-4, SHA-1) as its entries' mode, object id, flags and path, then its
    extensions; None when it is not one this reads."""
    if len(data) < 32 or data[:4] != b"DIRC":
        return None
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    out, at, previous = [data[:12]], 12, b""
    try:
        for _ in range(count):
            start = at
            mode, oid, flags = data[at + 24:at + 28], data[at + 40:at + 60], int.from_bytes(data[at + 60:at + 62], "big")
            at += 62
            extended = b""
            if flags & 0x4000:
                if version < 3:
                    return None
                extended, at = data[at:at + 2], at + 2
            if version == 4:
                byte, at = data[at], at + 1  # git's offset varint: how much of the previous path to drop
                strip = byte & 0x7F
                while byte & 0x80:
                    byte, at = data[at], at + 1
                    strip = ((strip + 1) << 7) | (byte & 0x7F)
                end = data.index(b"\0", at)
                name = previous[:len(previous) - strip] + data[at:end]
                at = end + 1
            else:
                end = data.index(b"\0", at)
                name = data[at:end]
                at = start + ((end - start) // 8 + 1) * 8  # entries are NUL-padded to a multiple of 8
            previous = name
            out.append(mode + oid + flags.to_bytes(2, "big") + extended + name + b"\0")
    except (IndexError, ValueError):
        return None
    if at > len(data) - 20:
        return None
    out.append(data[at:len(data) - 20])  # the extensions; not the trailing checksum, which covers the stat cache
    return b"".join(out)


def _tar(box: Sandbox, directory: str, *options: str) -> dict[str, bytes]:
    """Files under ``directory`` read through the sandbox (backends without a host path)."""
    res = box.run(["/bin/sh", "-c", 'd=${1:-$HOME}; shift; tar -c -C "$d" "$@" . 2>/dev/null | base64 -w0',
                   "sh", directory, *options], timeout=60)
    files = {}
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(res.stdout))) as tar:
        for m in tar:
            if m.isfile():
                files[m.name.removeprefix("./")] = tar.extractfile(m).read(MAX_FILE)
    return files


def _walk(root: Path, skip: set[str] = SKIP_DIRS, links: bool = True) -> dict[str, bytes]:
    """Every regular file under ``root`` (path -> its first ``MAX_FILE`` bytes), the folders of
    ``skip`` left out but for the Python files of ``PYTHON_IN`` (importable, so read), and a link
    to a file or folder inside ``root`` read as what it points to: a module that is a link
    into ``node_modules`` is the code the tests import, and the detectors must see it."""
    files: dict[str, bytes] = {}
    resolved_root = Path(os.path.realpath(root))

    def read(path: Path, rel: str) -> None:
        try:
            with open(path, "rb") as f:
                files[rel] = f.read(MAX_FILE)
        except OSError:
            pass

    def inside(path: Path) -> Path | None:
        try:  # a link through a path this process may not read (/proc/1/root/...) leads nowhere
            target = Path(os.path.realpath(path))
            if target == resolved_root or resolved_root in target.parents:
                return target if target.is_file() or target.is_dir() else None
        except OSError:
            pass
        return None

    for dirpath, dirnames, filenames in walk(root):  # links are not followed
        here = Path(dirpath)
        python_only = bool((PYTHON_IN & skip).intersection(here.relative_to(root).parts))
        dirnames[:] = [d for d in dirnames if d not in skip or d in PYTHON_IN]
        for name in filenames:
            path = here / name
            if python_only and not name.endswith(".py"):
                continue
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = inside(path) if links else None
                if target is not None and target.is_file():
                    read(target, rel)
                elif target is not None and target.is_dir() and not (
                        Path(os.path.realpath(here)) == target or target in Path(os.path.realpath(here)).parents):
                    # a linked folder (not one of the link's own ancestors): its files under the link
                    for sub, _, names in walk(target):
                        for leaf in names:
                            if not os.path.islink(os.path.join(sub, leaf)):
                                read(Path(sub) / leaf, (path / Path(sub).relative_to(target) / leaf)
                                     .relative_to(root).as_posix())
                continue
            if path.is_file():
                read(path, rel)
    return files


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Files added or modified (sorted); deleted files are in ``deleted``."""
    return sorted(p for p, data in after.items() if before.get(p) != data)


def deleted(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(set(before) - set(after))


def is_binary(data: bytes | None) -> bool:
    """Whether ``data`` is binary as git judges it: a NUL byte in its first 8 KiB."""
    return b"\0" in (data or b"")[:8192]


def line_counts(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[int, int]:
    """(lines added, lines removed) over text files, like ``git diff --numstat``."""
    added = removed = 0
    for path in set(before) | set(after):
        a, b = before.get(path, b""), after.get(path, b"")
        if a == b or is_binary(a) or is_binary(b):
            continue
        diff = difflib.unified_diff(a.decode(errors="replace").splitlines(),
                                    b.decode(errors="replace").splitlines(), n=0, lineterm="")
        for line in diff:
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
    return added, removed


DIFF_CHARS = 12000
"""Longest diff ``diff_text`` gives by default (the judge's; longer ones are cut with a note)."""


def diff_text(before: Mapping[str, bytes], after: Mapping[str, bytes], limit: int = DIFF_CHARS) -> str:
    """A unified diff of the workspace, file by file (added, changed, deleted), cut at ``limit``.

    >>> print(diff_text({"a.py": b"x = 1\\n"}, {"a.py": b"x = 2\\n"}))
    --- a/a.py
    +++ b/a.py
    @@ -1 +1 @@
    -x = 1
    +x = 2
    """
    parts = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a == b:
            continue
        if is_binary(a) or is_binary(b):
            parts.append(f"Binary file {path} differs")
            continue
        old = a.decode(errors="replace").splitlines() if a is not None else []
        new = b.decode(errors="replace").splitlines() if b is not None else []
        parts.extend(difflib.unified_diff(old, new, f"a/{path}" if a is not None else "/dev/null",
                                          f"b/{path}" if b is not None else "/dev/null", lineterm=""))
    text = "\n".join(parts)
    return text if len(text) <= limit else text[:limit] + f"\n[... diff cut at {limit} of {len(text)} characters]"
