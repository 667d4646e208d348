"""Debian packages made on the spot, for tests that build system layers without a mirror."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_deb(folder: Path, name: str, version: str, files: dict[str, tuple[str, int]]) -> Path:
    """A binary package ``name`` holding ``files`` ({"/usr/bin/tool": (text, mode)}), in ``folder``."""
    root = folder / f"build-{name}"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(f"Package: {name}\nVersion: {version}\nArchitecture: all\n"
                                             f"Maintainer: termrl tests <tests@example.org>\nDescription: test\n")
    for path, (text, mode) in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
    deb = folder / f"{name}_{version}_all.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb
