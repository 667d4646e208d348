"""Python layers of imported task environments, built once, cached by content, mounted read-only.

Terminal-Bench and Harbor Dockerfiles install what their tests and programs import with ``pip``
(``pip3 install pytest==8.4.1 pandas==2.3.2 scipy==1.16.1``). termrl has no image to install
into: the requirement set of a task (every ``pip install`` of its Dockerfile and test script,
less the test runner, which the sandbox brings) becomes one directory built by
``pip install --target`` for the sandbox's interpreter, keyed by that interpreter and the exact
requirement set, so tasks asking for the same packages share it. The sandbox mounts it
read-only at ``MOUNT`` and puts it on ``PYTHONPATH`` (its console scripts on ``PATH``), for the
agent and for the tests alike.

Packages come from the package index (pip's own configuration: ``PIP_INDEX_URL``,
``PIP_FIND_LINKS``...) when an environment is *built*: ``termrl tasks prepare SUITE`` ahead of
time, or the commands that run tasks (``tasks validate``, ``eval``, ``audit``) before their first
episode. An episode never downloads: a task whose environment is not built cannot open a
sandbox (``SetupError``, a harness error), and a requirement pip cannot satisfy makes the task
unsupported, naming it.

The cache lives under ``TERMRL_CACHE`` (default ``~/.cache/termrl``; ``/var/cache/termrl`` when
the harness is root, because the sandbox then runs as ``nobody`` and must be able to read it),
one directory per environment with a ``manifest.json`` (requirements, interpreter, size, build
seconds). Environments share the files they have in common (the same numpy in two of them is one
copy on disk, hard-linked: ``share``). The cache holds at most ``TERMRL_CACHE_MAX`` (default 50G)
on disk: after building what a run needs, the least recently mounted environments go first
(``prune``; ``termrl cache prune`` by hand).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from termrl.protocols import SetupError
from termrl.sandbox.bwrap import DEFAULT_PATH

SANDBOX_PYTHON = "/usr/bin/python3"
"""The interpreter tasks run with in the sandbox (the host's, bound read-only)."""
MOUNT = "/opt/termrl/pyenv"
"""Where a task's Python environment appears in the sandbox."""
MANIFEST = "manifest.json"


class BuildError(RuntimeError):
    """pip could not build an environment; ``requirement`` is the one it could not satisfy, when known."""

    def __init__(self, message: str, requirement: str | None = None):
        super().__init__(message)
        self.requirement = requirement


def cache_root() -> Path:
    """``TERMRL_CACHE``, else ``/var/cache/termrl`` for root, else ``~/.cache/termrl``."""
    if os.environ.get("TERMRL_CACHE"):
        return Path(os.environ["TERMRL_CACHE"])
    if os.geteuid() == 0:
        return Path("/var/cache/termrl")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "termrl"


def canonical(requirement: str) -> str:
    """A requirement with its project name normalised (PEP 503) and spaces dropped:
    ``Scikit_Learn == 1.5`` -> ``scikit-learn==1.5``."""
    text = re.sub(r"\s+", "", requirement)
    m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", text)
    if not m:
        return text
    return re.sub(r"[-_.]+", "-", m.group(0)).lower() + text[m.end():]


def normalize(requirements: Iterable[str]) -> tuple[str, ...]:
    """The requirement set: canonical, without duplicates, sorted."""
    return tuple(sorted({canonical(r) for r in requirements if r.strip()}))


@functools.lru_cache(maxsize=1)
def interpreter() -> str:
    """The sandbox interpreter's identity (implementation, version, machine): part of every key."""
    res = subprocess.run([SANDBOX_PYTHON, "-I", "-c", "import platform, sys; "
                          "print(sys.implementation.cache_tag, platform.python_version(), platform.machine())"],
                         capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise BuildError(f"{SANDBOX_PYTHON} does not run: {res.stderr.strip()[-300:]}")
    return res.stdout.strip()


def key(requirements: Iterable[str]) -> str:
    """The environment's name in the cache: a hash of the interpreter and the requirement set."""
    blob = json.dumps([interpreter(), list(normalize(requirements))])
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def location(requirements: Iterable[str]) -> Path:
    return cache_root() / "pyenv" / key(requirements)


def built(requirements: Iterable[str]) -> Path | None:
    """The environment's directory when it is built, else None."""
    where = location(requirements)
    return where if (where / MANIFEST).is_file() else None


@dataclass(frozen=True)
class Built:
    """A built environment of either kind (this module's, or a ``termrl.tasks.sysenv`` layer)."""

    path: Path
    contents: tuple[str, ...]
    """Its requirement set, or its Debian packages (the manifest lists every .deb unpacked)."""
    size_bytes: int
    """Bytes it added to the cache when it was built (a system layer's hard-linked host files, and
    the files a Python environment shares with those built before it, cost none)."""
    seconds: float
    cached: bool
    """It was already built: nothing was downloaded."""
    shared_bytes: int = 0
    """Bytes of it that are hard links to files other environments brought (``share``)."""


@contextmanager
def building(where: Path, contents: tuple[str, ...]) -> Iterator[tuple[Built | None, Path]]:
    """Hold the build lock of the environment at ``where`` (one builder per environment: a
    second process waits for the first, then finds it built). Yields (the cached ``Built`` or
    None, an empty staging folder to build into and rename to ``where``)."""
    where.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(where.parent, 0o755)
    with open(where.parent / f"{where.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (where / MANIFEST).is_file():
            m = json.loads((where / MANIFEST).read_text())
            yield Built(where, contents, m["size_bytes"], m["seconds"], cached=True,
                        shared_bytes=m.get("shared_bytes", 0)), where
            return
        for stale in where.parent.glob(f"{where.name}.tmp-*"):  # an interrupted build's: never mounted
            shutil.rmtree(stale, ignore_errors=True)
        tmp = where.with_name(f"{where.name}.tmp-{os.getpid()}")
        yield None, tmp


def build(requirements: Iterable[str], timeout: float = 1800.0) -> Built:
    """Build the environment of ``requirements`` unless it is cached (see ``building``)."""
    reqs = normalize(requirements)
    where = location(reqs)
    with building(where, reqs) as (cached, tmp):
        if cached:
            return cached
        start = time.monotonic()
        command = [sys.executable, "-m", "pip", "--python", SANDBOX_PYTHON, "install", "--target", str(tmp),
                   "--no-input", "--disable-pip-version-check", "--no-warn-script-location", "--quiet",
                   "--no-compile", *reqs]
        try:
            res = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BuildError(f"pip install {' '.join(reqs)} ran past {timeout:.0f} s") from None
        if res.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BuildError(f"pip install {' '.join(reqs)} failed: {_pip_error(res.stderr)}",
                             _unsatisfied(res.stderr, reqs))
        _compile(tmp, timeout)
        for p in [tmp, *tmp.rglob("*")]:  # readable by the sandbox's user, never writable
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() or p.stat().st_mode & 0o111 else 0o644)
        size, shared = share(tmp)
        seconds = time.monotonic() - start
        (tmp / MANIFEST).write_text(json.dumps({"requirements": list(reqs), "interpreter": interpreter(),
                                                "size_bytes": size, "shared_bytes": shared,
                                                "seconds": round(seconds, 1)}, indent=1))
        os.chmod(tmp / MANIFEST, 0o644)
        shutil.rmtree(where, ignore_errors=True)
        tmp.rename(where)
        return Built(where, reqs, size, seconds, cached=False, shared_bytes=shared)


def _compile(tree: Path, timeout: float) -> None:
    """Byte-compile ``tree`` for the sandbox's interpreter, as pip would, but as the sandbox sees it
    (source paths under ``MOUNT``) and validated by the source's hash, not its time: the same
    package then compiles to the same bytes in every environment, and ``share`` links its .pyc
    files too (pip's embed the build folder's path, different for each). A file that does not
    compile is left without one (as pip leaves it: Python then compiles it at import)."""
    try:
        subprocess.run([SANDBOX_PYTHON, "-m", "compileall", "-q", "-f", "-j", "0", "-d", MOUNT,
                        "--invalidation-mode", "checked-hash", str(tree)], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pass  # left to compile at import, as a file that does not compile is


SHARE_MIN_BYTES = 4096
"""Files smaller than this are not shared: they save little, and the same tiny file (an empty
``__init__.py``) in thousands of places would exhaust the file system's links per file."""


def objects() -> Path:
    """The content store that environments share files through: one hard link per distinct file
    (its content and permission bits), named by them."""
    return cache_root() / "objects"


def share(tree: Path) -> tuple[int, int]:
    """Replace every file in ``tree`` that another environment already has (same bytes, same
    permission bits) by a hard link to that one, through ``objects()``; the others join the store.
    Environments are mounted read-only and never written after they are built, so a file one
    serves is never changed through another. Returns (bytes ``tree`` adds to the cache, bytes it
    shares with environments built before it)."""
    return share_files(sorted(tree.rglob("*")))


def share_files(paths: Iterable[Path]) -> tuple[int, int]:
    """``share`` for the given files only (a system layer's own, among its links to the host's)."""
    store = objects()
    added = shared = 0
    for path in paths:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode):  # folders, links
            continue
        if st.st_size < SHARE_MIN_BYTES or st.st_nlink > 1:
            added += st.st_size
            continue
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256")
        name = f"{digest.hexdigest()}-{st.st_mode & 0o7777:o}"
        obj = store / name[:2] / name
        if _link_from(obj, path):
            shared += st.st_size
            continue
        try:
            obj.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, obj)
        except FileExistsError:  # another build stored the same file just now
            if _link_from(obj, path):
                shared += st.st_size
                continue
        except OSError:  # too many links, a store this user may not write, another file system: keep the copy
            pass
        added += st.st_size
    return added, shared


def _link_from(obj: Path, path: Path) -> bool:
    """Make ``path`` a hard link to ``obj``; False when ``obj`` is not there (or takes no more links)."""
    tmp = path.with_name(f".{path.name}.share-{os.getpid()}")
    try:
        os.link(obj, tmp)
    except OSError:
        return False
    os.replace(tmp, path)
    return True


def collect() -> None:
    """Delete the stored files no environment links any more."""
    store = objects()
    for obj in store.glob("*/*") if store.is_dir() else []:
        try:
            if obj.lstat().st_nlink == 1:
                obj.unlink()
        except FileNotFoundError:
            pass


def usage() -> int:
    """The cache's bytes on disk: each file of the Python and npm environments and the store
    counted once however many environments link it, and each system layer's own bytes (its
    manifest's: the host files it hard-links cost nothing)."""
    seen: set[int] = set()
    total = 0
    root = cache_root()
    for top in (root / "pyenv", root / "npmenv", objects()):
        for folder, _, files in os.walk(top):
            for name in files:
                try:
                    st = os.lstat(os.path.join(folder, name))
                except FileNotFoundError:
                    continue
                if st.st_ino not in seen and stat.S_ISREG(st.st_mode):
                    seen.add(st.st_ino)
                    total += st.st_size
    return total + sum(c.private_bytes for c in cached() if c.kind == "sysenv")


def _pip_error(stderr: str) -> str:
    errors = [line.strip() for line in stderr.splitlines() if line.startswith("ERROR:")]
    return " ".join(errors)[-500:] if errors else stderr.strip()[-500:] or "no output"


def _unsatisfied(stderr: str, reqs: tuple[str, ...]) -> str | None:
    m = re.search(r"No matching distribution found for (\S+)", stderr) or \
        re.search(r"satisfies the requirement (\S+)", stderr)
    if m:
        return m.group(1)
    named = [r for r in reqs if re.search(re.escape(re.split(r"[<>=!~\[;@]", r, maxsplit=1)[0]), stderr, re.I)]
    return named[0] if len(named) == 1 else None


def environment(task) -> dict[str, str]:
    """A task's environment variables in the sandbox: its own (Dockerfile ENV), with its Python
    environment, when it has one, first on ``PYTHONPATH`` and its scripts on ``PATH``."""
    env = dict(task.env)
    if task.python_requirements:
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = f"{MOUNT}:{path}" if path else MOUNT
        env["PATH"] = f"{MOUNT}/bin:{env.get('PATH', DEFAULT_PATH)}"
    return env


def binds(task) -> dict[str, str]:
    """{sandbox path: host directory} to mount read-only for ``task``; raises ``SetupError`` when
    its environment is not built (an episode never downloads)."""
    if not task.python_requirements:
        return {}
    where = built(task.python_requirements)
    if where is None:
        raise SetupError(f"task {task.id}: its Python environment ({' '.join(normalize(task.python_requirements))}) "
                         f"is not built: run `termrl tasks prepare SUITE` (cache: {cache_root()})")
    if os.geteuid() == 0:  # the sandbox runs as nobody: every folder above must let others in
        closed = next((d for d in [where, *where.parents] if not d.stat().st_mode & 0o001), None)
        if closed is not None:
            raise SetupError(f"task {task.id}: its Python environment at {where} cannot be read by the sandbox's "
                             f"user: {closed} is not searchable by others; set TERMRL_CACHE to a folder "
                             "outside it (default for root: /var/cache/termrl)")
    touch(where)
    return {MOUNT: str(where)}


# --------------------------------------------------------------------------- the cache

DEFAULT_MAX_BYTES = 50 << 30
"""The cache's size limit unless ``TERMRL_CACHE_MAX`` says otherwise (e.g. ``20G``)."""
USED = "last-used"


def max_bytes() -> int:
    """``TERMRL_CACHE_MAX`` (``500M``, ``20G``, a number of bytes), else ``DEFAULT_MAX_BYTES``."""
    text = os.environ.get("TERMRL_CACHE_MAX", "").strip()
    return parse_size(text, "TERMRL_CACHE_MAX") if text else DEFAULT_MAX_BYTES


def parse_size(text: str, where: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text.strip(), re.I)
    if not m:
        raise ValueError(f"{where} = {text!r}: give a size like 500M, 20G or a number of bytes")
    return int(float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()])


