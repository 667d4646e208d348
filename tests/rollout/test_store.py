"""The Parquet trajectory store: exact round trips, readers outside termrl, atomicity, resume."""

from __future__ import annotations

import glob
import threading
from dataclasses import asdict, fields, replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from termrl.protocols import (
    Action,
    ActionKind,
    Ending,
    Evidence,
    Finding,
    StageResult,
    StageStatus,
    StepRecord,
    Trajectory,
)
from termrl.protocols import TestCase as Case
from termrl.rollout import store
from termrl.rollout.store import StoreError, TrajectoryStore, done_ids, read, read_meta, write_meta


def trajectory(n: int, **changes) -> Trajectory:
    """An episode with every kind of value the store must keep: nested steps, None tokens,
    a format error, findings, components and evidence dicts, unicode."""
    steps = [
        StepRecord(0, "```bash\nls\n```", Action(ActionKind.COMMAND, command="ls").to_dict(), "a.py\nb.py",
                   exit_code=0, output_bytes=10, gen_s=0.5, env_s=0.01, tokens=[1, 2, 3],
                   logprobs=[-0.1, -0.25, -1e-9], prompt_tokens=120),
        StepRecord(1, "I think… ✓", None, "format error: no action", format_error="no action"),
        StepRecord(2, "write", Action(ActionKind.WRITE, path="a.py", content="x = 1\n").to_dict(), "",
                   timed_out=True, stop="timeout", tokens=[], logprobs=[]),
    ]
    return Trajectory(
        episode_id=f"task-{n}#{n}#0", task_id=f"task-{n}", policy="scripted", seed=n, split="train",
        family="fix_bug", prompt=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "fix ä"}],
        steps=steps, ending=Ending.SUBMITTED.value, passed=n % 2 == 0, reward=0.75 + n,
        components={"tests": {"weight": 1.0, "value": 0.75, "contribution": 0.75},
                    "format": {"weight": 0.1, "value": None, "contribution": 0.0}},
        evidence={"task_id": f"task-{n}", "verified": True, "stages": {"tests": {"name": "tests", "data": {}}},
                  "tests": [{"nodeid": "t.py::test_ä", "tags": ["core"]}], "reward_file": None, "version": 1},
        findings=[asdict(Finding("tampering", "high", "edits tests", "tests/t.py", 3, 2)),
                  asdict(Finding("bloat", "low"))],
        timing={"generation": 1.5, "environment": 0.25, "verification": 2.0}, started=1.7e9 + n,
        **changes)


def bare(n: int) -> Trajectory:
    """An episode with every optional value empty or None."""
    return Trajectory(episode_id=f"bare-{n}", task_id="bare", policy="p", error="SandboxError: gone")


@pytest.fixture
def run(tmp_path):
    """A run directory with two parts, a _run.json, and the leftovers of a killed writer."""
    directory = tmp_path / "run"
    s = TrajectoryStore(directory)
    s.write([trajectory(0), bare(1)])
    s.write([trajectory(2)])
    write_meta(directory, {"policy": "scripted", "suite": "smoke"})
    (directory / ".part-000002.parquet.0123abcd.tmp").write_bytes(b"PAR1 half a part")
    return directory


def test_read_gives_back_exactly_what_was_written(run):
    assert read(run) == [trajectory(0), bare(1), trajectory(2)]
    assert sorted(p.name for p in run.glob("*.parquet")) == ["part-000000.parquet", "part-000001.parquet"]


def test_evidence_objects_come_back_through_from_dict(tmp_path):
    evidence = Evidence("t", passed=True, stages={"tests": StageResult("tests", "ok", 0.5, {"n": 1})},
                        tests=[Case("t.py::test_a", "passed", tags=("core", "boundary"))])
    TrajectoryStore(tmp_path).write([replace(bare(0), evidence=evidence.to_dict())])
    assert Evidence.from_dict(read(tmp_path)[0].evidence) == evidence


