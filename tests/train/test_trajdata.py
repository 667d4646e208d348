"""Trajectories as chats: exactly what the policy saw and said, in TRL's row formats."""

from __future__ import annotations

import pytest

from termrl.actions import render_tool_call
from termrl.protocols import Action, ActionKind, Reply, StepRecord, Trajectory
from termrl.rollout.chat import conversation, rebuild_prompts
from termrl.training.trajdata import check_template, sft_rows, training_template

PROMPT = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Count the errors.\n\nlog"}]


def episode(replies: list[str], observations: list[str], prompt=PROMPT, **kw) -> Trajectory:
    steps = [StepRecord(i, r, None, o) for i, (r, o) in enumerate(zip(replies, observations))]
    return Trajectory(f"t#0#{kw.pop('sample', 0)}", kw.pop("task_id", "t"), "scripted",
                      prompt=[dict(m) for m in prompt], steps=steps, **kw)


def test_conversation_alternates_replies_and_observations_and_drops_the_unseen_last_one():
    t = episode(["cmd 1", "cmd 2", "submit"], ["out 1", "out 2", "never seen"])
    chat = conversation(t)
    assert chat[:2] == PROMPT
    assert [(m["role"], m["content"]) for m in chat[2:]] == [
        ("assistant", "cmd 1"), ("user", "<tool_response>\nout 1\n</tool_response>"),
        ("assistant", "cmd 2"), ("user", "<tool_response>\nout 2\n</tool_response>"), ("assistant", "submit")]
    assert t.prompt == PROMPT  # not mutated

    other = conversation(t, system_prompt="Be brief.")
    assert other[0] == {"role": "system", "content": "Be brief."} and other[1:] == chat[1:]
    no_system = conversation(t, PROMPT[1:], system_prompt="S")
    assert [m["role"] for m in no_system[:2]] == ["system", "user"]


def test_sft_rows_need_a_prompt_and_skip_episodes_without_steps():
    stored_before_prompts = episode(["a"], [""], prompt=[])
    with pytest.raises(ValueError, match="rebuild_prompts"):
        sft_rows([stored_before_prompts])
    rows = sft_rows([stored_before_prompts, episode([], [])], prompts={"t": PROMPT})
    assert rows == [{"messages": [*PROMPT, {"role": "assistant", "content": "a"}]}]


def test_trl_training_template_renders_the_chats_like_the_policys_own_template():
    from termrl.policies.tiny import build_tokenizer

    tok = build_tokenizer()
    template = training_template(tok)  # the tiny model ships TRL's qwen2_5.jinja: TRL patches it
    assert template is not None and "{%- generation %}" in template
    rows = sft_rows([episode(["<tool_call>{\"name\": \"submit\", \"arguments\": {}}</tool_call>", "x"],
                             ["exit code 0\n3", ""])])
    check_template(tok, rows, template)
    with pytest.raises(ValueError, match="renders this chat differently"):
        check_template(tok, rows, template.replace("<|im_start|>", "<|im_start|> "))


class Recorder:
    """Two commands then submit; remembers every conversation it was prompted with."""

    name = "recorder"

    def __init__(self):
        self.turns = []

    def generate(self, turns):
        script = [Action(ActionKind.COMMAND, command="echo hi"), Action(ActionKind.COMMAND, command="ls"),
                  Action(ActionKind.SUBMIT)]
        self.turns += turns
        return [Reply(render_tool_call(script[t.step])) for t in turns]


@pytest.mark.sandbox
def test_conversation_is_exactly_what_the_policy_was_prompted_with(tmp_path):
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig, run_rollouts
    from termrl.tasks.suites import find_task

    task = find_task("shell-count-errors")
    env = EnvConfig(static=False)
    policy = Recorder()
    [traj] = run_rollouts([task], policy, RolloutConfig(workers=1, env=env))
    chat = conversation(traj)
    assert len(policy.turns) == 3 and len(chat) == 2 + 5
    for turn in policy.turns:
        assert chat[: len(turn.messages)] == turn.messages
    assert chat[-1] == {"role": "assistant", "content": traj.steps[-1].reply}

    rebuilt = rebuild_prompts([task, task], env)
    assert list(rebuilt) == [task.id] and rebuilt[task.id] == traj.prompt
    traj.prompt = []
    assert sft_rows([traj], prompts=rebuilt) == [{"messages": chat}]
