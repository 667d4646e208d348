"""Snapshots of a sandbox's workspace and the diff between two of them."""

from __future__ import annotations

import base64
import difflib
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

from termrl.protocols import Sandbox, SandboxError

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", "node_modules", ".mypy_cache", ".ruff_cache"}
MAX_FILE = 1 << 20
"""Files larger than this are hashed by size only in the diff (binary data, build outputs)."""


def snapshot(box: Sandbox) -> dict[str, bytes]:
    """Every regular file of the workdir (not .git and caches), path -> bytes (big files truncated).

    Raises:
        SandboxError: the workspace could not be read.
    """
    host = getattr(box, "host_workspace", None)
    try:
        if host is not None:
            return _walk(host())
        return _tar(box, box.workdir, "--exclude=.git")
    except (OSError, ValueError, tarfile.TarError) as e:
        raise SandboxError(f"could not read the workspace: {type(e).__name__}: {e}") from e


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
    """
    host = getattr(box, "host_workspace", None)
    if host is None:
        return None
    root = Path(host())
    digest = hashlib.sha256()
    try:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                path = Path(dirpath) / name
                info = path.lstat()
                rel = path.relative_to(root).as_posix()
                digest.update(f"{rel}\0{stat.S_IFMT(info.st_mode)}\0{stat.S_IMODE(info.st_mode):o}\0".encode())
                if stat.S_ISLNK(info.st_mode):
                    digest.update(os.readlink(path).encode() + b"\0")
                elif stat.S_ISREG(info.st_mode):
                    with open(path, "rb") as f:
                        for chunk in iter(lambda: f.read(1 << 20), b""):
                            digest.update(chunk)
                    digest.update(b"\0")
    except OSError as e:
        raise SandboxError(f"could not read the workspace: {type(e).__name__}: {e}") from e
    return digest.hexdigest()


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


def _walk(root: Path, skip: set[str] = SKIP_DIRS) -> dict[str, bytes]:
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):  # os.walk does not follow symlinks
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            with open(path, "rb") as f:
                files[path.relative_to(root).as_posix()] = f.read(MAX_FILE)
    return files


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Files added or modified (sorted); deleted files are in ``deleted``."""
    return sorted(p for p, data in after.items() if before.get(p) != data)


def deleted(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted(set(before) - set(after))


def line_counts(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[int, int]:
    """(lines added, lines removed) over text files, like ``git diff --numstat``."""
    added = removed = 0
    for path in set(before) | set(after):
        a, b = before.get(path, b""), after.get(path, b"")
        if a == b or b"\0" in a[:8192] or b"\0" in b[:8192]:
            continue
        diff = difflib.unified_diff(a.decode(errors="replace").splitlines(),
                                    b.decode(errors="replace").splitlines(), n=0, lineterm="")
        for line in diff:
            if line.startswith("+") and not line.startswith("+++"):
                added += 1
            elif line.startswith("-") and not line.startswith("---"):
                removed += 1
    return added, removed
