"""Terminal-Bench v1 task directories: task.yaml, Dockerfile, solution.sh, run-tests.sh, tests/."""

from __future__ import annotations

from pathlib import Path

import yaml

from termrl.protocols import CATEGORIES, DIFFICULTIES, Limits, Task, TaskFile, TaskMeta, TestKind
from termrl.tasks import sysenv
from termrl.tasks.formats.common import TaskFormatError, check_id, get, read_text, read_tree, str_list
from termrl.tasks.formats.docker_env import (
    node_project,
    parse_dockerfile,
    task_files,
    test_spec_for,
    tests_reach_network,
)
from termrl.tasks.pyenv import normalize

CATEGORY_MAP = {"file-operations": "shell", "file_operations": "shell", "system-administration": "shell",
                "data-science": "data", "data-processing": "data", "software-engineering": "python",
                "debugging": "debug", "security": "other", "version-control": "git",
                "build-systems": "build", "scientific-computing": "python", "games": "other"}


def map_category(category: str) -> str:
    """A Terminal-Bench/Harbor category as one of termrl's categories."""
    if category in CATEGORIES:
        return category
    return CATEGORY_MAP.get(category, "other")


def is_terminal_bench(path: Path) -> bool:
    return (path / "task.yaml").is_file()


def _instruction(data: dict, file: Path) -> str:
    if "instruction" in data:
        return get(data, "instruction", str, file)
    descriptions = data.get("descriptions")
    if isinstance(descriptions, list):
        for d in descriptions:
            if isinstance(d, dict) and d.get("key", "base") == "base" and isinstance(d.get("description"), str):
                return d["description"]
    raise TaskFormatError(file, "instruction", "is required: the text given to the agent")


def _solution(path: Path) -> str | None:
    if (path / "solution.sh").is_file():
        return (path / "solution.sh").read_text()
    sol_yaml = path / "solution.yaml"
    if sol_yaml.is_file():
        steps = yaml.safe_load(sol_yaml.read_text()) or []
        if not isinstance(steps, list):
            raise TaskFormatError(sol_yaml, None, "expected a list of {command: ...} steps")
        cmds = []
        for i, step in enumerate(steps):
            if not isinstance(step, dict) or not isinstance(step.get("command"), str):
                raise TaskFormatError(sol_yaml, f"[{i}].command", "expected a string command")
            cmds.append(step["command"].rstrip("\n"))
        return "\n".join(cmds) + "\n"
    return None


def _compose_problem(path: Path) -> str | None:
    for name in ("docker-compose.yaml", "docker-compose.yml"):
        f = path / name
        if f.is_file():
            data = yaml.safe_load(f.read_text()) or {}
            services = data.get("services") or {}
            if isinstance(services, dict) and len(services) > 1:
                others = ", ".join(s for s in services if s != "client")
                return f"{name}: needs extra service containers ({others}), which need Docker"
    return None


def load_terminal_bench(path: Path) -> Task:
    path = Path(path)
    yaml_path = path / "task.yaml"
    try:
        data = yaml.safe_load(read_text(yaml_path, "the task's YAML")) or {}
    except yaml.YAMLError as e:
        raise TaskFormatError(yaml_path, None, f"is not valid YAML ({e})") from None
    if not isinstance(data, dict):
        raise TaskFormatError(yaml_path, None, "expected a mapping of fields")
    dockerfile = path / "Dockerfile"
    if not dockerfile.is_file():
        raise TaskFormatError(dockerfile, None, "is missing: expected the task's Dockerfile (WORKDIR, COPY)")
    env = parse_dockerfile(dockerfile, path)
    tests = read_tree(path / "tests")
    run_tests = path / "run-tests.sh"
    if not run_tests.is_file():
        raise TaskFormatError(run_tests, None, "is missing: expected the test runner script")
    script = run_tests.read_text()
    unsupported = tests_reach_network(tests) or env.unsupported or _compose_problem(path)
    spec, reason, plan = test_spec_for(script, tests, "run-tests.sh", (("TEST_DIR", "/tests"),),
                                                    TestKind.SCRIPT, "run-tests.sh",
                                    workspace=env.split()[0])
    unsupported = unsupported or reason
    if spec.kind is TestKind.SCRIPT:
        tests = {**plan.tests, "run-tests.sh": TaskFile((plan.script or script).encode(), 0o755)}
    if not tests:
        raise TaskFormatError(path / "tests", None, "is missing or empty: expected the hidden tests")
    difficulty = get(data, "difficulty", str, yaml_path, default="medium")
    category = get(data, "category", str, yaml_path, default="other")
    workspace, extra = env.split()
    return Task(
        id=check_id(path.name, path, "directory name"),
        instruction=_instruction(data, yaml_path),
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
        solution=_solution(path),
        limits=Limits(
            agent_timeout_sec=get(data, "max_agent_timeout_sec", float, yaml_path, default=360.0),
            verifier_timeout_sec=get(data, "max_test_timeout_sec", float, yaml_path, default=60.0),
        ),
        meta=TaskMeta(difficulty=difficulty if difficulty in DIFFICULTIES else "medium",
                      category=map_category(category),
                      tags=str_list(data, "tags", yaml_path), source="terminal-bench"),
        unsupported=unsupported,
        path=str(path),
    )
