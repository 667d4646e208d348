"""A weighted mix of training suites (``tasks.weights``) and fresh tasks each RFT round
(``rft.tasks_per_round``)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from termrl.protocols import Task
from termrl.training.config import ConfigError, load_config
from termrl.training.mix import mix
from termrl.training.run import grpo_tasks, round_tasks, train_tasks

BASE = """
algorithm = "{algorithm}"
output_dir = "{out}"
[model]
tiny = true
[tasks]
train = "py-function:0-99 + logs-count@1:0-9+one-command:0-49"
[tasks.weights]
"py-function:0-99" = 2
"logs-count@1:0-9" = 0.5
[grpo]
steps = 10
num_generations = 2
batch_size = 8
[rft]
tasks_per_round = 30
"""


def config(tmp_path, algorithm="rft", extra=""):
    path = tmp_path / "c.toml"
    path.write_text(BASE.format(algorithm=algorithm, out=tmp_path / "run") + extra)
    return load_config(path)


def _tasks(n, prefix):
    return [Task(id=f"{prefix}{i}", instruction="") for i in range(n)]


def test_every_prefix_of_the_mix_keeps_the_weights_and_a_part_repeats_only_when_spent():
    drawn = mix([("a", 2, _tasks(1000, "a")), ("b", 1, _tasks(5, "b")), ("c", 1, _tasks(1000, "c"))], 400, seed=3)
    for n in (4, 40, 400):
        counts = Counter(t.id[0] for t in drawn[:n])
        assert abs(counts["a"] - n / 2) <= 1 and abs(counts["b"] - n / 4) <= 1 and abs(counts["c"] - n / 4) <= 1
    a = [t.id for t in drawn if t.id[0] == "a"]
    b = [t.id for t in drawn if t.id[0] == "b"]
    assert len(set(a)) == len(a) == 200  # 1000 to draw from: no repeats
    assert set(b[:5]) == {f"b{i}" for i in range(5)} and b[5:10] == b[:5]  # 5 only: each once, then again
    assert [t.id for t in mix([("a", 2, _tasks(1000, "a")), ("b", 1, _tasks(5, "b")),
                               ("c", 1, _tasks(1000, "c"))], 400, seed=3)] == [t.id for t in drawn]


def test_rft_rounds_sample_new_tasks_in_the_config_s_proportions(tmp_path):
    cfg = config(tmp_path)
    rounds = [round_tasks(cfg, i) for i in (1, 2, 3)]
    assert [len(r) for r in rounds] == [30, 30, 30]
    ids = [t.id for r in rounds for t in r]
    families = Counter(t.meta.family for t in rounds[0] + rounds[1] + rounds[2])
    assert families == {"py-function": 51, "one-command": 26, "logs-count": 13}  # 2 : 1 : 0.5 of 90, rounded
    assert len(set(ids)) == 90 - 3  # distinct but for logs-count@1:0-9, whose 10 tasks came round again
    assert all(t.id.startswith("logs-count@1-") for r in rounds for t in r if t.meta.family == "logs-count")
    assert [t.id for t in round_tasks(cfg, 2)] == [t.id for t in rounds[1]]  # a resumed run draws the same


def test_grpo_takes_as_many_tasks_as_its_steps_use(tmp_path):
    cfg = config(tmp_path, "grpo")
    tasks = grpo_tasks(cfg)
    assert len(tasks) == 10 * 8 // 2 and len({t.id for t in tasks}) == 40
    cfg.tasks = dataclasses.replace(cfg.tasks, weights={})
    assert len(grpo_tasks(cfg)) == len(train_tasks(cfg)) == 160  # no weights: the suite, as it was


@pytest.mark.parametrize("weights, message", [
    ('"py-function:0-5" = 1', "'py-function:0-5' is not one of tasks.train's parts"),
    ('"py-function:0-99" = 0', "weight 0.0 must be above 0"),
    ('"py-function:0-99" = "two"', "expected float"),
])
def test_bad_weights_name_the_field_and_the_fix(tmp_path, weights, message):
    path = tmp_path / "c.toml"
    path.write_text(BASE.format(algorithm="rft", out=tmp_path / "run").replace('"py-function:0-99" = 2', weights))
    with pytest.raises(ConfigError, match="tasks.weights") as e:
        load_config(path)
    assert message in str(e.value)
