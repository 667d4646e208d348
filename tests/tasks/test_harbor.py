"""Harbor / Terminal-Bench 2 task directories (tests/fixtures/harbor)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import SetupError, TaskFile
from termrl.protocols import TestKind as Kind
from termrl.tasks.formats import TaskFormatError, load_task
from termrl.tasks.formats.harbor import is_harbor, load_harbor
from termrl.tasks.formats.native import is_native
from termrl.tasks.runtime import open_sandbox, run_solution
from termrl.tasks.suites import directory_entries
from termrl.verify import verify

from .conftest import HARBOR_DIR, assert_names, copy_fixture

PYTEST_VALID = ["dedupe-contacts", "sqlite-top-customers"]
VALID = PYTEST_VALID + ["rotate-backups"]
UNSUPPORTED = ["convert-currency-report"]


def load(name: str):
    return load_harbor(HARBOR_DIR / name)


def hidden_run(task, solution: str | None):
    """Run ``solution`` (None: do nothing) then the hidden tests, in a fresh sandbox."""
    box = open_sandbox(task)
    try:
        if solution is not None:
            res = run_solution(box, replace(task, solution=solution))
            assert res.ok, res.stdout + res.stderr
        return verify(task, box, static=False)
    finally:
        box.close()


# --------------------------------------------------------------------------- loading


def test_fixture_directory_loads_as_a_suite():
    entries = directory_entries(HARBOR_DIR)
    assert sorted(e.id for e in entries) == sorted(VALID + UNSUPPORTED)
    assert all(e.task is not None for e in entries), [e.error for e in entries]
    assert all(e.task.meta.source == "harbor" for e in entries)


@pytest.mark.parametrize("name", VALID + UNSUPPORTED)
def test_detected_as_harbor_not_native(name):
    root = HARBOR_DIR / name
    assert is_harbor(root)
    assert not is_native(root)  # task.toml + instruction.md, but environment/ makes it Harbor
    task = load_task(root)
    assert task.meta.source == "harbor"
    assert task.id == name
    assert task.workdir == "/app"
    assert task.instruction == (root / "instruction.md").read_text()
    assert task.solution == (root / "solution" / "solve.sh").read_text()


@pytest.mark.parametrize("name", PYTEST_VALID)
def test_standard_test_sh_becomes_pytest(name):
    task = load(name)
    assert task.unsupported is None
    spec = task.test_spec
    assert spec.kind is Kind.PYTEST
    assert spec.pytest_files == ("test_outputs.py",)
    assert spec.tests_dir == "/tests"
    assert spec.cwd == ""
    assert task.tests["test_outputs.py"].data == (HARBOR_DIR / name / "tests" / "test_outputs.py").read_bytes()


def test_dedupe_contacts_fields():
    env_dir = HARBOR_DIR / "dedupe-contacts" / "environment"
    task = load("dedupe-contacts")
    assert task.workspace == {"RULES.md": TaskFile((env_dir / "RULES.md").read_bytes())}
    assert task.extra_files == {"/srv/crm": {"contacts.csv": TaskFile((env_dir / "data" / "contacts.csv").read_bytes())}}
    assert task.setup == ()  # tmux/asciinema installs and the apt lists cleanup are dropped
    assert task.limits.agent_timeout_sec == 900.0
    assert task.limits.verifier_timeout_sec == 120.0
    assert task.limits.memory_mb == 4096  # memory = "4G"
    assert task.meta.difficulty == "medium"
    assert task.meta.category == "data"  # data-processing
    assert task.meta.tags == ("csv", "python", "deduplication")


def test_sqlite_top_customers_fields():
    env_dir = HARBOR_DIR / "sqlite-top-customers" / "environment"
    task = load("sqlite-top-customers")
    assert task.workspace == {"schema.sql": TaskFile((env_dir / "db" / "schema.sql").read_bytes())}
    assert task.extra_files == {"/opt/seed": {"seed.sql": TaskFile((env_dir / "db" / "seed.sql").read_bytes())}}
    # apt-get install of packages the host has is dropped; the database build is a setup command
    assert task.setup == ("sqlite3 shop.db < schema.sql && sqlite3 shop.db < /opt/seed/seed.sql && rm schema.sql",)
    assert task.limits.memory_mb == 1536  # memory_mb = 1536
    assert task.limits.agent_timeout_sec == 600.0
    assert task.limits.verifier_timeout_sec == 90.0
    assert task.meta.difficulty == "easy"
    assert task.meta.category == "data"  # data-science


def test_rotate_backups_is_a_reward_file_task():
    task = load("rotate-backups")
    assert task.unsupported is None
    assert task.test_spec.kind is Kind.REWARD_FILE
    assert task.test_spec.script == "test.sh"
    assert set(task.tests) == {"test.sh"}
    assert task.workspace == {}
    assert sorted(task.extra_files) == ["/var/backups/db"]
    dumps = task.extra_files["/var/backups/db"]
    assert len(dumps) == 15 and "README" in dumps
    assert task.limits.memory_mb == 512  # memory = "512M"
    assert task.limits.verifier_timeout_sec == 60.0
    assert task.meta.category == "shell"  # system-administration


@pytest.mark.parametrize("text,mb", [('"2G"', 2048), ('"512M"', 512), ('"1.5G"', 1536), ('"2Gi"', 2048),
                                     ('"4096MB"', 4096), ("3072", None)])
def test_memory_sizes(tmp_path, text, mb):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    toml = (root / "task.toml").read_text()
    line = f"memory = {text}" if mb else f"memory_mb = {text}"
    (root / "task.toml").write_text(toml.replace('memory = "4G"', line))
    assert load_harbor(root).limits.memory_mb == (mb or 3072)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("name", VALID)
def test_valid_fixture_validates(name):
    row = check_task(load(name))
    assert row.status == "valid", row.reason
    assert row.valid is True
    assert row.reference_passed is True
    assert row.nop_passed is False


def test_reward_file_path_reads_the_number_the_script_wrote():
    task = load("rotate-backups")
    ref = hidden_run(task, task.solution)
    assert ref.verify_error is None, ref.stages["tests"].data["output_tail"]
    assert ref.reward_file == 1.0 and ref.passed
    assert "PASS year-end" in ref.stages["tests"].data["output_tail"]

    nop = hidden_run(task, None)
    assert nop.verify_error is None
    assert nop.reward_file == 0.0 and not nop.passed

    # keeps the 5 newest dumps but forgets the monthly archive: only the 'few' scenario passes
    partial = ('cat > /app/rotate.sh <<\'SH\'\n#!/bin/bash\ncd "$1"\n'
               'ls | grep -E \'^db-[0-9-]{10}\\.sql\\.gz$\' | sort | head -n -5 | while read -r f; do rm "$f"; echo "$f"; done\n'
               'SH\nchmod +x /app/rotate.sh\n')
    part = hidden_run(task, partial)
    assert part.verify_error is None, part.stages["tests"].data["output_tail"]
    assert part.reward_file == pytest.approx(0.33)
    assert not part.passed


def test_reward_json_is_read():
    task = load("rotate-backups")
    script = 'echo \'{"reward": 1.0, "checks": 3}\' > /logs/verifier/reward.json\n'
    run = hidden_run(replace(task, tests={"test.sh": TaskFile.text(script)}), None)
    assert run.verify_error is None and run.reward_file == 1.0 and run.passed


def test_a_script_that_writes_no_reward_is_a_verification_error():
    task = load("rotate-backups")
    run = hidden_run(replace(task, tests={"test.sh": TaskFile.text("echo forgot the reward\n")}), None)
    assert run.verify_error is not None and "reward" in run.verify_error
    assert not run.passed


def test_reward_txt_written_by_bc_is_a_number():
    """BUG: Harbor parses reward.txt with float(); termrl's runtime.judge_reward_file used
    json.loads, which rejects numbers as bc prints them ('.5', no leading zero), so a partial
    score becomes a verification error instead of 0.5."""
    task = load("rotate-backups")
    script = 'echo "scale=2; 1/2" | bc > /logs/verifier/reward.txt\n'
    run = hidden_run(replace(task, tests={"test.sh": TaskFile.text(script)}), None)
    assert run.verify_error is None, run.verify_error
    assert run.reward_file == 0.5


# --------------------------------------------------------------------------- unsupported tasks


def test_network_in_custom_test_sh_is_unsupported():
    task = load("convert-currency-report")
    assert task.test_spec.kind is Kind.REWARD_FILE
    assert task.unsupported is not None
    assert "tests/test.sh" in task.unsupported and "network" in task.unsupported
    assert "curl" in task.unsupported and "ecb.europa.eu" in task.unsupported
    assert task.limits.memory_mb == 2048 and task.limits.verifier_timeout_sec == 300.0


def test_unsupported_fixture_is_never_run(never_run):
    task = load("convert-currency-report")
    row = check_task(task)
    assert row.status == "unsupported"
    assert row.valid is False
    assert row.reason == task.unsupported
    assert row.reference_passed is None and row.nop_passed is None


def test_uvx_with_a_missing_python_package_joins_the_environment(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    script = (root / "tests" / "test.sh").read_text()
    (root / "tests" / "test.sh").write_text(
        script.replace("-w pytest-json-ctrf==0.3.5 \\", "-w pytest-json-ctrf==0.3.5 \\\n  -w pandas==2.3.2 \\"))
    task = load_harbor(root)
    assert task.unsupported is None and task.python_requirements == ("pandas==2.3.2",)
    # the tests' package index holds no pandas: the build fails and names it
    row = check_task(task)
    assert row.status == "unsupported" and "pandas==2.3.2" in row.reason


def test_prebuilt_image_without_dockerfile_is_unsupported(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    (root / "environment" / "Dockerfile").unlink()
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text(toml.replace("[environment]\n",
                                                 '[environment]\ndocker_image = "ghcr.io/example/dedupe:20251031"\n'))
    task = load_harbor(root)
    assert task.unsupported is not None and "docker_image" in task.unsupported


def test_a_debian_package_the_host_lacks_needs_a_system_layer(tmp_path):
    root = copy_fixture(HARBOR_DIR / "sqlite-top-customers", tmp_path)
    dockerfile = (root / "environment" / "Dockerfile").read_text()
    (root / "environment" / "Dockerfile").write_text(dockerfile.replace("sqlite3 python3", "sqlite3 python3 gnucobol3"))
    task = load_harbor(root)
    assert task.unsupported is None and task.system_packages == ("gnucobol3",)
    with pytest.raises(SetupError, match="system layer .*not built"):
        open_sandbox(task)


# --------------------------------------------------------------------------- malformed directories


def test_memory_that_is_not_a_size(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text(toml.replace('memory = "4G"', 'memory = "lots"'))
    with pytest.raises(TaskFormatError, match="lots") as e:
        load_task(root)
    assert_names(e.value, "task.toml", "environment.memory")


def test_agent_timeout_of_the_wrong_type(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text(toml.replace("[agent]\ntimeout_sec = 900.0", '[agent]\ntimeout_sec = "15m"'))
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "task.toml", "agent.timeout_sec")


def test_section_that_is_not_a_table(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    toml = (root / "task.toml").read_text()
    (root / "task.toml").write_text('metadata = "csv"\n' + toml[toml.index("[verifier]"):])
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "task.toml", "metadata")


def test_invalid_toml(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    (root / "task.toml").write_text('version = "1.0"\n[metadata\ndifficulty = "medium"\n')
    with pytest.raises(TaskFormatError, match="not valid TOML") as e:
        load_task(root)
    assert_names(e.value, "task.toml", None)


def test_missing_dockerfile(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    (root / "environment" / "Dockerfile").unlink()
    with pytest.raises(TaskFormatError, match="missing") as e:
        load_task(root)
    assert_names(e.value, "environment/Dockerfile", None)


def test_copy_of_a_file_not_in_the_context(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    (root / "environment" / "RULES.md").unlink()
    with pytest.raises(TaskFormatError, match="not in the build context") as e:
        load_task(root)
    assert_names(e.value, "environment/Dockerfile", "COPY RULES.md")


def test_copy_resolves_against_environment_dir_not_task_dir(tmp_path):
    """The build context of a Harbor task is environment/, not the task directory."""
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    with (root / "environment" / "Dockerfile").open("a") as f:
        f.write("COPY instruction.md /app/instruction.md\n")  # exists in the task dir only
    with pytest.raises(TaskFormatError, match="not in the build context") as e:
        load_task(root)
    assert_names(e.value, "environment/Dockerfile", "COPY instruction.md")


def test_missing_test_sh(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    (root / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "tests/test.sh", None)


def test_missing_instruction(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    (root / "instruction.md").unlink()
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "instruction.md", None)


@pytest.mark.sandbox
def test_a_task_without_a_reference_is_checked_as_far_as_it_can_be(tmp_path):
    # public task collections often ship no solution: the environment must still build and doing
    # nothing must fail the tests cleanly (they ran and failed), or the task is broken
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path / "a")
    (root / "solution" / "solve.sh").unlink()
    row = check_task(load_harbor(root))
    assert row.status == "no_reference" and row.nop_passed is False and not row.valid
    broken = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path / "b")
    (broken / "solution" / "solve.sh").unlink()
    (broken / "tests" / "test_outputs.py").write_text("def test_x(:\n")  # a collection error, not a failure
    row = check_task(load_harbor(broken))
    assert row.status == "invalid" and "collection or usage error" in row.reason


@pytest.mark.sandbox
def test_a_dockerfile_link_to_python_gives_the_task_a_python_command(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    # /opt made by the Dockerfile too: the link folder lies inside a folder of the task's own
    dockerfile.write_text(dockerfile.read_text() + "\nRUN mkdir -p /opt && ln -s /usr/bin/python3 /usr/bin/python\n")
    box = open_sandbox(load_harbor(root))
    try:
        res = box.run(["/bin/bash", "-c", "python -c 'print(6 * 7)'"])
        assert res.ok and res.stdout.strip() == "42", res.stderr
        shell = box.exec("python -c 'import sys; print(sys.version_info[0])'")  # the agent's shell too
        assert shell.stdout.strip() == "3", shell.stderr
    finally:
        box.close()
