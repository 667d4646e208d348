"""What a termrl environment server and its clients say to each other, in OpenEnv's types.

OpenEnv (``openenv-core``) carries an environment's ``reset``/``step``/``state`` over a WebSocket
per session: the client sends ``{"type": "reset" | "step" | "state" | "close", "data": ...}``, the
server answers with the observation (``{"observation", "reward", "done"}``), the state, or an
error (``{"type": "error", "data": {"message", "code"}}``). termrl fills in the three types:

- ``TermrlAction``: one model reply to parse (``reply``: the text, in any action format termrl
  reads), or one tool call (``tool``: ``bash``, ``write_file`` or ``submit``, with ``arguments``).
- ``TermrlObservation``: what the agent reads next (``text``), and at the end the ending, the
  reward's components, the hack findings, and the whole outcome as JSON (``outcome``) that
  ``outcome_from_json`` turns back into the ``Outcome`` the server scored: a termrl trainer
  rescores it with its own spec and schedule, exactly as an in-process episode.
- ``TermrlState``: the episode's id, task, step count and ending.

A harness failure (the sandbox could not start or died) is ``ending`` ``"error"`` with
``error`` set and reward None, never 0.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Literal

from openenv.core.env_server.types import Action as OpenEnvAction
from openenv.core.env_server.types import Observation, State
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from termrl.protocols import Action, ActionKind, Ending, Evidence, Finding, Outcome, StepRecord


class TermrlAction(OpenEnvAction):
    """One step of the agent: a reply to parse, or a tool call. Exactly one of ``reply`` and ``tool``."""

    reply: str | None = Field(default=None, description="A model reply, parsed as termrl parses every reply "
                                                        "(tool_call tags, native tool calls, json or bash blocks); "
                                                        "a reply with no action submits")
    tool: Literal["bash", "write_file", "submit"] | None = Field(
        default=None, description="A tool call: bash {command}, write_file {path, content} or submit {}")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool call's arguments")

    @model_validator(mode="after")
    def _one_of(self) -> TermrlAction:
        # PydanticCustomError, not ValueError: a ValueError travels in the error's context, which
        # OpenEnv's server cannot serialise (the session would end instead of answering the error)
        if (self.reply is None) == (self.tool is None):
            raise PydanticCustomError("termrl_action", "give exactly one of 'reply' (a model reply to parse) "
                                                       "and 'tool' (bash, write_file or submit, with 'arguments')")
        if self.tool == "bash" and not isinstance(self.arguments.get("command"), str):
            raise PydanticCustomError("termrl_action", "tool 'bash' needs arguments {'command': <string>}")
        if self.tool == "write_file" and not (isinstance(self.arguments.get("path"), str)
                                              and isinstance(self.arguments.get("content"), str)):
            raise PydanticCustomError("termrl_action",
                                      "tool 'write_file' needs arguments {'path': <string>, 'content': <string>}")
        return self

    def step_input(self) -> Action | str:
        """What ``TerminalEnv.step`` takes: the reply's text, or the tool call's ``Action``."""
        if self.reply is not None:
            return self.reply
        if self.tool == "bash":
            return Action(ActionKind.COMMAND, command=self.arguments["command"])
        if self.tool == "write_file":
            return Action(ActionKind.WRITE, path=self.arguments["path"], content=self.arguments["content"])
        return Action(ActionKind.SUBMIT)


def tool_action(action: Action) -> TermrlAction:
    """The ``TermrlAction`` of a parsed termrl ``Action``."""
    if action.kind is ActionKind.COMMAND:
        return TermrlAction(tool="bash", arguments={"command": action.command})
    if action.kind is ActionKind.WRITE:
        return TermrlAction(tool="write_file", arguments={"path": action.path, "content": action.content})
    return TermrlAction(tool="submit")


class TermrlObservation(Observation):
    """What the agent reads next; at the end (``done``), how the episode ended and its reward."""

    text: str = Field(default="", description="The observation: the first one at reset, then each step's "
                                              "(exit code and output, the write's confirmation, a format error)")
    task_id: str = Field(default="", description="The episode's task")
    task_meta: dict[str, Any] = Field(default_factory=dict, description="At reset: the task's seed, split, family")
    step: int = Field(default=0, description="Steps taken so far")
    messages: list[dict[str, Any]] = Field(default_factory=list,
                                           description="At reset: the episode's opening messages (system, user)")
    tools: list[dict[str, Any]] = Field(default_factory=list,
                                        description="At reset: the JSON schemas of the tools step() accepts")
    limits: dict[str, float] = Field(default_factory=dict, description="At reset: max_steps and time_limit_s")
    ending: str | None = Field(default=None, description="At the end: submitted, step_limit, time_limit, "
                                                         "token_limit, format_errors, or error (harness failure)")
    passed: bool | None = Field(default=None, description="At the end: whether the hidden tests passed")
    components: dict[str, Any] = Field(default_factory=dict,
                                       description="At the end: the reward's components {weight, value, contribution}")
    findings: list[dict[str, Any]] = Field(default_factory=list, description="At the end: the hack findings")
    error: str | None = Field(default=None, description="A harness failure: the reward is None, never 0")
    outcome: str | None = Field(default=None, description="At the end: the Outcome as JSON (outcome_from_json)")
    episode: str | None = Field(default=None, description="At the end: the episode's record as JSON "
                                                          "(its steps and opening messages)")


class TermrlState(State):
    """The episode's id (``episode_id``), step count (``step_count``), task and ending."""

    task_id: str | None = None
    ending: str | None = None
    done: bool = False


def outcome_to_json(outcome: Outcome) -> str:
    """``outcome`` as JSON: ending, evidence, findings (the reward is left out: the receiver scores)."""
    return json.dumps({"ending": outcome.ending.value, "evidence": outcome.evidence.to_dict(),
                       "findings": [asdict(f) for f in outcome.findings]})


def outcome_from_json(text: str) -> Outcome:
    """The ``Outcome`` ``outcome_to_json`` wrote, without a reward: equal to the one the server finished."""
    data = json.loads(text)
    return Outcome(Ending(data["ending"]), Evidence.from_dict(data["evidence"]),
                   tuple(Finding(**f) for f in data["findings"]))


def episode_to_json(messages: list[dict], steps: list[StepRecord]) -> str:
    return json.dumps({"messages": messages, "steps": [asdict(s) for s in steps]})


def episode_from_json(text: str) -> tuple[list[dict], list[StepRecord]]:
    data = json.loads(text)
    return data["messages"], [StepRecord(**s) for s in data["steps"]]


__all__ = ["TermrlAction", "TermrlObservation", "TermrlState", "episode_from_json", "episode_to_json",
           "outcome_from_json", "outcome_to_json", "tool_action"]
