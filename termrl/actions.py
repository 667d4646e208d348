"""Actions parsed from model text, in the formats models actually emit.

1. Tool calls, Qwen/Hermes style, as common chat templates render them::

       <tool_call>{"name": "bash", "arguments": {"command": "ls -la"}}</tool_call>

   Tools: ``bash`` (aliases ``run``, ``shell``, ``execute``, ``execute_bash``; argument
   ``command`` or ``cmd``), ``write_file`` (alias ``write``; ``path`` and ``content``) and
   ``submit`` (no arguments). As vLLM's hermes parser does, a ``<tool_call>`` that the
   stop token cut before its closing tag counts when its JSON is whole.
2. The same call as a JSON object in a ```json fence: what Qwen2.5-Coder answers when its
   own chat template is given ``tools=``.
3. Fenced blocks, in reply order, the first that acts:

   - a block tagged ``bash``, ``sh``, ``shell`` or ``console`` (or untagged) is a command;
   - a block of a file's contents is a write of that file: any block whose fence names the
     file (```python solution.py), whose first line is a comment naming it
     (``# file: solution.py``), or whose language matches the last file the prose before
     it names (`solution.py`, count.sh); a shell block counts as a file only when it
     starts with a shebang (a script's text, not commands). A block of definitions
     (Python ``def``/``class``, C-family functions) with no file named goes to the one
     workspace file of its language, when the task has exactly one (``workspace=``) and the
     block is a new version of it: the file is empty, defines nothing, or defines a name the
     block defines too (so an unrelated helper the model writes out does not overwrite a
     module). Any other block (an example, a usage line) is no action.

The first action of a reply is taken; a reply with more than one says so in the
next observation (``Parsed.ignored``). A reply with no action is a submission (the
agent is done). Text that tries and fails -- a ``<tool_call>`` whose JSON does not
parse, an unknown tool, a missing argument, an unclosed fence -- is a ``FormatError``:
the episode goes on, the observation says what was wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from termrl.protocols import Action, ActionKind

COMMAND_TOOLS = {"bash", "run", "shell", "execute", "execute_bash", "run_command", "terminal"}
WRITE_TOOLS = {"write_file", "write", "create_file"}
SUBMIT_TOOLS = {"submit", "finish", "done"}
SHELL_TAGS = {"", "bash", "sh", "shell", "console", "zsh"}
EXTENSIONS = {
    "python": (".py",), "py": (".py",), "python3": (".py",), "c": (".c", ".h"),
    "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".h"), "c++": (".cpp", ".cc", ".cxx", ".hpp", ".h"),
    "javascript": (".js", ".mjs"), "js": (".js", ".mjs"), "typescript": (".ts",), "ts": (".ts",),
    "go": (".go",), "rust": (".rs",), "java": (".java",), "ruby": (".rb",), "perl": (".pl",),
    "json": (".json",), "yaml": (".yaml", ".yml"), "toml": (".toml",), "sql": (".sql",),
    "csv": (".csv",), "text": (".txt",), "txt": (".txt",), "makefile": ("Makefile",), "make": ("Makefile",),
    "cmake": ("CMakeLists.txt",), "bash": (".sh", ""), "sh": (".sh", ""), "shell": (".sh", ""),
    "zsh": (".sh", ""), "": (".sh", ""),
}
"""Fence tag -> the file names it may hold (suffixes; "" is a name without one)."""
_DEFINES = {
    ".py": re.compile(r"^(?:async\s+def|def|class)\s+(\w+)", re.MULTILINE),
    ".c": re.compile(r"^[A-Za-z_][\w \t*]*\b(\w+)\s*\([^;]*\)\s*\{", re.MULTILINE),
}
_DEFINES.update({ext: _DEFINES[".c"] for ext in (".cpp", ".cc", ".cxx", ".js", ".ts", ".go", ".rs", ".java")})

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"^[ \t]*```([\w+-]*)([^\n]*)\n(.*?)^[ \t]*```[ \t]*$", re.DOTALL | re.MULTILINE)
_NAME = r"[\w.\-/]*[\w-]"
_PROSE_FILE = re.compile(rf"`({_NAME})`|(?<![\w/.-])({_NAME}\.[A-Za-z]\w*)(?![\w/-])")
_COMMENT_FILE = re.compile(rf"^\s*(?:#|//|--|/\*)\s*(?:file(?:name)?\s*:\s*)?({_NAME}\.\w+)\s*(?:\*/)?\s*$",
                           re.IGNORECASE)
_INFO_FILE = re.compile(rf"^[\s:]*(?:(?:title|file(?:name)?)\s*=\s*)?[\"']?({_NAME})[\"']?\s*$")


class FormatError(ValueError):
    """The reply tried to act and could not be understood; the message tells the model why."""


@dataclass(frozen=True)
class Parsed:
    action: Action
    ignored: int = 0
    """Further actions in the same reply that were not run."""


def _json(text: str) -> object:
    """``json.loads``, with JSON nested past Python's recursion limit (a reply of 100,000 ``[``)
    a ``JSONDecodeError`` like any other invalid JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None


