"""The SFT warm start from verified episodes (``sft.source = "episodes"``): ``ReferencePolicy``'s
replies in every action format, which demonstrations are kept, the stored episodes a resumed run
does not play again, and a warm start that trains a tiny model on them."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess

import pytest

from termrl.actions import ACTION_FORMATS, CLOSING_REPLY, TOOL_SCHEMAS, parse, render_action
from termrl.policies.scripted import ReferencePolicy, make_scripted, reference_command
from termrl.protocols import Action, ActionKind, StepRecord, Trajectory
from termrl.tasks.suites import resolve

pytestmark = [pytest.mark.filterwarnings("ignore")]

SUITE = "logs-count@1:0-1"
"""Multi-step tasks whose reference solutions write a script through a heredoc (its shebang inside)."""


def _tasks(suite: str = SUITE) -> list:
    return [e.task for e in resolve(suite)]


# --------------------------------------------------------------------------- the demonstrating policy


def test_reference_command_drops_only_the_script_header():
    task = _tasks()[0]
    command = reference_command(task)
    lines = task.solution.splitlines()
    assert lines[:2] == ["#!/bin/bash", "set -e"] and not command.startswith(("#!", "set"))
    assert command == "\n".join(lines[2:]).rstrip()  # verbatim after the header
    assert "#!/usr/bin/env python3" in command and "\n\n" in command  # the heredoc's shebang and blank lines stay
    with pytest.raises(ValueError, match="no reference solution"):
        reference_command(dataclasses.replace(task, solution=None))
    header = dataclasses.replace(task, solution="#!/bin/sh\n\nset -euo pipefail\nset -u\necho hi\nset -e\n")
    assert reference_command(header) == "echo hi\nset -e"  # only the header before the first command goes


@pytest.mark.parametrize("fmt", list(ACTION_FORMATS))
def test_reference_replies_parse_to_the_reference_command_then_a_submit(fmt):
    policy = ReferencePolicy(fmt)
    for task in _tasks() + _tasks("one-command:0-1"):
        first, second = policy.reply(task, 0), policy.reply(task, 1)
        assert parse(first).action == Action(ActionKind.COMMAND, command=reference_command(task)), (fmt, first)
        assert parse(first).ignored == 0
        assert parse(second).action.kind is ActionKind.SUBMIT
        if fmt in ("bash", "native"):  # their prompts say: finish by replying without an action
            assert second == CLOSING_REPLY
        else:
            assert '"name": "submit"' in second
    assert policy.reply(task, 1) == policy.reply(task, 5)  # past the solution it keeps submitting
    expected = {"tool_call": "<tool_call>{", "example": "<tool_call>{", "native": "<tool_call>\n{",
                "json": "```json\n{", "bash": "```bash\n"}
    assert first.startswith(expected[fmt])


def test_reference_policy_specs_and_unknown_formats():
    assert make_scripted("reference").format == "tool_call" and make_scripted("reference").name == "reference"
    assert make_scripted("reference:bash").name == "reference:bash"
    with pytest.raises(ValueError, match="unknown action format 'yaml'.*tool_call, native"):
        make_scripted("reference:yaml")
    with pytest.raises(ValueError, match="unknown action_format"):
        ReferencePolicy("yaml")


def test_native_replies_are_what_the_chat_template_renders_for_a_tool_call():
    """A native reply is the text Qwen2.5's template (the tiny model's) writes for an assistant
    message's ``tool_calls``: what a model prompted with ``tools=`` learns to produce."""
    from termrl.policies.tiny import build_tokenizer

    tokenizer = build_tokenizer(vocab_size=300)
    command = reference_command(_tasks()[0]) + "\necho 'naïve' \"quoted\" \\\\"
    call = {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "bash", "arguments": {"command": command}}}]}
    text = {"role": "assistant", "content": render_action(Action(ActionKind.COMMAND, command=command), "native")}
    user = {"role": "user", "content": "go"}
    assert tokenizer.apply_chat_template([user, call], tokenize=False) == \
        tokenizer.apply_chat_template([user, text], tokenize=False)


@pytest.mark.parametrize("content", ["a\nEOF\nb\n", "no newline at the end\nEOF_", "", "$HOME `x` \\n\n"])
def test_a_write_in_the_bash_format_writes_the_file_exactly(tmp_path, content):
    reply = render_action(Action(ActionKind.WRITE, path="sub dir/it's.txt", content=content), "bash")
    command = parse(reply).action.command
    (tmp_path / "sub dir").mkdir()
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert (tmp_path / "sub dir" / "it's.txt").read_text() == content


# --------------------------------------------------------------------------- which demonstrations are kept


def _demo(passed=True, error=None, findings=(), format_error=None, steps=2) -> Trajectory:
    records = [StepRecord(i, "r", {"kind": "command"}, "o", format_error=format_error if i == 0 else None)
               for i in range(steps)]
    return Trajectory("t#0#0", "t", "reference", steps=records, passed=passed, reward=1.0 if passed else 0.0,
                      error=error, evidence={"verified": error is None}, ending="submitted",
                      findings=[{"kind": k, "severity": s} for k, s in findings])


