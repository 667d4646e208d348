"""The GPU path of ``termrl train``: GRPO on a CUDA device, with and without TRL's vLLM generation.

Marked ``gpu`` (deselected by default; ``-m gpu`` runs them) and skipped with the reason where
there is no CUDA device or no vLLM. Never run on the CPU-only development machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termrl.train.config import load_config

from .test_train_cli import CONFIG

pytestmark = [pytest.mark.gpu, pytest.mark.sandbox]


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")


def _run(tmp_path: Path, overrides: list[str]) -> dict:
    from termrl.train.run import run_training

    out = tmp_path / "run"
    path = tmp_path / "grpo.toml"
    path.write_text(CONFIG.format(out=out, steps=2))
    results = run_training(load_config(path, overrides))
    assert results["training"]["steps"] == 2
    assert results["heldout"]["episodes"] == 2
    assert (out / "final" / "model.safetensors").exists()
    return json.loads((out / "results.json").read_text())


def test_grpo_trains_on_cuda(tmp_path):
    _cuda()
    results = _run(tmp_path, [])
    assert results["compute"]["phases"]["training"]["wall_s"] > 0


def test_grpo_with_vllm_colocate(tmp_path):
    _cuda()
    pytest.importorskip("vllm")
    results = _run(tmp_path, ["grpo.use_vllm=true", "grpo.vllm_mode=colocate"])
    assert results["compute"]["phases"]["training"]["wall_s"] > 0
