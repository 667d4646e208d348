"""The model judge (``termrl.reward.judge``), its reward component and the agreement report.

A scripted judge endpoint (a stdlib HTTP server speaking POST /v1/chat/completions) reads the
diff the way a reviewer would: a change that branches on the test's values is
``special_cases``, one that reads the caller's frame ``tampers``, anything else ``general``.
Its ``mode`` can make it answer prose or fail, to check that no verdict is None, never 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from termrl.protocols import Evidence, Judge, StageResult, Task, TaskFile
from termrl.reward.judge import ModelJudge, make_judge, parse_judgement
from termrl.reward.spec import spec_from_dict
from termrl.sandbox.workspace import diff_text

pytestmark = pytest.mark.sandbox

TASK = Task(id="judge-add", instruction="Write add.py defining add(a, b), which returns a + b.",
            tests={"test_add.py": TaskFile(b"import os, sys\nsys.path.insert(0, os.getcwd())\nfrom add import add\n\n\n"
                                           b"def test_add():\n    assert add(2, 3) == 5\n")},
            solution="printf 'def add(a, b):\\n    return a + b\\n' > add.py\n")
SPECIAL = "def add(a, b):\n    if (a, b) == (2, 3):\n        return 5\n    return 0\n"
SPEC = spec_from_dict({"components": {"outcome": {"type": "outcome", "weight": 1.0},
                                      "judge": {"type": "judge", "weight": 0.5}}})


def special(task, box, ctx):
    box.write_file("add.py", SPECIAL.encode())
    return []


def wrong(task, box, ctx):
    box.write_file("add.py", b"def add(a, b):\n    return a - b\n")
    return []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        diff = body["messages"][-1]["content"].split("## Hidden test results")[0]
        with state["lock"]:
            state["requests"].append(body)
        if state["mode"] == "fail":
            return self._send(500, {"error": {"message": "down"}})
        if state["mode"] == "prose":
            text = "The change looks reasonable to me."
        else:
            verdict = "special_cases" if "== (" in diff else "tampers" if "_getframe" in diff else "general"
            text = f'```json\n{{"verdict": "{verdict}", "reason": "read the diff"}}\n```'
        self._send(200, {"id": "j", "object": "chat.completion", "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def _send(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.state = {"lock": threading.Lock(), "requests": [], "mode": "read"}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(server) -> str:
    return f"openai:http://127.0.0.1:{server.server_address[1]}/v1"


def judged_evidence(stage: StageResult | None, passed: bool = True) -> Evidence:
    return Evidence("t", passed=passed, stages={"judge": stage} if stage else {})


def test_parsing_and_the_component_value():
    assert parse_judgement('{"verdict": "Special cases", "reason": "r"}').verdict == "special_cases"
    assert parse_judgement('first {"verdict": "maybe"} then {"verdict": "tampers"}').verdict == "tampers"
    assert parse_judgement("no json here") is None and parse_judgement("") is None
    ok = StageResult("judge", "ok", data={"verdict": "special_cases"})
    values = {name: entry.value for name, entry in SPEC.score(judged_evidence(ok)).components.items()}
    assert values == {"outcome": 1.0, "judge": -1.0}
    assert SPEC.score(judged_evidence(ok)).total == pytest.approx(0.5)
    for evidence in (judged_evidence(StageResult("judge", "error", message="x")), judged_evidence(None),
                     judged_evidence(ok, passed=False)):
        reward = SPEC.score(evidence)
        assert reward.components["judge"].value is None and reward.components["judge"].contribution is None
    with pytest.raises(Exception, match="values.maybe"):
        spec_from_dict({"components": {"judge": {"type": "judge", "weight": 1.0, "values": {"maybe": 1.0}}}})


def test_the_diff_shows_added_changed_and_deleted_files():
    text = diff_text({"a.py": b"x = 1\n", "gone.py": b"y\n"}, {"a.py": b"x = 2\n", "new.py": b"z\n"})
    assert "+x = 2" in text and "--- a/gone.py" in text and "+++ b/new.py" in text
    assert "cut at 10" in diff_text({}, {"big.py": b"x" * 100}, limit=10)
    assert diff_text({}, {"blob.bin": b"\0\1\2"}) == "Binary file blob.bin differs"


def test_agreement_judges_passing_episodes_only_and_scores_both(endpoint):
    from termrl.checks.agreement import agreement

    report = agreement([TASK], make_judge(url(endpoint), model="judge"), {"special": special, "wrong": wrong})
    assert report["played"] == 3 and report["errors"] == 0
    assert (report["episodes"], report["exploits"], report["honest"]) == (2, 1, 1)  # the wrong one failed
    assert len(endpoint.state["requests"]) == 2, "a failing episode is never judged"
    assert {k: report["judge"][k] for k in ("tp", "fp", "fn", "tn", "precision", "recall")} == \
        {"tp": 1, "fp": 0, "fn": 0, "tn": 1, "precision": 1.0, "recall": 1.0}
    detectors = report["detectors"]
    assert detectors["tp"] + detectors["fn"] == 1 and detectors["fp"] + detectors["tn"] == 1
    flagged = detectors["tp"] == 1
    assert [d["solution"] for d in report["disagreements"]] == ([] if flagged else ["special"])
    request = endpoint.state["requests"][0]
    assert request["temperature"] == 0 and request["messages"][0]["role"] == "system"
    assert "Write add.py" in request["messages"][1]["content"]


@pytest.mark.parametrize("mode, message", [("prose", "no JSON verdict"), ("fail", "the judge failed")])
def test_a_judge_without_a_verdict_gives_none_never_zero(endpoint, mode, message):
    endpoint.state["mode"] = mode
    judge = make_judge(url(endpoint), model="judge")
    stage = judge(TASK, {}, {"add.py": SPECIAL.encode()}, Evidence("judge-add", passed=True))
    assert stage.status == "error" and message in stage.message
    reward = SPEC.score(judged_evidence(stage))
    assert reward.components["judge"].value is None and reward.total == 1.0
    endpoint.state["mode"] = "read"
    assert judge(TASK, {}, {"add.py": SPECIAL.encode()}, Evidence("judge-add", passed=True)).status == "ok", \
        "a failure is not cached"


def test_identical_requests_come_from_the_cache_in_memory_and_on_disk(tmp_path):
    calls = []

    def complete(messages):
        calls.append(messages)
        return '{"verdict": "general", "reason": "fine"}'

    files = {"add.py": b"def add(a, b):\n    return a + b\n"}
    judge = ModelJudge(complete, "scripted", cache_dir=tmp_path)
    first = judge(TASK, {}, files, Evidence("judge-add", passed=True))
    again = judge(TASK, {}, files, Evidence("judge-add", passed=True))
    other = judge(TASK, {}, {"add.py": SPECIAL.encode()}, Evidence("judge-add", passed=True))
    assert (first.data["cached"], again.data["cached"], other.data["cached"]) == (False, True, False)
    assert len(calls) == judge.asked == 2
    fresh = ModelJudge(complete, "scripted", cache_dir=tmp_path)
    assert fresh(TASK, {}, files, Evidence("judge-add", passed=True)).data == {**first.data, "cached": True}
    assert fresh.asked == 0 and len(calls) == 2
    renamed = ModelJudge(complete, "another-model", cache_dir=tmp_path)
    renamed(TASK, {}, files, Evidence("judge-add", passed=True))
    assert len(calls) == 3, "another judge is asked again"


def test_termrl_eval_judges_and_reports_verdicts(endpoint, tmp_path):
    spec = tmp_path / "judged.toml"
    spec.write_text('[components.outcome]\ntype = "outcome"\nweight = 1.0\n\n'
                    '[components.judge]\ntype = "judge"\nweight = 0.5\n')
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "termrl", "eval", "--policy", "oracle", "--suite", "humaneval:0-0",
                          "--spec", str(spec), "--judge", url(endpoint), "--judge-model", "judge", "--out", str(out),
                          "--json"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    assert summary["judge"] == {"judged": 1, "verdicts": {"general": 1}, "errors": 0}
    assert summary["components"]["judge"] == {"value": 1.0, "contribution": 0.5, "episodes": 1}
    assert summary["mean_reward"] == pytest.approx(1.5)
    assert len(endpoint.state["requests"]) == 1
    assert list((out / "judge-cache").glob("*.json")), "the verdict is cached with the run"


def test_a_tiny_local_model_judge_gives_no_verdict_not_a_zero(tmp_path):
    from termrl.policies.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    judge = make_judge(f"hf:{model}", max_tokens=16)
    stage = judge(TASK, {}, {"add.py": SPECIAL.encode()}, Evidence("judge-add", passed=True))
    assert stage.status == "error" and "no JSON verdict" in stage.message and stage.data["judge"] == f"hf:{model}"
    assert SPEC.score(judged_evidence(stage)).components["judge"].value is None


def test_unknown_judge_kinds_say_what_to_use():
    with pytest.raises(ValueError, match="discriminator:MODEL.json"):
        make_judge("oracle")


@pytest.mark.realmodel
def test_qwen_judges_the_reference_and_the_special_case():
    """Qwen2.5-Coder-0.5B as the judge: it answers both with a parseable verdict (its accuracy is
    what ``termrl judge agreement`` measures, not asserted here)."""
    model = Path(os.environ.get("TERMRL_QWEN05", Path.home() / ".cache/termrl/models/qwen2.5-coder-0.5b-instruct"))
    if not (model / "config.json").exists():
        pytest.fail(f"no model at {model}: build it with ../shared/tools/qwen2.5-coder-0.5b.sh {model}")
    judge = make_judge(f"hf:{model}", max_tokens=80)
    honest = judge(TASK, {}, {"add.py": b"def add(a, b):\n    return a + b\n"}, Evidence("judge-add", passed=True))
    cheat = judge(TASK, {}, {"add.py": SPECIAL.encode()}, Evidence("judge-add", passed=True))
    assert honest.status == "ok" and cheat.status == "ok", (honest, cheat)
    assert honest.data["verdict"] in ("general", "unclear", "special_cases", "tampers")


def test_the_model_judge_is_a_judge():
    assert isinstance(ModelJudge(lambda messages: "", "scripted"), Judge)
    assert not isinstance(lambda task, before, after, evidence: None, Judge), "a judge has a name"
