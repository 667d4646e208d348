"""A run's trajectories as Parquet: one row per episode, one part file per ``write``.

A run directory holds::

    part-000000.parquet   complete parts only: written to a temp name, fsynced, os.replace'd
    part-000001.parquet
    _run.json             the run's configuration (write_meta / read_meta)
    .lock                 serializes writers (flock)

Every other file starts with ``_`` or ``.``, which Arrow, pandas and Spark skip when they
read a directory and which a ``*.parquet`` glob does not match, so the directory reads as
one table (that is why the metadata is ``_run.json``, not ``run.json``)::

    pandas.read_parquet("runs/r1")
    duckdb.sql("SELECT task_id, reward FROM read_parquet('runs/r1/*.parquet')")
    datasets.load_dataset("parquet", data_files=sorted(glob.glob("runs/r1/*.parquet")))

``SCHEMA`` is the same in every part, whatever the data. One column per ``Trajectory``
field, except:

- ``steps``: a list of structs with the ``StepRecord`` fields; ``action`` is a struct of
  ``Action.to_dict()``'s four strings, or null for a format error.
- ``findings``: a list of structs with the ``Finding`` fields (``dataclasses.asdict``).
- ``timing``: a list of ``{phase, seconds}`` structs in the dict's order, because
  ``datasets`` cannot read an Arrow map (DuckDB: ``map_from_entries(timing)``).
- ``components_json``, ``evidence_json``: ``json.dumps`` of ``components`` and
  ``evidence``, whose nesting and keys vary (DuckDB: ``evidence_json->>'$.passed'``).
  JSON keeps what JSON has: a tuple comes back as a list (``Evidence.from_dict`` makes
  ``TestCase.tags`` a tuple again) and a dict key as a string.
- ``num_steps``: ``len(steps)``, for queries; ignored on read.

``version`` is ``TRAJECTORY_VERSION``: ``read`` refuses a part of a version it does not know.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from termrl.protocols import TRAJECTORY_VERSION, Finding, StepRecord, Trajectory

META_NAME = "_run.json"
KNOWN_VERSIONS = (TRAJECTORY_VERSION,)
ACTION_KEYS = ("kind", "command", "path", "content")
FINDING_KEYS = tuple(f.name for f in fields(Finding))
_PART = re.compile(r"part-(\d+)\.parquet")

STEP = pa.struct([
    ("index", pa.int64()), ("reply", pa.string()),
    ("action", pa.struct([(key, pa.string()) for key in ACTION_KEYS])),
    ("observation", pa.string()), ("format_error", pa.string()), ("exit_code", pa.int64()),
    ("timed_out", pa.bool_()), ("stop", pa.string()), ("output_bytes", pa.int64()),
    ("gen_s", pa.float64()), ("env_s", pa.float64()), ("tokens", pa.list_(pa.int64())),
    ("logprobs", pa.list_(pa.float64())), ("prompt_tokens", pa.int64()),
])
FINDING = pa.struct([("kind", pa.string()), ("severity", pa.string()), ("message", pa.string()),
                     ("file", pa.string()), ("line", pa.int64()), ("step", pa.int64())])
TIMING = pa.struct([("phase", pa.string()), ("seconds", pa.float64())])
MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])

_OPTIONAL = {"seed", "family", "error", "reward", "evidence_json"}
SCHEMA = pa.schema([pa.field(name, type_, nullable=name in _OPTIONAL) for name, type_ in [
    ("episode_id", pa.string()), ("task_id", pa.string()), ("policy", pa.string()), ("seed", pa.int64()),
    ("split", pa.string()), ("sample", pa.int64()), ("family", pa.string()), ("ending", pa.string()),
    ("error", pa.string()), ("passed", pa.bool_()), ("reward", pa.float64()), ("started", pa.float64()),
    ("num_steps", pa.int64()), ("prompt", pa.list_(MESSAGE)), ("steps", pa.list_(STEP)), ("findings", pa.list_(FINDING)),
    ("timing", pa.list_(TIMING)), ("components_json", pa.string()), ("evidence_json", pa.string()),
    ("version", pa.int64()),
]])


class StoreError(ValueError):
    """A trajectory that does not fit the store, or a file in the run directory that is not a part."""


class TrajectoryStore:
    """Appends trajectories to one run directory. Safe to share between threads, and two
    stores on one directory (threads or processes) never write the same part."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the run directory {self.directory} ({e.strerror}): choose another "
                             "one, or fix its parent's permissions") from None
        if not os.access(self.directory, os.W_OK):
            raise StoreError(f"the run directory {self.directory} is not writable (read-only, or another "
                             "user's): choose another one, or fix its permissions")

    def write(self, trajectories: list[Trajectory]) -> Path | None:
        """Write one part holding ``trajectories``, atomically; return its path (None if empty)."""
        if not trajectories:
            return None
        try:
            table = pa.Table.from_pylist([_row(t) for t in trajectories], schema=SCHEMA)
        except (pa.ArrowException, OverflowError) as e:
            raise StoreError(f"a trajectory does not fit the store's schema ({e}): check its field types "
                             "against termrl.protocols.Trajectory") from None
        for name in SCHEMA.names:
            if name not in _OPTIONAL and table.column(name).null_count:
                raise StoreError(f"Trajectory.{name} is None in a trajectory, and only "
                                 f"{', '.join(sorted(_OPTIONAL))} may be")
        with _locked(self.directory):
            number = 1 + max((int(m.group(1)) for name in os.listdir(self.directory)
                              if (m := _PART.fullmatch(name))), default=-1)
            path = self.directory / f"part-{number:06d}.parquet"
            try:
                _atomic_write(path, lambda f: pq.write_table(table, f))
            except OSError as e:
                ids = ", ".join(t.episode_id for t in trajectories[:3])
                raise StoreError(f"could not store episode {ids} in {self.directory} ({e.strerror}): the "
                                 f"episodes stored before are intact; free space there (or fix the folder) and "
                                 "run again with --resume") from None
        return path

    def read(self) -> list[Trajectory]:
        return read(self.directory)

    def done_ids(self) -> set[str]:
        return done_ids(self.directory)


