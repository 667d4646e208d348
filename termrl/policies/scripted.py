"""Scripted policies: exact, replayable replies (mini-swe-agent's DeterministicModel).

- ``oracle``: writes the task's reference solution to ``/tmp/.termrl-oracle/solve.sh``,
  runs it from the workdir, then submits -- the agent phase of ``termrl tasks validate``,
  played through the environment like any model. A task that allows one reply (codegen)
  gets the script in that reply's command instead.
- ``nop``: submits at once.
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
from collections.abc import Sequence
from pathlib import Path

from termrl.actions import render_tool_call
from termrl.protocols import Action, ActionKind, Reply, Turn

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
    raise ValueError(f"unknown scripted policy {spec!r}; use oracle, nop or script:FILE")
