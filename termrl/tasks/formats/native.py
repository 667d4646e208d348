"""The native task format: task.toml, instruction.md, workspace/, tests/, solution/solve.sh.

See docs/task-format.md for the fields.
"""

from __future__ import annotations

import json
from pathlib import Path

from termrl.protocols import CATEGORIES, DIFFICULTIES, SPLITS, Limits, Task, TaskMeta, TestKind, TestSpec
from termrl.tasks.formats.common import (
    TaskFormatError,
    check_id,
    get,
    load_toml,
    read_text,
    read_tree,
    str_list,
)

FORMAT_VERSION = 1
LIMIT_FIELDS = {"agent_timeout_sec": float, "verifier_timeout_sec": float, "memory_mb": int,
                "max_steps": int, "pids": int, "disk_mb": int}


def is_native(path: Path) -> bool:
    return (path / "task.toml").is_file() and (path / "instruction.md").is_file() \
        and not (path / "environment").is_dir()


def load_limits(table: dict, file: Path, prefix: str = "limits.") -> Limits:
    unknown = set(table) - set(LIMIT_FIELDS)
    if unknown:
        raise TaskFormatError(file, f"{prefix}{sorted(unknown)[0]}",
                              f"is not a limit; known limits: {', '.join(LIMIT_FIELDS)}")
    values = {k: get(table, k, kind, file, prefix=prefix) for k, kind in LIMIT_FIELDS.items()
              if k in table}
    for k, v in values.items():
        if not 0 < v < float("inf"):
            raise TaskFormatError(file, f"{prefix}{k}", f"expected a positive finite number, got {v}")
    return Limits(**values)


def load_native(path: Path) -> Task:
    path = Path(path)
    toml_path = path / "task.toml"
    data = load_toml(toml_path)
    version = get(data, "version", int, toml_path)
    if version != FORMAT_VERSION:
        raise TaskFormatError(toml_path, "version", f"expected {FORMAT_VERSION}, got {version}")
    task_id = check_id(get(data, "id", str, toml_path, default=path.name), toml_path)
    workdir = get(data, "workdir", str, toml_path, default="/workspace")
    if not workdir.startswith("/") or workdir == "/":
        raise TaskFormatError(toml_path, "workdir", f"expected an absolute directory like /workspace, got {workdir!r}")
    setup = data.get("setup", {})
    tests_table = data.get("tests", {})
    for name, table in (("setup", setup), ("tests", tests_table), ("limits", data.get("limits", {}))):
        if not isinstance(table, dict):
            raise TaskFormatError(toml_path, name, "expected a table like [" + name + "]")
    kind = get(tests_table, "kind", str, toml_path, default="pytest", prefix="tests.",
               choices=("pytest", "script"))
    tests = read_tree(path / "tests")
    if not tests:
        raise TaskFormatError(path / "tests", None, "is missing or empty: expected the hidden tests "
                                                    "(test_*.py files, or a script)")
    spec = TestSpec(kind=TestKind(kind))
    if kind == "script":
        script = get(tests_table, "script", str, toml_path, prefix="tests.")
        if script not in tests:
            raise TaskFormatError(toml_path, "tests.script", f"expected a file in tests/, got {script!r}")
        spec = TestSpec(kind=TestKind.SCRIPT, script=script)
    elif not any(Path(p).name.startswith("test") and p.endswith(".py") for p in tests):
        raise TaskFormatError(path / "tests", None, "expected at least one test_*.py file for kind 'pytest'")
    solution_path = path / "solution" / "solve.sh"
    return Task(
        id=task_id,
        instruction=read_text(path / "instruction.md", "the instruction given to the agent"),
        workspace=read_tree(path / "workspace"),
        workdir=workdir,
        setup=str_list(setup, "commands", toml_path, prefix="setup."),
        tests=tests,
        holdout_tests=read_tree(path / "holdout"),
        test_spec=spec,
        solution=solution_path.read_text() if solution_path.is_file() else None,
        limits=load_limits(data.get("limits", {}), toml_path),
        meta=TaskMeta(
            family=get(data, "family", str, toml_path, default=""),
            difficulty=get(data, "difficulty", str, toml_path, default="medium", choices=DIFFICULTIES),
            category=get(data, "category", str, toml_path, default="other", choices=CATEGORIES),
            tags=str_list(data, "tags", toml_path),
            split=get(data, "split", str, toml_path, default="train", choices=SPLITS),
            source="native",
        ),
        path=str(path),
    )


def dump_native(task: Task, path: Path) -> Path:
    """Write ``task`` as a native task directory (e.g. a family variant, to edit by hand).

    Raises ``ValueError`` for a task the native format cannot express (files
    outside the workdir, task environment variables, reward-file tests, a test
    run with its own environment, files or directory), rather than writing a
    different task.
    """
    spec = task.test_spec
    lost = [name for name, present in (
        ("extra_files", task.extra_files), ("env", task.env), ("test_spec.env", spec.env),
        ("test_spec.pytest_files", spec.pytest_files), ("test_spec.cwd", spec.cwd),
        ("reward-file tests", spec.kind is TestKind.REWARD_FILE),
        ("test_spec.tests_dir", spec.tests_dir != "/tests")) if present]
    if lost:
        raise ValueError(f"task {task.id} cannot be written in the native format: it uses {', '.join(lost)}")
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)

    def q(s: str) -> str:
        return json.dumps(s, ensure_ascii=False)  # a TOML basic string; no surrogate escapes

    lines = [f"version = {FORMAT_VERSION}", f"id = {q(task.id)}", f"category = {q(task.meta.category)}",
             f"difficulty = {q(task.meta.difficulty)}", f"split = {q(task.meta.split)}",
             f"tags = [{', '.join(q(t) for t in task.meta.tags)}]", f"workdir = {q(task.workdir)}"]
    if task.meta.family:
        lines.append(f"family = {q(task.meta.family)}")
    lines += ["", "[setup]", f"commands = [{', '.join(q(c) for c in task.setup)}]", "", "[limits]"]
    for k in LIMIT_FIELDS:
        lines.append(f"{k} = {getattr(task.limits, k)}")
    if task.test_spec.kind is TestKind.SCRIPT:
        lines += ["", "[tests]", 'kind = "script"', f"script = {q(task.test_spec.script)}"]
    (path / "task.toml").write_text("\n".join(lines) + "\n")
    (path / "instruction.md").write_text(task.instruction)
    for sub, files in (("workspace", task.workspace), ("tests", task.tests), ("holdout", task.holdout_tests)):
        for rel, f in files.items():
            target = path / sub / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.data)
            target.chmod(f.mode)
    if task.solution is not None:
        (path / "solution").mkdir(exist_ok=True)
        (path / "solution" / "solve.sh").write_text(task.solution)
    return path
