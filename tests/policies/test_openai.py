"""OpenAIPolicy against a stdlib HTTP server speaking POST /v1/chat/completions.

The last user message picks the server's behaviour: ``tool`` answers with ``tool_calls``,
``flaky`` fails its first request with a 500, ``slow`` sleeps 2 s, ``wait ...`` sleeps 0.3 s
(to see requests overlap); anything else is echoed back."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from termrl.actions import parse
from termrl.policies import PolicyError
from termrl.policies.openai_api import OpenAIPolicy

from .conftest import turn


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        state = self.server.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        with state["lock"]:
            state["requests"].append({"body": body, "auth": self.headers.get("Authorization"), "path": self.path})
            state["in_flight"] += 1
            state["max_in_flight"] = max(state["max_in_flight"], state["in_flight"])
            seen = state["seen"].count(last)
            state["seen"].append(last)
        try:
            time.sleep(2.0 if last == "slow" else 0.3 if last.startswith("wait") else 0)
            if last == "flaky" and not seen:
                return self._send(500, {"error": {"message": "overloaded"}}, {"retry-after-ms": "1"})
            if "always-500" in last:
                return self._send(500, {"error": {"message": "down"}}, {"retry-after-ms": "1"})
            if "drop" in last:  # the connection closes with no response at all
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return None
            if "malformed" in last:
                return self._raw(200, b'{"id": "x", "choices": [{"message": ')
            if "no-choices" in last:
                return self._send(200, {**completion(body, last), "choices": []})
            if "huge" in last:
                out = completion(body, last)
                out["choices"][0]["message"]["content"] = "y" * (1 << 20)
                return self._send(200, out)
            self._send(200, completion(body, last))
        finally:
            with state["lock"]:
                state["in_flight"] -= 1

    def _raw(self, status, data):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, status, payload, headers=()):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in dict(headers).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


def completion(body: dict, last: str) -> dict:
    message = {"role": "assistant", "content": f"echo: {last}"}
    if last == "tool":
        message = {"role": "assistant", "content": "Listing.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -la"}'}},
            {"id": "c2", "type": "function", "function": {"name": "submit", "arguments": "{}"}}]}
    logprobs = None
    if body.get("logprobs"):
        logprobs = {"content": [{"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                                for t, lp in (("echo", -0.25), (":", -0.5), (" x", -1.0))]}
    prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
    return {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": logprobs,
                         "finish_reason": "tool_calls" if last == "tool" else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": prompt_tokens + 3}}


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.state = {"lock": threading.Lock(), "requests": [], "seen": [], "in_flight": 0, "max_in_flight": 0}
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1", httpd.state
    httpd.shutdown()
    httpd.server_close()


def test_text_usage_and_request(server, monkeypatch):
    url, state = server
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    policy = OpenAIPolicy(url, "tiny", temperature=0.5, max_tokens=64)
    [reply] = policy.generate([turn("hello there")])
    assert reply.text == "echo: hello there"
    assert reply.prompt_tokens == 7  # words in "You are a coding agent." and "hello there"
    assert reply.tokens is None and reply.logprobs is None and reply.gen_s > 0
    request = state["requests"][0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer EMPTY"
    assert request["body"]["model"] == "tiny" and request["body"]["temperature"] == 0.5
    assert request["body"]["max_tokens"] == 64 and "logprobs" not in request["body"]


def test_logprobs_and_api_key_from_env(server, monkeypatch):
    url, state = server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    [reply] = OpenAIPolicy(url, "tiny", logprobs=True).generate([turn("x")])
    assert reply.logprobs == [-0.25, -0.5, -1.0] and reply.tokens is None
    assert state["requests"][0]["auth"] == "Bearer sk-test"


def test_tool_calls_are_rendered_into_the_text(server):
    url, _ = server
    [reply] = OpenAIPolicy(url, "tiny").generate([turn("tool")])
    assert reply.text == ('Listing.\n<tool_call>{"name": "bash", "arguments": {"command": "ls -la"}}</tool_call>\n'
                          '<tool_call>{"name": "submit", "arguments": {}}</tool_call>')
    parsed = parse(reply.text)  # the environment's parser reads the rendering
    assert parsed.action.command == "ls -la" and parsed.ignored == 1


def test_turns_are_sent_concurrently_and_replies_keep_order(server):
    url, state = server
    turns = [turn(f"wait {i}") for i in range(4)]
    start = time.perf_counter()
    replies = OpenAIPolicy(url, "tiny", concurrency=4).generate(turns)
    assert time.perf_counter() - start < 1.0  # four 0.3 s requests, overlapped
    assert len(state["requests"]) == 4 and state["max_in_flight"] >= 2
    assert [r.text for r in replies] == [f"echo: wait {i}" for i in range(4)]


def test_server_error_is_retried(server):
    url, state = server
    [reply] = OpenAIPolicy(url, "tiny", max_retries=2).generate([turn("flaky")])
    assert reply.text == "echo: flaky" and len(state["requests"]) == 2


def test_server_error_without_retries_raises(server):
    url, _ = server
    with pytest.raises(PolicyError, match=re.escape(url) + ".*500"):
        OpenAIPolicy(url, "tiny", max_retries=0).generate([turn("flaky")])


def test_timeout_raises_policy_error_naming_the_url(server):
    url, _ = server
    with pytest.raises(PolicyError, match=re.escape(url)) as info:
        OpenAIPolicy(url, "tiny", max_retries=0, timeout=0.3).generate([turn("slow")])
    assert "Timeout" in str(info.value)


def test_unreachable_endpoint_raises_policy_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(PolicyError, match=re.escape(url)):
        OpenAIPolicy(url, "tiny", max_retries=0, timeout=1).generate([turn("x")])


@pytest.mark.parametrize("fault, attempts", [("always-500", 3), ("drop", 3), ("malformed", 1), ("no-choices", 1)])
def test_a_faulty_endpoint_is_retried_a_bounded_number_of_times_then_a_policy_error(server, fault, attempts):
    url, state = server
    with pytest.raises(PolicyError, match=re.escape(url)):
        OpenAIPolicy(url, "tiny", max_retries=2, timeout=5).generate([turn(fault)])
    assert len(state["requests"]) == attempts  # retried where a retry can help, never without end


def test_a_megabyte_reply_comes_back_whole(server):
    url, _ = server
    [reply] = OpenAIPolicy(url, "tiny").generate([turn("huge")])
    assert len(reply.text) == 1 << 20


@pytest.mark.sandbox
def test_a_run_goes_on_past_episodes_whose_endpoint_failed(server, tmp_path):
    """Episodes whose requests fail are stored with a typed error; the others play on."""
    from termrl.protocols import Task, TaskFile
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.rollout.store import TrajectoryStore

    url, _ = server
    tests = {"test_t.py": TaskFile(b"def test_t():\n    pass\n")}
    tasks = [Task(id=f"t-{kind}", instruction=f"Do it ({kind}).", tests=tests)
             for kind in ("ok", "always-500", "drop", "malformed", "no-choices", "huge", "fine")]
    store = TrajectoryStore(tmp_path / "run")
    run_rollouts(tasks, OpenAIPolicy(url, "tiny", max_retries=1, timeout=5), RolloutConfig(workers=2), store=store)
    by_task = {t.task_id: t for t in store.read()}
    assert set(by_task) == {t.id for t in tasks}  # every episode stored, once
    for kind in ("always-500", "drop", "malformed", "no-choices"):
        error = by_task[f"t-{kind}"].error
        assert error and url in error, (kind, error)
    for kind in ("ok", "huge", "fine"):
        assert by_task[f"t-{kind}"].error is None, by_task[f"t-{kind}"].error
