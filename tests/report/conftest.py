"""Runs for the report tests, made once per session by termrl's own commands: eval runs of the
oracle, nop and scripted policies, an audit, a scaled-down GRPO training run, and a scaled-down
``termrl quickstart`` (a training run with an SFT warm start; the full one is the quickstart tier's)."""

from __future__ import annotations

import json
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
QUICKSTART = [f"{k}={v}" for k, v in (
    ("model.tiny_hidden_size", 32), ("model.tiny_heads", 2), ("model.tiny_tokenizer_seeds", 60),
    ("sft.steps", 10), ("sft.tasks", "one-command:0-7"), ("grpo.steps", 2),
    ("tasks.train", "one-command:256-259"), ("grpo.num_generations", 2), ("grpo.batch_size", 4),
    ("grpo.workers", 2), ("grpo.verifier_workers", 1), ("env.warm_sandboxes", 1),
    ("tasks.heldout", "one-command:heldout:0-2"), ("eval.workers", 2))]
"""``termrl quickstart`` (configs/quickstart.toml) scaled down: 10 SFT steps, 2 GRPO steps of 2 tasks
x 2 rollouts, 3 held-out tasks."""


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
    sets = [arg for setting in QUICKSTART for arg in ("--set", setting)]
    res = termrl("quickstart", "--out", str(root / "quickstart"), "--json", *sets)
    assert res.returncode == 0, res.stderr[-3000:]
    made["quickstart"] = root / "quickstart"
    return made
