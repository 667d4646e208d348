"""``termrl audit --out DIR --resume``: each task's rows are journaled as it finishes, so an audit
killed with kill -9 finishes where it stopped, with every row once and the same report as an
audit that was never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.sandbox

ARGS = ["audit", "logs-count:0-7", "--exploits", "delete_tests,hard_code_examples,spam_commands",
        "--workers", "1", "--json"]


def termrl(*args):
    return subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True, timeout=600)


def key(row: dict) -> tuple:
    return (row["task"], row["exploit"], row["tests_passed"], row["reward"], row["nop_reward"], row["advantage"])


@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_a_killed_audit_resumes_to_the_report_of_an_uninterrupted_one(tmp_path):
    whole = termrl(*ARGS, "--out", str(tmp_path / "whole"))
    assert whole.returncode in (0, 1), whole.stderr
    expected = json.loads(whole.stdout)

    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "termrl", *ARGS, "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    journal = out / "audit-rows.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and \
            (not journal.exists() or journal.read_text().count("\n") < 2):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)  # the audit process alone, as an OOM killer would
    proc.wait()
    done = journal.read_text().count("\n")
    assert 2 <= done < 8, "the audit was not interrupted midway"

    refused = termrl(*ARGS, "--out", str(out))
    assert refused.returncode == 2 and "--resume" in refused.stderr
    res = termrl(*ARGS, "--out", str(out), "--resume")
    assert res.returncode in (0, 1), res.stderr
    got = json.loads(res.stdout)
    assert len(got["rows"]) == 8 * 4  # every task's nop and three exploits, none twice
    assert sorted(map(key, got["rows"])) == sorted(map(key, expected["rows"]))
    assert got["exploitable_tasks"] == expected["exploitable_tasks"]
    assert len(journal.read_text().splitlines()) == 8
    other = termrl("audit", "logs-count:0-7", "--exploits", "delete_tests", "--out", str(out), "--resume")
    assert other.returncode == 2 and "differs in: exploits" in other.stderr