def _tool_action(body: str, where: str = "the <tool_call>") -> Action:
    try:
        call = _json(body.strip())
    except json.JSONDecodeError as e:
        raise FormatError(f"{where} does not hold valid JSON ({e.msg} at char {e.pos}); "
                          'write <tool_call>{"name": "bash", "arguments": {"command": "..."}}</tool_call>') from None
    return _call_action(call)


def _call_action(call: object) -> Action:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise FormatError('a tool call is a JSON object with a "name" and "arguments"')
    name, args = call["name"], call.get("arguments", call.get("parameters", {}))
    if isinstance(args, str):  # some templates emit the arguments as a JSON string
        try:
            args = _json(args)
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


def _tool_calls(text: str) -> Parsed | None:
    calls = _TOOL_CALL.findall(text)
    if calls:
        body, closing = calls[0]
        if not closing:
            try:  # cut at the stop token, its JSON whole: vLLM's hermes parser takes it too
                return Parsed(_call_action(_json(body.strip())))
            except json.JSONDecodeError:
                raise FormatError("a <tool_call> is not closed with </tool_call>") from None
        return Parsed(_tool_action(body), ignored=len(calls) - 1)
    if "<tool_call>" in text or "</tool_call>" in text:
        raise FormatError("a </tool_call> without its <tool_call>")
    return None


def _json_call(body: str) -> Action | None:
    """A ```json block holding a tool call ({"name": ..., "arguments": ...}); None for other JSON."""
    try:
        call = _json(body)
    except json.JSONDecodeError:
        return None
    if isinstance(call, dict) and isinstance(call.get("name"), str) \
            and ("arguments" in call or "parameters" in call):
        return _call_action(call)
    return None


def _fits(name: str, suffixes: Iterable[str]) -> bool:
    base = name.rsplit("/", 1)[-1]
    return any((base == s) if not s.startswith(".") and s else
               (base.endswith(s) if s else "." not in base) for s in suffixes)


def _defines(body: str, suffixes: Iterable[str]) -> bool:
    """Whether ``body`` reads as a file's contents rather than a snippet: it starts with a shebang,
    defines a function or class where the language has a pattern for that, or its language has none."""
    patterns = [_DEFINES[s] for s in suffixes if s in _DEFINES]
    return body.startswith("#!") or not patterns or any(p.search(body) for p in patterns)


def _names(body: str, suffixes: Iterable[str]) -> set[str]:
    """The functions and classes ``body`` defines at its top level, as its language's pattern sees them."""
    return {name for s in suffixes if s in _DEFINES for name in _DEFINES[s].findall(body)}


def _revises(body: str, current: str | None, suffixes: Iterable[str]) -> bool:
    """Whether ``body`` may replace a file now holding ``current`` (None: unknown): the file is
    empty or defines nothing, or ``body`` defines one of its names again."""
    old = _names(current or "", suffixes)
    return not old or bool(old & _names(body, suffixes))


def _named_file(tag: str, info: str, body: str, prose: str) -> tuple[str | None, bool]:
    """The file a block's fence or first line names (``(path, True)``), else the last file of
    its language that the prose before it names when the block reads as a file
    (``(path, False)``); ``(None, False)`` when nothing names one."""
    m = _INFO_FILE.match(info)
    if info.strip() and m and ("." in m.group(1) or "/" in m.group(1)):
        return m.group(1), True
    first = body.split("\n", 1)[0]
    m = _COMMENT_FILE.match(first)
    if m and not first.startswith("#!"):
        return m.group(1), True
    suffixes = EXTENSIONS.get(tag, ())
    if not suffixes or not _defines(body, suffixes):
        return None, False
    named = [a or b for a, b in _PROSE_FILE.findall(prose)]
    return next((n for n in reversed(named) if _fits(n, suffixes)), None), False


