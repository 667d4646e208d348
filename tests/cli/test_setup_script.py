"""``scripts/setup.sh`` says each step as it goes, and an installer's error still shows. Run on a
copy with apt-get, python and pip replaced by scripts that log their arguments."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SETUP = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"

FAKE_PYTHON = """#!/usr/bin/env bash
echo "python $*" >> "$LOG"
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && cp "$(dirname "$0")/pip" "$3/bin/pip"
fi
"""
FAKE_PIP = """#!/usr/bin/env bash
echo "pip $*" >> "$LOG"
if [ -n "${FAIL_ON:-}" ] && [[ "$*" == *"$FAIL_ON"* ]]; then
  echo "ERROR: No matching distribution found for $FAIL_ON" >&2; exit 1
fi
"""


def _setup(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    repo, fake = tmp_path / "repo", tmp_path / "bin"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SETUP, repo / "scripts" / "setup.sh")
    fake.mkdir()
    scripts = {"python3": FAKE_PYTHON, "pip": FAKE_PIP, "nvidia-smi": "#!/bin/sh\nexit 1\n",
               "apt-get": '#!/bin/sh\necho "apt-get $*" >> "$LOG"\n', "sudo": '#!/bin/sh\nexec "$@"\n'}
    for name, text in scripts.items():
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin", "LOG": str(tmp_path / "log"), "PYTHON": str(fake / "python3"), **env}
    return subprocess.run(["bash", str(repo / "scripts" / "setup.sh")], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60, check=False)


def test_setup_says_each_step_in_order(tmp_path):
    res = _setup(tmp_path)
    assert res.returncode == 0, res.stderr
    steps = [line.split(":")[1].split("(")[0].strip() for line in res.stdout.splitlines()]
    assert steps == ["updating the package lists", "installing Debian packages", "creating a virtual environment in .venv",
                     "upgrading pip, setuptools and wheel", "installing CPU PyTorch",
                     "installing termrl and its dependencies", "done. termrl is at .venv/bin/termrl"]
    assert "bubblewrap" in res.stdout.splitlines()[1]
    log = (tmp_path / "log").read_text()
    assert "pip install -q --disable-pip-version-check torch==2.13.0" in log and "-e .[dev,train,ray,fast,serve,llamacpp]" in log


def test_an_installer_error_shows_and_stops_the_setup(tmp_path):
    res = _setup(tmp_path, FAIL_ON="torch==2.13.0")
    assert res.returncode != 0
    assert "ERROR: No matching distribution found for torch==2.13.0" in res.stderr
    assert res.stdout.splitlines()[-1] == "setup: installing CPU PyTorch (torch 2.13.0)"
