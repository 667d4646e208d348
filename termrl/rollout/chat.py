"""An episode as a chat conversation, in the order the policy lived it::

    Trajectory.prompt     system prompt, then the first observation (instruction + workspace listing)
    for every step:
      assistant           the policy's own reply (StepRecord.reply), format errors included
      user                the observation that came back (StepRecord.observation)
    -- except after the last step: the episode ended there and the policy never saw it.

That is ``TerminalEnv.messages`` at the end of the episode plus the last reply: the very
messages the policy was prompted with. Training rows (``termrl.training.trajdata``), the report's
transcripts and the tokenizer figures all read episodes this way.

Trajectories stored before ``Trajectory.prompt`` existed have an empty prompt:
``rebuild_prompts`` recomputes it by opening each task's sandbox once (the listing needs the
workspace after setup); pass the result as ``first_messages``. It must be the ``EnvConfig`` the
episodes ran with (system prompt, listing size).
"""

from __future__ import annotations

from collections.abc import Iterable

from termrl.actions import observation_message
from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import Task, Trajectory


def conversation(traj: Trajectory, first_messages: list[dict] | None = None, *,
                 system_prompt: str | None = None) -> list[dict]:
    """The episode's chat: ``first_messages`` (default ``traj.prompt``), then one assistant turn
    per reply and one user turn per observation the policy saw. ``system_prompt`` replaces the
    first system message (or is put first when there is none).

    >>> from termrl.protocols import StepRecord
    >>> t = Trajectory("t#0#0", "t", "p", prompt=[{"role": "system", "content": "S"},
    ...                                          {"role": "user", "content": "do it"}],
    ...                steps=[StepRecord(0, "ls", None, "exit code 0\\na"), StepRecord(1, "done", None, "")])
    >>> [(m["role"], m["content"].split("\\n")[:3]) for m in conversation(t)][2:]
    [('assistant', ['ls']), ('user', ['<tool_response>', 'exit code 0', 'a']), ('assistant', ['done'])]
    """
    first = traj.prompt if first_messages is None else first_messages
    if not first:
        raise ValueError(f"episode {traj.episode_id} has no prompt (stored before Trajectory.prompt existed?): "
                         f"pass its first messages, e.g. prompts=rebuild_prompts(tasks, env_config)")
    messages = [{"role": m["role"], "content": m["content"]} for m in first]
    if system_prompt is not None:
        if messages[0]["role"] == "system":
            messages[0]["content"] = system_prompt
        else:
            messages.insert(0, {"role": "system", "content": system_prompt})
    last = len(traj.steps) - 1
    for i, step in enumerate(traj.steps):
        messages.append({"role": "assistant", "content": step.reply})
        if i < last:
            messages.append(observation_message(step.observation))
    return messages


def rebuild_prompts(tasks: Iterable[Task], env_config=None) -> dict[str, list[dict]]:
    """Task id -> the first messages an episode of it starts with, opening each task's sandbox
    once (``TerminalEnv.reset``, then close). ``env_config``: the episodes' ``EnvConfig``."""
    prompts: dict[str, list[dict]] = {}
    for task in tasks:
        if task.id not in prompts:
            with TerminalEnv(env_config or EnvConfig()) as env:
                env.reset(task)
                prompts[task.id] = [dict(m) for m in env.messages]
    return prompts


__all__ = ["conversation", "rebuild_prompts"]
