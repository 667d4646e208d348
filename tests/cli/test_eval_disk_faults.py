"""The output directory fails under ``termrl eval``: a disk that fills up mid-run stops it with a
clear error and the stored episodes intact (``--resume`` finishes after space is freed); a
read-only one is refused before anything runs."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.sandbox


def mount_tmpfs(target: Path, options: str) -> None:
    if os.geteuid() != 0:
        pytest.fail("the CI runs as root; this test mounts a small tmpfs to fill")
    target.mkdir(parents=True, exist_ok=True)
    libc = ctypes.CDLL(None, use_errno=True)
    flags = 1 if "ro" in options.split(",") else 0  # MS_RDONLY
    if libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", flags, options.encode()) != 0:
        pytest.fail(f"mount tmpfs at {target}: {os.strerror(ctypes.get_errno())}")


def remount(target: Path, options: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", 32, options.encode()) == 0  # MS_REMOUNT


def umount(target: Path) -> None:
    ctypes.CDLL(None, use_errno=True).umount2(str(target).encode(), 2)


def eval_run(out: Path, *extra: str):
    return subprocess.run([sys.executable, "-m", "termrl", "eval", "--policy", "oracle", "--suite", "logs-count:0-29",
                           "--out", str(out), "--json", *extra], capture_output=True, text=True, timeout=600)


def stored_ids(run: Path) -> list[str]:
    return [i for part in sorted(run.glob("part-*.parquet"))
            for i in pq.read_table(part, columns=["episode_id"]).column("episode_id").to_pylist()]


@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_a_full_disk_stops_the_run_clearly_and_resume_finishes_it(tmp_path):
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "size=160k")
    try:
        res = eval_run(disk / "run")
        assert res.returncode == 3 and "Traceback" not in res.stderr, res.stderr[-2000:]
        said = " ".join(res.stderr.split())  # the console wraps long lines
        assert "No space left on device" in said and "--resume" in said
        before = stored_ids(disk / "run")
        assert 0 < len(before) < 30 and len(before) == len(set(before))  # what was stored reads back
        assert not [p for p in (disk / "run").iterdir() if p.name.endswith(".tmp")]  # no half-written part
        remount(disk, "size=20m")  # space freed
        res = eval_run(disk / "run", "--resume")
        assert res.returncode == 0, res.stderr[-2000:]
        ids = stored_ids(disk / "run")
        assert len(ids) == len(set(ids)) == 30 and set(before) <= set(ids)
    finally:
        umount(disk)


def test_a_read_only_output_directory_is_refused_before_anything_runs(tmp_path):
    ro = tmp_path / "ro"
    mount_tmpfs(ro, "size=1m,ro")
    try:
        res = eval_run(ro / "run")
        assert res.returncode == 2 and "Traceback" not in res.stderr
        said = "".join(res.stderr.split())  # the console wraps long lines, paths included
        assert str(ro / "run") in said and "Read-only" in said
    finally:
        umount(ro)