def test_a_demonstration_is_kept_only_when_verified_clean_and_parsed():
    from termrl.training.sft import demo_verdict, dropped_summary

    cases = {"kept": _demo(findings=[("empty_work", "medium")]), "failed": _demo(passed=False),
             "harness_failure": _demo(error="SandboxError: gone"), "hacked": _demo(findings=[("tampering", "high")]),
             "format_error": _demo(format_error="bad JSON")}
    assert {name: demo_verdict(t) for name, t in cases.items()} == {name: name for name in cases}
    assert demo_verdict(_demo(steps=0)) == "failed"
    assert dropped_summary({"dropped": {}}) == "none dropped"
    assert dropped_summary({"dropped": {"failed": 1, "no_reference": 2}}) == "3 dropped (failed 1, no_reference 2)"


def test_sft_source_is_validated_by_name():
    from termrl.training import QUICKSTART
    from termrl.training.config import ConfigError, load_config

    assert load_config(QUICKSTART).sft.source == "reference"  # the quickstart's warm start, as it was
    assert load_config(QUICKSTART, ["sft.source=episodes"]).sft.source == "episodes"
    with pytest.raises(ConfigError, match="field 'sft.source': 'replays' is not one of reference, episodes"):
        load_config(QUICKSTART, ["sft.source=replays"])


# --------------------------------------------------------------------------- episodes, stored and kept


def _with_broken(tasks: list) -> list:
    """``tasks`` plus a copy of the first whose reference solution fails and one without any."""
    first = tasks[0]
    wrong = dataclasses.replace(first, id=first.id + "-wrong", solution="#!/bin/bash\necho nothing > out.txt\n")
    none = dataclasses.replace(first, id=first.id + "-none", solution=None)
    return [*tasks, wrong, none]


