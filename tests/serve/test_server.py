"""``termrl serve``: OpenEnv's own client plays termrl episodes through it, scored exactly as in-process;
sessions, tokens and every fault the server must survive."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import openenv  # noqa: F401 - scripts/setup.sh installs it (the serve extra): never skipped
import pytest
from openenv.core import GenericEnvClient
from websockets.exceptions import ConnectionClosedError
from websockets.sync.client import connect

from termrl.env import EnvConfig, TerminalEnv
from termrl.policies.scripted import NopPolicy, OraclePolicy
from termrl.protocols import Turn
from termrl.sandbox.bwrap import held_by
from termrl.serve.client import RemoteError, RemoteTerminalEnv, TermrlEnvClient
from termrl.serve.protocol import TermrlAction, outcome_from_json
from termrl.serve.server import Served, ServeError, check_listen, running
from termrl.tasks.suites import find_task, resolve

pytestmark = pytest.mark.sandbox
CONFIG = EnvConfig(static=False, command_timeout_s=60)
TASKS = ["logs-count-3", "csv-aggregate-5", "py-function-2"]


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def bwrap_children(pid: int) -> list[int]:
    """bwrap processes whose parent is ``pid`` (a sandbox it holds open)."""
    return [int(h.rsplit(" ", 1)[1]) for h in held_by(pid) if h.startswith("bwrap pid ")]


def owned_sandboxes(pid: int) -> list[str]:
    return [h for h in held_by(pid) if not h.startswith("bwrap pid ")]


def eventually(check, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


def play_generic(url: str, task, policy) -> dict:
    """One episode through OpenEnv's own ``GenericEnvClient``: ``policy``'s replies, as a trainer's model."""
    with GenericEnvClient(base_url=url, message_timeout_s=600).sync() as env:
        result = env.reset(task_id=task.id)
        messages = result.observation["messages"]
        step = 0
        while not result.done:
            reply = policy.generate([Turn(messages, task, step)])[0].text
            result = env.step({"reply": reply})
            messages = [*messages, {"role": "assistant", "content": reply},
                        {"role": "user", "content": result.observation["text"]}]
            step += 1
        return {"reward": result.reward, **result.observation}


def play_in_process(task, policy, spec="staged"):
    env = TerminalEnv(CONFIG, spec=spec)
    env.reset(task)
    step = 0
    while True:
        reply = policy.generate([Turn(list(env.messages), task, step)])[0].text
        _, reward, terminated, truncated, info = env.step(reply)
        step += 1
        if terminated or truncated:
            return reward, info["outcome"]


def test_openenv_client_plays_oracle_and_nop_scored_exactly_as_in_process():
    tasks = [find_task(t) for t in TASKS]
    with running(Served(tasks, "staged", CONFIG)) as url:
        oracle = [play_generic(url, t, OraclePolicy()) for t in tasks]
        nop = [play_generic(url, t, NopPolicy()) for t in tasks]
    assert sum(o["passed"] for o in oracle) / len(oracle) == 1.0  # pass@1
    assert sum(o["passed"] for o in nop) / len(nop) == 0.0
    for task, remote in zip(tasks, oracle, strict=True):
        reward, outcome = play_in_process(task, OraclePolicy())
        assert remote["reward"] == reward and remote["ending"] == outcome.ending.value == "submitted"
        assert remote["components"] == outcome.reward.component_dicts()
        served = outcome_from_json(remote["outcome"])
        assert served.evidence.passed and [t.outcome for t in served.evidence.tests] == \
            [t.outcome for t in outcome.evidence.tests]
    assert all(n["reward"] < 0 and n["ending"] == "submitted" and "empty_work" in
               {f["kind"] for f in n["findings"]} for n in nop)
    assert not bwrap_children(os.getpid()) and not owned_sandboxes(os.getpid())


@pytest.mark.slow  # the whole built-in suite, oracle and nop: minutes
def test_the_whole_builtin_suite_through_the_server():
    tasks = [e.task for e in resolve("builtin") if e.task is not None and e.task.solution is not None]
    with running(Served(tasks, "staged", CONFIG, max_sessions=2)) as url:
        oracle = [play_generic(url, t, OraclePolicy()) for t in tasks]
        nop = [play_generic(url, t, NopPolicy()) for t in tasks]
    assert [o["task_id"] for o in oracle if not o["passed"]] == []
    assert [n["task_id"] for n in nop if n["passed"]] == []


