"""Action formats: each one's system prompt opens the episode, native ones hand the policy
their tools, every format's replies are understood, and an unknown name is refused."""

from __future__ import annotations

import pytest

from termrl.actions import ACTION_FORMATS, TOOL_SCHEMAS
from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import ActionKind, Reply, Task
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.train.config import ConfigError, load_config

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
