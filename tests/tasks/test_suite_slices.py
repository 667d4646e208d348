"""Slices of any suite: ``humaneval:0-39``, ``mbpp:test``, ``builtin:0-4``, ``DIR:0-1``, ``builtin:test``."""

from __future__ import annotations

from pathlib import Path

import pytest

from termrl.tasks.suites import SuiteError, resolve

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_positions_slice_any_suite_in_its_order():
    builtin = [e.id for e in resolve("builtin")]
    assert [e.id for e in resolve("builtin:0-4")] == builtin[:5]
    assert [e.id for e in resolve("builtin:7,2,3-4")] == [builtin[7], builtin[2], builtin[3], builtin[4]]
    harbor = [e.id for e in resolve(str(FIXTURES / "harbor"))]
    assert [e.id for e in resolve(f"{FIXTURES / 'harbor'}:1")] == harbor[1:2]


def test_codegen_slices_and_mbpp_splits():
    assert [e.id for e in resolve("humaneval:0-39")] == [f"humaneval-{n}" for n in range(40)]
    test = resolve("mbpp:test")
    ids = [int(e.id.removeprefix("mbpp-")) for e in test]
    assert ids and all(11 <= n <= 510 for n in ids) and len(ids) == len(set(ids))
    every = [int(e.id.removeprefix("mbpp-")) for e in resolve("mbpp")]
    assert len(test) == sum(11 <= n <= 510 for n in every)
    parts = [resolve(f"mbpp:{split}") for split in ("prompt", "test", "validation", "train")]
    assert sum(map(len, parts)) == len(every)  # the four splits cover the set once


def test_split_names_filter_on_task_metadata():
    for split in ("train", "test", "heldout"):
        assert all(e.task.meta.split == split for e in resolve(f"builtin:{split}"))
    assert len(resolve("builtin:train")) + len(resolve("builtin:test")) + len(resolve("builtin:heldout")) == len(
        resolve("builtin"))


def test_bad_slices_say_what_to_write():
    with pytest.raises(SuiteError, match=r"position 999 is past the end; humaneval has 164 tasks \(positions 0-163\)"):
        resolve("humaneval:0-999")
    with pytest.raises(SuiteError, match="expected ranges like 0-99.*or name a split"):
        resolve("builtin:first")
    with pytest.raises(SuiteError, match="after the colon give positions"):
        resolve("builtin:")
    with pytest.raises(SuiteError, match="unknown task family 'nope'.*slice a suite"):
        resolve("nope:0-9")
    assert [e.id for e in resolve("logs-count:heldout:0-1")] == ["logs-count-2000000", "logs-count-2000001"]
    assert [e.id for e in resolve("logs-count:heldout-v1:0-1")] == ["logs-count-1000000", "logs-count-1000001"]


def test_difficulty_slices_and_joined_suites():
    from termrl.tasks.suites import resolve

    easy = resolve("builtin:easy")
    assert easy and all(e.task.meta.difficulty == "easy" for e in easy)
    assert len(easy) < len(resolve("builtin"))
    joined = resolve("logs-count:heldout:0-1+builtin:easy+logs-count:heldout:1")
    assert [e.id for e in joined] == ["logs-count-2000000", "logs-count-2000001", *[e.id for e in easy]]
    with pytest.raises(SuiteError, match="empty part"):
        resolve("builtin:easy+")
    with pytest.raises(SuiteError, match="a difficulty"):
        resolve("builtin:trivial")
