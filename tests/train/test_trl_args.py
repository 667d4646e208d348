"""termrl's TRL configs say activation checkpointing by the name transformers reads today: TRL's
own default, without transformers' FutureWarning for the old name."""

from __future__ import annotations

import warnings

import pytest

from termrl.training.config import trl_checkpointing

pytest.importorskip("trl")


@pytest.mark.parametrize("name", ["GRPOConfig", "SFTConfig", "DPOConfig"])
def test_checkpointing_is_trls_default_without_a_deprecation_warning(tmp_path, name):
    import trl

    config = getattr(trl, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        default = config(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        args = config(output_dir=str(tmp_path), use_cpu=True, report_to="none", **trl_checkpointing(config))
    assert args.activation_checkpointing == default.activation_checkpointing == args.gradient_checkpointing
    if trl_checkpointing(config):  # transformers has the new name: the old one warned, ours does not
        assert any("gradient_checkpointing" in str(w.message) for w in caught)
    assert not [w for w in ours if "checkpointing" in str(w.message)]


def test_the_quickstarts_grpo_config_does_not_warn(tmp_path):
    from termrl.training.quickstart import QuickstartConfig, grpo_args

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grpo_args(QuickstartConfig(), tmp_path)
    assert not [w for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))]
