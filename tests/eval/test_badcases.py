"""Bad cases: grouping by (error class, first failure), ordering, examples, and the renderings."""

from __future__ import annotations

from termrl.eval.badcases import bad_cases, first_failure, render_bad_cases, render_summary
from termrl.eval.metrics import summarize
from termrl.protocols import StageResult

from . import TESTS_FILE, case, episode, evidence, failing, finding, harness_error, passing, unverified


def wrong_at_b_then_c(task_id: str, sample: int, **kw):
    """test_b fails before test_c in file order: test_b is the first failure."""
    tests = [case("test_a"), case("test_b", "failed", message="assert [1, 2] == [1, 2, 3]"),
             case("test_c", "failed", message="assert 0 == 1")]
    return episode(task_id, sample, evidence(task_id, tests), **kw)


def syntax_error(task_id: str, sample: int):
    """The build stage failed and no test ran (collection died on the syntax error)."""
    build = StageResult("build", "failed", data={"python": [{"file": "solution.py", "line": 3}]},
                        error_classes=["syntax"], message="solution.py:3: SyntaxError: invalid syntax")
    tests = StageResult("tests", "failed", data={"kind": "pytest", "collected": 0}, error_classes=["wrong_answer"])
    return episode(task_id, sample, evidence(task_id, [], build=build, tests_stage=tests))


def crashed(task_id: str, sample: int):
    """The tests stage failed with no test report: the agent's code killed the run."""
    tests = StageResult("tests", "failed", data={"kind": "pytest", "output_tail": "collected 3 items\n"
                                                 "Segmentation fault (core dumped)\n\n"},
                        error_classes=["runtime.crash"])
    return episode(task_id, sample, evidence(task_id, [], tests_stage=tests))


def format_errors(task_id: str, sample: int):
    """No stage reports a failure: the episode's ending names what went wrong."""
    ev = evidence(task_id, [], tests_stage=StageResult("tests", "skipped"), classes=[])
    return episode(task_id, sample, ev, ending="format_errors")


def test_first_failure_prefers_the_first_failing_test_then_the_stage_then_the_ending():
    assert first_failure(wrong_at_b_then_c("t", 0)) == (
        f"{TESTS_FILE}::test_b", "AssertionError: assert [1, 2] == [1, 2, 3]")
    assert first_failure(syntax_error("t", 0)) == ("build stage", "solution.py:3: SyntaxError: invalid syntax")
    assert first_failure(crashed("t", 0)) == ("tests stage", "Segmentation fault (core dumped)")
    assert first_failure(format_errors("t", 0)) == ("format_errors", "")


def test_groups_by_class_and_first_failure_largest_first():
    run = ([wrong_at_b_then_c("a", i) for i in range(3)] + [wrong_at_b_then_c("b", 0)]
           + [failing("a", 9)]  # wrong_answer too, but at test_b of another shape: same node id
           + [syntax_error("c", 0), syntax_error("c", 1), crashed("d", 0), format_errors("e", 0)]
           + [passing("a", 10), passing("b", 1)])
    groups = bad_cases(run)
    assert [(g["error_class"], g["first_failure"], g["count"]) for g in groups] == [
        ("wrong_answer", f"{TESTS_FILE}::test_b", 5),
        ("syntax", "build stage", 2),
        ("runtime.crash", "tests stage", 1),  # ties: by class name
        ("unclassified", "format_errors", 1),
    ]
    top = groups[0]
    assert top["group"] == "wrong_answer" and top["tasks"] == ["a", "b"] and top["endings"] == {"submitted": 5}
    assert groups[1]["group"] == "compile"  # syntax is dominant over the tests stage's wrong_answer
    assert groups[3]["endings"] == {"format_errors": 1}


def test_the_dominant_class_decides_the_group():
    tests = [case("test_a", "failed", "IndexError", "list index out of range", "runtime.index"),
             case("test_b", "failed")]
    ep = episode("a", 0, evidence("a", tests))
    assert ep.evidence["error_classes"] == ["runtime.index", "wrong_answer"]
    (group,) = bad_cases([ep])
    assert group["error_class"] == "runtime.index" and group["group"] == "runtime"
    assert group["examples"][0]["message"] == "IndexError: list index out of range"


def test_examples_are_limited_and_carry_message_and_observation_tail():
    long_output = "line\n" * 300 + "AssertionError: the end"
    run = [wrong_at_b_then_c("a", i, observation=long_output) for i in range(7)]
    (group,) = bad_cases(run, limit_per_group=2)
    assert group["count"] == 7 and len(group["examples"]) == 2
    ex = group["examples"][0]
    assert ex["episode_id"] == "a#None#0" and ex["task_id"] == "a"
    assert ex["message"] == "AssertionError: assert [1, 2] == [1, 2, 3]"
    assert len(ex["last_observation"]) == 500 and ex["last_observation"].startswith("…")
    assert ex["last_observation"].endswith("AssertionError: the end")


def test_harness_failures_are_grouped_apart_or_left_out():
    run = [harness_error("a", 0), harness_error("b", 0), unverified("c", 0), failing("a", 1)]
    groups = bad_cases(run)
    assert [(g["error_class"], g["first_failure"], g["count"]) for g in groups] == [
        ("harness", "SandboxError", 2), ("harness", "verification failed", 1),
        ("wrong_answer", f"{TESTS_FILE}::test_b", 1)]
    assert groups[0]["examples"][0]["message"] == "SandboxError: bwrap exited 1"
    assert [g["error_class"] for g in bad_cases(run, harness=False)] == ["wrong_answer"]


def test_no_failure_no_group():
    assert bad_cases([passing("a", 0)]) == []
    assert render_bad_cases([]) == "No failed episodes.\n"


def test_render_bad_cases_is_plain_text():
    text = render_bad_cases(bad_cases([wrong_at_b_then_c("a", 0), syntax_error("c", 0)]))
    assert "\x1b" not in text
    assert "wrong_answer" in text and "build stage" in text and "a#None#0" in text
    assert "SyntaxError: invalid syntax" in text


def test_render_summary_is_plain_text():
    run = ([passing("train-task", 0, split="train"), failing("train-task", 1, split="train"),
            failing("heldout-task", 0, split="heldout",
                    findings=[finding("test_tamper", "high")]), harness_error("heldout-task", 1, split="heldout")])
    text = render_summary(summarize(run, ks=(1, 2)))
    assert "\x1b" not in text
    for needle in ("pass@1", "pass@2", "0.250", "train-task", "heldout-task", "heldout", "test_tamper",
                   "wrong_answer", "harness errors", "note: pass@2 is None"):
        assert needle in text, needle
    assert "spec" not in text
    text = render_summary({**summarize(run, ks=(1, 2)), "reward_scale": "spec staged: -1.4 .. 2.05"})
    assert "(spec staged: -1.4 .. 2.05)" in next(line for line in text.splitlines() if "mean reward" in line)
