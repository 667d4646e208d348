"""Node environments of imported tasks: the ``npm install`` a test script runs, done once.

A Terminal-Bench test script that runs ``npm install`` in the workdir installs the workdir's
package.json from the npm registry at test time. termrl runs that install at prepare time
instead, once per distinct package.json (and lock file) and Node.js version, into a cached
``node_modules``; the sandbox mounts it read-only at ``installers.NPM_MOUNT``, and the test
script's ``npm install`` becomes a link from the workdir's ``node_modules`` to it. Node resolves
modules through the link as through the folder npm would have made.

Stated limits: a package.json the agent changes is not installed again (the tests run with
what the task's own package.json asked for); install scripts run at prepare time, on the host,
as npm runs them (no sandbox: the same trust as ``pip install`` of a task's requirements).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import time
from pathlib import Path

from termrl.protocols import SetupError
from termrl.tasks.installers import NPM_MOUNT
from termrl.tasks.pyenv import MANIFEST, BuildError, Built, building, cache_root, share, touch


@functools.lru_cache(maxsize=1)
def node_version() -> str:
    try:
        res = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout.strip()


INSTALL_FIELDS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies",
                  "bundleDependencies", "bundledDependencies", "overrides", "workspaces")
"""The fields of package.json that decide what ``npm install`` puts in node_modules."""


def install_view(files: tuple[tuple[str, bytes], ...]) -> tuple[tuple[str, bytes], ...]:
    """``files`` reduced to what decides the install: package.json's dependency fields only (two
    exercises that differ in name, scripts or description share one node_modules), lock files
    as they are. A package.json npm could not read either is kept whole, for npm to say why."""
    out = []
    for name, data in files:
        if name == "package.json":
            try:
                manifest = json.loads(data)
            except ValueError:
                manifest = None
            if isinstance(manifest, dict):
                kept = {k: manifest[k] for k in INSTALL_FIELDS if k in manifest}
                data = json.dumps({"name": "termrl-node-env", "version": "0.0.0", "private": True, **kept},
                                  indent=1, sort_keys=True).encode()
        out.append((name, data))
    return tuple(sorted(out))


def key(files: tuple[tuple[str, bytes], ...]) -> str:
    digest = [[name, hashlib.sha256(data).hexdigest()] for name, data in install_view(files)]
    return hashlib.sha256(json.dumps([node_version(), digest]).encode()).hexdigest()[:20]


def files_of(project) -> tuple[tuple[str, bytes], ...]:
    """A task's ``node_project`` ({name: TaskFile}) as sorted (name, bytes) pairs."""
    return tuple(sorted((name, f.data) for name, f in dict(project or {}).items()))


def location(files) -> Path:
    return cache_root() / "npmenv" / key(files)


def built(files) -> Path | None:
    where = location(files)
    return where if (where / MANIFEST).is_file() else None


def build(files: tuple[tuple[str, bytes], ...], timeout: float = 1800.0) -> Built:
    """``npm install`` of the project ``files`` (package.json, its lock) unless it is cached."""
    names = tuple(name for name, _ in files)
    where = location(files)
    with building(where, names) as (cached, tmp):
        if cached:
            return cached
        if not node_version():
            raise BuildError("npm install needs Node.js on the host (apt-get install nodejs npm)", "nodejs")
        start = time.monotonic()
        tmp.mkdir(parents=True)
        try:
            for name, data in install_view(files):
                (tmp / name).write_bytes(data)
            ci = any(name in ("package-lock.json", "npm-shrinkwrap.json") for name in names)
            command = ["npm", "ci" if ci else "install", "--no-audit", "--no-fund", "--loglevel=error"]
            home = tmp.parent / f"{tmp.name}.home"
            home.mkdir(exist_ok=True)
            env = npm_environment(home)
            try:
                res = subprocess.run(command, cwd=tmp, capture_output=True, text=True, timeout=timeout, env=env)
            except subprocess.TimeoutExpired:
                raise BuildError(f"npm install ran past {timeout:.0f} s") from None
            finally:
                subprocess.run(["rm", "-rf", str(home)])
            if res.returncode != 0:
                raise failure("npm install", res.stderr + res.stdout)
            (tmp / "node_modules").mkdir(exist_ok=True)
            for p in [tmp, *tmp.rglob("*")]:  # readable by the sandbox's user, never writable
                if not p.is_symlink():
                    p.chmod(0o755 if p.is_dir() or p.stat().st_mode & 0o111 else 0o644)
            size, shared = share(tmp)
        except BaseException:
            subprocess.run(["rm", "-rf", str(tmp)])
            raise
        seconds = time.monotonic() - start
        (tmp / MANIFEST).write_text(json.dumps({"files": list(names), "node": node_version(), "size_bytes": size,
                                                "shared_bytes": shared, "seconds": round(seconds, 1)}, indent=1))
        os.chmod(tmp / MANIFEST, 0o644)
        tmp.rename(where)
        return Built(where, names, size, seconds, cached=False, shared_bytes=shared)


def npm_environment(home: Path) -> dict[str, str]:
    """The host's environment (its registry, proxy and CA settings) with a private HOME and the
    cache's shared npm download cache."""
    return {**os.environ, "HOME": str(home), "npm_config_cache": str(cache_root() / "npm-cache"),
            "npm_config_update_notifier": "false"}


def failure(what: str, text: str, prefix: str = "") -> BuildError:
    """A failed npm command's error, naming the package it could not get (with ``prefix``) when
    npm says which."""
    m = re.search(r"404 Not Found - GET \S+/(@?[^/\s]+(?:%2f[^/\s]+)?)", text) or \
        re.search(r"notarget No matching version found for (\S+?)\.?$", text, re.M)
    lines = " ".join(line for line in text.splitlines() if "ERR!" in line or "npm error" in line)
    return BuildError(f"{what} failed: {lines[-500:] or text.strip()[-500:]}",
                      f"{prefix}{m.group(1).replace('%2f', '/')}" if m else None)


def binds(task) -> dict[str, str]:
    """{NPM_MOUNT: the task's built node environment}, or {} when it has none; raises
    ``SetupError`` when it is not built (an episode never downloads)."""
    if not task.node_project:
        return {}
    where = built(files_of(task.node_project))
    if where is None:
        raise SetupError(f"task {task.id}: its npm install ({', '.join(task.node_project)}) is not built: "
                         f"run `termrl tasks prepare SUITE` (cache: {cache_root()})")
    touch(where)
    return {NPM_MOUNT: str(where)}
