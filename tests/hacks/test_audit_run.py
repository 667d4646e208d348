"""``termrl.audit``: what ``termrl audit`` runs, as a function: the same report, written to a
directory it can resume from, and clear errors for settings that cannot run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from termrl import audit
from termrl.checks.audit_run import AuditError

SUITE = "logs-count:0"
EXPLOITS = ["delete_tests"]


def comparable(report: dict) -> dict:
    """A report without its wall times."""
    rows = [{k: v for k, v in row.items() if k != "seconds"} for row in report["rows"]]
    return {**{k: v for k, v in report.items() if k != "wall_s"}, "rows": rows}


@pytest.mark.sandbox
def test_audit_returns_what_termrl_audit_json_prints_and_resumes_from_its_directory(tmp_path):
    out = tmp_path / "lib"
    report = audit(SUITE, exploits=EXPLOITS, workers=1, out=out)
    res = subprocess.run([sys.executable, "-m", "termrl", "audit", SUITE, "--exploits", ",".join(EXPLOITS),
                          "--workers", "1", "--json"], capture_output=True, text=True, timeout=600)
    assert res.returncode in (0, 1), res.stderr
    assert comparable(report) == comparable(json.loads(res.stdout))
    assert {r["exploit"] for r in report["rows"]} == {"nop", "delete_tests"} and report["suite"] == SUITE
    assert json.loads((out / "audit.json").read_text())["rows"] == report["rows"]
    assert len((out / "audit-rows.jsonl").read_text().splitlines()) == 1

    with pytest.raises(AuditError, match="holds an audit already: pass --resume"):
        audit(SUITE, exploits=EXPLOITS, workers=1, out=out)
    started, finished = [], []
    again = audit(SUITE, exploits=EXPLOITS, workers=1, out=out, resume=True,
                  on_start=lambda total, done: started.append((total, done)), on_task=finished.append)
    assert started == [(1, 1)] and finished == []  # the task was journaled: it is not audited again
    assert comparable(again) == comparable(report)
    with pytest.raises(AuditError, match="differs in: exploits"):
        audit(SUITE, exploits=["spam_commands"], workers=1, out=out, resume=True)


def test_settings_that_cannot_run_are_refused_naming_the_fix(tmp_path):
    with pytest.raises(AuditError, match="--exploits: unknown nope; known: .*delete_tests"):
        audit(SUITE, exploits=["nope"])
    with pytest.raises(AuditError, match=r"--progress 0,2: give numbers in \[0, 1\]"):
        audit(SUITE, progress=[0, 2])
    with pytest.raises(AuditError, match="--resume needs --out"):
        audit(SUITE, resume=True)
    with pytest.raises(AuditError, match="unknown suite"):
        audit("no-such-suite")
    with pytest.raises(AuditError, match="--mutants .*no such file"):
        audit(SUITE, mutants=tmp_path / "strength.json")
