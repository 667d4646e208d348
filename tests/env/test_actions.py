"""Action parsing: tool calls, fenced blocks, submissions and format errors."""

from __future__ import annotations

import pytest

from termrl.actions import FormatError, parse, render_tool_call
from termrl.protocols import Action, ActionKind


def test_tool_call_command():
    p = parse('I will look.\n<tool_call>{"name": "bash", "arguments": {"command": "ls -la"}}</tool_call>')
    assert p.action == Action(ActionKind.COMMAND, command="ls -la") and p.ignored == 0


def test_tool_call_write_and_submit_and_string_arguments():
    p = parse('<tool_call>{"name": "write_file", "arguments": "{\\"path\\": \\"a.py\\", \\"content\\": \\"x=1\\"}"}'
              '</tool_call>')
    assert p.action == Action(ActionKind.WRITE, path="a.py", content="x=1")
    assert parse('<tool_call>{"name": "submit", "arguments": {}}</tool_call>').action.kind is ActionKind.SUBMIT


def test_first_of_many_actions_runs_and_the_rest_are_counted():
    text = "".join(render_tool_call(Action(ActionKind.COMMAND, command=c)) for c in ("a", "b", "c"))
    p = parse(text)
    assert p.action.command == "a" and p.ignored == 2


def test_fenced_bash_block():
    p = parse("Run this:\n```bash\ncd src\nmake\n```\nthen check.")
    assert p.action == Action(ActionKind.COMMAND, command="cd src\nmake")


def test_python_block_is_not_a_command_and_plain_text_submits():
    assert parse("```python\nprint(1)\n```").action.kind is ActionKind.SUBMIT
    assert parse("All done, the script works.").action.kind is ActionKind.SUBMIT
    assert parse("").action.kind is ActionKind.SUBMIT


@pytest.mark.parametrize("text,needle", [
    ('<tool_call>{"name": "bash", "arguments": {"command": "ls"}', "not closed"),
    ("<tool_call>{name: bash}</tool_call>", "valid JSON"),
    ('<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>', "unknown tool"),
    ('<tool_call>{"name": "bash", "arguments": {}}</tool_call>', '"command"'),
    ('<tool_call>{"name": "write_file", "arguments": {"path": "x"}}</tool_call>', '"content"'),
    ('<tool_call>["bash"]</tool_call>', '"name"'),
    ("```bash\nls\n", "not closed"),
    ("```bash\n\n```", "empty"),
    ('</tool_call>', "without"),
])
def test_malformed_replies_are_format_errors(text, needle):
    with pytest.raises(FormatError, match=needle):
        parse(text)


def test_render_round_trips():
    for action in (Action(ActionKind.COMMAND, command='echo "hi" && ls'),
                   Action(ActionKind.WRITE, path="d/f.txt", content="line\n```\n<tool_call>"),
                   Action(ActionKind.SUBMIT)):
        assert parse(render_tool_call(action)).action == action
