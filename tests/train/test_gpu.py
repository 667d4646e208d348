"""The GPU path of ``termrl train``: GRPO on a CUDA device, with and without TRL's vLLM generation.

Marked ``gpu`` (deselected by default; ``-m gpu`` runs them) and skipped with the reason where
there is no CUDA device or no vLLM. Never run on the CPU-only development machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termrl.training.config import load_config

from .test_train_cli import CONFIG

pytestmark = [pytest.mark.gpu, pytest.mark.sandbox]


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


def _run(tmp_path: Path, overrides: list[str], monkeypatch) -> dict:
    """A 2-step GRPO run; its held-out episodes must be generated on the GPU too."""
    from termrl.policies.hf import HFPolicy
    from termrl.training.run import run_training

    devices = []
    init = HFPolicy.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        devices.append(self.device.type)

    monkeypatch.setattr(HFPolicy, "__init__", recording)
    out = tmp_path / "run"
    path = tmp_path / "grpo.toml"
    path.write_text(CONFIG.format(out=out, steps=2))
    results = run_training(load_config(path, overrides))
    assert devices and set(devices) == {"cuda"}
    assert results["training"]["steps"] == 2
    assert results["heldout"]["episodes"] == 2
    assert (out / "final" / "model.safetensors").exists()
    return json.loads((out / "results.json").read_text())


def test_grpo_trains_on_cuda(tmp_path, monkeypatch):
    _cuda()
    results = _run(tmp_path, [], monkeypatch)
    assert results["compute"]["phases"]["training"]["wall_s"] > 0


def test_grpo_with_vllm_colocate(tmp_path, monkeypatch):
    _cuda()
    pytest.importorskip("vllm")
    results = _run(tmp_path, ["grpo.use_vllm=true", "grpo.vllm_mode=colocate"], monkeypatch)
    assert results["compute"]["phases"]["training"]["wall_s"] > 0
