"""System layers: Debian packages the host lacks, unpacked into a hard-linked copy of the host's
/usr and a copy of /etc, mounted as the sandbox's own, never touching the host's files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from termrl.checks.validate import check_task
from termrl.protocols import SetupError
from termrl.tasks import envs, sysenv
from termrl.tasks.formats.harbor import load_harbor
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import Entry

from .conftest import HARBOR_DIR, copy_fixture
from .debs import make_deb

TOOL = "termrl-demo-tool"
HOST_FILE = "/usr/share/common-licenses/GPL-3"
"""A file of the host's /usr the package replaces in its layer: the host's must stay as it is."""


def task_needing(tmp_path, package: str):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"\nRUN apt-get update && apt-get install -y {package}\n")
    tests = root / "tests" / "test_outputs.py"
    tests.write_text(tests.read_text() + f"\n\ndef test_the_tool_is_there():\n    import subprocess\n"
                                         f"    out = subprocess.run(['{TOOL}'], capture_output=True, text=True)\n"
                                         f"    assert out.stdout == '42\\n'\n")
    return load_harbor(root)


@pytest.fixture(scope="module")
def deb():
    folder = Path(os.environ["TERMRL_APT_DEBS"])
    return make_deb(folder, TOOL, "1.0", {
        f"/usr/bin/{TOOL}": ("#!/bin/sh\ncat /usr/share/termrl-demo/answer\n", 0o755),
        "/usr/share/termrl-demo/answer": ("42\n", 0o644),
        "/etc/termrl-demo.conf": ("answer = 42\n", 0o644),
        HOST_FILE: ("replaced in the layer only\n", 0o644),
    })


def test_apt_lines_become_system_packages_and_nothing_runs_before_they_are_built(tmp_path):
    task = task_needing(tmp_path, TOOL)
    assert task.unsupported is None and task.system_packages == (TOOL,)
    with pytest.raises(SetupError, match="system layer .*not built: run `termrl tasks prepare"):
        open_sandbox(task)


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_a_built_layer_is_the_sandbox_s_system_and_the_host_s_stays_untouched(tmp_path, deb):
    host_before = Path(HOST_FILE).read_bytes()
    task = task_needing(tmp_path, TOOL)
    seen = []
    [entry] = envs.prepare([Entry(task.id, task=task)], seen.append)
    [result] = seen
    assert result.kind == "sysenv" and result.error is None and entry.task is task
    manifest = json.loads((result.path / sysenv.MANIFEST).read_text())
    assert manifest["debs"] == [deb.name] and 0 < result.size_bytes < 1 << 20  # host files are links, not bytes
    # the host never sees the package, and its file the package replaced is as it was
    assert not Path(f"/usr/bin/{TOOL}").exists() and Path(HOST_FILE).read_bytes() == host_before
    assert os.stat(result.path / "usr/bin/bash").st_ino == os.stat("/usr/bin/bash").st_ino

    box = open_sandbox(task)
    try:
        res = box.run(["/bin/bash", "-c", f"{TOOL} && cat /etc/termrl-demo.conf && head -1 {HOST_FILE}"])
        assert res.ok and res.stdout.splitlines() == ["42", "answer = 42", "replaced in the layer only"], res.stderr
        assert box.run(["/bin/sh", "-c", f"echo x > /usr/bin/{TOOL}"]).ok is False  # read-only, as the host's
        assert box.run(["python3", "-c", "import pytest"]).ok  # the harness's own python and pytest
    finally:
        box.close()
    assert check_task(task).status == "valid"  # the reference runs, the tests use the tool, nop fails


def test_a_package_that_cannot_be_fetched_makes_the_task_unsupported_naming_it(tmp_path):
    task = task_needing(tmp_path, "termrl-no-such-package")
    results = []
    [entry] = envs.prepare([Entry(task.id, task=task)], results.append)
    assert results[0].missing == "termrl-no-such-package"
    assert "Debian package termrl-no-such-package" in entry.task.unsupported
    assert sysenv.built(task.system_packages) is None


@pytest.mark.sandbox
def test_a_copy_into_etc_is_the_task_s_own_in_its_layer(tmp_path):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\nCOPY RULES.md /etc/termrl-task/rules.md\n")
    task = load_harbor(root)
    assert task.system_packages == () and set(task.system_files) == {"/etc/termrl-task/rules.md"}
    [entry] = envs.prepare([Entry(task.id, task=task)])
    assert entry.task.unsupported is None and not Path("/etc/termrl-task").exists()
    box = open_sandbox(task)
    try:
        res = box.run(["cat", "/etc/termrl-task/rules.md"])
        assert res.ok and res.stdout == (root / "environment" / "RULES.md").read_text()
    finally:
        box.close()
    # another file content is another layer
    (root / "environment" / "RULES.md").write_text("other rules\n")
    assert sysenv.built((), sysenv.files_of(load_harbor(root).system_files)) is None


def test_a_package_of_another_release_gets_its_successor(tmp_path, monkeypatch):
    folder = Path(os.environ["TERMRL_APT_DEBS"])
    make_deb(folder, "openjdk-17-jre-headless", "17.0", {"/usr/bin/termrl-fake-java": ("#!/bin/sh\necho 17\n", 0o755)})
    built = sysenv.build(["openjdk-11-jre-headless"])  # Ubuntu's; Debian 12 has only 17
    manifest = json.loads((built.path / sysenv.MANIFEST).read_text())
    assert manifest["substituted"] == {"openjdk-11-jre-headless": "openjdk-17-jre-headless"}
    assert (built.path / "usr/bin/termrl-fake-java").exists()


def test_layers_that_share_a_package_share_its_files():
    folder = Path(os.environ["TERMRL_APT_DEBS"])
    big = "x" * 50_000 + "\n"
    make_deb(folder, "termrl-shared-lib", "1.0", {"/usr/lib/termrl-shared/data.txt": (big, 0o644)})
    make_deb(folder, "termrl-tool-a", "1.0", {"/usr/bin/termrl-tool-a": ("#!/bin/sh\necho a\n", 0o755)})
    make_deb(folder, "termrl-tool-b", "1.0", {"/usr/bin/termrl-tool-b": ("#!/bin/sh\necho b\n", 0o755)})
    first = sysenv.build(["termrl-shared-lib", "termrl-tool-a"])
    second = sysenv.build(["termrl-shared-lib", "termrl-tool-b"])
    a, b = (layer.path / "usr/lib/termrl-shared/data.txt" for layer in (first, second))
    assert a.read_text() == b.read_text() == big
    assert a.stat().st_ino == b.stat().st_ino  # one file on disk, two layers
    assert second.shared_bytes >= len(big) and first.shared_bytes == 0
    assert not Path("/usr/lib/termrl-shared").exists()
