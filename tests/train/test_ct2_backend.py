"""``[eval] backend = "ctranslate2"``: RFT's sampling and the evaluations run CT2Policy on the weights."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termrl.policies.ct2 import CT2Config, CT2Policy
from termrl.training.config import ConfigError, load_config

CONFIG = """
algorithm = "rft"
output_dir = "{out}"
threads = 1
[model]
tiny = true
[tasks]
train = "logs-count:0-1"
[eval]
temperature = 0.5
max_new_tokens = 12
stop_at_action = true
"""


@pytest.fixture()
def config(tmp_path):
    path = tmp_path / "rft.toml"
    path.write_text(CONFIG.format(out=tmp_path / "run"))
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from termrl.policies.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=32, layers=1, heads=2)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Conversions go to this test's own folder (TERMRL_CACHE stays as it is: task environments use it)."""
    import termrl.policies.ct2

    monkeypatch.setattr(termrl.policies.ct2, "cache_dir", lambda: tmp_path / "ct2-cache")
    return tmp_path / "ct2-cache"


def test_the_backend_is_transformers_unless_set_and_checked(config):
    assert load_config(config).eval.backend == "transformers"
    assert load_config(config, ["eval.backend=ctranslate2"]).eval.backend == "ctranslate2"
    with pytest.raises(ConfigError, match="'eval.backend': 'vllm' is not one of transformers, ctranslate2"):
        load_config(config, ["eval.backend=vllm"])


def test_the_run_s_policy_follows_the_backend_with_the_run_s_decoding(config, tiny):
    from termrl.policies.hf import HFPolicy
    from termrl.training.run import _policy, _sampling

    cfg = load_config(config, ["eval.backend=ctranslate2"])
    _, options = _sampling(cfg, 1, cfg.eval.temperature)
    policy = _policy(cfg, tiny, options)
    assert isinstance(policy, CT2Policy)
    c = policy.config
    assert (c.temperature, c.max_new_tokens, c.stop_at_action, c.threads, c.compute_type) == (0.5, 12, True, 1, "int8")
    assert c.seed == cfg.seed
    assert isinstance(_policy(load_config(config), tiny, options), HFPolicy)


def test_rft_samples_and_evaluates_each_round_s_weights_with_ctranslate2(tiny, tmp_path, cache):
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig
    from termrl.tasks.suites import find_task
    from termrl.training.rft import RFTConfig, ct2_policy_factory, run_rft

    from .test_rft import sft_args

    made = []

    def factory(model_dir, purpose):
        made.append((str(model_dir), purpose))
        return ct2_policy_factory(CT2Config(max_new_tokens=12, seed=0, compute_type="float32"),
                                  CT2Config(max_new_tokens=12, temperature=0, compute_type="float32"))(model_dir, purpose)

    task = find_task("shell-count-errors")
    [record] = run_rft(tiny, [task], [task], sft_args(tmp_path, max_steps=2), out_dir=tmp_path / "rft",
                       rollout=RolloutConfig(workers=2, env=EnvConfig(static=False, max_steps=2)),
                       config=RFTConfig(rounds=1, samples_per_task=2, threshold=-100.0), policy_factory=factory)
    assert record["sampled"] == record["kept"] == 2 and record["trained"]
    assert record["heldout_episodes"] == 1 and record["heldout_errors"] == 0
    model_out = record["model_out"]
    assert made == [(str(tiny), "sample"), (model_out, "eval")]
    sources = {json.loads((d / "termrl-source.json").read_text())["source"] for d in cache.iterdir()}
    assert sources == {str(tiny.resolve()), str(Path(model_out).resolve())}


def test_llama_cpp_backend_serves_the_run_s_weights_with_the_run_s_decoding(config, tiny, tmp_path, monkeypatch):
    from tests.policies.fake_llama_server import fake_build
    from termrl.policies.llamacpp import LlamaCppPolicy
    from termrl.training.run import _policy, _sampling

    fake_build(tmp_path, tiny, monkeypatch)
    cfg = load_config(config, ["eval.backend=llama.cpp", "threads=2"])
    _, options = _sampling(cfg, 1, cfg.eval.temperature)
    policy = _policy(cfg, tiny, options)
    assert isinstance(policy, LlamaCppPolicy)
    c = policy.config
    assert (c.temperature, c.max_new_tokens, c.stop_at_action, c.threads, c.quantization) == (0.5, 12, True, 2, "q8_0")
    assert c.seed == cfg.seed and policy.gguf.is_file()
    policy.close()
    cfg = load_config(config, ["eval.backend=llama.cpp", "threads=2", "eval.threads=1"])  # the engine's own
    policy = _policy(cfg, tiny, options)
    args = json.loads((tmp_path / "args.json").read_text())
    assert policy.config.threads == 1 and args[args.index("--threads") + 1] == "1"
    policy.close()
    with pytest.raises(ConfigError, match="'eval.threads'"):
        load_config(config, ["eval.threads=-1"])
