"""Every file of a built-in task must be committed: a .gitignore rule that hides one
(build/, *.log, .env) would ship a different task than the one validated here."""

from __future__ import annotations

import subprocess
from pathlib import Path

from termrl.tasks.suites import BUILTIN_DIR

REPO = Path(__file__).resolve().parents[2]


def test_no_builtin_task_file_is_git_ignored():
    res = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "--stdin"],
                         input="\n".join(str(p.relative_to(REPO)) for p in BUILTIN_DIR.rglob("*")
                                         if p.is_file() and "__pycache__" not in p.parts),
                         capture_output=True, text=True)
    assert res.returncode in (0, 1), res.stderr  # 1: nothing ignored
    assert res.stdout.split() == []
