"""System layers of imported task environments: Debian packages the host lacks, installed into a
cached copy of the host's system that the sandbox mounts as its ``/usr`` and ``/etc``.

A Terminal-Bench or Harbor Dockerfile installs tools with ``apt-get install``. The sandbox's
system is the host's (read-only), so the packages the host already has cost nothing; for the
others termrl builds a *system layer*, once per package set, keyed by that set and the host's
installed packages:

1. ``apt-get install --download-only`` fetches the packages and whatever they depend on that the
   host lacks (apt resolves against the host's own package database; nothing is installed on
   the host);
2. each ``.deb`` is unpacked (``dpkg-deb -x``) into a staging folder;
3. the layer is a hard-linked copy of the host's ``/usr`` (no bytes copied) and a copy of its
   ``/etc``, into which the staged files are merged: a file the packages replace is unlinked
   first, so the host's own file is never written through its link.

The sandbox then binds the layer's ``usr`` and ``etc`` read-only where the host's would be: the
harness's bash, python3 and pytest stay the host's, byte for byte.

Why this builder: the sandbox must keep running the harness's interpreter and test runner, so the
natural base is the host's system, not a fresh root filesystem (``mmdebstrap`` would build a
second Debian beside it, with its own python3 and pytest, hundreds of megabytes per layer);
bubblewrap 0.8 (Debian 12's) has no overlay mounts, and a hard-link farm is an overlay made
ahead of time, costing inodes, not bytes.

Limits, stated:
- **``FROM``**: every base image maps to the host's release (Debian 12 here). An ``ubuntu:24.04``
  task gets Debian 12's packages under the same names, except the few with a successor in
  ``SUCCESSORS`` (``openjdk-11-jdk`` -> ``openjdk-17-jdk``); a name Debian does not have
  (``stegseek``, a vendor repository's ``dotnet-sdk-8.0``) makes the task unsupported, named.
  Versions differ from Ubuntu's (python3 3.11, not 3.12).
- **Maintainer scripts do not run**: no users or groups are created, no ``update-alternatives``
  links, no generated keys or caches. A package that only works after its ``postinst``
  (``openssh-server``'s host keys) may not work.
- Only ``/usr`` and ``/etc`` (and the merged ``/bin``, ``/sbin``, ``/lib``) come from a layer; files
  a package puts under ``/var`` or ``/opt`` are left out.
- No services run: there is no init in the sandbox.

Offline (tests, air-gapped machines): ``TERMRL_APT_DEBS=FOLDER`` takes each requested package
from ``FOLDER/NAME_*.deb`` instead of apt, without resolving dependencies.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from termrl.protocols import SetupError
from termrl.tasks import npmenv
from termrl.tasks.installers import CARGO_HOME_DIR
from termrl.tasks.pyenv import BuildError, Built, building, cache_root, share_files, touch

MANIFEST = "manifest.json"
SUCCESSORS = {f"openjdk-{old}-{kind}": f"openjdk-17-{kind}" for old in (8, 11)
              for kind in ("jdk", "jre", "jdk-headless", "jre-headless")}
"""Packages of other releases (Ubuntu's, older Debian's) that Debian 12 replaced: asked for and
absent from the host's release, the successor is installed instead (and the manifest says so)."""
MERGED = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64", "lib32": "usr/lib32",
          "libx32": "usr/libx32"}
"""Top-level folders that are links into /usr on a merged-/usr system (Debian 12)."""


def normalize(packages: Iterable[str]) -> tuple[str, ...]:
    """Debian package names without versions or architectures; ``npm:SPEC`` (a global npm
    install, built into the layer too) as it is."""
    return tuple(sorted({p.strip() if p.strip().startswith(NPM) else p.strip().split("=")[0].split(":")[0].lower()
                         for p in packages if p.strip()}))


NPM = "npm:"
"""Prefix of a global npm package (``npm:jest@^29``) among a layer's packages."""


@functools.lru_cache(maxsize=1)
def host_identity() -> str:
    """The host's release and installed packages: a layer built on another host state is another layer."""
    release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    status = Path("/var/lib/dpkg/status")
    digest = hashlib.sha256(status.read_bytes()).hexdigest() if status.exists() else ""
    return hashlib.sha256((release + digest).encode()).hexdigest()


Files = tuple[tuple[str, bytes, int], ...]
"""(absolute path, bytes, mode) of each file a Dockerfile copies into system folders, sorted."""


def files_of(system_files) -> Files:
    """A task's ``system_files`` ({path: TaskFile}) as the hashable, sorted ``Files``."""
    return tuple(sorted((path, f.data, f.mode) for path, f in dict(system_files or {}).items()))


