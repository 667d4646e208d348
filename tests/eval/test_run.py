"""``termrl.evaluate``: what ``termrl eval`` runs, as a function: the same summary, the run's
metadata and store, resume, and clear errors for settings that cannot run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from termrl import evaluate
from termrl.eval.run import EvalConfig, EvalError

SUITE = "logs-count:0-1"


def comparable(summary: dict) -> dict:
    """A summary without what differs between two runs of the same episodes: where it is stored,
    the compute it took, and each episode's times."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("out", "compute") and not k.endswith("_s")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(summary)


@pytest.mark.sandbox
def test_evaluate_returns_what_termrl_eval_json_prints(tmp_path):
    summary = evaluate(policy="oracle", suite=SUITE, out=tmp_path / "lib")
    res = subprocess.run([sys.executable, "-m", "termrl", "eval", "--policy", "oracle", "--suite", SUITE, "--out",
                          str(tmp_path / "cli"), "--json"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    printed = json.loads(res.stdout)
    assert list(summary) == list(printed)
    assert comparable(summary) == comparable(printed)
    assert summary["pass@1"] == 1.0 and summary["episodes"] == 2 and summary["out"] == str(tmp_path / "lib")
    assert json.loads((tmp_path / "lib" / "_summary.json").read_text())["pass@1"] == 1.0
    meta = json.loads((tmp_path / "lib" / "_run.json").read_text())
    assert meta["policy"] == "oracle" and meta["suite"] == SUITE and len(meta["stretches"]) == 1


@pytest.mark.sandbox
def test_resume_continues_a_stored_run_and_refuses_a_changed_setting(tmp_path):
    out = tmp_path / "run"
    config = EvalConfig(policy="oracle", suite=SUITE, max_steps=4)
    first = evaluate(config, out=out)
    with pytest.raises(EvalError, match="already holds a run; pass --resume"):
        evaluate(config, out=out)
    started, played = [], []
    again = evaluate(config, out=out, resume=True, on_start=lambda total, done: started.append((total, done)),
                     on_episode=played.append)
    assert started == [(2, 2)] and played == []  # every episode was stored: none is played again
    assert again["episodes"] == first["episodes"] == 2 and again["tasks"] == first["tasks"]
    assert len(json.loads((out / "_run.json").read_text())["stretches"]) == 2
    with pytest.raises(EvalError, match="different settings.*max_steps: 4 now 5"):
        evaluate(EvalConfig(policy="oracle", suite=SUITE, max_steps=5), out=out, resume=True)
    with pytest.raises(EvalError, match="policy: 'oracle' now 'nop'"):
        evaluate(policy="nop", suite=SUITE, max_steps=4, out=out, resume=True)


def test_settings_that_cannot_run_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(EvalError, match="pass --samples 3 or more"):
        EvalConfig(policy="oracle", suite=SUITE, k=3, samples=2)
    with pytest.raises(EvalError, match="vllm serve"):
        EvalConfig(policy="hf:/models/x", suite=SUITE, ray="local")
    with pytest.raises(EvalError, match="--action-format: unknown action_format 'yaml'"):
        EvalConfig(policy="oracle", suite=SUITE, action_format="yaml")
    with pytest.raises(EvalError, match="--resume needs --out"):
        evaluate(policy="oracle", suite=SUITE, resume=True)
    with pytest.raises(EvalError, match="unknown policy 'gpt5'"):
        evaluate(policy="gpt5", suite=SUITE, out=tmp_path / "r")
    with pytest.raises(TypeError, match="not both"):
        evaluate(EvalConfig(policy="oracle", suite=SUITE), k=2)
    assert not (tmp_path / "r").exists()
