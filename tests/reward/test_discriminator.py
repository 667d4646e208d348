"""The learned discriminator of dishonest diffs (``termrl.reward.discriminator``)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from termrl.checks.labelled_diffs import collect, weak_example
from termrl.protocols import Evidence, Judge
from termrl.reward.discriminator import Discriminator, DiscriminatorJudge, Example, evaluate, fit_examples, split_by_task
from termrl.reward.judge import make_judge
from termrl.sandbox.workspace import diff_text

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


def test_weak_labels_only_train_and_their_weight_counts():
    examples = [Example(f"t{i % 10}", "x", i % 2, "d") for i in range(40)]
    weak = [Example(f"t{i}", "weak:clean", 0, "w", 0.5) for i in range(10)] + [Example("w", "weak:hard_coded", 1, "z", 0.5)]
    train, test = split_by_task(examples + weak, 0.3)
    assert test == [e for e in examples if e.task in {t.task for t in test}]  # the same split as without them
    held = {e.task for e in test}
    assert [e for e in train if e.solution.startswith("weak:")] == [e for e in weak if e.task not in held]
    rng = random.Random(1)
    good = [Example(f"g{i}", "x", 0, honest(rng)) for i in range(30)] + \
        [Example(f"b{i}", "x", 1, dishonest(rng)) for i in range(30)]
    flipped = [Example(e.task, "weak:clean", 1 - e.label, e.diff, 0.0) for e in good]  # weight 0: no say
    model = fit_examples(good + flipped)
    assert evaluate(model, good)["precision"] == 1.0 and evaluate(model, good)["recall"] == 1.0
    with pytest.raises(ValueError, match="one weight per diff"):
        Discriminator.fit(["a", "b"], [0, 1], weights=[1.0])


def call(name: str, **arguments) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def played(task, replies: list[str]):
    from termrl.env import EnvConfig
    from termrl.protocols import Reply
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig, run_episode

    return run_episode(task, 0, "script", lambda turn: Reply(replies[turn.step]),
                       RolloutConfig(env=EnvConfig(max_steps=len(replies))), None, Accountant())


@pytest.mark.sandbox
def test_a_stored_episode_replayed_is_labelled_by_the_detectors():
    swallow = "def add(a, b):\n    try:\n        return a + b\n    except Exception:\n        pass\n"
    cheat = weak_example(played(TASK, [call("write_file", path="add.py", content=swallow), call("submit")]), TASK)
    assert cheat.label == 1 and cheat.solution == "weak:exception_swallowing" and cheat.weight == 0.5
    assert "+    except Exception:" in cheat.diff
    fair = weak_example(played(TASK, [call("write_file", path="add.py", content="def add(a, b):\n    return a + b\n"),
                                      call("submit")]), TASK)
    assert (fair.label, fair.solution) == (0, "weak:clean") and "+    return a + b" in fair.diff
    # failed with no finding: the detectors say nothing either way, so no label
    wrong = played(TASK, [call("write_file", path="add.py", content="def add(a, b):\n    return a - b\n"), call("submit")])
    assert weak_example(wrong, TASK) is None
    # replayed to the same end: an episode cut at its step limit is cut there again
    spam = played(TASK, [call("bash", command="true")] * 3)
    assert spam.ending == "step_limit" and weak_example(spam, TASK) is None  # no diff


@pytest.mark.sandbox
def test_collected_diffs_are_labelled_and_the_judge_names_what_was_touched(tmp_path):
    examples = collect([TASK], {"special": special})
    assert [(e.solution, e.label) for e in examples] == [("reference", 0), ("special", 1)]
    assert "return a + b" in examples[0].diff and "(a, b) == (2, 3)" in examples[1].diff
    model = Discriminator.fit([e.diff for e in examples] * 5, [e.label for e in examples] * 5)
    model.save(tmp_path / "m.json")
    judge = make_judge(f"discriminator:{tmp_path / 'm.json'}")
    assert isinstance(judge, DiscriminatorJudge) and isinstance(judge, Judge)
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


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_the_command_learns_from_a_weak_store_too(tmp_path):
    from termrl.rollout.store import TrajectoryStore
    from termrl.tasks.suites import find_task

    task = find_task("py-function-0")
    TrajectoryStore(tmp_path / "store").write([played(task, [call("bash", command=task.solution), call("submit")])])
    res = subprocess.run([sys.executable, "-m", "termrl", "judge", "discriminator", "--suite", "humaneval:0-3",
                          "--out", str(tmp_path / "m.json"), "--held-out", "0.5", "--weak", str(tmp_path / "store"),
                          "--json"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(res.stdout)
    assert report["weak"] == {"episodes": 1, "labelled": 1, "dishonest": 0, "by_kind": {"weak:clean": 1}}
    assert report["held_out_without_weak"]["examples"] == report["held_out"]["examples"]
    missing = subprocess.run([sys.executable, "-m", "termrl", "judge", "discriminator", "--suite", "humaneval:0-1",
                              "--out", str(tmp_path / "m.json"), "--weak", str(tmp_path / "nowhere")],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 2 and "nowhere: no such directory" in " ".join(missing.stderr.split())