def test_typed_client_tool_calls_state_and_the_token():
    task = find_task("logs-count-3")
    with running(Served([task], None, CONFIG, token="s3cret")) as url:
        with pytest.raises(ConnectionError):
            TermrlEnvClient(url).sync().connect()
        with pytest.raises(ConnectionError):
            TermrlEnvClient(url, token="wrong").sync().connect()
        with urllib.request.urlopen(url + "/health", timeout=10) as answer:  # health needs no token
            assert answer.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/metadata", timeout=10)
        assert refused.value.code == 401
        with TermrlEnvClient(url, token="s3cret").sync() as env:
            first = env.reset(task_id=task.id)
            assert first.observation.messages[0]["role"] == "system" and first.observation.limits["max_steps"] >= 1
            assert {t["function"]["name"] for t in first.observation.tools} == {"bash", "write_file", "submit"}
            ran = env.step(TermrlAction(tool="bash", arguments={"command": "echo hi"}))
            assert ran.observation.text == "exit code 0\nhi\n" and not ran.done
            state = env.state()
            assert state.task_id == task.id and state.step_count == 1 and not state.done
            end = env.step(TermrlAction(tool="submit"))
            assert end.done and end.reward == 0.0 and end.observation.passed is False  # no spec: 1.0 / 0.0
            assert env.state().ending == "submitted"
            with pytest.raises(RuntimeError, match="reset first"):
                env.step(TermrlAction(tool="submit"))
            with pytest.raises(RuntimeError, match="unknown task_id 'nope'"):
                env.reset(task_id="nope")
        with pytest.raises(RemoteError, match="unknown task_id"):
            RemoteTerminalEnv(url, token="s3cret").reset("nope")


def test_a_client_that_disconnects_mid_episode_leaves_no_sandbox():
    with running(Served([find_task("logs-count-3")], None, CONFIG)) as url:
        ws = connect(ws_url(url))
        ws.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"tool": "bash", "arguments": {"command": "sleep 0.1"}}}))
        assert bwrap_children(os.getpid())  # the episode's sandbox is up
        ws.socket.close()  # gone without a close message, mid-step
        assert eventually(lambda: not bwrap_children(os.getpid()) and not owned_sandboxes(os.getpid()))


