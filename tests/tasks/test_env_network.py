"""Task environments built from the real package sources: PyPI and Debian's mirror. Opt in with
-m network (``.ci/run`` runs them when both answer); the default tier never downloads."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from termrl.tasks import envs
from termrl.tasks.formats.harbor import load_harbor
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import Entry

from .conftest import HARBOR_DIR, copy_fixture

pytestmark = [pytest.mark.network, pytest.mark.sandbox]


@pytest.fixture
def online(monkeypatch):
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "TERMRL_APT_DEBS"):
        monkeypatch.delenv(name, raising=False)
    cache = Path(tempfile.mkdtemp(prefix="termrl-net-cache-"))
    cache.chmod(0o755)
    monkeypatch.setenv("TERMRL_CACHE", str(cache))
    yield cache
    shutil.rmtree(cache, ignore_errors=True)


def test_a_dockerfile_s_pip_and_apt_installs_build_from_the_real_sources(tmp_path, online):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\nRUN pip3 install --break-system-packages tomli-w==1.0.0\n"
                                                   "RUN apt-get update && apt-get install -y sl\n")
    task = load_harbor(root)
    assert task.python_requirements == ("tomli-w==1.0.0",) and task.system_packages == ("sl",)
    results = []
    [entry] = envs.prepare([Entry(task.id, task=task)], results.append)
    assert [r.error for r in results] == [None, None] and entry.task.unsupported is None
    box = open_sandbox(task)
    try:
        res = box.run(["/bin/bash", "-c", "python3 -c 'import tomli_w; print(tomli_w.dumps({\"a\": 1}))' && "
                                          "test -x /usr/games/sl && echo sl"])
        assert res.ok and res.stdout.split() == ["a", "=", "1", "sl"], res.stderr
    finally:
        box.close()
