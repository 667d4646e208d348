"""termrl on a real Ray cluster of three nodes on this machine (``conftest.cluster``): the
cluster's runs store what local runs store, and a worker node killed mid-run loses no episode.

Opt in with ``-m cluster`` (about 5 minutes here: three ``ray start`` processes and their workers)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from termrl.rollout.store import TrajectoryStore
from tests.cluster.conftest import DRIVER_ENV

pytestmark = [pytest.mark.cluster, pytest.mark.sandbox]

TERMRL = [sys.executable, "-m", "termrl"]
SUITE = "logs-count:0-3"


def rows(run: Path) -> dict[str, tuple]:
    """What a run stored, per episode, less what differs between any two runs (times, paths)."""
    out = {}
    for t in TrajectoryStore(run).read():
        steps = tuple((s.action.get("kind"), s.action.get("command") or s.action.get("path"), s.observation)
                      for s in t.steps)
        components = tuple(sorted((k, v.get("value"), v.get("contribution")) for k, v in t.components.items()))
        findings = tuple(sorted((f["kind"], f["severity"]) for f in t.findings))
        assert t.episode_id not in out, f"{t.episode_id} stored twice"
        out[t.episode_id] = (t.passed, t.reward, t.ending, t.error, components, findings, steps)
    return out


def evaluate(cluster, out: Path, *extra: str) -> dict:
    done = cluster.driver(*TERMRL, "eval", "--suite", SUITE, "--out", str(out), "--json", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_server_of_the_cluster_listens_on_loopback_only(cluster):
    groups = {proc.pid for proc in cluster.nodes.values()}
    listening = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    ours = []
    for line in listening.splitlines():
        for pid in (int(p) for p in re.findall(r"pid=(\d+)", line)):
            try:
                pgid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
            except (OSError, IndexError, ValueError):
                continue
            if pgid in groups:
                ours.append(line.split()[3])
    assert ours, "the cluster's processes listen somewhere"
    assert all(addr.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:")) for addr in ours), ours


@pytest.mark.parametrize("policy", ["oracle", "nop"])
def test_eval_on_the_cluster_stores_what_a_local_run_stores(cluster, tmp_path, policy):
    local = evaluate(cluster, tmp_path / "local", "--policy", policy, "--samples", "2")
    remote = evaluate(cluster, tmp_path / "ray", "--policy", policy, "--samples", "2", "--ray", cluster.address)
    assert remote["pass@1"] == local["pass@1"] == (1.0 if policy == "oracle" else 0.0)
    assert rows(tmp_path / "ray") == rows(tmp_path / "local")
    assert len(rows(tmp_path / "ray")) == 8


def test_a_cluster_eval_resumes_a_run_and_does_only_the_rest(cluster, tmp_path):
    evaluate(cluster, tmp_path / "run", "--policy", "oracle", "--ray", cluster.address)
    first = rows(tmp_path / "run")
    evaluate(cluster, tmp_path / "run", "--policy", "oracle", "--ray", cluster.address, "--resume", "--samples", "1")
    assert rows(tmp_path / "run") == first  # nothing was played twice


def test_audit_on_the_cluster_matches_the_local_audit(cluster, tmp_path):
    def audit(*extra: str) -> dict:
        done = cluster.driver(*TERMRL, "audit", "logs-count:0-1", "--exploits",
                              "delete_tests,write_expected_output,exit_zero_in_code", "--progress", "1", "--json",
                              *extra)
        assert done.returncode in (0, 1), done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        return {(r["task"], r["exploit"]): (r["tests_passed"], r["reward"], r["advantage"], r["error"])
                for r in report["rows"]}

    local, remote = audit(), audit("--ray", cluster.address, "--out", str(tmp_path / "audit"))
    assert remote == local
    assert len(remote) == 2 * 4  # do-nothing and three exploits on each of two tasks
    journal = (tmp_path / "audit" / "audit-rows.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["task"] for line in journal) == ["logs-count-0", "logs-count-1"]


def test_verifier_actors_give_the_evidence_a_local_verifier_pool_gives(cluster, monkeypatch):
    import ray

    from termrl.rollout.ray_backend import RayVerifierPool
    from termrl.tasks.suites import resolve
    from termrl.verify.pool import VerifierPool
    from tests.hacks.test_impossible import reference_files

    monkeypatch.setattr("ray._private.services.get_node_ip_address", lambda address=None: "127.0.0.1")
    task = next(e.task for e in resolve("humaneval:0-0"))
    solved = reference_files(task)
    jobs = [(task, solved), (task, {}), (task, {name: b"def nothing():\n    pass\n" for name in solved})]
    with VerifierPool(workers=1) as pool:
        local = [(e.passed, e.verified) for e in pool.map(jobs)]
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        with RayVerifierPool(actors=2, workers=1) as remote_pool:
            remote = [(e.passed, e.verified) for e in remote_pool.map(jobs)]
    finally:
        ray.shutdown()
    assert remote == local
    assert local == [(True, True), (False, True), (False, True)]


def test_rollouts_verified_on_the_clusters_actors_score_as_local_ones(cluster, monkeypatch):
    import ray

    from termrl.episode import PoolVerifier
    from termrl.policies.scripted import NopPolicy, OraclePolicy
    from termrl.rollout.ray_backend import RayVerifierPool
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.tasks.suites import resolve

    monkeypatch.setattr("ray._private.services.get_node_ip_address", lambda address=None: "127.0.0.1")
    tasks = [e.task for e in resolve(SUITE)]

    def scores(config: RolloutConfig) -> list[tuple]:
        got = run_rollouts(tasks, OraclePolicy(), config) + run_rollouts(tasks, NopPolicy(), config)
        return sorted((t.episode_id, t.policy, t.passed, t.reward, t.error) for t in got)

    local = scores(RolloutConfig(workers=2))
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        with RayVerifierPool(actors=2, workers=1) as pool:
            remote = scores(RolloutConfig(workers=2, verifier=PoolVerifier(pool)))
            assert pool.verifications == len(remote) == 8 and pool.failures == 0
    finally:
        ray.shutdown()
    assert remote == local
    assert [p for _, _, p, _, _ in local].count(True) == 4


def test_a_training_run_verifies_its_episodes_on_the_cluster(cluster, tmp_path):
    from tests.train.test_train_cli import RFT_CONFIG

    path = tmp_path / "rft.toml"
    path.write_text(RFT_CONFIG.format(out=tmp_path / "run"))
    done = cluster.driver(*TERMRL, "train", str(path), "--json", "--set", f"ray.address={cluster.address}",
                          "--set", "ray.verifier_actors=2")
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout)
    episodes = sum(results[name]["episodes"] + results[f"{name}_before"]["episodes"] for name in ("heldout", "transfer"))
    sampled = results["training"]["rounds"][0]["sampled"]
    assert results["ray"] == {"address": cluster.address, "actors": 2, "verifications": episodes + sampled,
                              "failures": 0}


def sandboxes_of(root: int) -> list[int]:
    """The bubblewrap processes below ``root``."""
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                children.setdefault(int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]), []).append(int(p.name))
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "bwrap":
                found.append(pid)
        except OSError:
            continue
        todo += children.get(pid, [])
    return found


def test_killing_a_worker_node_mid_run_loses_no_episode(cluster, tmp_path):
    """Node b is killed while one of its episodes has a sandbox open: Ray runs that episode
    again on node a, the driver stores every episode once, and the sandbox dies with the node."""
    out = tmp_path / "run"
    args = [*TERMRL, "eval", "--policy", "oracle", "--suite", "logs-count:0-11", "--out", str(out), "--json",
            "--ray", cluster.address, "--workers", "4"]
    driver = subprocess.Popen(args, env={**os.environ, **DRIVER_ENV},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        # killed while it plays: once episodes are stored and node b has a sandbox open
        while len(list(out.glob("part-*.parquet"))) < 2 or not (boxes := sandboxes_of(cluster.nodes["b"].pid)):
            assert driver.poll() is None, driver.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "node b opened no sandbox in 5 minutes"
            time.sleep(0.1)
        cluster.kill("b")
        gone = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in boxes):
            assert time.monotonic() < gone, f"the killed node's sandboxes {boxes} outlived it"
            time.sleep(0.2)
        stdout, stderr = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, stderr[-3000:]
    stored = rows(out)
    assert len(stored) == 12
    assert all(passed and error is None for passed, _, _, error, *_ in stored.values()), stored
    assert json.loads(stdout.strip().splitlines()[-1])["pass@1"] == 1.0
