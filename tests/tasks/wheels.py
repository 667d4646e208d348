"""Wheels made on the spot, for tests that build task environments without a package index."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def make_wheel(folder: Path, name: str, version: str, modules: dict[str, str]) -> Path:
    """A pure-Python wheel of ``name`` holding ``modules`` ({"pkg/__init__.py": source}), in ``folder``."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {**{path: text.encode() for path, text in modules.items()},
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: termrl-tests\nRoot-Is-Purelib: true\n"
                                        b"Tag: py3-none-any\n"}

    def digest(data: bytes) -> str:
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

    record = "".join(f"{p},{digest(d)},{len(d)}\n" for p, d in files.items()) + f"{dist}.dist-info/RECORD,,\n"
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{dist}.dist-info/RECORD", record)
    return wheel