def key(packages: Iterable[str], files: Files = ()) -> str:
    digest = [[p, hashlib.sha256(d).hexdigest(), m] for p, d, m in files]
    return hashlib.sha256(json.dumps([host_identity(), list(normalize(packages)), digest]).encode()).hexdigest()[:20]


def location(packages: Iterable[str], files: Files = ()) -> Path:
    return cache_root() / "sysenv" / key(packages, files)


def built(packages: Iterable[str], files: Files = ()) -> Path | None:
    where = location(packages, files)
    return where if (where / MANIFEST).is_file() else None


def build(packages: Iterable[str], files: Files = (), timeout: float = 1800.0) -> Built:
    """Build the layer of ``packages`` and ``files`` (written after the packages) unless it is
    cached (one builder per layer at a time)."""
    pkgs = normalize(packages)
    where = location(pkgs, files)
    with building(where, pkgs) as (cached, tmp):
        if cached:
            return cached
        start = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="termrl-debs-", dir=where.parent) as work:
                substituted: dict[str, str] = {}
                debian = tuple(p for p in pkgs if not p.startswith(NPM))
                debs = _fetch(debian, Path(work) / "debs", timeout, substituted) if debian else []
                staging = Path(work) / "staging"
                for deb in debs:
                    res = subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], capture_output=True, text=True)
                    if res.returncode != 0:
                        raise BuildError(f"dpkg-deb -x {deb.name} failed: {res.stderr.strip()[-300:]}")
                _npm_globals([p[len(NPM):] for p in pkgs if p.startswith(NPM)], staging, Path(work), timeout)
                for path, data, mode in files:  # the Dockerfile's COPY into system folders, last
                    target = staging / path.lstrip("/")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if target.is_symlink() or target.is_file():
                        target.unlink()
                    target.write_bytes(data)
                    target.chmod(mode)
                tmp.mkdir()
                _copy_host(tmp)
                own = _merge(staging, tmp)
                # the layer's own files that another layer or environment already has become links
                added, shared = share_files(own)
                private = sum(p.stat().st_size for p in own if p.stat().st_nlink == 1)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        seconds = time.monotonic() - start
        (tmp / MANIFEST).write_text(json.dumps({"packages": list(pkgs), "substituted": substituted,
                                                "files": [p for p, _, _ in files],
                                                "debs": sorted(d.name for d in debs), "size_bytes": added,
                                                "shared_bytes": shared, "private_bytes": private,
                                                "seconds": round(seconds, 1)}, indent=1))
        os.chmod(tmp / MANIFEST, 0o644)
        os.chmod(tmp, 0o755)
        tmp.rename(where)
        return Built(where, pkgs, added, seconds, cached=False, shared_bytes=shared)


def _fetch(pkgs: tuple[str, ...], into: Path, timeout: float, substituted: dict | None = None) -> list[Path]:
    """The .debs of ``pkgs`` and their dependencies the host lacks; a package of another release
    with a successor in ``SUCCESSORS`` is replaced by it (recorded in ``substituted``)."""
    try:
        return _download(pkgs, into, timeout)
    except BuildError as e:
        if e.requirement not in SUCCESSORS:
            raise
        substituted = {} if substituted is None else substituted
        substituted[e.requirement] = SUCCESSORS[e.requirement]
        shutil.rmtree(into, ignore_errors=True)
        swapped = tuple(SUCCESSORS.get(p, p) if p == e.requirement else p for p in pkgs)
        return _fetch(swapped, into, timeout, substituted)


def _download(pkgs: tuple[str, ...], into: Path, timeout: float) -> list[Path]:
    into.mkdir(parents=True)
    offline = os.environ.get("TERMRL_APT_DEBS")
    if offline:
        debs = []
        for name in pkgs:
            found = sorted(Path(offline).glob(f"{name}_*.deb"))
            if not found:
                raise BuildError(f"no {name}_*.deb in TERMRL_APT_DEBS={offline}", name)
            debs.append(found[-1])
        return debs
    (into / "partial").mkdir()
    command = ["apt-get", "install", "--download-only", "--no-install-recommends", "-y", "-q",
               "-o", f"Dir::Cache::archives={into}", "-o", "Debug::NoLocking=1", *pkgs]
    try:
        res = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    except subprocess.TimeoutExpired:
        raise BuildError(f"apt-get download of {' '.join(pkgs)} ran past {timeout:.0f} s") from None
    if res.returncode != 0:
        text = res.stderr + res.stdout
        m = re.search(r"Unable to locate package (\S+)", text) or \
            re.search(r"Package '?(\S+?)'? has no installation candidate", text) or \
            re.search(r"E: Version '[^']*' for '(\S+)' was not found", text)
        errors = " ".join(line.strip() for line in text.splitlines() if line.startswith("E:"))[-400:]
        raise BuildError(f"apt-get could not fetch {' '.join(pkgs)}: {errors or text.strip()[-400:]}",
                         m.group(1) if m else None)
    return sorted(into.glob("*.deb"))


def _npm_globals(specs: list[str], staging: Path, work: Path, timeout: float) -> None:
    """``npm install -g SPECS`` into ``staging/usr`` (Node's global folder when its prefix is /usr,
    as Debian's and NodeSource's are), from the npm registry, with the host's npm."""
    if not specs:
        return
    (staging / "usr").mkdir(parents=True, exist_ok=True)
    env = {**npmenv.npm_environment(work / "npm-home"), "npm_config_globalconfig": _npm_global_config()}
    command = ["npm", "install", "-g", "--prefix", str(staging / "usr"), "--no-audit", "--no-fund",
               "--loglevel=error", *specs]
    try:
        res = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise BuildError("npm install -g needs npm on the host (apt-get install nodejs npm)", "npm") from None
    except subprocess.TimeoutExpired:
        raise BuildError(f"npm install -g {' '.join(specs)} ran past {timeout:.0f} s") from None
    if res.returncode != 0:
        raise npmenv.failure(f"npm install -g {' '.join(specs)}", res.stderr + res.stdout, prefix=NPM)


def _npm_global_config() -> str:
    """The host's global npmrc (its registry, proxy and CA settings), which ``--prefix`` would
    otherwise look for under the staging folder."""
    try:
        res = subprocess.run(["npm", "config", "get", "globalconfig"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout.strip()


def _copy_host(root: Path) -> None:
    """``root/usr``: the host's /usr as hard links (no bytes; the cache must be on /usr's
    filesystem); ``root/etc``: a copy of its /etc."""
    for command in (["cp", "-al", "/usr", str(root)], ["cp", "-a", "/etc", str(root)]):
        res = subprocess.run(command, capture_output=True, text=True)
        if res.returncode != 0:
            raise BuildError(f"{' '.join(command)} failed (a cache on another filesystem than /usr cannot hard-link "
                             f"it: set TERMRL_CACHE): {res.stderr.strip()[-300:]}")


def _merge(staging: Path, root: Path) -> list[Path]:
    """Put every file of ``staging`` into ``root`` without writing through a hard link; returns
    the files copied (the layer's own)."""
    copied: list[Path] = []
    if not staging.is_dir():
        return copied
    for dirpath, dirnames, filenames in os.walk(staging):
        rel = Path(dirpath).relative_to(staging)
        parts = rel.parts
        if parts and parts[0] in MERGED:
            rel = Path(MERGED[parts[0]], *parts[1:])
        elif parts and parts[0] not in ("usr", "etc"):
            dirnames[:] = []  # /var, /opt...: left out (see the module's limits)
            continue
        target_dir = root / rel
        if target_dir.is_symlink() and not target_dir.resolve().is_relative_to(root.resolve()):
            # a link out of the layer (absolute, so the host's): a real folder instead, never writes through it
            target_dir.unlink()
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in [*filenames, *(d for d in dirnames if (Path(dirpath) / d).is_symlink())]:
            src, dst = Path(dirpath) / name, target_dir / name
            if dst.is_symlink() or dst.is_file():
                dst.unlink()  # never write through a hard link to the host's file
            elif dst.is_dir():
                shutil.rmtree(dst)
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copy2(src, dst)
                copied.append(dst)
    return copied


def binds(root: str | None) -> dict[str, str]:
    """Folders of a system layer (``system_root``'s answer) mounted elsewhere too: its Cargo
    configuration at ``/.cargo`` (``installers.CARGO_HOME_DIR``), where Cargo finds it from any
    working directory."""
    cargo = Path(root, CARGO_HOME_DIR.lstrip("/")) if root else None
    return {"/.cargo": str(cargo)} if cargo is not None and cargo.is_dir() else {}


def system_root(task) -> str | None:
    """The host folder whose ``usr`` and ``etc`` the task's sandbox mounts, or None (the host's);
    raises ``SetupError`` when the task's layer is not built (an episode never downloads)."""
    if not task.system_packages and not task.system_files:
        return None
    where = built(task.system_packages, files_of(task.system_files))
    if where is None:
        what = " ".join([*normalize(task.system_packages), *task.system_files])
        raise SetupError(f"task {task.id}: its system layer ({what}) is not "
                         f"built: run `termrl tasks prepare SUITE` (cache: {cache_root()})")
    touch(where)
    return str(where)
