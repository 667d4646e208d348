"""What a report computes, checked on runs made by termrl's own commands (see conftest)."""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest

from termrl.protocols import Action, ActionKind, StepRecord, Trajectory
from termrl.report import RunError, data, load_run, write_report


def test_each_kind_of_run_directory_is_recognised(runs, tmp_path):
    kinds = {name: load_run(path).kind for name, path in runs.items()}
    assert kinds == {"oracle": "eval", "nop": "eval", "hacky": "eval", "audit": "audit", "train": "train",
                     "quickstart": "train"}  # the quickstart is a training run like any other
    with pytest.raises(RunError, match=str(tmp_path)):
        load_run(tmp_path)  # an empty folder is no run, and the error names it
    with pytest.raises(RunError, match="no such directory"):
        load_run(tmp_path / "missing")


def test_the_headline_compares_runs_with_a_two_proportion_test(runs):
    oracle, nop = load_run(runs["oracle"]), load_run(runs["nop"])
    head = data.headline([oracle, nop])
    a, b = head["rows"]
    assert (a["pass@1"], b["pass@1"]) == (1.0, 0.0) and a["episodes"] == b["episodes"] == 4
    assert a["interval"][0] < 1.0 <= a["interval"][1] + 1e-9  # a Wilson interval, not a point
    assert set(a["categories"]) <= {"shell", "data", "python", "debug", "c", "git", "build"} and a["categories"]
    assert a["splits"] and sum(v["episodes"] for v in a["families"].values()) == 4
    [c] = head["comparisons"]
    assert c["difference"] == -1.0 and c["p_value"] < 0.05
    # the same four episodes (tasks and seeds) in both runs: paired, all four lost, 2 * (1/2)^4
    assert c["paired"] == {"episodes": 4, "gained": 0, "lost": 4, "mcnemar_p": 0.125}


def test_rewards_compute_and_behaviour(runs):
    oracle, hacky = load_run(runs["oracle"]), load_run(runs["hacky"])
    rew = data.rewards([oracle])["oracle"]
    assert len(rew["total"]) == 4 and set(rew["components"]) and all(len(v) == 4 for v in rew["components"].values())
    comp = data.compute([oracle])["runs"]["oracle"]
    assert sum(comp["shares"].values()) == pytest.approx(1.0) and comp["episodes_per_hour"] > 0
    assert data.compute([oracle])["quoted"]["generation"] == 0.40
    bh = data.behaviour([oracle, hacky])
    assert bh["oracle"]["format_error_rate"] == 0 and {"write_file", "bash"} <= set(bh["oracle"]["top_heads"])
    assert bh["hacky"]["format_error_rate"] > 0 and "ls" in bh["hacky"]["top_heads"]
    assert bh["hacky"]["distinct_heads_per_episode"] == [2, 2, 2, 2]  # ls and write_file, every episode


def test_hacks_and_failures_point_at_their_episodes(runs):
    hacky, nop = load_run(runs["hacky"]), load_run(runs["nop"])
    hk = data.hacking([hacky])
    assert hk["findings"], "the planted conftest.py must be flagged"
    refs = {r for f in hk["findings"] for r in f["episodes"]}
    assert refs <= {f"hacky/{t.episode_id}" for t in hacky.episodes}
    fl = data.failures([nop])["nop"]
    assert sum(g["count"] for g in fl["clusters"]) == 4 and fl["endings"] == {"submitted": 4}
    assert all(ex["ref"].startswith("nop/") for g in fl["clusters"] for ex in g["examples"])


def test_an_audit_becomes_a_task_by_exploit_matrix(runs):
    run = load_run(runs["audit"])
    matrix = data.hacking([run])["audits"]["audit"]
    assert matrix["exploits"] == ["empty_files_named", "write_expected_output"]
    assert len(matrix["cells"]) == len(matrix["tasks"]) * 2 and run.wall_s > 0
    assert set(matrix["exploitable"]) <= set(matrix["tasks"])


def test_a_training_run_brings_its_parts_curves_and_compute(runs):
    run = load_run(runs["train"])
    assert {"held-out before", "training rollouts", "held-out after"} <= set(run.parts)
    assert run.evaluation()[0] == "held-out after"
    curves = data.training_curves(run)
    assert "loss" in curves and "rewards" in curves  # from the run's own TensorBoard events
    assert all(len(pts) >= 1 for tags in curves.values() for pts in tags.values())
    assert run.compute["training"] > 0 and run.wall_s > 0
    sched = data.schedules("staged")
    assert sched and all(len(pts) == 21 for pts in sched.values())  # staged moves weights over progress
    assert data.schedules("sparse") == {}


