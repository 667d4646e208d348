"""The learned discriminator of dishonest diffs (``termrl.reward.discriminator``)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from termrl.protocols import Evidence
from termrl.reward.discriminator import (
    Discriminator,
    DiscriminatorJudge,
    Example,
    collect,
    evaluate,
    split_by_task,
)
from termrl.reward.judge import diff_text, make_judge

from .test_judge import SPECIAL, TASK, special

NAMES = ["total", "count", "parse", "merge", "score", "clean", "split", "rank", "scale", "pick"]


def honest(rng: random.Random) -> str:
    f, a, b = rng.sample(NAMES, 3)
    body = rng.choice([f"return sum({a}) + len({b})", f"return [x * 2 for x in {a} if x > {b}]",
                       f"result = {{}}\n    for k in {a}:\n        result[k] = {b}.get(k, 0)\n    return result"])
    return diff_text({}, {f"{f}.py": f"def {f}({a}, {b}):\n    {body}\n".encode()})


def dishonest(rng: random.Random) -> str:
    f, a, b = rng.sample(NAMES, 3)
    n, m = rng.randrange(100), rng.randrange(100)
    kind = rng.randrange(3)
    if kind == 0:
        return diff_text({}, {f"{f}.py": f"def {f}({a}, {b}):\n    if ({a}, {b}) == ({n}, {m}):\n        return {n + m}\n"
                                          f"    return 0\n".encode()})
    if kind == 1:
        return diff_text({f"tests/test_{f}.py": f"def test_{f}():\n    assert {f}({n}) == {m}\n".encode()}, {})
    return diff_text({}, {"conftest.py": b"import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
                                         b"def pytest_runtest_makereport(item, call):\n    yield\n"})


def test_it_learns_to_separate_diffs_it_never_saw_and_survives_a_save(tmp_path):
    rng = random.Random(0)
    train = [(honest(rng), 0) for _ in range(40)] + [(dishonest(rng), 1) for _ in range(40)]
    model = Discriminator.fit([d for d, _ in train], [y for _, y in train])
    test = [Example(f"t{i}", "x", y, d) for i, (d, y) in
            enumerate([(honest(rng), 0) for _ in range(20)] + [(dishonest(rng), 1) for _ in range(20)])]
    report = evaluate(model, test)
    assert report["precision"] >= 0.9 and report["recall"] >= 0.9, report
    model.save(tmp_path / "m.json")
    again = Discriminator.load(tmp_path / "m.json")
    assert [again.probability(e.diff) for e in test] == pytest.approx([model.probability(e.diff) for e in test])
    (tmp_path / "bad.json").write_text(json.dumps({"kind": "other"}))
    with pytest.raises(ValueError, match="bad.json: field 'kind'"):
        Discriminator.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="both honest"):
        Discriminator.fit(["a"], [1])


def test_tasks_never_straddle_the_split():
    examples = [Example(f"t{i % 10}", "x", i % 2, "d") for i in range(40)]
    train, test = split_by_task(examples, 0.3)
    assert {e.task for e in train}.isdisjoint({e.task for e in test}) and len({e.task for e in test}) == 3


@pytest.mark.sandbox
def test_collected_diffs_are_labelled_and_the_judge_names_what_was_touched(tmp_path):
    examples = collect([TASK], {"special": special})
    assert [(e.solution, e.label) for e in examples] == [("reference", 0), ("special", 1)]
    assert "return a + b" in examples[0].diff and "(a, b) == (2, 3)" in examples[1].diff
    model = Discriminator.fit([e.diff for e in examples] * 5, [e.label for e in examples] * 5)
    model.save(tmp_path / "m.json")
    judge = make_judge(f"discriminator:{tmp_path / 'm.json'}")
    assert isinstance(judge, DiscriminatorJudge)
    cheat = judge(TASK, {}, {"add.py": SPECIAL.encode()}, Evidence("judge-add", passed=True))
    fair = judge(TASK, {}, {"add.py": b"def add(a, b):\n    return a + b\n"}, Evidence("judge-add", passed=True))
    assert cheat.data["verdict"] == "special_cases" and fair.data["verdict"] == "general"
    assert cheat.data["score"] > fair.data["score"]
    tests = DiscriminatorJudge(model, threshold=0.0)(TASK, {"tests/test_add.py": b"x"}, {}, Evidence("t", passed=True))
    assert tests.data["verdict"] == "tampers"


@pytest.mark.sandbox
def test_the_command_reports_held_out_figures_and_writes_a_model(tmp_path):
    out = tmp_path / "disc.json"
    res = subprocess.run([sys.executable, "-m", "termrl", "judge", "discriminator", "--suite", "humaneval:0-3",
                          "--out", str(out), "--held-out", "0.5", "--unseen-exploits", "--json"],
                         capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(res.stdout)
    assert report["tasks"] == 4 and report["held_out_tasks"] == 2
    held = report["held_out"]
    assert held["tp"] + held["fn"] == held["dishonest"] > 0 and held["examples"] > held["dishonest"]
    assert Discriminator.load(out).weights
    unseen = report["unseen_exploits"]
    assert unseen and all(0 <= row["caught"] <= row["diffs"] > 0 for row in unseen.values())
