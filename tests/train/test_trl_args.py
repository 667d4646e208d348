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


class Built(Exception):
    """Raised with the TRL config ``termrl train`` has just built: the run stops there."""


def stop_when_built(monkeypatch, name: str) -> None:
    """Make ``trl.<name>`` (which ``termrl.training.run`` imports where it builds its args) raise
    ``Built(args)`` once TRL has accepted the arguments, before anything is trained."""
    import trl

    class Stop(getattr(trl, name)):
        def __post_init__(self):
            super().__post_init__()
            raise Built(self)

    monkeypatch.setattr(trl, name, Stop)


def deprecations(caught) -> list[str]:
    return [f"{w.category.__name__}: {w.message}" for w in caught
            if issubclass(w.category, (DeprecationWarning, FutureWarning))]


@pytest.mark.parametrize(("overrides", "iterations"), [([], 0), (["grpo.max_turns=0"], None),
                                                       (["grpo.max_turns=3", "model.tiny=false",
                                                         "model.path=Qwen/Qwen2.5-0.5B"], 2)])
def test_the_grpo_config_termrl_train_builds_is_accepted_without_a_deprecation(tmp_path, monkeypatch,
                                                                            overrides, iterations):
    from termrl.training import QUICKSTART
    from termrl.training.config import load_config
    from termrl.training.run import run_grpo

    cfg = load_config(QUICKSTART, overrides)
    stop_when_built(monkeypatch, "GRPOConfig")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Built) as built:
            run_grpo(cfg, tmp_path, tmp_path / "model", None, resume=False)
    assert not deprecations(caught)
    args = built.value.args[0]
    assert args.max_tool_calling_iterations == iterations  # grpo.max_turns: replies per rollout
    g = cfg.grpo
    assert (args.max_steps, args.num_generations, args.per_device_train_batch_size, args.num_iterations) == (
        g.steps, g.num_generations, g.batch_size, g.num_iterations)
    assert (args.learning_rate, args.adam_beta2, args.max_completion_length) == (
        g.learning_rate, g.adam_beta2, g.max_completion_length)
    assert args.lr_scheduler_type.value == g.lr_scheduler
    assert args.bf16 is False or not cfg.model.tiny  # a tiny model trains in float32
    assert args.output_dir == str(tmp_path / "checkpoints")


def test_the_sft_warm_start_config_is_accepted_without_a_deprecation(tmp_path, monkeypatch):
    from termrl.rollout.accounting import Accountant
    from termrl.training import QUICKSTART
    from termrl.training.config import load_config
    from termrl.training.run import warm_start

    cfg = load_config(QUICKSTART, ["sft.tasks=one-command:0-3"])  # a few tasks: the rows are built first
    stop_when_built(monkeypatch, "SFTConfig")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Built) as built:
            warm_start(cfg, tmp_path, tmp_path / "model-init", Accountant())
    assert not deprecations(caught)
    args, s = built.value.args[0], cfg.sft
    assert (args.max_steps, args.per_device_train_batch_size, args.learning_rate, args.adam_beta2) == (
        s.steps, s.batch_size, s.learning_rate, s.adam_beta2)
    assert args.max_length == s.max_length and args.completion_only_loss is True
    assert args.lr_scheduler_type.value == s.lr_scheduler
    assert args.output_dir.startswith(str(tmp_path))  # within the run's directory
    assert not (tmp_path / "sft" / "sft.json").exists()  # stopped before training: no stage recorded