def test_the_schema_holds_every_field():
    assert store.STEP.names == [f.name for f in fields(StepRecord)]
    assert store.FINDING.names == [f.name for f in fields(Finding)]
    renamed = {"components": "components_json", "evidence": "evidence_json"}
    assert {renamed.get(f.name, f.name) for f in fields(Trajectory)} | {"num_steps"} == set(store.SCHEMA.names)


def test_every_part_has_the_same_schema_whatever_the_data(tmp_path):
    s = TrajectoryStore(tmp_path)
    paths = [s.write([bare(0)]), s.write([trajectory(1)]), s.write([bare(2), trajectory(3)])]
    assert all(pq.read_schema(p).equals(store.SCHEMA) for p in paths)


def test_pandas_reads_the_directory(run):
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_parquet(run)
    assert frame["task_id"].tolist() == ["task-0", "bare", "task-2"]
    assert frame["num_steps"].tolist() == [3, 0, 3]
    assert frame["steps"][0][1]["action"] is None  # the format error's action is null


def test_duckdb_queries_the_parts(run):
    duckdb = pytest.importorskip("duckdb")
    pattern = f"{run}/*.parquet"
    rows = duckdb.sql(f"SELECT task_id, reward FROM read_parquet('{pattern}') ORDER BY task_id").fetchall()
    assert rows == [("bare", None), ("task-0", 0.75), ("task-2", 2.75)]
    steps = duckdb.sql(f"""
        SELECT task_id, s.index, s.action.kind, len(s.tokens)
        FROM (SELECT task_id, unnest(steps) AS s FROM read_parquet('{pattern}'))
        WHERE task_id = 'task-0' ORDER BY s.index""").fetchall()
    assert steps == [("task-0", 0, "command", 3), ("task-0", 1, None, None), ("task-0", 2, "write", 0)]
    extras = duckdb.sql(f"""
        SELECT evidence_json->>'$.tests[0].nodeid', map_from_entries(timing)['environment']
        FROM read_parquet('{pattern}') WHERE task_id = 'task-2'""").fetchall()
    assert extras == [("t.py::test_ä", 0.25)]


def test_datasets_loads_the_parts(run, tmp_path):
    datasets = pytest.importorskip("datasets")
    files = sorted(glob.glob(f"{run}/*.parquet"))
    loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf"), split="train")
    assert loaded["task_id"] == ["task-0", "bare", "task-2"]
    assert loaded[0]["steps"][0]["tokens"] == [1, 2, 3]
    assert loaded[0]["steps"][1]["tokens"] is None
    assert loaded[2]["timing"][1] == {"phase": "environment", "seconds": 0.25}


def test_a_killed_writer_leaves_no_part(run, monkeypatch):
    def dies_halfway(table, sink):
        sink.write(b"PAR1 half a part")
        raise KeyboardInterrupt

    monkeypatch.setattr(store.pq, "write_table", dies_halfway)
    with pytest.raises(KeyboardInterrupt):
        TrajectoryStore(run).write([trajectory(9)])
    assert sorted(p.name for p in run.iterdir()) == [".lock", ".part-000002.parquet.0123abcd.tmp",
                                                    "_run.json", "part-000000.parquet", "part-000001.parquet"]
    assert done_ids(run) == {"task-0#0#0", "bare-1", "task-2#2#0"}


def test_part_numbers_continue_after_a_restart(run):
    assert TrajectoryStore(run).write([bare(3)]).name == "part-000002.parquet"
    (run / "part-000002.parquet").rename(run / "part-000041.parquet")
    assert TrajectoryStore(run).write([bare(4)]).name == "part-000042.parquet"
    assert [t.episode_id for t in read(run)][-2:] == ["bare-3", "bare-4"]


def test_concurrent_writers_never_share_a_part(tmp_path):
    stores = [TrajectoryStore(tmp_path), TrajectoryStore(tmp_path)]
    written: list = []

    def writer(k: int) -> None:
        for i in range(5):
            written.append(stores[k % 2].write([bare(10 * k + i)]))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(written)) == 30
    assert done_ids(tmp_path) == {f"bare-{10 * k + i}" for k in range(6) for i in range(5)}


