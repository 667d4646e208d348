"""Held-out templates of the logs-count family: ``heldout`` seeds ask kinds of count that no
train seed asks (severity at or above a level, an HTTP status class, a whole word in the message,
an hour window, distinct services), about log formats no train seed uses; train and
``heldout-v1`` seeds draw only the train templates."""

from __future__ import annotations

import functools
import gzip
import re

import pytest

from termrl.checks.validate import check_task
from termrl.tasks.families import FAMILIES
from termrl.tasks.families._common import hidden_config

pytestmark = pytest.mark.filterwarnings("ignore")

FAMILY = FAMILIES["logs-count"]
HELDOUT = range(2_000_000, 2_000_200)
TRAIN_FORMATS = {"bracket", "delim", "kv", "syslog", "json"}


@functools.cache
def drawn() -> dict[int, str]:
    """``{heldout seed: its template}`` (a seed draws the same template at every level; level 1
    generates fastest)."""
    return {s: FAMILY.generate(s, 1).meta.template for s in HELDOUT}


def seeds_of(template: str) -> list[int]:
    return [s for s, t in drawn().items() if t == template]


def seed_of(template: str) -> int:
    return seeds_of(template)[0]


def main_log(task) -> str:
    return task.instruction.split("`")[1]


def lines(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def reference(task):
    """The reference solution's script, loaded here: ``(parse, wanted, ANSWER)``."""
    source = task.solution.split("<<'TERMRL_EOF'\n", 1)[1].split("\nTERMRL_EOF\n", 1)[0]
    ns: dict = {}
    exec(source.removesuffix("\nmain()"), ns)  # noqa: S102 - the reference solution generated here
    return ns["parse"], ns["wanted"], ns["ANSWER"]


def run_reference(task, text: str) -> int:
    parse, wanted, answer = reference(task)
    return answer([r for r in map(parse, lines(text)) if r is not None and wanted(r)])


def sloppy(task, text: str) -> int:
    """What a grep over whole lines answers: the asked-for value anywhere in the line, or (for
    distinct services) the number of records instead of services."""
    parse, wanted, _ = reference(task)
    kind, ls, say = task.meta.template, lines(text), task.instruction
    if kind == "distinct_services":
        return sum(1 for r in map(parse, ls) if r is not None and wanted(r))
    if kind == "hour_range":
        return sum(1 for line in ls
                   if any(wanted({"hour": int(h)}) for h in re.findall(r"(\d\d):\d\d", line)))
    if kind == "status_class":
        digits = "".join(d for d in "245" if f"`{d}xx`" in say)
        return sum(1 for line in ls if re.search(rf"\b[{digits}]\d\d\b", line))
    if kind == "message_word":
        word = say.split("contains the word `")[1].split("`")[0]
        return sum(1 for line in ls if re.search(rf"\b{word}\b", line, re.IGNORECASE))
    order = re.findall(r"`([^`]+)`", say.split("levels are ")[1].split(". A level")[0])
    severe = order[order.index(say.split("level is `")[1].split("`")[0]):]
    return sum(1 for line in ls if any(re.search(rf"\b{x}\b", line) for x in severe))


def test_splits_draw_their_own_templates():
    assert len(FAMILY.heldout_templates) >= 4
    assert not set(FAMILY.train_templates) & set(FAMILY.heldout_templates)
    assert set(drawn().values()) == set(FAMILY.heldout_templates)
    for level, seeds in ((2, HELDOUT[:40]), (3, HELDOUT[:10])):
        held = [FAMILY.generate(s, level) for s in seeds]
        assert [t.meta.template for t in held] == [drawn()[s] for s in seeds]
        assert {t.meta.tags[3] for t in held} <= {"logfmt", "csv", "ltsv"}
    for seeds in (range(200), range(1_000_000, 1_000_040)):
        train = [FAMILY.generate(s) for s in seeds]
        assert {t.meta.template for t in train} <= set(FAMILY.train_templates)
        assert {t.meta.tags[3] for t in train} <= TRAIN_FORMATS


@pytest.mark.parametrize("template", FAMILY.heldout_templates)
def test_a_seed_keeps_its_scenario_across_levels(template):
    tasks = [FAMILY.generate(seed_of(template), level) for level in (1, 2, 3)]
    assert len({(main_log(t), t.meta.tags[3], t.meta.template, hidden_config(t)["script"])
                for t in tasks}) == 1


@pytest.mark.parametrize("template", FAMILY.heldout_templates)
@pytest.mark.parametrize("level", [1, 2, 3])
def test_reference_script_answers_every_hidden_log(template, level):
    task = FAMILY.generate(seed_of(template), level)
    for case in hidden_config(task)["cases"]:
        assert run_reference(task, case["text"]) == case["count"], case["id"]
    if level < 3:
        workspace_log = task.workspace[main_log(task)].data.decode()
        assert run_reference(task, workspace_log) == hidden_config(task)["expected"]


@pytest.mark.parametrize("template", FAMILY.heldout_templates)
def test_a_whole_line_grep_fails_a_hidden_log(template):
    for seed in seeds_of(template)[:3]:
        task = FAMILY.generate(seed)
        assert any(sloppy(task, c["text"]) != c["count"] for c in hidden_config(task)["cases"]), seed


@pytest.mark.parametrize("template", FAMILY.heldout_templates)
def test_level_1_is_a_skeleton_and_level_3_joins_rotated_logs(template):
    one, two, three = (FAMILY.generate(seed_of(template), level) for level in (1, 2, 3))
    script = hidden_config(one)["script"]
    stub = one.workspace[script]
    assert stub.mode == 0o755 and "raise NotImplementedError" in stub.data.decode()
    func = "counted_service" if template == "distinct_services" else "counts"
    assert f"`{func}(line)`" in one.instruction
    assert script not in two.workspace
    ids = [{c["id"] for c in hidden_config(t)["cases"]} for t in (one, two, three)]
    assert ids[0] == {"random0", "random1", "empty_log"} and ids[0] < ids[1] < ids[2]
    assert {"crlf_line_endings", "two_logs_joined", "large_log"} <= ids[2]
    log = main_log(three)
    assert b"\r\n" in three.workspace[log + ".1"].data
    assert gzip.decompress(three.workspace[log + ".2.gz"].data).count(b"\n") >= 150
    assert set(hidden_config(three)["left_alone"]) == set(three.workspace)
    assert "gzip -dc" in three.solution and "taken\ntogether as one log" in three.instruction


@pytest.mark.parametrize("template,level", [(t, 1 + i % 3) for i, t in enumerate(FAMILY.heldout_templates)])
def test_heldout_templates_are_valid_tasks(template, level):
    row = check_task(FAMILY.generate(seed_of(template), level))
    assert row.valid, row.reason


@pytest.mark.slow
@pytest.mark.parametrize("template", FAMILY.heldout_templates)
@pytest.mark.parametrize("level", [1, 2, 3])
def test_every_heldout_template_is_valid_at_every_level(template, level):
    row = check_task(FAMILY.generate(seed_of(template), level))
    assert row.valid, row.reason
