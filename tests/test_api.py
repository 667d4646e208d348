"""The library before the CLI: ``from termrl import ...`` gives the main nouns and verbs, importing
termrl stays light, ``train`` takes a config or its file, and every command module only parses
options and prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLI_LINES = 150


def test_the_main_nouns_and_verbs_come_from_the_top():
    from termrl import EnvConfig, RewardSpec, TerminalEnv, audit, evaluate, load_spec, run_rollouts, train
    from termrl.checks.audit_run import audit_suite
    from termrl.eval.run import evaluate as evaluate_run
    from termrl.rollout.runner import run_rollouts as runner_rollouts

    assert isinstance(load_spec("staged"), RewardSpec)
    assert TerminalEnv(EnvConfig(max_steps=3)).config.max_steps == 3
    assert (evaluate, audit, run_rollouts) == (evaluate_run, audit_suite, runner_rollouts)
    assert callable(train)


def test_termrl_train_stays_the_function_once_its_modules_are_imported():
    import termrl
    from termrl.training import config, run  # the training modules, imported as the house does

    assert callable(termrl.train) and run.run_training and config.TrainConfig
    assert termrl.train.__module__ == "termrl.training"
    import termrl.training.run as by_dotted_name  # the package is not hidden by the function

    assert by_dotted_name is run


def test_importing_termrl_loads_no_model_library():
    code = "import sys, termrl; print(sorted(m for m in ('torch', 'transformers', 'trl', 'ray', 'pyarrow', 'plotly', 'openai') if m in sys.modules))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_no_command_module_is_longer_than_it_takes_to_parse_and_print():
    long = {path.name: n for path in sorted((ROOT / "termrl" / "cli").glob("*.py"))
            if (n := len(path.read_text().splitlines())) > CLI_LINES}
    assert not long, f"termrl/cli modules over {CLI_LINES} lines (move their logic into the library): {long}"


# --------------------------------------------------------------------------- train


CONFIG = """
algorithm = "grpo"
output_dir = "{out}"
[model]
tiny = true
[tasks]
train = "logs-count:0-1"
"""


def test_train_takes_a_config_file_with_overrides_or_a_train_config(tmp_path, monkeypatch):
    from termrl import train
    from termrl.training import run
    from termrl.training.config import TrainConfig

    calls = []
    monkeypatch.setattr(run, "run_training", lambda cfg, resume=False: calls.append((cfg, resume)) or {"ok": 1})
    path = tmp_path / "grpo.toml"
    path.write_text(CONFIG.format(out=tmp_path / "run"))
    assert train(path, overrides=["grpo.steps=3"]) == {"ok": 1}
    cfg, resume = calls[-1]
    assert isinstance(cfg, TrainConfig) and cfg.grpo.steps == 3 and cfg.output_dir == str(tmp_path / "run")
    assert not resume
    assert train(str(path), resume=True) == {"ok": 1} and calls[-1][0].grpo.steps == 100 and calls[-1][1]
    assert train(cfg) == {"ok": 1} and calls[-1][0] is cfg
    with pytest.raises(TypeError, match="overrides apply to a config file"):
        train(cfg, overrides=["seed=1"])


def test_train_names_a_config_file_that_is_missing_or_wrong(tmp_path):
    from termrl import train
    from termrl.training.config import ConfigError

    with pytest.raises(ConfigError, match="no such file") as missing:
        train(tmp_path / "missing.toml")
    assert str(tmp_path / "missing.toml") in str(missing.value)
    path = tmp_path / "bad.toml"
    path.write_text(CONFIG.format(out=tmp_path / "run") + "[grpo]\nsteps = 0\n")
    with pytest.raises(ConfigError, match="'grpo.steps': must be at least 1"):
        train(path)
