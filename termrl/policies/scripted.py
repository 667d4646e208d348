"""Scripted policies: exact, replayable replies (mini-swe-agent's DeterministicModel).

- ``oracle``: writes the task's reference solution to ``/tmp/.termrl-oracle/solve.sh``,
  runs it from the workdir, then submits -- the agent phase of ``termrl tasks validate``,
  played through the environment like any model. A task that allows one reply (codegen)
  gets the script in that reply's command instead.
- ``nop``: submits at once.
- ``reference`` (``reference:FORMAT``): demonstrates the task's reference solution in an action
  format (default tool_call): reply 1 runs its commands as one command, reply 2 submits, both
  written as that format asks (``ReferencePolicy``). The SFT warm start's demonstrations
  (``sft.source = "episodes"``).
- ``script:FILE``: replays the replies listed in a JSON file, per task::

      {"task-id": ["<tool_call>...</tool_call>", {"command": "ls"}, ...], "*": [...]}

  or a plain list used for every task. A string is raw model text (parsed by the
  environment, so a script can emit malformed tool calls or fenced blocks); an object
  is one action: ``{"command": ...}``, ``{"write": PATH, "content": ...}`` or
  ``{"submit": true}``. Once a task's list is used up the policy submits.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from pathlib import Path

from termrl.actions import ACTION_FORMATS, DEFAULT_FORMAT, action_format, render_action, render_tool_call
from termrl.protocols import Action, ActionKind, Reply, Task, Turn

ORACLE_PATH = "/tmp/.termrl-oracle/solve.sh"
SUBMIT = render_tool_call(Action(ActionKind.SUBMIT))


class ScriptError(ValueError):
    """A script file that cannot be replayed; names the file, the entry and the fix."""


class OraclePolicy:
    name = "oracle"

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        return [Reply(self._reply(t)) for t in turns]

    @staticmethod
    def _reply(turn: Turn) -> str:
        if turn.task.solution is None:
            return SUBMIT  # nothing to replay: the episode is scored as submitted unchanged
        if turn.task.limits.max_steps < 2:  # one reply (codegen tasks): the script travels in the command
            encoded = base64.b64encode(turn.task.solution.encode()).decode()
            script = [Action(ActionKind.COMMAND, command=f'bash -c "$(echo {encoded} | base64 -d)" oracle')]
        else:
            script = [Action(ActionKind.WRITE, path=ORACLE_PATH, content=turn.task.solution),
                      Action(ActionKind.COMMAND, command=f"bash {ORACLE_PATH}")]
        return render_tool_call(script[turn.step]) if turn.step < len(script) else SUBMIT


class NopPolicy:
    name = "nop"

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        return [Reply(SUBMIT) for _ in turns]


_HEADER = re.compile(r"(?:#!.*|set(?:\s+(?:[-+][a-zA-Z]+|pipefail))+|\s*)$")
"""A line of a script's header that is not a command to demonstrate: the shebang, ``set -e`` and the
like (in the episode's shell they would outlive the script), a blank line."""


def reference_command(task: Task) -> str:
    """The task's reference solution as one command: its script verbatim (heredocs that write files
    included, their shebangs and blank lines kept) less its header -- the shebang and the ``set``
    options before the first command, which in the episode's persistent shell would apply to every
    later command. ValueError naming a task without one."""
    lines = (task.solution or "").splitlines()
    while lines and _HEADER.match(lines[0].strip()):
        lines.pop(0)
    command = "\n".join(lines).rstrip()
    if not command:
        raise ValueError(f"task {task.id} has no reference solution to imitate")
    return command


class ReferencePolicy:
    """A demonstration of the task's reference solution in the action format ``fmt`` (tool_call,
    native, json, bash or example; ``termrl.actions.render_action``): reply 1 runs
    ``reference_command`` (the solution ``termrl.policies.tiny.reference_reply`` turns into one bash
    tool call, here verbatim: that one also drops the blank lines and shebangs inside heredocs),
    reply 2 submits: the submit tool call, or for bash and native, whose prompts say to finish by
    replying without an action, ``termrl.actions.CLOSING_REPLY``. A task allowing one reply
    (codegen) ends at its step limit after the first. A task without a reference solution is a
    ValueError (the episode records it as a harness failure)."""

    def __init__(self, fmt: str = DEFAULT_FORMAT):
        action_format(fmt)  # an unknown name fails here, naming the choices
        self.format = fmt
        self.name = "reference" if fmt == DEFAULT_FORMAT else f"reference:{fmt}"

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        return [Reply(self.reply(t.task, t.step)) for t in turns]

    def reply(self, task: Task, step: int) -> str:
        """Reply ``step`` (0-based) of a demonstration of ``task``."""
        if step == 0:
            return render_action(Action(ActionKind.COMMAND, command=reference_command(task)), self.format)
        return render_action(Action(ActionKind.SUBMIT), self.format)


def _entry_text(entry: object, where: str) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        if "command" in entry and isinstance(entry["command"], str):
            return render_tool_call(Action(ActionKind.COMMAND, command=entry["command"]))
        if isinstance(entry.get("write"), str) and isinstance(entry.get("content"), str):
            return render_tool_call(Action(ActionKind.WRITE, path=entry["write"], content=entry["content"]))
        if entry.get("submit") is True:
            return SUBMIT
    raise ScriptError(f"{where}: expected raw text, {{\"command\": ...}}, {{\"write\": PATH, \"content\": ...}} "
                      f"or {{\"submit\": true}}, got {json.dumps(entry)[:80]}")


class ScriptPolicy:
    """Replays a script file; see the module docstring for its format."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.name = f"script:{self.path.name}"
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            raise ScriptError(f"{self.path}: no such script file") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ScriptError(f"{self.path}: not valid JSON ({e}); a script is a JSON list of replies "
                              "or an object mapping task ids (or \"*\") to lists") from None
        if isinstance(data, list):
            data = {"*": data}
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise ScriptError(f"{self.path}: a script is a JSON list of replies or an object mapping "
                              "task ids (or \"*\") to lists of replies")
        self.replies = {task: [_entry_text(e, f"{self.path}: {task}[{i}]") for i, e in enumerate(entries)]
                        for task, entries in data.items()}

    def generate(self, turns: Sequence[Turn]) -> list[Reply]:
        out = []
        for t in turns:
            replies = self.replies.get(t.task.id, self.replies.get("*", []))
            out.append(Reply(replies[t.step] if t.step < len(replies) else SUBMIT))
        return out


def make_scripted(spec: str):
    if spec == "oracle":
        return OraclePolicy()
    if spec == "nop":
        return NopPolicy()
    if spec.startswith("script:"):
        return ScriptPolicy(spec[len("script:"):])
    if spec == "reference" or spec.startswith("reference:"):
        fmt = spec.partition(":")[2] or DEFAULT_FORMAT
        if fmt not in ACTION_FORMATS:
            raise ValueError(f"{spec!r}: unknown action format {fmt!r}; use reference or reference:FORMAT with "
                             f"FORMAT one of {', '.join(ACTION_FORMATS)}")
        return ReferencePolicy(fmt)
    raise ValueError(f"unknown scripted policy {spec!r}; use oracle, nop, reference[:FORMAT] or script:FILE")
