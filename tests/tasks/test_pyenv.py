"""Task environments: a Dockerfile's pip installs built once into a cached folder, mounted
read-only for the agent and the tests, never downloaded during an episode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import SetupError
from termrl.tasks import envs, pyenv
from termrl.tasks.formats.harbor import load_harbor
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import Entry

from .conftest import HARBOR_DIR, copy_fixture
from .wheels import make_wheel

PACKAGE = "termrl-demo-stats"
MODULE = "termrl_demo_stats"


def task_needing(tmp_path, requirement: str):
    """The dedupe-contacts Harbor task, whose Dockerfile also pip-installs ``requirement`` and whose
    tests also check the package is importable where they run."""
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"\nRUN pip3 install --no-cache-dir --break-system-packages "
                                                   f"pytest==8.4.1 {requirement}\n")
    tests = root / "tests" / "test_outputs.py"
    tests.write_text(tests.read_text() + f"\n\ndef test_the_environment_is_there():\n"
                                         f"    import {MODULE}\n    assert {MODULE}.ANSWER == 42\n")
    return load_harbor(root)


@pytest.fixture
def wheel(offline_environment_cache):
    return make_wheel(offline_environment_cache, PACKAGE, "1.0", {f"{MODULE}/__init__.py": "ANSWER = 42\n"})


def test_pip_lines_become_the_task_s_requirements_and_nothing_runs_before_they_are_built(tmp_path):
    task = task_needing(tmp_path, f"{PACKAGE}==1.0")
    assert task.unsupported is None
    assert task.python_requirements == (f"{PACKAGE}==1.0",)  # pytest is the sandbox's own
    with pytest.raises(SetupError, match="not built: run `termrl tasks prepare"):
        open_sandbox(task)


@pytest.mark.sandbox
def test_a_built_environment_serves_the_agent_and_the_tests_read_only(tmp_path, wheel):
    task = task_needing(tmp_path, f"{PACKAGE}==1.0")
    seen = []
    [entry] = envs.prepare([Entry(task.id, task=task)], seen.append)
    [first] = seen
    assert entry.task is task and first.tasks == 1 and first.kind == "pyenv" and not first.cached
    manifest = json.loads((first.path / pyenv.MANIFEST).read_text())
    assert manifest["requirements"] == [f"{PACKAGE}==1.0"] and manifest["size_bytes"] > 0

    # the same requirement set, spelt otherwise, is the same environment: built once
    again = pyenv.build(["Termrl_Demo_Stats == 1.0"])
    assert again.cached and again.path == first.path

    box = open_sandbox(task)
    try:
        res = box.run(["python3", "-c", f"import {MODULE}; print({MODULE}.ANSWER, {MODULE}.__file__)"])
        assert res.ok and res.stdout.split()[0] == "42" and res.stdout.split()[1].startswith(pyenv.MOUNT)
        res = box.run(["/bin/sh", "-c", f"echo x > {pyenv.MOUNT}/{MODULE}/__init__.py"])
        assert not res.ok  # the agent cannot change what the tests import
    finally:
        box.close()
    row = check_task(task)  # the reference passes (its tests import the package), doing nothing fails
    assert row.status == "valid", row.reason


def test_a_requirement_pip_cannot_satisfy_makes_the_task_unsupported_naming_it(tmp_path, wheel):
    task = task_needing(tmp_path, f"{PACKAGE}==9.9")
    results = []
    [entry] = envs.prepare([Entry(task.id, task=task)], results.append)
    assert results[0].error and results[0].missing == f"{PACKAGE}==9.9"
    assert f"{PACKAGE}==9.9" in entry.task.unsupported
    assert check_task(entry.task).status == "unsupported"
    assert pyenv.built(task.python_requirements) is None  # a failed build leaves nothing behind


def test_tasks_that_need_nothing_mount_nothing():
    from termrl.tasks.suites import find_task

    task = find_task("shell-count-errors")
    assert task.python_requirements == () and pyenv.binds(task) == {}
    assert pyenv.environment(task) == dict(task.env)


@pytest.mark.sandbox
def test_tasks_prepare_reports_each_environment(tmp_path, wheel):
    task_needing(tmp_path / "a", f"{PACKAGE}==1.0")  # a task directory under a/
    res = subprocess.run([sys.executable, "-m", "termrl", "tasks", "prepare", str(tmp_path / "a"), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    [row] = json.loads(res.stdout)["environments"]
    assert row["contents"] == [f"{PACKAGE}==1.0"] and row["tasks"] == 1 and row["size_bytes"] > 0
    task_needing(tmp_path / "b", f"{PACKAGE}==9.9")
    res = subprocess.run([sys.executable, "-m", "termrl", "tasks", "prepare", str(tmp_path / "b"), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 1 and json.loads(res.stdout)["environments"][0]["missing"] == f"{PACKAGE}==9.9"


def test_requirements_are_canonical():
    assert pyenv.canonical("Scikit_Learn == 1.5") == "scikit-learn==1.5"
    assert pyenv.normalize(["b", "A.b>=1", "a-b>=1", ""]) == ("a-b>=1", "b")


def test_the_cache_keeps_to_its_size_limit_least_recently_used_first(tmp_path, offline_environment_cache,
                                                                     monkeypatch):
    import os

    for version in ("1.0", "2.0", "3.0"):  # nothing in common but their size: no file is shared
        make_wheel(offline_environment_cache, PACKAGE, version,
                   {f"{MODULE}/__init__.py": f"ANSWER = 42  # {version}\n" * 400})
    monkeypatch.setenv("TERMRL_CACHE", str(tmp_path / "cache"))
    old, mid, new = (pyenv.build([f"{PACKAGE}=={v}"]) for v in ("1.0", "2.0", "3.0"))
    assert old.shared_bytes == mid.shared_bytes == new.shared_bytes == 0
    for i, env in enumerate((mid, old, new)):  # mounted in this order: 2.0 longest ago
        os.utime(env.path / pyenv.MANIFEST, (1000 + i, 1000 + i))
    assert [c.path for c in pyenv.cached()] == [mid.path, old.path, new.path]
    size, slack = old.size_bytes, 3 * 1024  # each environment's manifest is on the disk too
    assert 3 * size < pyenv.usage() < 3 * size + slack
    assert pyenv.prune(limit=3 * size + slack) == []  # within the limit: nothing goes
    gone = pyenv.prune(limit=2 * size + slack, keep=[mid.path])  # the oldest is needed by this run: the next goes
    assert [c.path for c in gone] == [old.path] and not old.path.exists() and mid.path.exists()

    monkeypatch.setenv("TERMRL_CACHE_MAX", "1")
    res = subprocess.run([sys.executable, "-m", "termrl", "cache", "prune", "--json"], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0 and 2 * size < json.loads(res.stdout)["freed_bytes"] < 2 * size + slack
    assert pyenv.cached() == [] and pyenv.usage() == 0
    res = subprocess.run([sys.executable, "-m", "termrl", "cache", "prune", "--max-size", "lots"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "--max-size" in res.stderr and "20G" in res.stderr


def test_environments_share_the_files_they_have_in_common_on_disk(tmp_path, offline_environment_cache,
                                                                  monkeypatch):
    big = "".join(f"TABLE_{i} = {i * i}\n" for i in range(4000))  # about 70 KB, the same in both
    make_wheel(offline_environment_cache, "termrl-demo-base", "1.0", {"termrl_demo_base/__init__.py": big})
    make_wheel(offline_environment_cache, "termrl-demo-extra", "1.0",
               {"termrl_demo_extra/__init__.py": "import termrl_demo_base\n" + "# extra\n" * 1000})
    monkeypatch.setenv("TERMRL_CACHE", str(tmp_path / "cache"))
    one = pyenv.build(["termrl-demo-base==1.0"])
    two = pyenv.build(["termrl-demo-base==1.0", "termrl-demo-extra==1.0"])
    # the module and its bytecode (compiled as the sandbox sees it, so the same bytes in both)
    common = [f for f in (one.path / "termrl_demo_base").rglob("*") if f.is_file()]
    assert sorted(f.suffix for f in common) == [".py", ".pyc"]
    assert one.shared_bytes == 0 and two.shared_bytes == sum(f.stat().st_size for f in common)
    assert two.size_bytes >= 8000 and json.loads((two.path / pyenv.MANIFEST).read_text())["shared_bytes"] == \
        two.shared_bytes
    mine, theirs = (env.path / "termrl_demo_base" / "__init__.py" for env in (one, two))
    assert mine.stat().st_ino == theirs.stat().st_ino and mine.stat().st_nlink == 3  # both, and the store
    assert pyenv.usage() < one.size_bytes + two.size_bytes + two.shared_bytes  # one copy on disk, not two
    assert not pyenv.build(["termrl-demo-base==1.0"]).shared_bytes  # a cached build is not linked again

    # the first environment goes; the second keeps its file, whole, and the store keeps it for the next
    assert [c.path for c in pyenv.prune(limit=0, keep=[two.path])] == [one.path]
    assert theirs.read_text() == big and theirs.stat().st_nlink == 2
    make_wheel(offline_environment_cache, "termrl-demo-third", "1.0", {"termrl_demo_third/__init__.py": "X = 3\n"})
    three = pyenv.build(["termrl-demo-base==1.0", "termrl-demo-third==1.0"])
    assert three.shared_bytes >= len(big) and (three.path / "termrl_demo_base" / "__init__.py").stat().st_ino == \
        theirs.stat().st_ino
    pyenv.prune(limit=0)
    assert pyenv.cached() == [] and pyenv.usage() == 0 and not any(pyenv.objects().glob("*/*"))
