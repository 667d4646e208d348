"""The test suite needs the sandbox's tools: fail at once, loudly, instead of skipping tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from termrl.sandbox.bwrap import bwrap_path


def pytest_sessionstart(session):
    missing = [name for name, found in (("bubblewrap", bwrap_path()), ("gcc", shutil.which("gcc")),
                                        ("make", shutil.which("make")), ("git", shutil.which("git")))
               if not found]
    if missing:
        raise pytest.UsageError(f"termrl's tests need {', '.join(missing)}: run scripts/setup.sh first")


@pytest.fixture(autouse=True)
def no_warm_sandboxes_left():
    """Sandboxes started ahead (``termrl.sandbox.warm``) by one test are never another test's:
    tests that count this process's sandboxes see only their own."""
    yield
    from termrl.sandbox.warm import close_shared

    close_shared()


@pytest.fixture(scope="session", autouse=True)
def offline_environment_cache(tmp_path_factory):
    """Task environments (``termrl.tasks.pyenv``, ``termrl.tasks.sysenv``) build into a private
    cache, from local folders only: no test downloads a package, and none finds one a previous run
    left behind. A test that builds one puts its wheels in ``PIP_FIND_LINKS``'s folder
    (``tests/tasks/wheels.py``), its .debs in ``TERMRL_APT_DEBS``'s, its npm packages as local tarballs."""
    import os

    import tempfile

    from termrl.tasks.pyenv import cache_root

    built = cache_root() / "llama.cpp"  # a tool, not an environment: the realmodel tier uses the machine's build
    if "TERMRL_LLAMA_CPP" not in os.environ and (built / "build" / "bin" / "llama-server").is_file():
        os.environ["TERMRL_LLAMA_CPP"] = str(built)
    links = tmp_path_factory.mktemp("wheels")
    # not under pytest's private temp dir: a sandbox run as nobody must reach the cache
    cache = Path(tempfile.mkdtemp(prefix="termrl-test-cache-"))
    cache.chmod(0o755)
    debs = tmp_path_factory.mktemp("debs")
    saved = {k: os.environ.get(k) for k in ("TERMRL_CACHE", "PIP_NO_INDEX", "PIP_FIND_LINKS", "TERMRL_APT_DEBS",
                                            "npm_config_offline")}
    os.environ.update(TERMRL_CACHE=str(cache), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links), TERMRL_APT_DEBS=str(debs),
                      npm_config_offline="true")  # npm installs from local tarballs only
    yield links
    shutil.rmtree(cache, ignore_errors=True)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
