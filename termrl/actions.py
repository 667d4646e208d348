"""Actions parsed from model text, in the two formats models actually emit.

1. Tool calls, Qwen/Hermes style, as common chat templates render them::

       <tool_call>{"name": "bash", "arguments": {"command": "ls -la"}}</tool_call>

   Tools: ``bash`` (aliases ``run``, ``shell``, ``execute``, ``execute_bash``; argument
   ``command`` or ``cmd``), ``write_file`` (alias ``write``; ``path`` and ``content``) and
   ``submit`` (no arguments).
2. Fenced blocks: the first fenced block tagged ``bash``, ``sh``, ``shell`` or
   ``console`` (or untagged) is a command.

The first action of a reply is taken; a reply with more than one says so in the
next observation (``Parsed.ignored``). A reply with no tool call and no shell block
is a submission (the agent is done). Text that tries and fails -- a ``<tool_call>``
whose JSON does not parse, an unknown tool, a missing argument, an unclosed fence --
is a ``FormatError``: the episode goes on, the observation says what was wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from termrl.protocols import Action, ActionKind

COMMAND_TOOLS = {"bash", "run", "shell", "execute", "execute_bash", "run_command", "terminal"}
WRITE_TOOLS = {"write_file", "write", "create_file"}
SUBMIT_TOOLS = {"submit", "finish", "done"}
SHELL_TAGS = {"", "bash", "sh", "shell", "console", "zsh"}

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.S)
_FENCE = re.compile(r"^[ \t]*```([\w+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)


class FormatError(ValueError):
    """The reply tried to act and could not be understood; the message tells the model why."""


@dataclass(frozen=True)
class Parsed:
    action: Action
    ignored: int = 0
    """Further actions in the same reply that were not run."""


def _tool_action(body: str) -> Action:
    try:
        call = json.loads(body.strip())
    except json.JSONDecodeError as e:
        raise FormatError(f"the <tool_call> does not hold valid JSON ({e.msg} at char {e.pos}); "
                          'write <tool_call>{"name": "bash", "arguments": {"command": "..."}}</tool_call>') from None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise FormatError('a tool call is a JSON object with a "name" and "arguments"')
    name, args = call["name"], call.get("arguments", call.get("parameters", {}))
    if isinstance(args, str):  # some templates emit the arguments as a JSON string
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            raise FormatError(f'the "arguments" of {name} are a string that is not JSON') from None
    if not isinstance(args, dict):
        raise FormatError(f'the "arguments" of {name} must be a JSON object')
    if name in COMMAND_TOOLS:
        command = args.get("command", args.get("cmd"))
        if not isinstance(command, str) or not command.strip():
            raise FormatError(f'{name} needs a non-empty string argument "command"')
        return Action(ActionKind.COMMAND, command=command)
    if name in WRITE_TOOLS:
        path, content = args.get("path", args.get("file_path")), args.get("content", args.get("text"))
        if not isinstance(path, str) or not path.strip() or not isinstance(content, str):
            raise FormatError(f'{name} needs string arguments "path" and "content"')
        return Action(ActionKind.WRITE, path=path.strip(), content=content)
    if name in SUBMIT_TOOLS:
        return Action(ActionKind.SUBMIT)
    raise FormatError(f"unknown tool {name!r}; the tools are bash, write_file and submit")


def parse(text: str) -> Parsed:
    """The action ``text`` asks for; raises ``FormatError`` when it tries and fails."""
    calls = _TOOL_CALL.findall(text)
    if calls:
        body, closing = calls[0]
        if not closing:
            raise FormatError("a <tool_call> is not closed with </tool_call>")
        return Parsed(_tool_action(body), ignored=len(calls) - 1)
    if "<tool_call>" in text or "</tool_call>" in text:
        raise FormatError("a </tool_call> without its <tool_call>")
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(text) if tag.lower() in SHELL_TAGS]
    if blocks:
        command = blocks[0][1].strip("\n")
        if not command.strip():
            raise FormatError("the ```bash block is empty")
        return Parsed(Action(ActionKind.COMMAND, command=command), ignored=len(blocks) - 1)
    if text.count("```") % 2 == 1:
        raise FormatError("a ``` fence is not closed")
    return Parsed(Action(ActionKind.SUBMIT))


def render_tool_call(action: Action) -> str:
    """``action`` as the tool-call text ``parse`` reads (scripted policies speak it)."""
    if action.kind is ActionKind.COMMAND:
        call = {"name": "bash", "arguments": {"command": action.command}}
    elif action.kind is ActionKind.WRITE:
        call = {"name": "write_file", "arguments": {"path": action.path, "content": action.content}}
    else:
        call = {"name": "submit", "arguments": {}}
    return f"<tool_call>{json.dumps(call)}</tool_call>"


TOOLS_PROMPT = """\
You are an expert software engineer working in a Linux terminal, inside the directory {workdir}.
Solve the task below by acting in the terminal. Each reply: a short thought, then exactly one action.

Run a shell command (its output comes back to you):
<tool_call>{{"name": "bash", "arguments": {{"command": "ls -la"}}}}</tool_call>
Create or overwrite a file:
<tool_call>{{"name": "write_file", "arguments": {{"path": "hello.py", "content": "print('hi')\\n"}}}}</tool_call>
Finish when the task is done:
<tool_call>{{"name": "submit", "arguments": {{}}}}</tool_call>

A ```bash block also runs as a command -- it is executed, not saved: to create a file, use
write_file or a heredoc (cat > file.sh <<'EOF' ... EOF, then chmod +x file.sh if it must run).
The shell keeps its working directory and variables between commands; there is no network.
Test your work before you submit. A reply with no action also submits. Hidden tests check your work."""
