"""Terminal-Bench v1 task directories (tests/fixtures/terminal_bench)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import SetupError, TaskFile
from termrl.protocols import TestKind as Kind
from termrl.tasks.formats import TaskFormatError, load_task
from termrl.tasks.formats.terminal_bench import is_terminal_bench, load_terminal_bench
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import directory_entries

from .conftest import TB_DIR, assert_names, copy_fixture

VALID = ["log-status-summary", "fix-inventory-valuation"]
UNSUPPORTED = ["sales-report-pandas", "cobol-payroll-report"]


def load(name: str):
    return load_terminal_bench(TB_DIR / name)


# --------------------------------------------------------------------------- loading


def test_fixture_directory_loads_as_a_suite():
    entries = directory_entries(TB_DIR)
    assert sorted(e.id for e in entries) == sorted(VALID + UNSUPPORTED)
    assert all(e.task is not None for e in entries), [e.error for e in entries]
    assert all(e.task.meta.source == "terminal-bench" for e in entries)


@pytest.mark.parametrize("name", VALID + UNSUPPORTED)
def test_detected_as_terminal_bench(name):
    assert is_terminal_bench(TB_DIR / name)
    task = load_task(TB_DIR / name)
    assert task.meta.source == "terminal-bench"
    assert task.id == name
    assert task.path == str(TB_DIR / name)


@pytest.mark.parametrize("name", VALID)
def test_standard_run_tests_becomes_pytest(name):
    task = load(name)
    assert task.unsupported is None
    assert task.workdir == "/app"
    spec = task.test_spec
    assert spec.kind is Kind.PYTEST
    assert spec.pytest_files == ("test_outputs.py",)
    assert spec.tests_dir == "/tests"
    assert dict(spec.env) == {"TEST_DIR": "/tests"}
    assert spec.cwd == ""
    # the harness script itself is not a hidden test: it is replaced by the sandbox's pytest
    assert set(task.tests) == {"test_outputs.py"}
    assert task.tests["test_outputs.py"].data == (TB_DIR / name / "tests" / "test_outputs.py").read_bytes()
    assert task.solution == (TB_DIR / name / "solution.sh").read_text()
    # harness-only installs (tmux, asciinema) and apt-get update leave no setup commands
    assert task.setup == ()


def test_log_status_summary_fields():
    root = TB_DIR / "log-status-summary"
    task = load("log-status-summary")
    assert task.instruction.startswith("The web server's access logs are in /data/logs")
    assert "`<status> <count>`" in task.instruction
    assert task.workspace == {"README.md": TaskFile((root / "README.md").read_bytes())}
    assert set(task.extra_files) == {"/data/logs"}
    logs = task.extra_files["/data/logs"]
    assert set(logs) == {"access.log", "access.log.1", "access.log.2.gz"}
    for name, f in logs.items():
        assert f.data == (root / "logs" / name).read_bytes(), name
    assert logs["access.log.2.gz"].data[:2] == b"\x1f\x8b"  # binary files survive untouched
    assert task.limits.agent_timeout_sec == 300.0
    assert task.limits.verifier_timeout_sec == 60.0
    assert task.meta.difficulty == "easy"
    assert task.meta.category == "shell"  # file-operations
    assert task.meta.tags == ("logs", "text-processing", "awk")


def test_fix_inventory_valuation_fields():
    root = TB_DIR / "fix-inventory-valuation"
    task = load("fix-inventory-valuation")
    assert task.workspace == {"inventory.py": TaskFile((root / "src" / "inventory.py").read_bytes())}
    assert task.extra_files == {"/data": {"stock.csv": TaskFile((root / "data" / "stock.csv").read_bytes())}}
    assert task.limits.agent_timeout_sec == 600.0
    assert task.limits.verifier_timeout_sec == 120.0
    assert task.meta.difficulty == "medium"
    assert task.meta.category == "debug"  # debugging
    assert task.meta.tags == ("python", "csv", "bugfix")


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("name", VALID)
def test_valid_fixture_validates(name):
    row = check_task(load(name))
    assert row.status == "valid", row.reason
    assert row.valid is True
    assert row.reference_passed is True
    assert row.nop_passed is False


def test_hidden_tests_reject_a_naive_solution():
    """awk '{print $9}' miscounts the timed-out requests logged as "-": the tests must notice."""
    task = load("log-status-summary")
    naive = ("zcat -f /data/logs/access.log* | awk '{print $9}' | sort | uniq -c "
             "| sort -k1,1nr -k2,2n | awk '{print $2, $1}' > /app/status_counts.txt\n")
    row = check_task(replace(task, solution=naive))
    assert row.status == "invalid"
    assert row.reference_passed is False
    assert "test_timed_out_requests_are_counted" in row.reason or "FAILED" in row.reason


def test_custom_offline_run_tests_runs_as_script(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "run-tests.sh").write_text(
        "#!/bin/bash\n"
        "# quick check of the first and last lines of the report\n"
        'test "$(head -n 1 /app/status_counts.txt)" = "200 61" || exit 1\n'
        'test "$(tail -n 1 /app/status_counts.txt)" = "301 3"\n')
    task = load_terminal_bench(root)
    assert task.unsupported is None
    assert task.test_spec.kind is Kind.SCRIPT
    assert task.test_spec.script == "run-tests.sh"
    assert "run-tests.sh" in task.tests and "test_outputs.py" in task.tests
    row = check_task(task)
    assert row.valid, row.reason


# --------------------------------------------------------------------------- unsupported tasks


def test_python_packages_in_run_tests_become_the_task_s_environment():
    task = load("sales-report-pandas")
    assert task.unsupported is None
    assert set(task.python_requirements) == {"numpy", "pandas"}  # the sandbox provides pytest itself


def test_a_debian_package_the_host_lacks_joins_the_system_layer():
    task = load("cobol-payroll-report")
    assert task.unsupported is None and task.system_packages == ("gnucobol3",)  # not the harness's tmux
    row = check_task(task)  # the tests' package source holds no gnucobol3: the build fails, naming it
    assert row.status == "unsupported" and "gnucobol3" in row.reason


def test_extra_compose_service_makes_it_unsupported(tmp_path):
    root = copy_fixture(TB_DIR / "fix-inventory-valuation", tmp_path)
    compose = (root / "docker-compose.yaml").read_text()
    (root / "docker-compose.yaml").write_text(
        compose + "  postgres:\n    image: postgres:16\n    environment:\n      - POSTGRES_PASSWORD=secret\n")
    task = load_terminal_bench(root)
    assert task.unsupported is not None and "postgres" in task.unsupported


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_fixture_is_never_run(name, never_run):
    task = load(name)
    row = check_task(task)
    assert row.status == "unsupported"
    assert row.valid is False
    # their environments cannot be built from the tests' (empty) package sources
    assert "cannot be installed" in row.reason and ("pandas" in row.reason or "gnucobol3" in row.reason)
    assert row.reference_passed is None and row.nop_passed is None


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_fixture_cannot_open_a_sandbox(name):
    with pytest.raises(SetupError, match="unsupported|not built"):
        open_sandbox(load(name))


# --------------------------------------------------------------------------- malformed directories


def test_task_yaml_not_yaml(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "task.yaml").write_text("instruction: [Count the status codes\ndifficulty: easy\n")
    with pytest.raises(TaskFormatError, match="not valid YAML") as e:
        load_task(root)
    assert_names(e.value, "task.yaml", None)


def test_task_yaml_not_a_mapping(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "task.yaml").write_text("- instruction: hi\n")
    with pytest.raises(TaskFormatError, match="mapping") as e:
        load_task(root)
    assert_names(e.value, "task.yaml", None)


def test_missing_instruction(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    text = (root / "task.yaml").read_text()
    (root / "task.yaml").write_text(text[text.index("author_email:"):])
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "task.yaml", "instruction")


def test_timeout_of_the_wrong_type(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    text = (root / "task.yaml").read_text()
    (root / "task.yaml").write_text(text.replace("max_agent_timeout_sec: 300.0",
                                                 "max_agent_timeout_sec: five minutes"))
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "task.yaml", "max_agent_timeout_sec")


def test_missing_dockerfile(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "Dockerfile").unlink()
    with pytest.raises(TaskFormatError, match="missing") as e:
        load_task(root)
    assert_names(e.value, "Dockerfile", None)


def test_copy_of_a_file_not_in_the_context(tmp_path):
    root = copy_fixture(TB_DIR / "fix-inventory-valuation", tmp_path)
    (root / "data" / "stock.csv").unlink()
    with pytest.raises(TaskFormatError, match="not in the build context") as e:
        load_task(root)
    assert_names(e.value, "Dockerfile", "COPY data/stock.csv")


def test_missing_run_tests(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "run-tests.sh").unlink()
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert_names(e.value, "run-tests.sh", None)


def test_unknown_dockerfile_instruction(tmp_path):
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    with (root / "Dockerfile").open("a") as f:
        f.write("RUNN echo typo\n")
    with pytest.raises(TaskFormatError, match="RUNN") as e:
        load_task(root)
    assert_names(e.value, "Dockerfile", None)


# --------------------------------------------------------------------------- Dockerfile COPY semantics


def test_copy_into_workdir_with_dot(tmp_path):
    """BUG: `COPY notes.txt .` (the usual `COPY requirements.txt .`) must put notes.txt in the
    workdir. docker_env._copy treats '.' (normalised to '/app') as a *file* destination and
    records a file named 'app' in the directory '/', i.e. extra_files == {'/': {'app': ...}}."""
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "notes.txt").write_text("remember the 408s\n")
    with (root / "Dockerfile").open("a") as f:
        f.write("COPY notes.txt .\n")
    task = load_task(root)
    assert sorted(task.extra_files) == ["/data/logs"]
    assert sorted(task.workspace) == ["README.md", "notes.txt"]
    assert task.workspace["notes.txt"] == TaskFile(b"remember the 408s\n")


def test_copy_into_existing_workdir_without_trailing_slash(tmp_path):
    """BUG (same cause): `COPY notes.txt /app` where /app is the WORKDIR, an existing directory,
    copies notes.txt into it in Docker; the loader writes a file called 'app' into '/'."""
    root = copy_fixture(TB_DIR / "log-status-summary", tmp_path)
    (root / "notes.txt").write_text("remember the 408s\n")
    with (root / "Dockerfile").open("a") as f:
        f.write("COPY notes.txt /app\n")
    task = load_task(root)
    assert sorted(task.extra_files) == ["/data/logs"]
    assert sorted(task.workspace) == ["README.md", "notes.txt"]


def test_copy_of_a_directory_below_the_workdir_goes_to_the_workspace(tmp_path):
    """BUG: `COPY src/ /app/src/` yields extra_files['/app/src'] instead of workspace['src/...'];
    Task.extra_files is documented as COPY targets *outside* the workdir, and every consumer of
    task.workspace (dump_native, listings of what the agent starts with) misses those files."""
    root = copy_fixture(TB_DIR / "fix-inventory-valuation", tmp_path)
    (root / "src" / "helpers.py").write_text("CENT = 0.01\n")
    dockerfile = (root / "Dockerfile").read_text()
    (root / "Dockerfile").write_text(dockerfile.replace("COPY src/inventory.py /app/inventory.py",
                                                        "COPY src/ /app/src/"))
    task = load_task(root)
    assert sorted(task.extra_files) == ["/data"]
    assert set(task.workspace) == {"src/inventory.py", "src/helpers.py"}


def test_env_and_setup_from_dockerfile(tmp_path):
    root = copy_fixture(TB_DIR / "fix-inventory-valuation", tmp_path)
    with (root / "Dockerfile").open("a") as f:
        f.write("ENV INVENTORY_CURRENCY=EUR LC_ALL=C.UTF-8\n"
                "RUN mkdir -p /app/reports && cp /data/stock.csv /app/reports/stock-snapshot.csv\n")
    task = load_task(root)
    assert task.env == {"INVENTORY_CURRENCY": "EUR", "LC_ALL": "C.UTF-8"}
    assert task.setup == ("mkdir -p /app/reports && cp /data/stock.csv /app/reports/stock-snapshot.csv",)
    row = check_task(task)  # the setup command runs in the sandbox before the agent
    assert row.valid, row.reason
