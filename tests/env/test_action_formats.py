"""Action formats: each one's system prompt opens the episode, native ones hand the policy
their tools, every format's replies are understood, and an unknown name is refused."""

from __future__ import annotations

import pytest

from termrl.actions import ACTION_FORMATS, TOOL_SCHEMAS
from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import ActionKind, Reply, Task
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.training.config import ConfigError, load_config

TASK = Task(id="fmt", instruction="Write hi.txt holding hi.")


def test_unknown_format_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="choose one of tool_call, native, json, bash, example"):
        EnvConfig(action_format="xml")
    with pytest.raises(ConfigError, match="'env.action_format'"):
        load_config(data={"algorithm": "rft", "output_dir": "/tmp/x", "model": {"tiny": True}, "tasks": {"train": "builtin"}},
                    overrides=["env.action_format=yaml"])


@pytest.mark.parametrize("name", list(ACTION_FORMATS))
def test_each_format_opens_with_its_prompt(name):
    config = EnvConfig(action_format=name, backend="local")
    assert config.prompt == ACTION_FORMATS[name].system_prompt
    assert config.tools == (TOOL_SCHEMAS if name == "native" else ())
    with TerminalEnv(config) as env:
        env.reset(TASK)
        assert env.messages[0]["content"] == ACTION_FORMATS[name].system_prompt.format(workdir=TASK.workdir)
    assert EnvConfig(action_format=name, system_prompt="mine {workdir}").prompt == "mine {workdir}"


@pytest.mark.parametrize("reply", [
    '<tool_call>{"name": "write_file", "arguments": {"path": "hi.txt", "content": "hi\\n"}}</tool_call>',
    '```json\n{"name": "write_file", "arguments": {"path": "hi.txt", "content": "hi\\n"}}\n```',
    "```bash\ncat > hi.txt <<'EOF'\nhi\nEOF\n```",
])
def test_the_way_each_prompt_teaches_to_write_a_file_acts(reply):
    with TerminalEnv(EnvConfig(backend="local", action_format="json")) as env:
        env.reset(TASK)
        env.step(Reply(reply))
        assert env.steps[0].action["kind"] in (ActionKind.WRITE.value, ActionKind.COMMAND.value)
        assert env.box.read_file(f"{TASK.workdir}/hi.txt") == b"hi\n"


class Recorder:
    name = "recorder"

    def __init__(self):
        self.tools = []

    def generate(self, turns):
        self.tools += [t.tools for t in turns]
        return [Reply("done") for _ in turns]


@pytest.mark.parametrize("name", ["native", "tool_call"])
def test_rollouts_hand_native_tools_to_the_policy(name):
    policy = Recorder()
    got = run_rollouts([TASK], policy, RolloutConfig(env=EnvConfig(action_format=name, backend="local")))
    assert got[0].ending == "submitted" and policy.tools == [ACTION_FORMATS[name].tools]
    assert got[0].steps[0].action["kind"] == ActionKind.SUBMIT.value  # "done" holds no action


def test_the_worked_example_is_shown_as_chat_turns_the_harness_itself_would_produce():
    """The example format's episode sits between the system message and the task as real turns;
    each of its replies parses to the action it shows, and replaying them in an environment gives
    back the very observations the example claims."""
    with TerminalEnv(EnvConfig(action_format="example", backend="local")) as env:
        env.reset(TASK)
        roles = [m["role"] for m in env.messages]
        assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
        assert env.messages[-1]["content"].startswith(TASK.instruction)
        shown = env.messages[1:-1]
    assert all("{" not in m["content"].split("<tool_call>")[0] for m in shown)  # formatted, no placeholder left
    with TerminalEnv(EnvConfig(backend="local")) as replay:
        replay.reset(Task(id="greet", instruction=shown[0]["content"].split("\n")[0]))
        for reply, observation in zip(shown[1::2], shown[2::2]):
            replay.step(Reply(reply["content"]))
            assert replay.messages[-1]["content"] == observation["content"]
        _, _, terminated, _, _ = replay.step(Reply(shown[-1]["content"]))
        assert replay.steps[-1].action["kind"] == ActionKind.SUBMIT.value and terminated
    with TerminalEnv(EnvConfig(action_format="example", system_prompt="mine {workdir}", backend="local")) as env:
        env.reset(TASK)
        assert [m["role"] for m in env.messages] == ["system", "user"]  # a caller's own prompt stands alone
