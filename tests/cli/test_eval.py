"""``termrl eval`` as a user runs it: scripted policies, JSON, format errors, kill -9 and --resume."""

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

pytestmark = pytest.mark.sandbox


def termrl(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True,
                          timeout=timeout)


def stored_ids(run: Path) -> list[str]:
    """Every stored episode id, duplicates included (read the parts raw, not through the store)."""
    return [i for part in sorted(run.glob("*.parquet")) for i in pq.read_table(part, columns=["episode_id"])
            .column("episode_id").to_pylist()]


def test_oracle_passes_and_nop_fails_in_json(tmp_path):
    res = termrl("eval", "--policy", "oracle", "--suite", "logs-count:0-2", "--out", str(tmp_path / "o"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["pass@1"] == 1.0 and len(data["tasks"]) == 3
    assert data["reward_bounds"] == [-1.4, 2.05] and data["reward_scale"] == "spec staged: -1.4 .. 2.05"
    task = data["tasks"][0]
    assert task["passed"] is True and task["reward"] > 0 and "outcome" in task["components"]
    assert sum(p["wall_s"] for p in data["compute"]["phases"].values()) == \
        pytest.approx(data["compute"]["wall_s"], rel=0.05)
    lines = [line for line in res.stderr.splitlines() if line.startswith("eval ")]
    assert [line.split(" (")[0] for line in lines] == ["eval 1/3", "eval 2/3", "eval 3/3"], res.stderr
    assert lines[-1].endswith(": pass") and "3 this run" in lines[-1], lines  # stderr is a pipe: plain lines
    res = termrl("eval", "--policy", "nop", "--suite", "logs-count:0-2", "--out", str(tmp_path / "n"), "--json")
    data = json.loads(res.stdout)
    assert data["pass@1"] == 0.0 and all(t["passed"] is False for t in data["tasks"])
    assert {f["kind"] for f in data["tasks"][0]["findings"]} == {"empty_work"}
    assert all(f["severity"] in ("low", "medium", "high") for f in data["tasks"][0]["findings"])


def test_the_summary_says_what_the_mean_reward_is_out_of_on_one_line(tmp_path):
    out = tmp_path / ("a-run-folder-with-a-long-name-" * 3)
    res = termrl("eval", "--policy", "oracle", "--suite", "logs-count:0-0", "--out", str(out))
    assert res.returncode == 0, res.stderr
    line = next(line for line in res.stdout.splitlines() if "mean reward" in line)
    assert "(spec staged: -1.4 .. 2.05)" in line
    assert f"trajectories: {out}" in res.stdout.splitlines()  # stdout is a pipe: nothing wrapped at 80 columns


def test_pass_at_k_and_heldout_split(tmp_path):
    res = termrl("eval", "--policy", "oracle", "--suite", "logs-count:heldout:0-1", "-k", "2", "--samples", "2",
                 "--out", str(tmp_path / "r"), "--json")
    data = json.loads(res.stdout)
    assert data["pass@k"]["2"] == 1.0 and set(data["splits"]) == {"heldout"}
    assert data["episodes"] == 4


def test_malformed_tool_calls_and_fences_are_format_error_steps(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}',  # not closed
        "```bash\necho unclosed\n",  # unclosed fence
        "```bash\necho fenced > fenced.txt\n```",
        '<tool_call>{"name": "bash", "arguments": {"cmd": "cat fenced.txt"}}</tool_call>',
        "<tool_call>not json</tool_call>",
        "done",
    ]))
    out = tmp_path / "run"
    res = termrl("eval", "--policy", f"script:{script}", "--suite", "logs-count:0", "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    from termrl.rollout.store import read

    (traj,) = read(out)
    errors = [bool(s.format_error) for s in traj.steps]
    assert errors == [True, True, False, False, True, False]
    assert traj.steps[3].observation.startswith("exit code 0\nfenced")
    assert traj.ending == "submitted" and not traj.passed


def test_bad_policy_and_resume_without_out_are_clear_errors(tmp_path):
    res = termrl("eval", "--policy", "gpt5", "--suite", "builtin")
    assert res.returncode == 2 and "unknown policy 'gpt5'" in res.stderr and "Traceback" not in res.stderr
    res = termrl("eval", "--policy", "nop", "--suite", "builtin", "--resume")
    assert res.returncode == 2 and "--resume needs --out" in res.stderr
    res = termrl("eval", "--policy", "nop", "--suite", "builtin", "-k", "3", "--samples", "2")
    assert res.returncode == 2 and "--samples 3" in res.stderr
    res = termrl("eval", "--policy", "nop", "--suite", "builtin", "--dtype", "float32", "--out", str(tmp_path / "r"))
    assert res.returncode == 2 and "takes no options" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_kill_9_then_resume_gives_every_episode_once(tmp_path):
    out = tmp_path / "run"
    args = ["eval", "--policy", "oracle", "--suite", "logs-count:0-9", "--workers", "1", "--out", str(out), "--json"]
    proc = subprocess.Popen([sys.executable, "-m", "termrl", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while len(list(out.glob("*.parquet"))) < 3 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = stored_ids(out)
    assert 3 <= len(before) < 10, "the run was not interrupted midway"
    res = termrl(*args, "--resume")
    assert res.returncode == 0, res.stderr
    ids = stored_ids(out)
    assert sorted(ids) == sorted(f"logs-count-{s}#{s}#0" for s in range(10))  # all, none twice
    assert json.loads(res.stdout)["episodes"] == 10
    res = termrl("eval", "--policy", "nop", "--suite", "logs-count:0-9", "--out", str(out), "--resume")
    assert res.returncode == 2 and "different settings" in res.stderr


def test_a_resumed_run_knows_a_local_model_by_its_folder_through_links(tmp_path):
    from termrl.eval.run import _same_setting

    model = tmp_path / "models" / "qwen"
    model.mkdir(parents=True)
    (tmp_path / "qwen05").symlink_to(model)
    assert _same_setting("policy", f"hf:{tmp_path / 'qwen05'}", f"hf:{model}")
    assert not _same_setting("policy", f"hf:{tmp_path / 'qwen05'}", f"hf:{tmp_path}")
    assert not _same_setting("policy", f"openai:{model}", f"openai:{tmp_path / 'qwen05'}")  # a URL, not a folder
    assert not _same_setting("suite", "a", "b")


def test_a_task_that_cannot_be_loaded_is_named_with_why_and_a_suite_with_none_left_is_an_error(tmp_path):
    import shutil

    from termrl.tasks.suites import BUILTIN_DIR

    suite = tmp_path / "suite"
    shutil.copytree(BUILTIN_DIR / "shell-count-errors", suite / "good")
    (suite / "broken").mkdir()
    (suite / "broken" / "task.toml").write_text('id = "broken"\n[verifier\n')
    (suite / "broken" / "instruction.md").write_text("Do it.\n")
    res = termrl("eval", "--policy", "oracle", "--suite", str(suite), "--out", str(tmp_path / "r"), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [t["id"] for t in data["tasks"]] == ["shell-count-errors"] and data["skipped_tasks"] == ["broken"]
    said = " ".join(res.stderr.split())
    assert f"skipped broken: {suite / 'broken' / 'task.toml'}: is not valid TOML" in said

    shutil.rmtree(suite / "good")
    for command in (["eval", "--policy", "oracle", "--suite", str(suite), "--out", str(tmp_path / "r2")],
                    ["audit", str(suite)]):
        res = termrl(*command)
        said = " ".join(res.stderr.split())
        assert res.returncode == 2 and "skipped broken:" in said and "Traceback" not in said, res.stderr
        assert f"error: suite {suite}: no task can run (1 skipped, each said above)" in said
    assert not any((tmp_path / "r2").glob("*.parquet"))


def test_resume_refuses_other_episode_settings_and_records_each_stretch(tmp_path):
    out = tmp_path / "run"
    args = ["eval", "--policy", "oracle", "--suite", "logs-count:0-1", "--out", str(out), "--json"]
    assert termrl(*args, "--max-steps", "2").returncode == 0
    meta = json.loads((out / "_run.json").read_text())
    assert meta["max_steps"] == 2 and meta["temperature"] is None and len(meta["stretches"]) == 1
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).parent).stdout.strip()
    stretch = meta["stretches"][0]
    assert stretch["backend"] == "OraclePolicy" and stretch["harness"].startswith(f"git:{commit}")
    res = termrl(*args, "--max-steps", "3", "--resume")
    assert res.returncode == 2 and "max_steps: 2 now 3" in res.stderr and "Traceback" not in res.stderr
    res = termrl(*args, "--max-steps", "2", "--temperature", "0.7", "--resume")
    assert res.returncode == 2 and "temperature: None now 0.7" in res.stderr
    res = termrl(*args, "--max-steps", "2", "--resume")
    assert res.returncode == 0, res.stderr
    assert len(json.loads((out / "_run.json").read_text())["stretches"]) == 2
    # a run stored before the episode settings were recorded has none of them: they are not compared
    old = {key: meta[key] for key in ("policy", "model", "suite", "spec", "samples", "action_format", "k", "started")}
    (out / "_run.json").write_text(json.dumps(old))
    assert termrl(*args, "--max-steps", "5", "--resume").returncode == 0


@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_a_stretch_in_another_dtype_than_the_runs_earlier_ones_is_said(tmp_path):
    from termrl.policies.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "model")
    out = tmp_path / "run"
    args = ["eval", "--policy", f"hf:{model}", "--suite", "logs-count:0", "--max-steps", "1", "--max-new-tokens", "4",
            "--workers", "1", "--out", str(out), "--json"]
    res = termrl(*args)
    assert res.returncode == 0, res.stderr
    meta = json.loads((out / "_run.json").read_text())
    assert [(s["backend"], s["dtype"], s["device"]) for s in meta["stretches"]] == [("transformers", "float32", "cpu")]
    assert "warning" not in res.stderr
    meta["stretches"][0]["dtype"] = "bfloat16"  # as a machine where --dtype auto chose bfloat16 recorded it
    (out / "_run.json").write_text(json.dumps(meta))
    res = termrl(*args, "--resume")
    assert res.returncode == 0, res.stderr
    said = " ".join(res.stderr.split())
    assert "this stretch generates in float32, earlier stretches of the run in bfloat16" in said
    assert "pass --dtype bfloat16 to match them" in said