def _file_block(tag: str, info: str, body: str, prose: str, workspace: dict[str, str | None]) -> Action | None:
    """The write a block of file contents stands for, or None when it is not one. A file the
    block itself names is written; one only the prose names, or the one workspace file of the
    block's language, only when the block is a new version of it (``_revises``)."""
    if tag in SHELL_TAGS and not body.startswith("#!"):
        return None
    suffixes = EXTENSIONS.get(tag, ())
    path, explicit = _named_file(tag, info, body, prose)
    if path is None:
        mine = [p for p in workspace if _fits(p, [s for s in suffixes if s in _DEFINES])]
        path = mine[0] if len(mine) == 1 and _defines(body, suffixes) else None
    if path is None or not (explicit or _revises(body, workspace.get(path), suffixes)):
        return None
    return Action(ActionKind.WRITE, path=path, content=body)


def _block_action(tag: str, info: str, body: str, prose: str, workspace: dict[str, str | None]) -> Action | None:
    if tag == "json" and (call := _json_call(body)) is not None:
        return call
    if (write := _file_block(tag, info, body, prose, workspace)) is not None:
        return write
    if tag in SHELL_TAGS:
        if not body.strip():
            raise FormatError("the ```bash block is empty")
        return Action(ActionKind.COMMAND, command=body.strip("\n"))
    return None


def _block_actions(text: str, workspace: dict[str, str | None]) -> list[Action]:
    """The actions of a reply's fenced blocks, in order. A block that fails to act is a format
    error only when no action comes before it (later ones are not run anyway)."""
    found, prose_from = [], 0
    for m in _FENCE.finditer(text):
        prose, prose_from = text[prose_from:m.start()], m.end()
        try:
            action = _block_action(m.group(1).lower(), m.group(2), m.group(3), prose, workspace)
        except FormatError:
            if not found:
                raise
            action = None
        if action is not None:
            found.append(action)
    return found


def parse(text: str, workspace: Iterable[str] | Mapping[str, object] = ()) -> Parsed:
    """The action ``text`` asks for; raises ``FormatError`` when it tries and fails.

    ``workspace``: the task's workspace files, where a block of definitions that names no file
    may go (the one file of its language, when the block is a new version of it): their names,
    or a mapping of name to content (text, bytes, a ``TaskFile``; None when unknown).
    """
    called = _tool_calls(text)
    if called is not None:
        return called
    actions = _block_actions(text, workspace_texts(workspace))
    if actions:
        return Parsed(actions[0], ignored=len(actions) - 1)
    if text.count("```") % 2 == 1:
        raise FormatError("a ``` fence is not closed")
    return Parsed(Action(ActionKind.SUBMIT))


def workspace_texts(workspace: Iterable[str] | Mapping[str, object]) -> dict[str, str | None]:
    """Workspace name -> text (None when unknown), from names or a mapping of name to content
    (text, bytes, a ``TaskFile``). ``parse`` and ``holds_action`` take either; a caller that asks
    many times (a stopping criterion, every decoded token) converts once."""
    if not isinstance(workspace, Mapping):
        return dict.fromkeys(workspace)
    texts = {}
    for name, content in workspace.items():
        data = getattr(content, "data", content)
        texts[name] = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return texts


def holds_action(text: str, workspace: Iterable[str] | Mapping[str, object] = ()) -> bool:
    """Whether ``text`` already holds a whole action that ``parse`` would run (a closed tool call, a
    closed block that acts): a policy may stop generating there, since the rest of a reply is
    never run. An open ``<tool_call>`` or block, or text with no action yet, is not done.

    >>> holds_action("I will look.\\n```bash\\nls\\n```")
    True
    >>> holds_action("I will look.\\n```bash\\nls\\n")
    False
    """
    if "</tool_call>" in text:
        return True
    if "<tool_call>" in text:
        return False
    try:
        return bool(_block_actions(text, workspace_texts(workspace)))
    except FormatError:
        return False


def render_tool_call(action: Action) -> str:
    """``action`` as the tool-call text ``parse`` reads (scripted policies speak it)."""
    return f"<tool_call>{json.dumps(_call(action))}</tool_call>"


