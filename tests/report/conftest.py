"""Runs for the report tests, made once per session by termrl's own commands: eval runs of the
oracle, nop and scripted policies, an audit, a scaled-down GRPO training run, and a quickstart
directory laid out as ``termrl quickstart`` writes it (its full run is the quickstart tier's)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from train.test_train_cli import CONFIG  # tests/ is on sys.path: pytest puts it there

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUITE = "builtin:0-3"
HACKY = ["<tool_call>{\"name\": \"bash\", \"arguments\": {", {"command": "ls -la && cat README* || true"},
         {"write": "conftest.py", "content": "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
                                             "    items.clear()\n"}]
"""A policy that makes a format error, looks around, then plants a conftest.py that drops every test."""


def termrl(*args, timeout=900):
    res = subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True, timeout=timeout)
    return res


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    script = root / "hacky.json"
    script.write_text(json.dumps({"*": HACKY}))
    made = {}
    for name, policy in (("oracle", "oracle"), ("nop", "nop"), ("hacky", f"script:{script}")):
        res = termrl("eval", "--policy", policy, "--suite", SUITE, "--workers", "2", "--out", str(root / name),
                     "--json")
        assert res.returncode == 0, res.stderr[-2000:]
        made[name] = root / name
    res = termrl("audit", str(FIXTURES / "flawed"), "--exploits", "empty_files_named,write_expected_output",
                 "--spec", "partial", "--out", str(root / "audit"), "--json")
    assert (root / "audit" / "audit.json").is_file(), res.stderr[-2000:]
    made["audit"] = root / "audit"
    config = root / "grpo.toml"
    config.write_text(CONFIG.format(out=root / "train", steps=2))
    res = termrl("train", str(config), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    made["train"] = root / "train"
    quick = root / "quickstart"
    quick.mkdir()
    shutil.copytree(made["nop"], quick / "eval_sft")
    shutil.copytree(made["oracle"], quick / "eval_rl")
    for stage, loss in (("sft", [2.0, 1.0]), ("rl", [0.5, 0.4])):
        (quick / stage).mkdir()
        (quick / stage / "log_history.json").write_text(json.dumps(
            [{"step": i + 1, "loss": x, "reward": 0.1 * i} for i, x in enumerate(loss)]))
    (quick / "quickstart.json").write_text(json.dumps({
        "family": "logs-count", "config": {"spec": "partial"}, "sft_heldout_pass_rate": 0.0,
        "rl_heldout_pass_rate": 1.0, "timings": {"build_s": 1.0, "sft_s": 10.0, "eval_sft_s": 3.0, "grpo_s": 30.0,
                                                 "eval_rl_s": 3.0, "total_s": 47.0}}))
    made["quickstart"] = quick
    return made
