"""``termrl train CONFIG.toml``: validation, overrides, a GRPO run, and kill -9 then --resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from termrl.training.config import ConfigError, load_config

CONFIG = """
algorithm = "grpo"
output_dir = "{out}"
[model]
tiny = true
tiny_hidden_size = 32
[tasks]
train = "logs-count:0-1"
heldout = "logs-count:heldout:0-1"
[env]
max_steps = 2
[grpo]
steps = {steps}
num_generations = 2
batch_size = 2
max_completion_length = 24
learning_rate = 1e-3
[eval]
max_new_tokens = 12
[logging]
save_steps = 1
"""


def write(tmp_path: Path, steps: int = 2) -> tuple[Path, Path]:
    out = tmp_path / "run"
    path = tmp_path / "grpo.toml"
    path.write_text(CONFIG.format(out=out, steps=steps))
    return path, out


def termrl(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True, timeout=timeout)


def test_config_errors_name_the_field_and_fix(tmp_path):
    path, _ = write(tmp_path)
    cfg = load_config(path, ["grpo.learning_rate=3e-4", "seed=7", "tasks.heldout=logs-count:heldout:0-9"])
    assert cfg.grpo.learning_rate == 3e-4 and cfg.seed == 7 and cfg.tasks.heldout == "logs-count:heldout:0-9"
    cases = [
        (["grpo.num_generations=3"], "grpo.batch_size"),
        (["algorithm=ppo"], "'algorithm'"),
        (["grpo.steps=ten"], "'grpo.steps': expected int"),
        (["grpo.lr=1"], "unknown field 'grpo.lr'"),
        (["model.path=/m"], "'model.path'"),
        (["ray.verifier_actors=0"], "'ray.verifier_actors': must be at least 1"),
        (["judge.policy=oracle"], "'judge.policy': use hf:PATH, openai:BASE_URL"),
        (["judge.policy=openai:http://127.0.0.1:9/v1"], "'judge.model': name the model"),
    ]
    for overrides, needle in cases:
        with pytest.raises(ConfigError, match=needle) as e:
            load_config(path, overrides)
        assert str(path) in str(e.value)
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.toml")
    res = termrl("train", str(path), "--set", "grpo.steps=0")
    assert res.returncode == 2 and "'grpo.steps': must be at least 1" in res.stderr and "Traceback" not in res.stderr


def stored(run: Path) -> list[str]:
    return [i for p in sorted((run / "rollouts").glob("*.parquet"))
            for i in pq.read_table(p, columns=["episode_id"]).column("episode_id").to_pylist()]


def complete_checkpoints(run: Path) -> list[int]:
    states = (run / "checkpoints").glob("checkpoint-*/trainer_state.json")
    return sorted(int(p.parent.name.split("-")[1]) for p in states)


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_grpo_run_kill_9_and_resume(tmp_path):
    path, out = write(tmp_path, steps=4)
    proc = subprocess.Popen([sys.executable, "-m", "termrl", "train", str(path), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 600
    while 2 not in complete_checkpoints(out) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "results.json").exists()
    last = complete_checkpoints(out)[-1]
    assert 2 <= last < 4
    # A kill during the next save leaves a directory without trainer_state.json: resume must pass it by.
    cut = out / "checkpoints" / f"checkpoint-{last + 1}"
    cut.mkdir(exist_ok=True)
    (cut / "model.safetensors").write_bytes(b"\x00" * 10)
    res = termrl("train", str(path))
    assert res.returncode == 2 and "--resume" in res.stderr
    res = termrl("train", str(path), "--resume", "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"checkpoint-{last + 1} was cut mid-write" in res.stderr
    results = json.loads(res.stdout)
    assert results["training"]["steps"] == 4 and results["training"]["resumed_from"].endswith(f"checkpoint-{last}")
    ids = stored(out)
    steps = sorted(int(i.split("#grpo-step")[1].split("#")[0]) for i in ids)
    assert len(ids) == len(set(ids)) == 4 * 2  # every step's 2 rollouts, none lost, none twice
    assert steps == [0, 0, 1, 1, 2, 2, 3, 3]
    assert results["heldout"]["episodes"] == 2
    phases = results["compute"]["phases"]
    assert phases["training"]["wall_s"] > 0
    assert sum(p["wall_s"] for p in phases.values()) == pytest.approx(results["compute"]["wall_s"], rel=0.05)
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert (out / "final" / "model.safetensors").exists()


RFT_CONFIG = """
algorithm = "rft"
output_dir = "{out}"
[model]
tiny = true
tiny_hidden_size = 32
[tasks]
train = "logs-count:0-1"
heldout = "logs-count:heldout:0-1"
transfer = "one-command:heldout:0-1"
[env]
max_steps = 2
action_format = "bash"
[rft]
rounds = 1
samples_per_task = 2
[eval]
max_new_tokens = 12
"""


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_rft_run_measures_before_and_after_on_heldout_and_transfer_sets(tmp_path):
    out = tmp_path / "run"
    path = tmp_path / "rft.toml"
    path.write_text(RFT_CONFIG.format(out=out))
    res = termrl("train", str(path), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    results = json.loads(res.stdout)
    for name in ("heldout", "transfer"):
        before, after = results[f"{name}_before"], results[name]
        assert before["episodes"] == after["episodes"] == results[f"{name}_episodes"] == 2
        assert results[f"{name}_pass_rate_before"] == before["pass_rate"]
        assert results[f"{name}_pass_rate_after"] == after["pass_rate"]
        assert 0 <= results[f"{name}_p_value"] <= 1
        # the same episodes before and after: the paired test too
        assert results[f"{name}_gained"] + results[f"{name}_lost"] <= 2 and 0 < results[f"{name}_mcnemar_p"] <= 1
        assert (out / f"{name}-before").is_dir()
    # the last RFT round played the held-out set with the final weights: that is the evaluation after
    assert (out / "rft" / "round-1" / "transfer").is_dir() and not (out / "heldout").exists()
    assert results["heldout"]["episodes"] == results["training"]["rounds"][-1]["heldout_episodes"]
    assert "heldout (before): 2/2 episodes" in res.stderr  # progress on stderr
    # what the evaluated sets share with the training tasks, measured before training
    assert results["overlap"]["heldout"]["tasks"] == 2 and results["overlap"]["heldout"]["against_tasks"] == 2
    assert set(json.loads((out / "overlap.json").read_text())) == {"heldout", "transfer"}
    assert "termrl train: heldout logs-count:heldout:0-1 against the training tasks:" in res.stderr
    assert "rft round 1: samples: 4/4 episodes" in res.stderr
    assert "evaluation" in results["compute"]["phases"] or "generation" in results["compute"]["phases"]
    round_record = results["training"]["rounds"][0]
    assert isinstance(round_record["sample_findings"], dict) and isinstance(round_record["heldout_findings"], dict)
    # the episodes played with the bash format's prompt
    first = pq.read_table(next((out / "heldout-before").glob("*.parquet"))).to_pylist()[0]
    assert "```bash block" in json.dumps(first["prompt"])


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_a_finished_rft_run_given_more_rounds_trains_them_on_weights_rebuilt_from_its_stores(tmp_path):
    import shutil

    out = tmp_path / "run"
    path = tmp_path / "rft.toml"
    # every episode kept (the tiny model passes nothing), so round 1 trains weights
    keep_all = "rounds = 1\nthreshold = -100.0\nmax_length = 4096"
    path.write_text(RFT_CONFIG.format(out=out).replace("rounds = 1", keep_all))
    first = termrl("train", str(path), "--json")
    assert first.returncode == 0, first.stderr[-3000:]
    one = json.loads(first.stdout)
    assert one["training"]["rounds"][0]["trained"]
    assert json.loads((out / "final" / "termrl-final.json").read_text())["round"] == 1
    # what a clone of the run holds: stores and records, no weights
    shutil.rmtree(out / "final")
    shutil.rmtree(out / "rft" / "round-1" / "model")
    stored = {d: sorted(p.name for p in (out / d).rglob("*.parquet"))
              for d in ("heldout-before", "rft/round-1/samples", "rft/round-1/heldout")}

    other = path.read_text().replace("samples_per_task = 2", "samples_per_task = 3")
    (tmp_path / "other.toml").write_text(other)
    refused = termrl("train", str(tmp_path / "other.toml"), "--json", "--resume")
    assert refused.returncode != 0 and "rft" in refused.stderr and "Traceback" not in refused.stderr

    res = termrl("train", str(path), "--json", "--resume", "--set", "rft.rounds=2")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "extending the run from 1 to 2 RFT rounds" in res.stderr
    assert "round 1's weights are gone" in res.stderr
    # trained again from the same stored episodes: bit for bit the weights round 1's evaluation played
    digest = one["training"]["rounds"][0]["weights_digest"]
    trained_with = one["training"]["rounds"][0]["trained_with"]
    assert trained_with["torch"] and trained_with["trl"] and trained_with["device"] == "cpu"
    assert len(digest) == 64 and f"round 1's weights trained again: the same weights as its first training " \
        f"(digest {digest})" in " ".join(res.stderr.split())
    again = json.loads(res.stdout)["training"]["rounds"][0]
    assert again["weights_digest"] == digest and "differs from its first training" not in res.stderr
    assert again["step_digests"] == one["training"]["rounds"][0]["step_digests"]
    assert len(again["step_digests"]) == again["train_steps"] > 0  # checked step by step as it trained
    results = json.loads(res.stdout)
    rounds = results["training"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]
    # round 1 replayed nothing: its rows are the ones stored, its record the one it had
    for key in ("sampled", "kept", "heldout_episodes", "heldout_pass@1"):
        assert rounds[0][key] == one["training"]["rounds"][0][key]
    assert stored == {d: sorted(p.name for p in (out / d).rglob("*.parquet")) for d in stored}
    assert "rft round 1: samples:" not in res.stderr and "rft round 1: heldout:" not in res.stderr
    assert "rft round 2: samples: 4 of 4 episodes to play" in res.stderr
    assert rounds[1]["model_in"] == rounds[0]["model_out"] and (out / "rft" / "round-2" / "samples").is_dir()
    # the evaluation after is round 2's: its held-out episodes and its own transfer episodes
    assert results["heldout"]["episodes"] == rounds[1]["heldout_episodes"] == 2
    assert (out / "rft" / "round-2" / "transfer").is_dir() and results["transfer"]["episodes"] == 2
    assert json.loads((out / "final" / "termrl-final.json").read_text())["round"] == 2
    assert json.loads((out / "config.json").read_text())["rft"]["rounds"] == 2


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_a_lora_round_whose_weights_are_gone_is_merged_again_from_its_adapter_and_not_trained(tmp_path):
    import shutil

    out = tmp_path / "run"
    path = tmp_path / "rft.toml"
    keep_all = "rounds = 1\nthreshold = -100.0\nmax_length = 4096"
    lora = "[lora]\nenabled = true\nr = 4\nalpha = 8\n[rft]"
    path.write_text(RFT_CONFIG.format(out=out).replace("rounds = 1", keep_all).replace("[rft]", lora))
    first = termrl("train", str(path), "--json")
    assert first.returncode == 0, first.stderr[-3000:]
    record = json.loads(first.stdout)["training"]["rounds"][0]
    adapter = out / "rft" / "round-1" / "adapter"
    assert record["adapter"] == str(adapter) and (adapter / "adapter_model.safetensors").is_file()

    shutil.rmtree(out / "final")
    shutil.rmtree(out / "rft" / "round-1" / "model")
    # as a clone on another machine holds it: the base model somewhere else than the records say
    rounds_file = out / "rft" / "rounds.json"
    moved = json.loads(rounds_file.read_text())
    moved["rounds"][0]["model_in"] = "/elsewhere/model"
    rounds_file.write_text(json.dumps(moved))
    meta = json.loads((adapter / "termrl-adapter.json").read_text())
    (adapter / "termrl-adapter.json").write_text(json.dumps({**meta, "base": "/elsewhere/model"}))
    res = termrl("train", str(path), "--json", "--resume")
    assert res.returncode == 0, res.stderr[-3000:]
    said = " ".join(res.stderr.split())
    assert f"merging them again from their adapter in {adapter} (no training)" in said
    assert f"round 1's weights merged again: the same weights as its first training " \
        f"(digest {record['weights_digest']})" in said
    assert "training them again" not in said and "{'loss'" not in res.stderr  # no step trained
    assert json.loads(res.stdout)["training"]["rounds"][0] == {**record, "model_in": "/elsewhere/model"}
    assert (out / "final" / "config.json").is_file()

    # without its adapter, and trained first into other weights (as on another CPU): it trains again
    # (from the base where this machine holds it), says so, and keeps the first training's figures,
    # whose weights played the stored episodes
    rounds = json.loads(rounds_file.read_text())
    rounds["rounds"][0].update(weights_digest="f" * 64, train_loss=9.5)
    rounds_file.write_text(json.dumps(rounds))
    shutil.rmtree(adapter)
    shutil.rmtree(out / "final")
    shutil.rmtree(out / "rft" / "round-1" / "model")
    res = termrl("train", str(path), "--json", "--resume")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "training them again" in res.stderr and "NOT the weights its evaluation played" in res.stderr
    again = json.loads(res.stdout)["training"]["rounds"][0]
    assert again["weights_digest"] == record["weights_digest"] and adapter.is_dir()
    assert again["first_training"]["weights_digest"] == "f" * 64 and again["first_training"]["train_loss"] == 9.5
    assert again["heldout_pass@1"] == record["heldout_pass@1"]
    assert json.loads(rounds_file.read_text())["rounds"][0]["first_training"]["train_loss"] == 9.5


def test_before_after_is_a_two_proportion_test_over_scored_episodes():
    from termrl.training.run import before_after

    before = {"pass_rate": 0.3, "episodes": 205, "errors": 5}
    after = {"pass_rate": 0.45, "episodes": 200, "errors": 0}
    got = before_after(before, after, "heldout")
    assert got["heldout_pass_rate_before"] == 0.3 and got["heldout_pass_rate_after"] == 0.45
    assert got["heldout_episodes"] == 200 and got["heldout_z"] > 0 and 0.001 < got["heldout_p_value"] < 0.01
    assert before_after(before, None, "heldout") == {}
    assert "heldout_mcnemar_p" not in got  # no pairs given: no paired test
    pairs = {"episodes": 200, "gained": 14, "lost": 0, "mcnemar_p": 0.000122}
    got = before_after(before, after, "heldout", pairs)
    assert (got["heldout_gained"], got["heldout_lost"], got["heldout_mcnemar_p"]) == (14, 0, 0.000122)


def test_a_run_resumes_on_another_cluster_but_not_with_other_settings(tmp_path):
    """Where episodes are verified (the ``ray`` section) is not what the run does: a resumed run
    may change it; a changed setting of the run itself is refused."""
    from termrl.training.run import ResumeError, _prepare_dir

    path, out = write(tmp_path)
    _prepare_dir(load_config(path), resume=False)
    (out / "config.json").write_text(json.dumps(load_config(path).to_dict()))
    assert _prepare_dir(load_config(path, ["ray.address=10.0.0.1:6379", "ray.verifier_actors=8"]), resume=True) == out
    with pytest.raises(ResumeError, match="differs in: seed"):
        _prepare_dir(load_config(path, ["seed=3"]), resume=True)


def test_the_overlap_of_each_evaluated_set_with_the_training_tasks_is_measured_before_training(tmp_path, capsys):
    from termrl.training.config import TrainConfig, TasksConfig, SFTSection
    from termrl.training.run import overlap_with_training

    cfg = TrainConfig(tasks=TasksConfig(train="py-function:0-9", heldout="py-function:heldout-v1:0-29",
                                        transfer="logs-count:0-1"),
                      sft=SFTSection(steps=1, tasks="py-function:10-19"))
    found = overlap_with_training(cfg, tmp_path)
    assert found["heldout"]["against_tasks"] == 20 and found["heldout"]["tasks"] == 30
    assert found["heldout"]["against"] == "py-function:0-9+py-function:10-19"  # the SFT tasks count as trained on
    assert found["heldout"]["exact"] > 0  # heldout-v1 seeds draw from the train templates
    assert found["transfer"]["near"] == 0  # another family shares nothing
    stored = json.loads((tmp_path / "overlap.json").read_text())
    assert len(stored["heldout"]["matches"]) == 30 and stored["heldout"]["exact"] == found["heldout"]["exact"]
    assert f"{found['heldout']['exact']} of 30 exact duplicates" in capsys.readouterr().err
    assert overlap_with_training(TrainConfig(tasks=TasksConfig(train="py-function:0-1")), tmp_path / "none") == {}