def _call(action: Action) -> dict:
    if action.kind is ActionKind.COMMAND:
        return {"name": "bash", "arguments": {"command": action.command}}
    if action.kind is ActionKind.WRITE:
        return {"name": "write_file", "arguments": {"path": action.path, "content": action.content}}
    return {"name": "submit", "arguments": {}}


CLOSING_REPLY = "Done."
"""How a demonstration finishes in the formats whose prompt says to finish by replying without an
action (bash, native): a reply ``parse`` reads as a submission."""


def _heredoc(path: str, content: str) -> str:
    """A shell command that writes ``content`` to ``path`` exactly (a quoted heredoc whose end marker
    the content does not hold; content without a final newline goes through ``printf``)."""
    marker = "EOF"
    while any(line == marker for line in content.splitlines()):
        marker += "_"
    quoted = "'" + path.replace("'", "'\\''") + "'"
    if content.endswith("\n"):
        return f"cat > {quoted} <<'{marker}'\n{content}{marker}"
    return f"printf '%s' \"$(cat <<'{marker}'\n{content}\n{marker}\n)\" > {quoted}"


def render_action(action: Action, fmt: str = "tool_call") -> str:
    """``action`` as a reply in action format ``fmt``, text ``parse`` reads back as that action:

    - tool_call, example: ``render_tool_call``;
    - json: the same call as a JSON object in a ```json block;
    - bash: a command in a ```bash block, a write as a heredoc, a submit as ``CLOSING_REPLY``;
    - native: the tool call as Qwen2.5's (Hermes) chat template renders an assistant message's
      ``tool_calls`` (``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``, the JSON
      as the template's ``tojson`` writes it), the text a model prompted with ``tools=`` produces
      and TRL's tool loop parses; a submit is ``CLOSING_REPLY``, as the format's prompt says.

    >>> print(render_action(Action(ActionKind.COMMAND, command="ls"), "bash"))
    ```bash
    ls
    ```
    >>> render_action(Action(ActionKind.SUBMIT), "native")
    'Done.'
    """
    action_format(fmt)  # an unknown name fails here, naming the choices
    if fmt in ("tool_call", "example"):
        return render_tool_call(action)
    if fmt == "json":
        return f"```json\n{json.dumps(_call(action))}\n```"
    if action.kind is ActionKind.SUBMIT:
        return CLOSING_REPLY
    if fmt == "native":
        return f"<tool_call>\n{json.dumps(_call(action), ensure_ascii=False)}\n</tool_call>"
    command = action.command if action.kind is ActionKind.COMMAND else _heredoc(action.path, action.content)
    return f"```bash\n{command}\n```"


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

NATIVE_PROMPT = """\
You are an expert software engineer working in a Linux terminal, inside the directory {workdir}.
Solve the task below with the tools: `bash` runs a shell command and returns its exit code and output;
`write_file` creates or overwrites a file. Call a tool, read its result, and go on until the task is
done. The shell keeps its working directory and variables between calls; there is no network.
Test your work. When you are done, reply without a tool call: hidden tests then check your work."""

JSON_PROMPT = """\
You are an expert software engineer working in a Linux terminal, inside the directory {workdir}.
Solve the task below by acting in the terminal. Each reply: a short thought, then exactly one action,
written as a JSON object in a ```json block.

Run a shell command (its output comes back to you):
```json
{{"name": "bash", "arguments": {{"command": "ls -la"}}}}
```
Create or overwrite a file:
```json
{{"name": "write_file", "arguments": {{"path": "hello.py", "content": "print('hi')\\n"}}}}
```
Finish when the task is done:
```json
{{"name": "submit", "arguments": {{}}}}
```
The shell keeps its working directory and variables between commands; there is no network.
Test your work before you submit. Hidden tests check your work."""

BASH_PROMPT = """\
You are an expert software engineer working in a Linux terminal, inside the directory {workdir}.
Solve the task below by running shell commands. Each reply: a short thought, then exactly one
```bash block. It is executed and its output comes back to you.

To create a file, write it with a quoted heredoc, and make it executable if it must run:
```bash
cat > count.sh <<'EOF'
#!/bin/bash
grep -c ERROR "$1"
EOF
chmod +x count.sh
```
The shell keeps its working directory and variables between commands; there is no network.
Test your work. When the task is done, reply without a ```bash block. Hidden tests check your work."""

