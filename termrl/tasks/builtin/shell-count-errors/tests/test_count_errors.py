import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "count_errors.sh"


def run(tmp_path):
    return subprocess.run([str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=20)


def write(tmp_path, name, lines):
    (tmp_path / name).write_text("".join(l + "\n" for l in lines))


@pytest.mark.core
def test_executable_script_counts_unseen_logs(tmp_path):
    assert SCRIPT.exists() and os.access(SCRIPT, os.X_OK), "count_errors.sh is missing or not executable"
    write(tmp_path, "web.log", ["[ERROR] a", "[INFO] b", "[ERROR] c", "[ERROR] d"])
    write(tmp_path, "auth.log", ["[WARN] x", "[ERROR] y"])
    r = run(tmp_path)
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["auth.log 1", "web.log 3"]


@pytest.mark.boundary
def test_zero_and_lookalike_levels(tmp_path):
    write(tmp_path, "a.log", ["[ERRORS] no", "ERROR no brackets", " [ERROR] leading space"])
    write(tmp_path, "b.log", ["[ERROR]"])
    (tmp_path / "notes.txt").write_text("[ERROR] not a log\n")
    r = run(tmp_path)
    assert r.stdout.splitlines() == ["a.log 0", "b.log 1"]


@pytest.mark.boundary
def test_a_directory_without_logs_prints_nothing(tmp_path):
    (tmp_path / "readme.txt").write_text("[ERROR] not a log\n")
    r = run(tmp_path)
    assert r.returncode == 0 and r.stdout == ""