def test_done_ids_and_duplicates_keep_the_last_copy(tmp_path):
    s = TrajectoryStore(tmp_path)
    assert s.done_ids() == set() and done_ids(tmp_path / "missing") == set()
    s.write([trajectory(0), bare(1)])
    s.write([replace(trajectory(0), reward=None, passed=False)])
    assert s.done_ids() == {"task-0#0#0", "bare-1"}
    assert [(t.episode_id, t.reward) for t in s.read()] == [("bare-1", None), ("task-0#0#0", None)]


def test_an_empty_write_writes_nothing(tmp_path):
    assert TrajectoryStore(tmp_path).write([]) is None
    assert read(tmp_path) == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "other schema"])
def test_a_damaged_or_stray_part_is_named_with_the_fix(run, damage):
    bad = run / "part-000007.parquet"
    if damage == "garbage":
        bad.write_bytes(b"not parquet at all")
    elif damage == "truncated":
        data = (run / "part-000000.parquet").read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "foreign":
        pq.write_table(pa.table({"x": [1]}), bad)
    else:
        pq.write_table(pa.table({"episode_id": ["e"], "version": [1]}), bad)
    for reader in (read, done_ids):
        with pytest.raises(StoreError, match=r"part-000007\.parquet .*move it out of"):
            reader(run)


def test_an_unknown_version_is_refused_naming_the_part(tmp_path):
    path = TrajectoryStore(tmp_path).write([replace(bare(0), version=99)])
    with pytest.raises(StoreError, match=rf"{path.name} holds trajectories of version \[99\]"):
        read(tmp_path)


@pytest.mark.parametrize("change, message", [
    ({"steps": [StepRecord(0, "r", {"kind": "command"}, "")]}, "store Action.to_dict"),
    ({"findings": [{"kind": "k", "severity": "low"}]}, r"asdict\(Finding"),
    ({"evidence": {"raw": b"bytes"}}, "evidence is not JSON"),
    ({"seed": "seven"}, "does not fit the store's schema"),
    ({"task_id": None}, "Trajectory.task_id is None"),
])
def test_a_trajectory_that_does_not_fit_is_refused_before_writing(tmp_path, change, message):
    with pytest.raises(StoreError, match=message):
        TrajectoryStore(tmp_path).write([replace(bare(0), **change)])
    assert list(tmp_path.iterdir()) == []


def test_run_metadata(tmp_path):
    assert read_meta(tmp_path) is None
    write_meta(tmp_path, {"policy": "scripted", "samples": 4, "spec": {"tests": 1.0}})
    write_meta(tmp_path, {"policy": "scripted", "samples": 8, "spec": {"tests": 1.0}})
    assert read_meta(tmp_path) == {"policy": "scripted", "samples": 8, "spec": {"tests": 1.0}}
    assert [p.name for p in tmp_path.iterdir()] == [store.META_NAME]
    (tmp_path / store.META_NAME).write_text("{")
    with pytest.raises(StoreError, match="_run.json is not JSON"):
        read_meta(tmp_path)


def test_stage_statuses_and_endings_are_stored_as_the_strings_they_always_were(tmp_path):
    """Enums in, the old strings on disk (evidence JSON, the ending column), enums again through
    ``Evidence.from_dict``: stores written before the enums read the same."""
    evidence = Evidence("t", stages={"build": StageResult("build", StageStatus.SKIPPED),
                                     "tests": StageResult("tests", StageStatus.FAILED)})
    TrajectoryStore(tmp_path).write([replace(bare(0), ending=Ending.STEP_LIMIT, evidence=evidence.to_dict())])
    raw = pq.read_table(glob.glob(str(tmp_path / "*.parquet"))[0]).to_pylist()[0]
    assert raw["ending"] == "step_limit" and type(raw["ending"]) is str
    assert '"status": "skipped"' in raw["evidence_json"] and '"status": "failed"' in raw["evidence_json"]
    back = read(tmp_path)[0]
    assert back.ending == Ending.STEP_LIMIT and Ending(back.ending) is Ending.STEP_LIMIT
    stages = Evidence.from_dict(back.evidence).stages
    assert stages["tests"].status is StageStatus.FAILED and stages["build"].status == "skipped"