@dataclass(frozen=True)
class Cached:
    path: Path
    kind: str
    """``pyenv`` (Python packages) or ``sysenv`` (a system layer, ``termrl.tasks.sysenv``)."""
    requirements: tuple[str, ...]
    """Its requirement set, or its Debian packages."""
    size_bytes: int
    last_used: float
    """When a sandbox last mounted it (or when it was built)."""
    private_bytes: int = 0
    """A system layer's bytes in no other file: its own files the content store does not hold."""


def cached() -> list[Cached]:
    """Every built environment of either kind, least recently used first."""
    out = []
    for kind in ("pyenv", "sysenv", "npmenv"):
        root = cache_root() / kind
        for manifest in root.glob(f"*/{MANIFEST}") if root.is_dir() else []:
            data = json.loads(manifest.read_text())
            used = manifest.parent / USED
            out.append(Cached(manifest.parent, kind, tuple(data.get("requirements") or data.get("packages") or data.get("files") or ()),
                              data["size_bytes"], (used if used.exists() else manifest).stat().st_mtime,
                              data.get("private_bytes", data["size_bytes"])))
    return sorted(out, key=lambda c: c.last_used)


def prune(limit: int | None = None, keep: Iterable[Path] = ()) -> list[Cached]:
    """Delete the least recently used environments until the cache holds at most ``limit`` bytes
    on disk (default ``max_bytes()``; ``usage``), never one in ``keep``; returns what was deleted.
    An environment is deleted under its lock, so never while it is being built; the files it
    shared go with the last environment that links them."""
    limit = max_bytes() if limit is None else limit
    keep = {Path(k) for k in keep}
    gone = []
    for env in cached():
        if usage() <= limit:
            break
        if env.path in keep:
            continue
        with open(env.path.parent / f"{env.path.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            shutil.rmtree(env.path, ignore_errors=True)
        collect()
        gone.append(env)
    return gone


def touch(where: Path) -> None:
    """Mark a built environment (of either kind) as used now: pruning takes the least recent first."""
    try:
        (where / USED).touch()
    except OSError:  # a read-only cache still serves; it only cannot say when it was used
        pass