def read(directory: str | os.PathLike) -> list[Trajectory]:
    """Every trajectory stored in ``directory``; an episode stored twice keeps its last copy."""
    found: dict[str, Trajectory] = {}
    for path in _parts(Path(directory)):
        for row in _read_part(path).to_pylist():
            trajectory = _trajectory(row)
            found.pop(trajectory.episode_id, None)
            found[trajectory.episode_id] = trajectory
    return list(found.values())


def done_ids(directory: str | os.PathLike) -> set[str]:
    """The episode ids already stored in ``directory`` (reads that column only), for resuming."""
    ids: set[str] = set()
    for path in _parts(Path(directory)):
        ids.update(_read_part(path, ["episode_id"]).column("episode_id").to_pylist())
    return ids


def write_meta(directory: str | os.PathLike, meta: dict) -> None:
    """Record the run's configuration in ``_run.json``, atomically."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    data = (_dumps(meta, "the run's metadata") + "\n").encode()
    _atomic_write(directory / META_NAME, lambda f: f.write(data))


def read_meta(directory: str | os.PathLike) -> dict | None:
    """The configuration ``write_meta`` recorded, or None when the run has none."""
    path = Path(directory) / META_NAME
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StoreError(f"{path} is not JSON ({e}): restore it, or delete it to start the run afresh") from None


# --------------------------------------------------------------------------- rows


def _row(t: Trajectory) -> dict:
    row = {f.name: getattr(t, f.name) for f in fields(Trajectory)}
    for step in t.steps:
        if step.action is not None and sorted(step.action) != sorted(ACTION_KEYS):
            raise StoreError(f"episode {t.episode_id}, step {step.index}: action has keys {sorted(step.action)}, "
                             f"not {list(ACTION_KEYS)}: store Action.to_dict()")
    for finding in t.findings:
        if sorted(finding) != sorted(FINDING_KEYS):
            raise StoreError(f"episode {t.episode_id}: a finding has keys {sorted(finding)}, not "
                             f"{list(FINDING_KEYS)}: store dataclasses.asdict(Finding(...))")
    if any(sorted(m) != ["content", "role"] for m in t.prompt):
        raise StoreError(f"episode {t.episode_id}: prompt messages must have exactly the keys role and content")
    row["steps"] = [{f.name: getattr(step, f.name) for f in fields(StepRecord)} for step in t.steps]
    row["timing"] = [{"phase": phase, "seconds": seconds} for phase, seconds in t.timing.items()]
    row["components_json"] = _dumps(row.pop("components"), f"episode {t.episode_id}: components")
    evidence = row.pop("evidence")
    row["evidence_json"] = None if evidence is None else _dumps(evidence, f"episode {t.episode_id}: evidence")
    row["num_steps"] = len(t.steps)
    return row


def _trajectory(row: dict) -> Trajectory:
    del row["num_steps"]
    components, evidence = row.pop("components_json"), row.pop("evidence_json")
    row["steps"] = [StepRecord(**step) for step in row["steps"]]
    row["timing"] = {entry["phase"]: entry["seconds"] for entry in row["timing"]}
    return Trajectory(**row, components=json.loads(components),
                      evidence=None if evidence is None else json.loads(evidence))


def _dumps(value, what: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise StoreError(f"{what} is not JSON ({e}): store plain dicts, lists, strings and numbers "
                         "(Evidence.to_dict(), not Evidence)") from None


# --------------------------------------------------------------------------- files


def _parts(directory: Path) -> list[Path]:
    """What a Parquet reader of the directory reads: ``*.parquet`` not starting with ``.`` or
    ``_``, parts in number order, then any other such file by name (so that it is reported)."""
    if not directory.is_dir():
        return []
    paths = [p for p in directory.glob("*.parquet") if not p.name.startswith((".", "_"))]

    def order(path: Path) -> tuple:
        m = _PART.fullmatch(path.name)
        return (0, int(m.group(1)), "") if m else (1, 0, path.name)

    return sorted(paths, key=order)


def _read_part(path: Path, columns: list[str] | None = None) -> pa.Table:
    """The part's table (only ``columns`` when given), once its version and schema are checked."""
    not_a_part = (f"move it out of {path.parent} (or delete it) and rerun; parts this store writes appear "
                  "only once complete, so it is a stray file or was damaged after writing")
    try:
        with pq.ParquetFile(path) as part:
            if "version" not in part.schema_arrow.names:
                raise StoreError(f"{path} is not a termrl trajectory part (it has no version column): {not_a_part}")
            unknown = sorted(set(part.read(columns=["version"]).column("version").to_pylist()) - set(KNOWN_VERSIONS))
            if unknown:
                raise StoreError(f"{path} holds trajectories of version {unknown}, and this termrl reads version "
                                 f"{list(KNOWN_VERSIONS)}: read it with the termrl that wrote it, or move it out "
                                 f"of {path.parent}")
            if not part.schema_arrow.equals(SCHEMA):
                raise StoreError(f"{path} has version {TRAJECTORY_VERSION} but not its schema: {not_a_part}")
            return part.read(columns=columns)
    except (pa.ArrowException, OSError) as e:
        raise StoreError(f"{path} is not a readable Parquet file ({e}): {not_a_part}") from None


def _atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through a hidden temp file in the same directory: fsync, rename, fsync the directory."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Held while choosing a part number and writing it: per directory, across threads and processes."""
    with _locks_guard:
        lock = _locks.setdefault(os.path.realpath(directory), threading.Lock())
    with lock, open(directory / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield
