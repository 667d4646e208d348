from __future__ import annotations

import subprocess
import sys

import pytest

from termrl.policies import make_policy
from termrl.policies.hf import HFPolicy
from termrl.policies.openai_api import OpenAIPolicy
from termrl.protocols import Policy


def test_hf_spec_loads_the_directory_with_options(tiny_model):
    policy = make_policy(f"hf:{tiny_model}", temperature=0, max_new_tokens=3)
    assert isinstance(policy, HFPolicy) and isinstance(policy, Policy)
    assert policy.name == f"hf:{tiny_model}" and policy.config.max_new_tokens == 3


def test_openai_spec_needs_a_model():
    policy = make_policy("openai:http://127.0.0.1:9/v1", model="qwen", max_retries=0)
    assert isinstance(policy, OpenAIPolicy) and isinstance(policy, Policy)
    assert (policy.base_url, policy.model, policy.config.max_retries) == ("http://127.0.0.1:9/v1", "qwen", 0)
    with pytest.raises(ValueError, match="needs model=NAME"):
        make_policy("openai:http://127.0.0.1:9/v1")


@pytest.mark.parametrize("spec, message", [
    ("gpt", "unknown policy 'gpt'; use oracle, nop, reference\\[:FORMAT\\], script:FILE, hf:PATH, ct2:PATH, llamacpp:PATH or openai:BASE_URL"),
    ("script:", "unknown policy 'script:'"),
    ("hf:", "needs a model directory"),
    ("openai:", "needs a base URL"),
])
def test_bad_specs_say_what_to_use(spec, message):
    with pytest.raises(ValueError, match=message):
        make_policy(spec, model="m" if spec == "openai:" else None)


def test_a_local_path_without_a_model_says_how_to_build_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    for path in (tmp_path / "missing", tmp_path, "runs/x/final", "empty"):
        with pytest.raises(ValueError, match=f"{path} holds no model \\(no config.json\\): build one there"):
            make_policy(f"hf:{path}")


def test_model_is_only_for_openai(tiny_model):
    with pytest.raises(ValueError, match="only for openai"):
        make_policy(f"hf:{tiny_model}", model="qwen")


def test_unknown_option_lists_the_known_ones():
    with pytest.raises(ValueError, match="known: temperature"):
        make_policy("openai:http://127.0.0.1:9/v1", model="m", temprature=0)


def test_scripted_specs_go_to_make_scripted(monkeypatch):
    import termrl.policies

    calls = []
    monkeypatch.setattr(termrl.policies, "make_scripted", lambda spec: calls.append(spec) or spec)
    assert [make_policy(s) for s in ("oracle", "nop", "script:steps.yaml")] == calls
    assert calls == ["oracle", "nop", "script:steps.yaml"]
    with pytest.raises(ValueError, match="takes no options"):
        make_policy("nop", temperature=0)


def test_importing_the_package_stays_light():
    code = "import sys, termrl.policies; print(sorted(m for m in ('torch', 'transformers', 'openai') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_reference_demonstrator_is_a_policy_spec():
    from termrl.policies.scripted import ReferencePolicy

    assert isinstance(make_policy("reference"), ReferencePolicy)
    assert make_policy("reference:bash").format == "bash"
    with pytest.raises(ValueError, match="unknown action format 'yaml'"):
        make_policy("reference:yaml")
