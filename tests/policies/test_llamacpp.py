"""LlamaCppPolicy's side of llama.cpp: the requests it sends, the replies it makes of a streamed
answer, starting and stopping the server, conversion and its cache. A stand-in server
(``fake_llama_server.py``) answers here; the real llama.cpp plays in the ``realmodel`` tier
(``test_llamacpp_realmodel.py``)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from termrl.actions import render_tool_call
from termrl.policies import make_policy
from termrl.policies.base import PolicyError
from termrl.policies.hf import HFPolicy
from termrl.policies.llamacpp import LlamaCppConfig, LlamaCppPolicy, converted_gguf, find_llama_cpp
from termrl.protocols import Action, ActionKind, Task, TaskFile, Turn
from termrl.provenance import backend

from .conftest import turn
from .fake_llama_server import FakeServer, fake_build

TOOL_CALL = render_tool_call(Action(ActionKind.COMMAND, command="ls -la"))


@pytest.fixture()
def served(tiny_model):
    server = FakeServer(tiny_model, "Hello there, I will look.")
    yield server
    server.close()


def policy(tiny_model, server, **options) -> LlamaCppPolicy:
    return LlamaCppPolicy(tiny_model, url=server.url, **options)


def test_the_prompt_is_transformers_own_token_ids_and_sampling_is_plain(tiny_model, served):
    p = policy(tiny_model, served, temperature=0, max_new_tokens=40)
    t = turn("run the tests, then fix src/app.py", "it failed")
    reply = p.generate([t])[0]
    sent = served.requests[0]
    assert sent["prompt"] == HFPolicy(tiny_model).prompt(t.messages)  # the model directory's own template
    assert sent["n_predict"] == 40 and sent["stream"] and sent["return_tokens"]
    assert sent["temperature"] == 0 and sent["top_k"] == 1  # greedy
    assert sent["samplers"] == ["top_k", "temperature", "top_p"]  # none of llama.cpp's extra samplers
    assert reply.text == "Hello there, I will look." and reply.prompt_tokens == len(sent["prompt"])
    end = p.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert reply.tokens[-1] == end and end in p.eos_ids  # the end token kept in tokens, not in text
    assert len(reply.logprobs) == len(reply.tokens) and reply.logprobs[0] == pytest.approx(-0.01)


def test_sampled_turns_are_seeded_by_the_turn_not_by_arrival(tiny_model, served):
    p = policy(tiny_model, served, temperature=0.7, top_p=0.9, seed=5)
    first, again, later = turn("a"), turn("a"), Turn(turn("a").messages, turn("a").task, step=1)
    seeds = [p.request(t, [1])["seed"] for t in (first, again, later)]
    assert seeds[0] == seeds[1] != seeds[2]
    assert policy(tiny_model, served, temperature=0.7, seed=6).request(first, [1])["seed"] != seeds[0]
    body = p.request(first, [1])
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["top_k"] == 0


def test_a_reply_stops_at_its_first_whole_action_and_the_stream_is_dropped(tiny_model, served):
    served.reply = TOOL_CALL + "\nAnd then I would go on explaining at length " * 20
    served.delay_s = 0.005
    stopped = policy(tiny_model, served, stop_at_action=True, max_new_tokens=400).generate([turn("go")])[0]
    assert stopped.text.strip() == TOOL_CALL.strip()
    whole = policy(tiny_model, served, max_new_tokens=400).generate([turn("go")])[0]
    assert whole.text.startswith(TOOL_CALL) and len(whole.tokens) > len(stopped.tokens) + 50
    time.sleep(0.3)  # the server notices the dropped connection at its next write
    assert served.written[0] < len(whole.tokens) - 50


def test_a_reply_cut_by_the_token_limit_has_no_end_token(tiny_model, served):
    p = policy(tiny_model, served, max_new_tokens=3)
    reply = p.generate([turn("go")])[0]
    assert len(reply.tokens) == 3 and not set(reply.tokens) & set(p.eos_ids) and len(reply.logprobs) == 3


def test_server_errors_are_the_harness_failure_naming_the_server(tiny_model, served):
    served.status = 500
    with pytest.raises(PolicyError, match=r"llama-server at http://127.0.0.1:\d+ answered 500"):
        policy(tiny_model, served).generate([turn("go")])
    served.status, served.error = 200, "context size exceeded"
    with pytest.raises(PolicyError, match="context size exceeded"):
        policy(tiny_model, served).generate([turn("go")])
    served.close()
    with pytest.raises(PolicyError, match="ConnectionRefusedError"):
        policy(tiny_model, served).generate([turn("go")])


def test_turns_of_a_batch_are_sent_at_once_and_come_back_in_order(tiny_model, served):
    served.delay_s = 0.05
    p = policy(tiny_model, served, max_batch=4)
    replies = p.generate([turn(f"task {i}") for i in range(4)])
    assert [r.text for r in replies] == ["Hello there, I will look."] * 4
    assert [r.prompt_tokens for r in replies] == [len(p.prompt(turn(f"task {i}").messages)) for i in range(4)]
    assert served.most_in_flight == 4  # the server batches them; none waits for another


# -- a whole llama.cpp build stood in for: the server started, used and stopped by its PID -----------------


@pytest.fixture()
def build(tmp_path, tiny_model, monkeypatch):
    return fake_build(tmp_path, tiny_model, monkeypatch)


def test_the_policy_converts_starts_serves_and_stops_its_own_server(tiny_model, build, tmp_path):
    p = make_policy(f"llamacpp:{tiny_model}", temperature=0, max_batch=3, threads=1, context=2048)
    assert p.gguf.read_text() == "GGUF q8_0\n" and p.gguf.parent == tmp_path / "cache" / "gguf"
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[args.index("--host") + 1] == "127.0.0.1" and args[args.index("--parallel") + 1] == "3"
    assert args[args.index("--ctx-size") + 1] == str(3 * 2048) and args[args.index("--threads") + 1] == "1"
    assert p.generate([turn("x")])[0].text == "from the started server"
    assert backend(p) == {"backend": "llama.cpp", "quantization": "q8_0", "threads": 1}
    pid = p.server.process.pid
    second = LlamaCppPolicy(tiny_model, threads=1)
    assert (tmp_path / "conversions").read_text() == "x"  # converted once, by content
    p.close()
    assert p.server.process.poll() is not None and not _alive(pid)
    server = second.server.process
    del second  # collected: its server goes with it
    assert server.wait(timeout=10) is not None


def test_a_k_quant_goes_through_f16_and_llama_quantize(tiny_model, build, tmp_path):
    path = converted_gguf(tiny_model, "q4_k_m", find_llama_cpp())
    assert path.read_text() == "GGUF f16\nQ4_K_M\n" and path.name.endswith("-q4_k_m.gguf")
    assert not [f for f in path.parent.iterdir() if f.name.startswith(".")]  # no leftovers


def test_a_server_that_dies_while_loading_says_why(tiny_model, build, monkeypatch):
    monkeypatch.setenv("FAKE_LLAMA_FAIL", "1")
    with pytest.raises(PolicyError, match="exited with status 3 while loading:\nerror: the fake could not load"):
        LlamaCppPolicy(tiny_model)


def test_missing_llama_cpp_and_bad_settings_say_what_to_do(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv("TERMRL_CACHE", str(tmp_path))
    monkeypatch.delenv("TERMRL_LLAMA_CPP", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(ValueError, match="scripts/build_llamacpp.sh"):
        LlamaCppPolicy(tiny_model)
    with pytest.raises(ValueError, match="holds no model"):
        make_policy(f"llamacpp:{tmp_path / 'none'}")
    with pytest.raises(ValueError, match="quantization 'q3': use one of"):
        LlamaCppConfig(quantization="q3")
    with pytest.raises(ValueError, match="context 512 must exceed max_new_tokens 512"):
        LlamaCppConfig(context=512)


def test_the_runner_hands_a_continuous_policy_each_turn_at_once():
    """A batch-at-a-time runner holds one episode's turn until another's reply is done; here each
    episode's reply waits until the other episode's turn has reached the policy too."""
    from termrl.protocols import Reply
    from termrl.rollout.runner import RolloutConfig, run_rollouts

    both = threading.Barrier(2, timeout=20)

    class Waiting:
        name, continuous = "waiting", True

        def generate(self, turns):
            assert len(turns) == 1, "turns held back to be batched"
            both.wait()  # breaks unless the other turn is being generated at the same time
            return [Reply(text=render_tool_call(Action(ActionKind.SUBMIT)))]

    tests = {"test_x.py": TaskFile(b"def test_x():\n    assert True\n")}
    tasks = [Task(id=name, instruction="x", tests=tests) for name in ("first", "second")]
    done = run_rollouts(tasks, Waiting(), RolloutConfig(workers=2, max_batch=2, batch_window_s=0.0))
    assert sorted(t.task_id for t in done) == ["first", "second"] and not [t.error for t in done if t.error]
    assert all(t.passed for t in done)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_eval_plays_it_as_a_local_model_with_its_threads_and_records_the_backend(tiny_model, build, tmp_path):
    from termrl.eval.run import EvalConfig, EvalError, evaluate

    with pytest.raises(EvalError, match="every episode on the cluster would load the model again"):
        EvalConfig(policy=f"llamacpp:{tiny_model}", suite="logs-count:0-1", ray="local")
    config = EvalConfig(policy=f"llamacpp:{tiny_model}", suite="logs-count:0-1", threads=1, max_steps=1,
                        temperature=0)
    assert config.policy_options() == {"temperature": 0, "threads": 1}
    summary = evaluate(config, out=tmp_path / "run")
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[args.index("--threads") + 1] == "1"
    assert summary["episodes"] == 2 and summary["errors"] == 0, summary
    run = json.loads((tmp_path / "run" / "_run.json").read_text())
    assert '"llama.cpp"' in json.dumps(run), run


def test_a_port_taken_before_the_server_binds_it_is_tried_again(tiny_model, build, monkeypatch):
    import socket

    import termrl.policies.llamacpp as module

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    free = module._free_port
    ports = iter([taken.getsockname()[1]])
    monkeypatch.setattr(module, "_free_port", lambda: next(ports, None) or free())
    try:
        p = LlamaCppPolicy(tiny_model)
        assert p.server.port != taken.getsockname()[1] and p.generate([turn("x")])[0].text == "from the started server"
        p.close()
    finally:
        taken.close()


def test_a_harness_killed_without_cleaning_up_leaves_no_server(tiny_model, build, tmp_path):
    import signal
    import subprocess
    import sys

    script = ("import sys, time\nfrom termrl.policies.llamacpp import LlamaCppPolicy\n"
              f"p = LlamaCppPolicy({str(tiny_model)!r})\nprint(p.server.process.pid, flush=True)\ntime.sleep(600)\n")
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    server = int(harness.stdout.readline())
    assert _alive(server)
    harness.send_signal(signal.SIGKILL)  # no finalizer, no atexit
    harness.wait()
    deadline = time.monotonic() + 10
    while _alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(server)