EXAMPLE = (
    {"role": "user", "content": "Write greet.py: it prints Hello, NAME! for the name given as its argument."
                                "\n\nThe directory {workdir} is empty."},
    {"role": "assistant", "content": "I will write the script.\n<tool_call>{{\"name\": \"write_file\", \"arguments\": "
                                     "{{\"path\": \"greet.py\", \"content\": \"import sys\\nprint(f'Hello, "
                                     "{{sys.argv[1]}}!')\\n\"}}}}</tool_call>"},
    {"role": "user", "content": "<tool_response>\nwrote 43 bytes to {workdir}/greet.py\n</tool_response>"},
    {"role": "assistant", "content": "Now I test it.\n<tool_call>{{\"name\": \"bash\", \"arguments\": "
                                     "{{\"command\": \"python3 greet.py Ada\"}}}}</tool_call>"},
    {"role": "user", "content": "<tool_response>\nexit code 0\nHello, Ada!\n\n</tool_response>"},
    {"role": "assistant", "content": "It works.\n<tool_call>{{\"name\": \"submit\", \"arguments\": {{}}}}</tool_call>"},
)
"""The ``example`` format's worked episode: real chat turns between the system message and the
task (a one-shot conversation, as chat models are shown examples), formatted with ``workdir``.
Written into the system prompt as "assistant: ..." lines instead, the 0.5B copied the first
line and ended its turn in every episode (``results/action-formats/``)."""


def observation_message(observation: str) -> dict:
    """The chat message that hands an action's result back to the model: a user message whose
    text is framed as a ``<tool_response>``, what Qwen's and other Hermes-style chat templates
    render for a tool's result (GRPO's native tool calls get the same from the template).
    Episodes, and the conversations rebuilt from stored ones for training, both use it.

    >>> observation_message("exit code 0")["content"].splitlines()[:3]
    ['<tool_response>', 'exit code 0', '</tool_response>']
    """
    return {"role": "user", "content": f"<tool_response>\n{observation}\n</tool_response>"}


TOOL_SCHEMAS = (
    {"type": "function", "function": {
        "name": "bash",
        "description": "Run a shell command in the task's directory; returns its exit code and output.",
        "parameters": {"type": "object", "required": ["command"],
                       "properties": {"command": {"type": "string", "description": "The command."}}}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Create or overwrite a file with the given content.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "The file's path, relative to the task's directory."},
            "content": {"type": "string", "description": "The file's whole content."}},
            "required": ["path", "content"]}}},
    {"type": "function", "function": {
        "name": "submit", "description": "Finish: the task is done.",
        "parameters": {"type": "object", "properties": {}}}},
)
"""The tools as OpenAI function schemas, for chat templates that render ``tools=``."""


@dataclass(frozen=True)
class ActionFormat:
    """How an episode asks a model to act: its system prompt (formatted with ``workdir``) and the
    tools handed to the model's chat template (native tool calling), if any. Every format's replies
    are read by the same ``parse``, so a model that answers in another one still acts."""

    name: str
    system_prompt: str
    tools: tuple[dict, ...] = ()
    example: tuple[dict, ...] = ()
    """Chat turns shown before the task (formatted with ``workdir``): a worked episode."""


ACTION_FORMATS = {f.name: f for f in (
    ActionFormat("tool_call", TOOLS_PROMPT),
    ActionFormat("native", NATIVE_PROMPT, TOOL_SCHEMAS),
    ActionFormat("json", JSON_PROMPT),
    ActionFormat("bash", BASH_PROMPT),
    ActionFormat("example", TOOLS_PROMPT, example=EXAMPLE),
)}
"""``EnvConfig.action_format`` choices. tool_call: ``<tool_call>`` tags taught in the system
prompt; native: the tools' schemas through the model's own chat template (what GRPO's
``environment_factory`` does); json: the call as a ```json block; bash: ```bash blocks only,
files written with heredocs; example: tool_call with a worked episode before the task, as chat turns."""


DEFAULT_FORMAT = "tool_call"


def action_format(name: str) -> ActionFormat:
    """The format called ``name``; ValueError naming the choices otherwise."""
    if name not in ACTION_FORMATS:
        raise ValueError(f"unknown action_format {name!r}: choose one of {', '.join(ACTION_FORMATS)}")
    return ACTION_FORMATS[name]
