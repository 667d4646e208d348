"""Evaluation tests, on hand-built trajectories whose evidence is a real ``Evidence.to_dict()``.

The builders below make one episode of a task the way the rollout runner records it.
"""

from __future__ import annotations

from termrl.protocols import Evidence, StageResult, StepRecord, TestCase, Trajectory

TESTS_FILE = "/tests/test_outputs.py"


def case(name: str, outcome: str = "passed", exc: str = "", message: str = "", cls: str | None = None,
         holdout: bool = False) -> TestCase:
    """One test outcome; a failed one without a class is a wrong answer (an AssertionError)."""
    failed = outcome in ("failed", "error")
    if failed and not exc:
        exc, message = "AssertionError", message or "assert 2 == 3"
    return TestCase(f"{TESTS_FILE}::{name}", outcome, duration_s=0.01, tags=("core",), exc_type=exc,
                    message=message, error_class=(cls or "wrong_answer") if failed else None, holdout=holdout)


def evidence(task_id: str, tests: list[TestCase], build: StageResult | None = None,
             tests_stage: StageResult | None = None, classes: list[str] | None = None) -> dict:
    """Evidence as ``verify.assemble`` builds it: build -> tests -> quality -> safety."""
    build = build or StageResult("build", "ok", data={"python": [], "c": []})
    failing = [t for t in tests if t.outcome in ("failed", "error")]
    passed = bool(tests) and not failing and build.status == "ok"
    if tests_stage is None:
        tests_stage = StageResult("tests", "ok" if passed else "failed",
                                  data={"kind": "pytest", "collected": len(tests),
                                        "passed": len(tests) - len(failing), "failed": len(failing)},
                                  error_classes=list(dict.fromkeys(t.error_class for t in failing)))
    if classes is None:
        classes = list(dict.fromkeys(build.error_classes + tests_stage.error_classes))
    ev = Evidence(task_id=task_id, passed=passed and tests_stage.status == "ok", tests=tests,
                  error_classes=classes, changed_files=["solution.py"], lines_added=12, lines_removed=3,
                  stages={"build": build, "tests": tests_stage,
                          "quality": StageResult("quality", "ok", data={"ruff": {"count": 0}}),
                          "safety": StageResult("safety", "ok", data={"count": 0})})
    return ev.to_dict()


def finding(kind: str, severity: str = "high") -> dict:
    return {"kind": kind, "severity": severity, "message": f"{kind} suspected", "file": "solution.py",
            "line": 3, "step": 1}


def components(tests: float | None, lint: float | None = None) -> dict:
    return {"tests": {"weight": 1.0, "value": tests, "contribution": None if tests is None else tests},
            "lint": {"weight": -0.1, "value": lint, "contribution": None if lint is None else -0.1 * lint}}


def episode(task_id: str, sample: int, ev: dict | None, *, split: str = "test", reward: float | None = None,
            comps: dict | None = None, findings: list[dict] | None = None, ending: str = "submitted",
            error: str | None = None, observation: str = "ok\n") -> Trajectory:
    """One episode; ``reward`` defaults to 1.0 when the evidence passed, 0.0 when it failed, and None
    without evidence or with an error."""
    passed = bool(ev and ev["passed"])
    if reward is None and ev is not None and error is None and ev["verified"]:
        reward = 1.0 if passed else 0.0
    step = StepRecord(index=0, reply="```bash\npython solution.py\n```",
                      action={"kind": "command", "command": "python solution.py", "path": "", "content": ""},
                      observation=observation, exit_code=0)
    return Trajectory(episode_id=f"{task_id}#None#{sample}", task_id=task_id, policy="scripted", split=split,
                      sample=sample, steps=[step], ending=ending, error=error, passed=passed, reward=reward,
                      components=comps if comps is not None else components(reward), evidence=ev,
                      findings=findings or [])


def passing(task_id: str, sample: int, **kw) -> Trajectory:
    return episode(task_id, sample, evidence(task_id, [case("test_a"), case("test_b")]), **kw)


def failing(task_id: str, sample: int, **kw) -> Trajectory:
    return episode(task_id, sample, evidence(task_id, [case("test_a"), case("test_b", "failed")]), **kw)


def harness_error(task_id: str, sample: int, **kw) -> Trajectory:
    """The sandbox died: no evidence, ending error."""
    return episode(task_id, sample, None, ending="error", error="SandboxError: bwrap exited 1", **kw)


def unverified(task_id: str, sample: int, **kw) -> Trajectory:
    """The verifier could not run: evidence with verified False, reward None."""
    ev = Evidence(task_id, verified=False, verify_error="stage tests could not run: pytest wrote no report")
    return episode(task_id, sample, ev.to_dict(), error=f"verification failed: {ev.verify_error}", **kw)
