"""Test-script installs done at prepare time, end to end in real sandboxes: a project's
``npm install`` (from a local tarball: no test downloads), a test file the script copies into
the workdir before running pytest there, and a build that fails naming its task."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from termrl.checks.validate import check_task
from termrl.tasks import envs, npmenv
from termrl.tasks.formats import load_task
from termrl.tasks.suites import Entry

pytestmark = pytest.mark.sandbox

DOCKERFILE = "FROM buildpack-deps:jammy\nWORKDIR /app\nCOPY workspace/ ./\nRUN mkdir -p /tests\nENV TEST_DIR=/tests\n"


def tb_task(root: Path, files: dict[str, str], run_tests: str, solution: str) -> Path:
    """A Terminal-Bench task directory in the aider-polyglot adapters' shape."""
    root.mkdir()
    (root / "task.yaml").write_text("instruction: implement it\ndifficulty: easy\nmax_test_timeout_sec: 120\n")
    (root / "Dockerfile").write_text(DOCKERFILE)
    (root / "run-tests.sh").write_text("#!/bin/bash\nset -Eeuo pipefail\ncd /app\n" + run_tests)
    (root / "solution.sh").write_text("#!/bin/bash\nset -e\n" + solution)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture(scope="module")
def left_pad(tmp_path_factory) -> Path:
    """A tiny npm package, packed into a tarball npm installs offline."""
    src = tmp_path_factory.mktemp("left-pad")
    (src / "package.json").write_text(json.dumps({"name": "left-pad", "version": "1.0.0", "main": "index.js"}))
    (src / "index.js").write_text("module.exports = (s, n) => ' '.repeat(Math.max(0, n - s.length)) + s;\n")
    res = subprocess.run(["npm", "pack", "--pack-destination", str(src)], cwd=src, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return next(src.glob("left-pad-1.0.0.tgz"))


def test_a_test_script_s_npm_install_is_built_once_and_linked_into_the_workdir(tmp_path, left_pad):
    package = {"name": "@exercism/pad", "scripts": {"test": "node $TEST_DIR/pad.test.js"},
               "devDependencies": {"left-pad": f"file:{left_pad}"}}
    root = tb_task(tmp_path / "npm-pad", {
        "workspace/package.json": json.dumps(package),
        "workspace/pad.js": "module.exports = () => { throw new Error('implement me'); };\n",
        "tests/pad.test.js": "const pad = require('/app/pad.js');\n"
                             "if (pad('7', 3) !== '  7') { console.error('wrong'); process.exit(1); }\n"
                             "console.log('ok');\n",
    }, "if [ -f package.json ]; then\n    npm install\nfi\nnode $TEST_DIR/pad.test.js\n",
        "cat > pad.js <<'JS'\nconst leftPad = require('left-pad');\nmodule.exports = (s, n) => leftPad(s, n);\nJS\n")
    task = load_task(root)
    assert task.unsupported is None and set(task.node_project) == {"package.json"}
    built = []
    [entry] = envs.prepare([Entry(task.id, task=task)], built.append)
    assert [(r.kind, r.error) for r in built] == [("npmenv", None)]
    assert (built[0].path / "node_modules" / "left-pad" / "index.js").is_file()
    row = check_task(entry.task)
    assert row.status == "valid", row.reason
    # the same dependencies under another name and scripts: the same environment, not built again
    package.update(name="other", description="another exercise")
    (root / "workspace" / "package.json").write_text(json.dumps(package))
    again = []
    envs.prepare([Entry(task.id, task=load_task(root))], again.append)
    assert again[0].cached and again[0].path == built[0].path


def test_a_test_file_copied_into_the_workdir_is_run_as_a_test(tmp_path):
    root = tb_task(tmp_path / "py-copy", {
        "workspace/leap.py": "def leap_year(year):\n    pass\n",
        "tests/leap_test.py": "from leap import leap_year\n\n\ndef test_2000():\n    assert leap_year(2000) is True\n\n\n"
                              "def test_1900():\n    assert leap_year(1900) is False\n",
    }, "pip3 install --no-cache-dir pytest 2>/dev/null || pip install --no-cache-dir pytest\n"
       'find $TEST_DIR -name "*test*.py" -exec cp {} . \\;\npython3 -m pytest . -v --tb=short\n',
        "cat > leap.py <<'PY'\ndef leap_year(year):\n    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\nPY\n")
    task = load_task(root)
    assert task.unsupported is None and task.python_requirements == ()
    row = check_task(task)
    assert row.status == "valid" and row.reference_passed and not row.nop_passed, row.reason


def test_an_install_that_fails_leaves_its_tasks_unsupported_naming_the_package(tmp_path):
    root = tb_task(tmp_path / "npm-missing", {
        "workspace/package.json": json.dumps({"devDependencies": {"no-such-package-termrl": "^1.0.0"}}),
    }, "npm install\nnpm test\n", "true\n")
    task = load_task(root)
    results = []
    [entry] = envs.prepare([Entry(task.id, task=task)], results.append)
    assert results[0].error and not results[0].path
    assert entry.task.unsupported and "npm" in entry.task.unsupported
    where = npmenv.location(npmenv.files_of(task.node_project))  # nothing half-built that a later run could mount
    assert not where.exists() and not list(where.parent.glob(f"{where.name}.tmp-*"))


def test_a_script_that_edits_its_tests_and_sets_its_own_pythonpath_runs_as_under_docker(tmp_path):
    root = tb_task(tmp_path / "workdir-tests", {
        "workspace/calc.py": "def add(a, b):\n    raise NotImplementedError\n",
        "workspace/unit_tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        "tests/skipped_test.py": "import pytest\n\n\n@pytest.mark.skip  # DISABLED\ndef test_add_more():\n"
                                 "    from calc import add\n    assert add(1, 1) == 2\n",
    }, "sed -i 's/@pytest.mark.skip  # DISABLED//' $TEST_DIR/skipped_test.py\n"
       "cp $TEST_DIR/skipped_test.py unit_tests/\nexport PYTHONPATH=$(pwd)\n"
       "python3 -m pytest unit_tests -v 2>&1 | tee /tmp/out\ngrep -q '2 passed' /tmp/out\n",
        "cat > calc.py <<'PY'\ndef add(a, b):\n    return a + b\nPY\n")
    task = load_task(root)
    row = check_task(task)
    # the workdir's own tests run (not as the agent's code), the script's edit of its tests holds
    # (two tests pass, none skipped), and the harness survives the script's own PYTHONPATH
    assert row.status == "valid" and row.reference_passed and not row.nop_passed, row.reason


def test_a_dockerfile_s_global_npm_install_is_in_the_task_s_system_layer(tmp_path, left_pad):
    root = tb_task(tmp_path / "npm-global", {
        "workspace/pad.js": "module.exports = () => '';\n",
        "tests/check.js": "const pad = require('/app/pad.js');\nprocess.exit(pad('7', 3) === '  7' ? 0 : 1);\n",
    }, "node $TEST_DIR/check.js\n", "echo \"module.exports = require('left-pad');\" > pad.js\n")
    dockerfile = root / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace(
        "WORKDIR", f"RUN npm install -g {left_pad}\nENV NODE_PATH=/usr/lib/node_modules\nWORKDIR"))
    task = load_task(root)
    assert task.system_packages == (f"npm:{left_pad}",)
    built = []
    [entry] = envs.prepare([Entry(task.id, task=task)], built.append)
    assert [(r.kind, r.error) for r in built] == [("sysenv", None)]
    assert (built[0].path / "usr" / "lib" / "node_modules" / "left-pad" / "index.js").is_file()
    assert not Path("/usr/lib/node_modules/left-pad").exists()  # the host's /usr is untouched
    row = check_task(entry.task)
    assert row.status == "valid", row.reason


def test_an_interrupted_build_is_never_mounted_and_the_next_build_clears_it():
    project = (("package.json", json.dumps({"name": "empty", "dependencies": {}}).encode()),)
    where = npmenv.location(project)
    stale = where.with_name(f"{where.name}.tmp-999999")  # what a killed prepare leaves
    (stale / "node_modules").mkdir(parents=True)
    assert npmenv.built(project) is None  # never taken for a built environment
    built = npmenv.build(project)
    assert not stale.exists() and built.path == where and npmenv.built(project) == where
