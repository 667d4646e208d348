"""Which tasks a train run gets from its suites: every task that can run here, and why the others cannot."""

from __future__ import annotations

import dataclasses

import pytest

from termrl.tasks import envs
from termrl.tasks.suites import Entry, find_task
from termrl.training import run


def entries_with(monkeypatch, unsupported: dict[str, str]):
    tasks = [find_task("shell-count-errors"), find_task("py-roman-numerals")]
    entries = [Entry(t.id, task=dataclasses.replace(t, unsupported=unsupported.get(t.id))) for t in tasks]
    monkeypatch.setattr(run, "resolve", lambda suite: entries)
    monkeypatch.setattr(envs, "prepare", lambda given: given)


def test_a_task_that_cannot_run_here_is_skipped_and_named(monkeypatch, capsys):
    entries_with(monkeypatch, {"py-roman-numerals": "environment: pip cannot install nosuchpkg"})
    assert [t.id for t in run._tasks("S")] == ["shell-count-errors"]
    said = capsys.readouterr().err
    assert "suite S: skipping py-roman-numerals, which cannot run here: environment: pip cannot install" in said


def test_a_suite_none_of_whose_tasks_can_run_is_an_error(monkeypatch):
    entries_with(monkeypatch, {"py-roman-numerals": "needs the network", "shell-count-errors": "needs docker"})
    with pytest.raises(ValueError, match=r"suite 'S': none of its 2 tasks can run here \(each said above\)"):
        run._tasks("S")
