"""SetupReuse: a task's setup run once, later sandboxes started from a copy of what it left."""

from __future__ import annotations

from dataclasses import replace

import pytest

from termrl.tasks.runtime import SetupReuse
from termrl.tasks.suites import find_task
from termrl.sandbox import workspace

pytestmark = pytest.mark.sandbox


def test_a_git_history_is_built_twice_and_then_copied_whole():
    task = find_task("git-squash-branch")
    with SetupReuse() as setups:
        first, _, second = boxes = [setups.open(task) for _ in range(3)]
        try:
            assert (setups.ran, setups.reused) == (2, 1)
            assert workspace.fingerprint(first) == workspace.fingerprint(second)
            log = "git log --format='%H %at %s' --all | sha256sum && stat -c '%a %Y %n' $(git ls-files) | sha256sum"
            assert first.exec(log).stdout == second.exec(log).stdout  # history, modes, mtimes
            assert second.exec("git status --porcelain").stdout == ""
            # the copy is the agent's to change, as a setup's own files are
            done = second.exec("echo more >> $(git ls-files | head -1) && git -c user.name=a -c user.email=b@c "
                               "commit -qam more && git log --oneline | wc -l")
            assert done.exit_code == 0, done.stderr
            assert int(done.stdout) == int(first.exec("git log --oneline | wc -l").stdout) + 1
        finally:
            for box in boxes:
                box.close()


def test_a_setup_that_stamps_the_time_or_draws_at_random_runs_for_every_sandbox():
    # a commit dated now (git's own clock, in seconds), a random file name
    for setup in ("git init -q . && echo a > f && git add f && git -c user.name=a -c user.email=b@c commit -qm a",
                  "touch file-$RANDOM$RANDOM"):
        setups = _boxes(replace(find_task("git-squash-branch"), setup=[setup]), 4)
        assert (setups.ran, setups.reused) == (4, 0), setup


def _boxes(task, n=3):
    setups = SetupReuse()
    boxes = [setups.open(task) for _ in range(n)]
    for box in boxes:
        box.close()
    setups.close()
    return setups


def test_a_workdir_is_kept_only_once_no_process_is_left_running(monkeypatch):
    from termrl.sandbox.bwrap import BwrapSandbox

    # a setup command's background process dies with the command's own sandbox process...
    task = replace(find_task("git-squash-branch"), setup=["(sleep 600 >/dev/null 2>&1 &)"])
    setups = _boxes(task)
    assert (setups.ran, setups.reused) == (2, 1)
    # ...and should one outlive it (no backend lets one today), every sandbox runs the setup
    monkeypatch.setattr(BwrapSandbox, "stray_processes", lambda self: 1)
    setups = _boxes(task)
    assert (setups.ran, setups.reused) == (3, 0)


def test_settling_waits_for_exiting_processes_only_so_long():
    from termrl.tasks.runtime import _settled

    class Box:
        def __init__(self, counts):
            self.counts = iter(counts)

        def stray_processes(self):
            return next(self.counts, 1)

    assert _settled(Box([1, 1, 0]), 0.5)  # the last command's processes finishing their exit
    assert not _settled(Box([]), 0.05)
    assert not _settled(object())  # a backend that cannot tell


def test_hard_links_are_not_copied_as_two_files():
    task = replace(find_task("git-squash-branch"), setup=["echo a > one && ln one two"])
    setups = _boxes(task)
    assert (setups.ran, setups.reused) == (3, 0)
    fine = _boxes(replace(task, setup=["echo a > one && ln -s one two"]))
    assert (fine.ran, fine.reused) == (2, 1)


def test_tasks_without_setup_open_as_always():
    setups = _boxes(find_task("py-roman-numerals"))
    assert (setups.ran, setups.reused) == (0, 0)


def test_a_failing_setup_fails_each_sandbox_that_tries_it():
    from termrl.protocols import SetupError

    task = replace(find_task("git-squash-branch"), setup=["exit 3"])
    with SetupReuse() as setups:
        for _ in range(3):
            with pytest.raises(SetupError, match="exit 3"):
                setups.open(task)
