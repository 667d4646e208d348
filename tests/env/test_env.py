"""TerminalEnv on real sandboxes: persistent shell, writes, limits, format errors, typed endings."""

from __future__ import annotations

import pytest

from termrl.actions import render_tool_call
from termrl.env import EnvConfig, TerminalEnv, truncate
from termrl.protocols import Action, ActionKind, Ending, Limits, Reply, Task, TaskFile, Trajectory
from termrl.rollout.chat import conversation

pytestmark = pytest.mark.sandbox

TEST = b"""
from pathlib import Path

def test_greeting():
    assert Path("greeting.txt").read_text() == "hello\\n"
"""


def task(**limits) -> Task:
    return Task(id="greet", instruction="Write hello into greeting.txt.",
                workspace={"notes/readme.md": TaskFile(b"# notes\n")},
                tests={"test_greet.py": TaskFile(TEST)},
                solution="echo hello > greeting.txt\n", limits=Limits(**limits))


def cmd(command: str) -> str:
    return render_tool_call(Action(ActionKind.COMMAND, command=command))


def test_first_observation_has_instruction_and_listing():
    with TerminalEnv() as env:
        obs, info = env.reset(task())
        assert "Write hello into greeting.txt." in obs and "./notes/readme.md" in obs
        assert env.messages[0]["role"] == "system" and "tool_call" in env.messages[0]["content"]
        assert info["workdir"] == "/workspace"


def test_shell_state_persists_and_submission_is_verified():
    env = TerminalEnv(spec="sparse")
    env.reset(task())
    obs, r, term, trunc, _ = env.step(cmd("mkdir sub && cd sub && export X=hel"))
    assert (r, term, trunc) == (0.0, False, False) and obs.startswith("exit code 0")
    obs, *_ = env.step("```bash\npwd; echo ${X}lo > ../greeting.txt\n```")
    assert "/workspace/sub" in obs
    obs, reward, term, trunc, info = env.step("Done.")
    assert obs == "" and term and not trunc and info["ending"] is Ending.SUBMITTED
    assert info["evidence"].passed and reward == 1.0
    assert env.box is None  # the sandbox is released at the end
    assert [s.action["kind"] for s in env.steps] == ["command", "command", "submit"]


def test_write_action_and_failure_are_scored():
    env = TerminalEnv()
    env.reset(task())
    obs, *_ = env.step(render_tool_call(Action(ActionKind.WRITE, path="greeting.txt", content="bye\n")))
    assert "wrote 4 bytes" in obs
    _, reward, term, _, info = env.step(render_tool_call(Action(ActionKind.SUBMIT)))
    assert term and reward == 0.0 and not info["evidence"].passed


def test_observations_reach_the_model_as_tool_responses_and_training_rebuilds_the_same_chat():
    env = TerminalEnv()
    env.reset(task())
    obs, *_ = env.step(render_tool_call(Action(ActionKind.WRITE, path="greeting.txt", content="hello\n")))
    assert env.messages[-1] == {"role": "user", "content": f"<tool_response>\n{obs}\n</tool_response>"}
    env.step(cmd("cat greeting.txt"))
    seen = [dict(m) for m in env.messages]
    env.step(render_tool_call(Action(ActionKind.SUBMIT)))
    traj = Trajectory("greet#0#0", "greet", "scripted", prompt=seen[:2], steps=env.steps)
    assert conversation(traj)[:-1] == seen  # what SFT trains on is what the policy saw
    assert env.messages[1]["content"].startswith("Write hello")  # the request itself is not framed


def test_the_episode_knows_what_it_wrote_so_an_unrelated_block_does_not_overwrite_the_module():
    t = Task(id="py", instruction="Write greet() in greet.py.", workspace={"data.txt": TaskFile(b"x\n")},
             tests={"test_greet.py": TaskFile(b"def test_x():\n    pass\n")})
    env = TerminalEnv(EnvConfig(detect=False, static=False))
    env.reset(t)
    env.step("Here it is, in `greet.py`:\n```python\ndef greet():\n    return 'hi'\n```")
    assert env.files["greet.py"] == "def greet():\n    return 'hi'\n"
    env.step("```python\ndef greet():\n    return 'hello'\n```")  # a new version: the one .py file
    assert env.steps[-1].action["kind"] == "write" and env.files["greet.py"].endswith("'hello'\n")
    *_, info = env.step("To print:\n```python\ndef show(x):\n    print(x)\n```")
    assert env.steps[-1].action["kind"] == "submit" and info["ending"] is Ending.SUBMITTED


def test_format_errors_are_steps_and_end_the_episode_when_consecutive():
    env = TerminalEnv(EnvConfig(max_format_errors=2))
    env.reset(task())
    obs, r, term, trunc, _ = env.step("<tool_call>{oops</tool_call>")
    assert obs.startswith("Format error:") and not (term or trunc)
    env.step(cmd("true"))  # a good step resets the count
    env.step("```bash\nls\n")
    _, _, term, trunc, info = env.step('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    assert trunc and not term and info["ending"] is Ending.FORMAT_ERRORS
    assert [bool(s.format_error) for s in env.steps] == [True, False, True, True]
    assert env.steps[0].action is None and env.steps[0].trace()["format_error"]


def test_step_limit_truncates():
    env = TerminalEnv(EnvConfig(max_steps=2))
    env.reset(task())
    env.step(cmd("true"))
    _, _, term, trunc, info = env.step(cmd("true"))
    assert trunc and not term and info["ending"] is Ending.STEP_LIMIT


def test_time_limit_cuts_a_command_and_ends_the_episode():
    env = TerminalEnv(EnvConfig(time_limit_s=3, command_timeout_s=60))
    env.reset(task())
    obs, _, term, trunc, info = env.step(cmd("sleep 30"))  # cut at the episode's remaining time, not 60 s
    assert "timeout" in obs and env.steps[0].timed_out and env.steps[0].env_s < 10
    assert trunc and not term and info["ending"] is Ending.TIME_LIMIT


def test_time_limit_counts_generation_time():
    env = TerminalEnv(EnvConfig(time_limit_s=30))
    env.reset(task())
    *_, trunc, info = env.step(Reply(cmd("true"), gen_s=31.0))
    assert trunc and info["ending"] is Ending.TIME_LIMIT


def test_token_limit():
    env = TerminalEnv(EnvConfig(max_tokens=5))
    env.reset(task())
    _, _, _, trunc, info = env.step(Reply(cmd("true"), tokens=[1, 2, 3, 4, 5, 6]))
    assert trunc and info["ending"] is Ending.TOKEN_LIMIT
    assert env.steps[0].tokens == [1, 2, 3, 4, 5, 6]


def test_long_output_is_truncated_head_and_tail():
    env = TerminalEnv(EnvConfig(observation_chars=300))
    env.reset(task())
    obs, *_ = env.step(cmd("echo START; seq 1 5000; echo END"))
    assert len(obs) < 400 and "START" in obs and "END" in obs and "characters truncated" in obs
    assert env.steps[0].output_bytes > 20000
    env.close()


def test_truncate_keeps_short_text():
    assert truncate("abc", 10) == "abc"
    out = truncate("a" * 100 + "b" * 100, 80)
    assert out.startswith("a") and out.endswith("b") and len(out) <= 80


def test_reset_from_family_and_seed():
    with TerminalEnv() as env:
        obs, info = env.reset(family="logs-count", seed=3)
        assert env.task.meta.seed == 3 and info["task_id"] == env.task.id


def test_step_before_reset_is_an_error():
    with pytest.raises(RuntimeError, match="reset"):
        TerminalEnv().step("ls")
