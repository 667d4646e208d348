"""Runs for the report tests, made once per session by termrl's own commands: eval runs of the
oracle, nop and scripted policies, an audit, a scaled-down GRPO training run, and a quickstart
directory laid out as ``termrl quickstart`` writes it (its full run is the quickstart tier's)."""

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
    small = [f"{k}={v}" for k, v in (("hidden_size", 32), ("layers", 1), ("heads", 2), ("tokenizer_seeds", 40),
                                      ("sft_examples", 4), ("sft_steps", 2), ("sft_batch_size", 2), ("grpo_steps", 2),
                                      ("prompts_per_step", 1), ("num_generations", 2), ("max_completion_tokens", 16),
                                      ("heldout_episodes", 3), ("eval_workers", 2), ("verifier_workers", 1))]
    res = termrl("quickstart", "--out", str(root / "quickstart"), "--json", *[a for s in small for a in ("--set", s)])
    assert res.returncode == 0, res.stderr[-3000:]
    made["quickstart"] = root / "quickstart"
    return made