@pytest.mark.sandbox
def test_reference_episodes_are_stored_verified_and_not_played_again(tmp_path, monkeypatch):
    from termrl.env import EnvConfig
    from termrl.rollout.runner import RolloutConfig
    from termrl.rollout.store import read
    from termrl.training.sft import episode_rows, reference_episodes

    tasks = _with_broken(_tasks())
    rollout = RolloutConfig(workers=2, env=EnvConfig(action_format="json", static=False))
    kept, report = reference_episodes(tasks, rollout, tmp_path / "episodes")
    assert report == {"tasks": 4, "played": 3, "kept": 2, "dropped": {"failed": 1, "no_reference": 1},
                      "dropped_tasks": {"failed": [tasks[2].id], "no_reference": [tasks[3].id]}}
    assert sorted(t.task_id for t in kept) == sorted(t.id for t in tasks[:2])
    assert all(t.ending == "submitted" and t.policy == "reference:json" for t in kept)
    assert len(read(tmp_path / "episodes")) == 3  # the failing one is stored too, for a look

    rows = episode_rows(kept)
    messages = rows[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    assert "written as a JSON object in a ```json block" in messages[0]["content"]  # the format's own prompt
    assert parse(messages[2]["content"]).action.command == reference_command(tasks[0])
    assert messages[3]["content"].startswith("<tool_response>\nexit code 0")  # the observation, between the replies
    assert parse(messages[4]["content"]).action.kind is ActionKind.SUBMIT
    assert "tools" not in rows[0]  # no schemas given to the json format's prompts
    native = episode_rows(kept, EnvConfig(action_format="native").tools)  # the schemas the policy was prompted with
    assert json.loads(native[0]["tools"]) == list(TOOL_SCHEMAS) and native[0]["messages"] == messages

    def refuse(self, turns):
        raise AssertionError("a stored demonstration was played again")

    monkeypatch.setattr(ReferencePolicy, "generate", refuse)
    again, report_again = reference_episodes(tasks, rollout, tmp_path / "episodes")
    assert report_again == report and [t.episode_id for t in again] == [t.episode_id for t in kept]


# --------------------------------------------------------------------------- the warm start


CONFIG = """
algorithm = "rft"
output_dir = "{out}"
[model]
tiny = true
tiny_hidden_size = 32
tiny_layers = 1
tiny_heads = 2
[tasks]
train = "logs-count@1:10-11"
[env]
action_format = "bash"
static = false
[sft]
steps = 4
batch_size = 2
learning_rate = 1e-2
tasks = "{sft_tasks}"
source = "episodes"
max_length = 4096
"""


@pytest.mark.sandbox
@pytest.mark.slow  # over 10 s: kept out of the default tier (under 15 minutes)
def test_an_episodes_warm_start_trains_on_the_verified_episodes_and_resumes_without_playing(tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file

    from termrl.rollout.accounting import Accountant
    from termrl.rollout.store import read
    from termrl.training import run
    from termrl.training.config import load_config

    out = tmp_path / "run"
    path = tmp_path / "sft.toml"
    path.write_text(CONFIG.format(out=out, sft_tasks="logs-count@1:0-2"))
    cfg = load_config(path)
    real = run._tasks
    monkeypatch.setattr(run, "_tasks", lambda suite: _with_broken(real(suite)) if suite == cfg.sft.tasks else real(suite))
    out.mkdir()
    model_dir = run._model_dir(cfg, out)
    where, summary = run.warm_start(cfg, out, model_dir, Accountant())

    assert where == out / "sft" and summary["source"] == "episodes" and summary["action_format"] == "bash"
    assert summary["episodes"]["played"] == 4 and summary["episodes"]["kept"] == 3
    assert summary["episodes"]["dropped"] == {"failed": 1, "no_reference": 1}
    assert summary["steps"] == 4 and summary["examples"] == 3
    assert math.isfinite(summary["train_loss"]) and summary["train_loss"] > 0
    assert summary["model"] == str(where) and "RL stage's gain alone" in summary["before"]
    assert json.loads((where / "sft.json").read_text()) == summary
    assert len(read(where / "episodes")) == 4
    before, after = load_file(str(model_dir / "model.safetensors")), load_file(str(where / "model.safetensors"))
    assert any(not torch.equal(before[k], after[k]) for k in before)

    assert run.warm_start(cfg, out, model_dir, Accountant()) == (where, summary)  # done: kept on resume
    (where / "sft.json").unlink()  # a run stopped while training: the episodes are stored, not played again
    monkeypatch.setattr(ReferencePolicy, "generate", lambda self, turns: pytest.fail("played again"))
    _, again = run.warm_start(cfg, out, model_dir, Accountant())
    assert again["episodes"] == summary["episodes"] and again["steps"] == 4


@pytest.mark.sandbox
def test_with_lora_the_warm_start_merges_its_adapter_exactly_as_rft_rounds_do(tmp_path):
    import torch
    from safetensors.torch import load_file

    from termrl.rollout.accounting import Accountant
    from termrl.training import run
    from termrl.training.config import load_config
    from termrl.training.rft import restore_merged

    out = tmp_path / "run"
    path = tmp_path / "sft.toml"
    path.write_text(CONFIG.format(out=out, sft_tasks="logs-count@1:0-1") + "[lora]\nenabled = true\nr = 4\n")
    cfg = load_config(path)
    out.mkdir()
    model_dir = run._model_dir(cfg, out)
    where, summary = run.warm_start(cfg, out, model_dir, Accountant())
    assert summary["steps"] == 4 and summary["rows"] == 2 and summary["adapter"] == str(out / "sft-adapter")
    merged = load_file(str(where / "model.safetensors"))
    base = load_file(str(model_dir / "model.safetensors"))
    assert any(not torch.equal(base[k], merged[k]) for k in base)
    again = tmp_path / "again"
    restore_merged(out / "sft-adapter", again, model_dir)  # the same bits from the stored adapter
    rebuilt = load_file(str(again / "model.safetensors"))
    assert all(torch.equal(merged[k], rebuilt[k]) for k in merged)


class _Asked(Exception):
    pass


@pytest.mark.parametrize("algorithm, fmt, played_in", [("rft", "json", "json"), ("dpo", "bash", "bash"),
                                                       ("grpo", "json", "native")])
def test_demonstrations_are_played_in_the_format_the_algorithm_s_episodes_use(tmp_path, monkeypatch, algorithm, fmt,
                                                                              played_in):
    """RFT, DPO and the evaluation play ``env.action_format``; GRPO's rollouts are TRL's native tool
    loop, whatever it says, so its warm start demonstrates native tool calls, under GRPO's prompt."""
    from termrl.rollout.accounting import Accountant
    from termrl.training import run
    from termrl.training.config import load_config
    from termrl.training.grpo import GRPO_PROMPT

    path = tmp_path / "sft.toml"
    path.write_text(CONFIG.format(out=tmp_path / "run", sft_tasks="logs-count@1:0-1"))
    cfg = load_config(path, [f"algorithm={algorithm}", f"env.action_format={fmt}"])

    def asked(tasks, rollout, directory, **kw):
        raise _Asked(rollout, directory, [t.id for t in tasks])

    monkeypatch.setattr(run, "reference_episodes", asked)
    with pytest.raises(_Asked) as e:
        run.warm_start(cfg, tmp_path / "run", tmp_path / "model", Accountant())
    rollout, directory, ids = e.value.args
    assert rollout.env.action_format == played_in and rollout.samples == 1 and not rollout.env.static
    assert (rollout.env.system_prompt == GRPO_PROMPT) == (algorithm == "grpo")
    assert directory == tmp_path / "run" / "sft" / "episodes" and ids == [t.id for t in _tasks()]
