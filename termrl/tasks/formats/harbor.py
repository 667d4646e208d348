"""Harbor / Terminal-Bench 2 task directories.

task.toml ([metadata], [agent], [verifier], [environment]), instruction.md,
environment/Dockerfile, solution/solve.sh, tests/test.sh writing
/logs/verifier/reward.txt or reward.json.
"""

from __future__ import annotations

import re
from pathlib import Path

from termrl.protocols import DIFFICULTIES, Limits, Task, TaskFile, TaskMeta, TestKind
from termrl.tasks import sysenv
from termrl.tasks.formats.common import (
    TaskFormatError,
    check_id,
    get,
    load_toml,
    read_text,
    read_tree,
    str_list,
)
from termrl.tasks.formats.docker_env import (
    Environment,
    node_project,
    parse_dockerfile,
    task_files,
    test_spec_for,
    tests_reach_network,
)
from termrl.tasks.formats.terminal_bench import map_category
from termrl.tasks.pyenv import normalize

HARBOR_SECTIONS = ("agent", "verifier", "environment", "metadata", "solution")


def is_harbor(path: Path) -> bool:
    if not (path / "task.toml").is_file():
        return False
    if (path / "environment").is_dir():
        return True
    try:
        data = load_toml(path / "task.toml")
    except TaskFormatError:
        return False
    return any(k in data for k in ("agent", "verifier", "environment"))


def _memory_mb(env_table: dict, file: Path) -> int | None:
    if "memory_mb" in env_table:
        return get(env_table, "memory_mb", int, file, prefix="environment.")
    if "memory" in env_table:
        text = get(env_table, "memory", str, file, prefix="environment.")
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.I)
        if not m:
            raise TaskFormatError(file, "environment.memory", f"expected a size like '2G' or '512M', got {text!r}")
        scale = {"": 1 / (1 << 20), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1 << 20}[m.group(2).upper()]
        return int(float(m.group(1)) * scale)
    return None


def load_harbor(path: Path) -> Task:
    path = Path(path)
    toml_path = path / "task.toml"
    data = load_toml(toml_path)
    tables = {}
    for name in HARBOR_SECTIONS:
        table = data.get(name, {})
        if not isinstance(table, dict):
            raise TaskFormatError(toml_path, name, f"expected a table like [{name}]")
        tables[name] = table
    meta, agent, verifier, environment = (tables[k] for k in ("metadata", "agent", "verifier", "environment"))
    dockerfile = path / "environment" / "Dockerfile"
    unsupported = None
    if dockerfile.is_file():
        env = parse_dockerfile(dockerfile, path / "environment")
        unsupported = env.unsupported
    elif "docker_image" in environment:
        env = Environment()
        unsupported = (f"environment.docker_image = {environment['docker_image']!r}: a prebuilt image "
                       "with no Dockerfile needs Docker")
    else:
        raise TaskFormatError(dockerfile, None, "is missing: expected environment/Dockerfile (WORKDIR, COPY)")
    tests = read_tree(path / "tests")
    test_sh = path / "tests" / "test.sh"
    script = read_text(test_sh, "the verifier script that writes /logs/verifier/reward.txt")
    verifier_env = get(verifier, "env", dict, toml_path, default={}, prefix="verifier.")
    env_pairs = tuple((str(k), str(v)) for k, v in verifier_env.items())
    spec, reason, plan = test_spec_for(script, tests, "tests/test.sh", env_pairs, TestKind.REWARD_FILE,
                                    "test.sh", workspace=env.split()[0])
    unsupported = tests_reach_network(tests) or unsupported or reason
    if plan.script is not None:
        tests = {**plan.tests, "test.sh": TaskFile(plan.script.encode(), tests["test.sh"].mode)}
    memory = _memory_mb(environment, toml_path)
    limits = Limits(
        agent_timeout_sec=get(agent, "timeout_sec", float, toml_path, default=600.0, prefix="agent."),
        verifier_timeout_sec=get(verifier, "timeout_sec", float, toml_path, default=180.0, prefix="verifier."),
        **({"memory_mb": memory} if memory else {}),
    )
    solution = path / "solution" / "solve.sh"
    difficulty = get(meta, "difficulty", str, toml_path, default="medium", prefix="metadata.")
    category = get(meta, "category", str, toml_path, default="other", prefix="metadata.")
    workspace, extra = env.split()
    return Task(
        id=check_id(path.name, path, "directory name"),
        instruction=read_text(path / "instruction.md", "the instruction given to the agent"),
        workspace=workspace,
        workdir=env.workdir,
        extra_files=extra,
        setup=tuple(env.setup),
        env=env.env,
        python_requirements=normalize([*env.python_requirements, *plan.python_requirements]),
        system_packages=sysenv.normalize([*env.system_packages, *plan.system_packages]),
        system_files={**env.system_files(), **task_files(plan)},
        node_project=node_project(plan, workspace),
        substitutions=tuple([*env.substitutions, *plan.substitutions]),
        tests=tests,
        test_spec=spec,
        solution=solution.read_text() if solution.is_file() else None,
        limits=limits,
        meta=TaskMeta(difficulty=difficulty if difficulty in DIFFICULTIES else "medium",
                      category=map_category(category),
                      tags=str_list(meta, "tags", toml_path, prefix="metadata."), source="harbor"),
        unsupported=unsupported,
        path=str(path),
    )