def test_a_quickstart_run_reads_its_stages_stores_and_logs(runs, tmp_path):
    """A small real ``termrl quickstart``: a training run whose "before" is its SFT warm start's
    held-out evaluation, with both stages' step metrics (TensorBoard is off in its config: the
    algorithm's come from its last checkpoint, the warm start's from sft/log_history.json)."""
    run = load_run(runs["quickstart"])
    assert list(run.parts) == ["held-out before", "training rollouts", "held-out after"]
    assert run.evaluation()[0] == "held-out after"
    assert [len(p) for p in run.parts.values()] == [3, 2 * 4, 3] and run.meta["spec"] == "partial"
    assert run.meta["sft"] == "10 steps on one-command:0-7" and run.meta["model"].startswith("tiny (hidden 32")
    assert not (runs["quickstart"] / "tensorboard").exists()
    assert [step for step, _ in run.scalars["train/reward"]] == [1, 2]
    assert [step for step, _ in run.scalars["sft/train/loss"]] == [10]
    assert not any(tag.startswith("sft/") and "reward" in tag for tag in run.scalars)
    curves = data.training_curves(run)
    assert {"train/reward", "train/reward_std"} <= set(curves["rewards"])
    assert {"train/loss", "sft/train/loss"} <= set(curves["loss"])
    assert run.compute["training"] > 0 and run.wall_s > 0
    results = run.results
    assert results["sft"]["steps"] == 10 and results["heldout_before"]["episodes"] == 3
    assert (runs["quickstart"] / "report.html").is_file()  # the quickstart wrote its own
    page = write_report([runs["quickstart"]], tmp_path / "q.html").read_text()
    assert "held-out pass rate before" in page and "sft/train/loss" in page


def test_the_tokens_section_reads_each_runs_tokenizer_and_the_ones_given(runs, tmp_path):
    train, oracle = load_run(runs["train"]), load_run(runs["oracle"])
    rows = data.tokens([train, oracle], ["quickstart"])
    assert [r["tokenizer"] for r in rows] == ["train", "quickstart"]  # the oracle's eval run keeps no model
    episodes = [t for t in train.episodes + oracle.episodes if t.prompt and t.steps]
    assert rows[0]["episodes"] == rows[1]["episodes"] == min(len(episodes), data.EPISODE_SAMPLE)
    assert rows[0]["classes"]["replies"]["tokens"] > 0 and rows[0]["episode_tokens_mean"] > 0
    page = write_report([runs["train"]], tmp_path / "t.html", tokenizers=["quickstart"]).read_text()
    assert '<section id="tokens">' in page and "longest one-token run of spaces" in page
    assert "No tokenizer" in write_report([runs["oracle"]], tmp_path / "o.html").read_text()


def test_pass_at_k_gets_a_bootstrap_interval_over_tasks():
    tasks = [{"pass@k": {"2": v}} for v in (0.0, 0.5, 1.0, 1.0)]
    low, high = data.task_bootstrap(tasks, "2")
    assert 0.0 <= low < 0.625 < high <= 1.0
    assert data.task_bootstrap(tasks[:1], "2") is None


def test_command_heads():
    assert data.command_head("cd src && make -j2") == "cd"
    assert data.command_head("FOO=1 /usr/bin/python3 x.py") == "python3"
    assert data.command_head("echo 'unclosed") == "echo"
    assert data.command_head("") is None


def test_the_page_holds_every_section_and_every_episode(runs, tmp_path):
    out = write_report([runs["oracle"], runs["nop"], runs["audit"]], tmp_path / "r.html")
    page = out.read_text()
    for section in ("headline", "rewards", "compute", "hacking", "failures", "behaviour", "tokens", "trajectories"):
        assert f'<section id="{section}">' in page
    packed = re.search(r'<script id="episodes-data" type="text/plain">([^<]+)</script>', page).group(1)
    episodes = json.loads(gzip.decompress(base64.b64decode(packed)))
    assert len(episodes) == 8 and len({e["ref"] for e in episodes}) == 8
    e = next(e for e in episodes if e["run"] == "oracle")
    assert e["passed"] and e["steps"] and e["tests"] and e["components"] and e["instruction"]
    assert not re.search(r"<(script|link)[^>]+(src|href)=[\"']https?:", page)  # nothing loaded from the network


def test_two_thousand_episodes_stay_under_ten_megabytes(tmp_path):
    from termrl.rollout.store import TrajectoryStore

    store = TrajectoryStore(tmp_path / "big")
    reply = "I will write the solution.\n```python\n" + "def f(x):\n    return x * 2\n" * 30 + "```"
    store.write([Trajectory(f"t{i % 50}#{i}#0", f"t{i % 50}", "p", seed=i, passed=i % 3 == 0, reward=float(i % 3),
                            ending="submitted", prompt=[{"role": "user", "content": "Do the task. " * 80}],
                            steps=[StepRecord(k, reply, Action(ActionKind.COMMAND, command=f"python3 run.py {k}").to_dict(),
                                              "exit code 0\n" + "output line\n" * 60, gen_s=1.0) for k in range(3)],
                            evidence={"tests": [{"nodeid": f"test_{j}", "outcome": "passed"} for j in range(5)]},
                            timing={"generation": 3.0, "verification": 1.0})
                 for i in range(2000)])
    out = write_report([tmp_path / "big"], tmp_path / "big.html")
    assert out.stat().st_size < 10 * 2**20
