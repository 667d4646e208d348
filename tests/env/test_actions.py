"""Action parsing: tool calls, fenced blocks, submissions and format errors."""

from __future__ import annotations

import pytest

from termrl.actions import FormatError, holds_action, parse, render_tool_call
from termrl.protocols import Action, ActionKind, TaskFile


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


def test_python_snippet_is_no_action_and_plain_text_submits():
    assert parse("```python\nprint(1)\n```").action.kind is ActionKind.SUBMIT
    # a usage line is no file, even where the prose names one and the workspace has one
    assert parse("Run solution.py:\n```python\nprint(f(2))\n```", ["solution.py"]).action.kind \
        is ActionKind.SUBMIT
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


FUNCTION = "from typing import List\n\n\ndef mean(xs: List[float]) -> float:\n    return sum(xs) / len(xs)\n"


def test_definitions_go_to_the_one_workspace_file_of_their_language():
    p = parse(f"Here is the function:\n```python\n{FUNCTION}```\nIt divides.", ["solution.py", "data.csv"])
    assert p.action == Action(ActionKind.WRITE, path="solution.py", content=FUNCTION)
    # no workspace file of that language, or two of them: nothing says which file
    assert parse(f"```python\n{FUNCTION}```", ["notes.txt"]).action.kind is ActionKind.SUBMIT
    assert parse(f"```python\n{FUNCTION}```", ["a.py", "b.py"]).action.kind is ActionKind.SUBMIT
    c = "int add(int a, int b) {\n    return a + b;\n}\n"
    assert parse(f"```c\n{c}```", ["add.c", "Makefile"]).action == \
        Action(ActionKind.WRITE, path="add.c", content=c)


def test_an_unnamed_block_replaces_a_file_only_when_it_is_a_new_version_of_it():
    stub = "def mean(xs):\n    raise NotImplementedError\n"
    assert parse(f"```python\n{FUNCTION}```", {"solution.py": stub}).action.path == "solution.py"
    assert parse(f"```python\n{FUNCTION}```", {"solution.py": TaskFile(stub.encode())}).action.path == "solution.py"
    assert parse(f"```python\n{FUNCTION}```", {"solution.py": "", "x.csv": None}).action.path == "solution.py"
    # what Qwen2.5-Coder-0.5B wrote after "wrote 617 bytes to helpers.py": a helper of its own, not the module
    helper = "def write_file(path, content):\n    with open(path, 'w') as f:\n        f.write(content)\n"
    assert parse(f"To write a file:\n```python\n{helper}```", {"solution.py": FUNCTION}).action.kind is ActionKind.SUBMIT
    assert holds_action(f"```python\n{helper}```", {"solution.py": FUNCTION}) is False
    assert holds_action(f"```python\n{FUNCTION}```", {"solution.py": stub}) is True
    # the prose naming the module is not enough either; the block naming it is
    add = "def submit():\n    print('done')\n"
    prose = f"To finish, add a `submit` action to the `solution.py` file:\n```python\n{add}```"
    assert parse(prose, {"solution.py": FUNCTION}).action.kind is ActionKind.SUBMIT
    assert parse(f"```python solution.py\n{add}```", {"solution.py": FUNCTION}).action.path == "solution.py"
    assert parse(f"```python\n# solution.py\n{add}```", {"solution.py": FUNCTION}).action.path == "solution.py"
    assert parse(prose, ["solution.py"]).action.path == "solution.py"  # content unknown: as before
    c_old, c_new = "int add(int a, int b) {\n    return 0;\n}\n", "int sub(int a, int b) {\n    return a - b;\n}\n"
    assert parse(f"```c\n{c_new}```", {"add.c": c_old}).action.kind is ActionKind.SUBMIT


@pytest.mark.parametrize("text,path", [
    (f"```python solution.py\n{FUNCTION}```", "solution.py"),
    ("```python:src/app.py\nprint(1)\n```", "src/app.py"),
    ("```python\n# file: tools/run.py\nprint(1)\n```", "tools/run.py"),
    ("```c\n// main.c\nint x;\n```", "main.c"),
    (f"Save this as `stats/mean.py`:\n```python\n{FUNCTION}```", "stats/mean.py"),
    ("Create a file named count.sh:\n```bash\n#!/bin/bash\ngrep -c ERROR \"$1\"\n```", "count.sh"),
    ("Write `logcount`:\n```sh\n#!/bin/sh\nwc -l\n```", "logcount"),
    ('The config, config.json:\n```json\n{"debug": true}\n```', "config.json"),
])
def test_a_block_that_names_its_file_writes_it(text, path):
    action = parse(text, ["solution.py"]).action
    assert action.kind is ActionKind.WRITE and action.path == path and action.content.endswith("\n")


def test_commands_stay_commands_and_the_first_action_wins():
    # a shell block without a shebang runs, even under prose that names a script
    assert parse("Make count.sh executable:\n```bash\nchmod +x count.sh\n```").action == \
        Action(ActionKind.COMMAND, command="chmod +x count.sh")
    p = parse(f"```python\n{FUNCTION}```\nThen test it:\n```bash\npython -c 'import solution'\n```",
              ["solution.py"])
    assert p.action.kind is ActionKind.WRITE and p.ignored == 1
    # a malformed block after the first action is never run, so it is no format error
    assert parse("```bash\nls\n```\n```bash\n\n```").action.command == "ls"


def test_json_fenced_tool_calls_and_unclosed_tool_calls_at_the_stop_token():
    fenced = '```json\n{"name": "bash", "arguments": {"command": "ls -la"}}\n```'
    assert parse(fenced).action == Action(ActionKind.COMMAND, command="ls -la")
    cut = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}\n'
    assert parse(cut).action == Action(ActionKind.WRITE, path="a.txt", content="hi")
    with pytest.raises(FormatError, match="unknown tool"):
        parse('```json\n{"name": "browse", "arguments": {}}\n```')
    # JSON that is no tool call is a file's contents, or nothing
    assert parse('```json\n{"a": 1}\n```').action.kind is ActionKind.SUBMIT
