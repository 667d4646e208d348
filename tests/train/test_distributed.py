"""``termrl train`` under ``accelerate launch``: two CPU processes (gloo), GRPO and RFT on the tiny model.

What is checked: both ranks hold the same parameters after training (each rank's SHA-256 of
its trainable parameters, in results.json), only rank 0 writes (every rollout stored once, one
results.json, one JSON report on stdout), and the episodes are split between the ranks with
none played twice.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from termrl.distributed import SINGLE, World, current, join
from train.test_train_cli import CONFIG as GRPO  # tests/ is on sys.path: pytest puts it there
from train.test_train_cli import RFT_CONFIG as RFT

RFT_KEEPS_ALL = ["--set", "rft.threshold=-100.0", "--set", "rft.epochs=1", "--set", "rft.batch_size=2",
                 "--set", "rft.max_length=4096"]
"""Keep every sampled episode, whole: the tiny model rarely passes, and the test is about the ranks."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(config: Path, *args: str) -> subprocess.CompletedProcess:
    """``accelerate launch`` of ``termrl train`` on 2 processes; on this CPU-only machine they join by gloo."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    accelerate = Path(sys.executable).with_name("accelerate")
    return subprocess.run([str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                           "--mixed_precision", "no", "--dynamo_backend", "no",
                           "--main_process_ip", "127.0.0.1", "--main_process_port", str(free_port()),
                           "-m", "termrl", "train", str(config), "--json", *args],
                          capture_output=True, text=True, timeout=900, env=env)


def episode_ids(store: Path) -> list[str]:
    return [i for p in sorted(store.glob("*.parquet"))
            for i in pq.read_table(p, columns=["episode_id"]).column("episode_id").to_pylist()]


def test_one_process_is_a_world_of_one():
    assert current() == SINGLE and join() == SINGLE and SINGLE.main
    assert SINGLE.gather([1, 2]) == [[1, 2]] and SINGLE.share([1, 2, 3]) == [1, 2, 3]
    shares = [World(rank, 3).share(list(range(8))) for rank in range(3)]
    assert sorted(x for share in shares for x in share) == list(range(8))  # each item to one rank
    with pytest.raises(ZeroDivisionError):
        SINGLE.from_main(lambda: 1 / 0)


def test_a_rank_ends_at_once_with_its_output_flushed_and_one_process_goes_on():
    """Under a launcher ``end`` exits with the code given, past the interpreter's teardown (which
    gloo's leftover threads can abort), and loses no output: an unflushed partial line on stdout
    and a logging record both arrive. With one process it returns."""
    program = ("import logging, sys\n"
               "from termrl.distributed import end\n"
               "logging.basicConfig(stream=sys.stderr, format='%(message)s')\n"
               "logging.getLogger('t').warning('a logged line')\n"
               "sys.stdout.write('{\"json\": 1}')\n"
               "import atexit; atexit.register(lambda: print('teardown ran', file=sys.stderr))\n"
               "end(3)\n"
               "print('after end')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    ended = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                           env={**env, "WORLD_SIZE": "2"})
    assert ended.returncode == 3, ended.stderr
    assert ended.stdout == '{"json": 1}' and "a logged line" in ended.stderr
    assert "teardown ran" not in ended.stderr  # the teardown was skipped
    alone = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, env=env)
    assert alone.returncode == 0 and alone.stdout.endswith("after end\n") and "teardown ran" in alone.stderr


def launched(tmp_path: Path, config: str, *overrides: str) -> tuple[Path, subprocess.CompletedProcess, dict]:
    """(run directory, the launcher's process, its JSON report) of a 2-process run of ``config``."""
    out = tmp_path / "run"
    path = tmp_path / "run.toml"
    path.write_text(config.format(out=out, steps=2))
    res = launch(path, *overrides)
    assert res.returncode == 0, res.stderr[-4000:]
    return out, res, json.loads(res.stdout)  # one report: rank 1 prints none


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_grpo_on_two_processes_agrees_on_parameters_and_stores_each_rollout_once(tmp_path):
    out, res, results = launched(tmp_path, GRPO)
    training = results["training"]
    assert training["processes"] == 2 and len(training["parameter_digests"]) == 2
    assert training["parameters_agree"] is True, training["parameter_digests"]
    assert training["steps"] == 2
    # every step's whole batch (2 ranks x batch_size 2), each rollout once, numbered across both ranks
    ids = episode_ids(out / "rollouts")
    assert len(ids) == len(set(ids)) == training["rollouts"] == 2 * 2 * 2
    by_step = Counter(re.search(r"#grpo-step(\d+)#", i).group(1) for i in ids)
    assert sorted(by_step.values()) == [4, 4]
    assert sorted({int(i.rsplit("#", 1)[1]) for i in ids}) == [0, 1, 2, 3]  # ranks 0 and 1 each played two
    # a step's prompts differ between the ranks: each is rolled out num_generations times in all, not per rank
    per_task = Counter((re.search(r"#grpo-step(\d+)#", i).group(1), i.split("#", 1)[0]) for i in ids)
    assert set(per_task.values()) == {2}, per_task
    assert sorted(p.name for p in (out / "checkpoints").glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert (out / "final" / "config.json").is_file() and (out / "final" / "tokenizer.json").is_file()
    # the held-out episodes split between the ranks and stored once
    for store in ("heldout-before", "heldout"):
        held = episode_ids(out / store)
        assert len(held) == len(set(held)) == 2
    assert "split between 2 processes" in res.stderr
    assert json.loads((out / "results.json").read_text())["training"]["parameters_agree"] is True


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_rft_on_two_processes_splits_the_samples_and_trains_the_same_weights(tmp_path):
    out, res, results = launched(tmp_path, RFT, *RFT_KEEPS_ALL)
    training = results["training"]
    assert training["processes"] == 2 and training["parameters_agree"] is True, training
    samples = episode_ids(out / "rft" / "round-1" / "samples")
    assert len(samples) == len(set(samples)) == 2 * 2  # 2 tasks x 2 samples, each played by one rank
    assert training["rounds"][0]["trained"] and training["rounds"][0]["kept"] >= 1
    assert (out / "rft" / "round-1" / "model" / "config.json").is_file()
    assert "rft round 1: samples: 4 of 4 episodes to play" in res.stderr and "split between 2 processes" in res.stderr
    held = episode_ids(out / "rft" / "round-1" / "heldout")
    assert len(held) == len(set(held)) == results["heldout"]["episodes"] == 2
    for name in ("transfer-before", "rft/round-1/transfer"):
        transfer = episode_ids(out / name)
        assert len(transfer) == len(set(transfer)) == 2


def test_the_gpu_recipe_config_loads_and_its_batch_makes_whole_groups(tmp_path):
    from termrl.training.config import ConfigError, load_config

    recipe = Path(__file__).resolve().parents[2] / "configs" / "gpu-7b-grpo.toml"
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    cfg = load_config(recipe, [f"model.path={model}"])
    assert cfg.grpo.use_vllm and cfg.grpo.vllm_mode == "server" and cfg.grpo.vllm_server_base_url
    assert cfg.lora.enabled and cfg.model.dtype == "bfloat16"
    assert 6 * cfg.grpo.batch_size % cfg.grpo.num_generations == 0  # the recipe's 6 training ranks
    with pytest.raises(ConfigError, match="grpo.vllm_server_base_url"):
        load_config(recipe, [f"model.path={model}", "grpo.vllm_server_base_url=10.0.0.5:8000"])