def test_malformed_and_oversized_messages_are_refused_and_the_server_goes_on():
    with running(Served([find_task("logs-count-3")], None, CONFIG, max_message_bytes=64 << 10)) as url:
        with connect(ws_url(url)) as ws:
            ws.send("{not json")
            assert json.loads(ws.recv(timeout=30))["data"]["code"] == "INVALID_JSON"
            ws.send(json.dumps({"type": "launch"}))
            assert json.loads(ws.recv(timeout=30))["data"]["code"] == "UNKNOWN_TYPE"
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(timeout=60))["type"] == "observation"
            for bad in ({"tool": "bash"}, {"reply": "x", "tool": "submit"}, {"tool": "rm"}, {"oops": 1}):
                ws.send(json.dumps({"type": "step", "data": bad}))
                assert json.loads(ws.recv(timeout=30))["data"]["code"] == "VALIDATION_ERROR"
            ws.send(json.dumps({"type": "step", "data": {"tool": "bash", "arguments": {"command": "echo ok"}}}))
            assert json.loads(ws.recv(timeout=60))["data"]["observation"]["text"] == "exit code 0\nok\n"
        with connect(ws_url(url), max_size=None) as ws:
            ws.send(json.dumps({"type": "step", "data": {"reply": "x" * (100 << 10)}}))
            with pytest.raises(ConnectionClosedError):  # message too big
                ws.recv(timeout=30)
            assert ws.close_code == 1009
        request = urllib.request.Request(url + "/mcp", data=b"x" * (100 << 10), method="POST",
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 413
        with GenericEnvClient(base_url=url).sync() as env:  # still serving
            assert not env.reset().done
    assert eventually(lambda: not bwrap_children(os.getpid()))


def test_an_unknown_session_id_is_an_error():
    with running(Served([find_task("logs-count-3")], None, CONFIG)) as url:
        for method in ("openenv/session/close", "tools/list"):
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                               "params": {"session_id": "no-such-session"}}).encode()
            request = urllib.request.Request(url + "/mcp", data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as answer:
                said = json.loads(answer.read())
            assert "Unknown session_id: no-such-session" in said["error"]["message"], said


def test_more_sessions_than_the_limit_are_refused_at_once():
    with running(Served([find_task("logs-count-3")], None, CONFIG, max_sessions=1)) as url:
        with GenericEnvClient(base_url=url).sync() as first:
            first.reset()
            started = time.monotonic()
            with connect(ws_url(url)) as ws:  # refused as it connects, before it asks anything
                said = json.loads(ws.recv(timeout=10))
            assert said["data"]["code"] == "CAPACITY_REACHED" and time.monotonic() - started < 10
            with pytest.raises(Exception, match="HarnessError|CAPACITY|capacity"):
                RemoteTerminalEnv(url).reset("logs-count-3")  # a refused session is the harness's failure
        with GenericEnvClient(base_url=url).sync() as again:  # the slot is free again
            assert not again.reset().done


def start_server(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    log = open(tmp_path / f"serve-{time.monotonic_ns()}.log", "w+")  # noqa: SIM115 - the server's, while it runs
    proc = subprocess.Popen([sys.executable, "-m", "termrl", "serve", "--suite", "logs-count:3", "--port", "0", *args],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(600):
        log.seek(0)
        text = log.read()
        if "on http://" in text:
            return proc, text.split("on ", 1)[1].split()[0]
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"termrl serve did not start: {text}")


def test_a_server_killed_with_kill_9_and_restarted(tmp_path):
    proc, url = start_server(tmp_path)
    try:
        env = RemoteTerminalEnv(url)
        env.reset("logs-count-3")
        observation, *_ = env.step(TermrlAction(tool="bash", arguments={"command": "echo up"}))
        assert observation == "exit code 0\nup\n"
        boxes = bwrap_children(proc.pid)
        assert boxes and owned_sandboxes(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # the sandbox dies with its server; the client's episode ends as a harness failure, unscored
        assert eventually(lambda: not any(Path(f"/proc/{pid}").exists() for pid in boxes))
        _, reward, terminated, truncated, info = env.step("<tool_call>{\"name\": \"submit\", \"arguments\": {}}</tool_call>")
        assert reward is None and truncated and not terminated and info["ending"].value == "error"
        dead = proc.pid
        proc, url = start_server(tmp_path)  # restarted: it sweeps what the killed one left
        assert not owned_sandboxes(dead)
        again = RemoteTerminalEnv(url)
        again.reset("logs-count-3")
        _, reward, terminated, _, info = again.step("Nothing to do.")  # no action: a submission
        assert terminated and reward is not None and info["ending"].value == "submitted"
        assert len(again.steps) == 1  # a new episode, not the killed one resumed or scored again
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_serve_refuses_what_it_cannot_do_safely(tmp_path):
    with pytest.raises(ServeError, match="give a token"):
        check_listen("0.0.0.0", None)
    check_listen("0.0.0.0", "t")
    check_listen("127.0.0.1", None)
    with pytest.raises(ServeError, match="no tasks"):
        Served([], None)

    def serve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "termrl", "serve", *args], capture_output=True, text=True,
                              timeout=120, check=False, env={k: v for k, v in os.environ.items()
                                                             if k != "TERMRL_SERVE_TOKEN"})

    said = serve("--suite", "logs-count:3", "--host", "0.0.0.0")
    assert said.returncode == 2 and "give a token" in said.stderr and "Traceback" not in said.stderr
    said = serve("--suite", "logs-count:3", "--token-file", str(tmp_path / "missing"))
    assert said.returncode == 2 and "--token-file" in said.stderr and "Traceback" not in said.stderr
    said = serve("--suite", "no-such-family:3")
    assert said.returncode == 2 and "Traceback" not in said.stderr
