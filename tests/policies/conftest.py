"""A tiny local model, built once per session, and a helper to make turns."""

from __future__ import annotations

import pytest

from termrl.protocols import Task, Turn

TASK = Task(id="t", instruction="do x")


def turn(*user: str, system: str = "You are a coding agent.") -> Turn:
    """A turn whose conversation is the system prompt then ``user`` messages, alternating
    with a fixed assistant reply."""
    messages = [{"role": "system", "content": system}]
    for i, text in enumerate(user):
        if i:
            messages.append({"role": "assistant", "content": "ok"})
        messages.append({"role": "user", "content": text})
    return Turn(messages=messages, task=TASK, step=0)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    from termrl.policies.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
