"""The CPU quickstart: ``configs/quickstart.toml`` run by ``termrl train`` (``termrl quickstart`` is
its shortcut). Its config, its prompts, its one-turn episodes (GRPO on one reply per episode is the
multi-turn environment path with one turn), a small end-to-end run, the CLI, and (opt in,
``-m quickstart``) the full default run, where RL must beat the SFT warm start."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from termrl.eval.metrics import two_proportion_z
from termrl.policies.tiny import prompt_messages, reference_reply
from termrl.reward.exports.trl_env import pending_calls
from termrl.tasks.families import get_family
from termrl.tasks.suites import resolve
from termrl.training import QUICKSTART
from termrl.training.config import ConfigError, load_config

pytestmark = [pytest.mark.filterwarnings("ignore")]

FAMILY = get_family("one-command")

SMALL = {"sft.steps": 120, "sft.tasks": "one-command:0-127", "grpo.steps": 2, "tasks.train": "one-command:256-263",
         "tasks.heldout": "one-command:heldout:0-7", "model.tiny_tokenizer_seeds": 300,
         "model.tiny_hidden_size": 32, "model.tiny_heads": 2, "grpo.batch_size": 16}
"""The quickstart scaled down to under a minute on 2 cores: 120 SFT steps on 128 tasks, enough for
the model to answer with real tool calls (that run); 2 GRPO steps of 2 tasks x 8 rollouts; 8
held-out tasks."""


def _bash(command: str) -> dict:
    """One tool call of a rollout's reply, as TRL parses it."""
    return {"type": "function", "function": {"name": "bash", "arguments": {"command": command}}}


def _command(task) -> str:
    reply = reference_reply(task).removeprefix("<tool_call>").removesuffix("</tool_call>")
    return json.loads(reply)["arguments"]["command"]


# --------------------------------------------------------------------------- the config


def test_the_quickstart_config_loads_as_a_grpo_run_with_an_sft_warm_start():
    cfg = load_config(QUICKSTART)
    assert cfg.algorithm == "grpo" and cfg.model.tiny and cfg.model.tiny_tokenizer == "one-command"
    assert cfg.grpo.max_turns == 1  # one reply per episode: TRL's max_tool_calling_iterations = 0
    assert cfg.env.system_prompt == "" and not cfg.env.static
    assert cfg.sft.steps > 0 and cfg.eval.before  # "before" is the warm start: the gain is the RL stage's
    sft, train = ({e.id for e in resolve(s)} for s in (cfg.sft.tasks, cfg.tasks.train))
    assert sft and train and not sft & train  # GRPO trains on tasks SFT never imitated
    heldout = resolve(cfg.tasks.heldout)
    assert len(heldout) >= 100 and {e.task.meta.split for e in heldout} == {"heldout"}
    assert {e.task.meta.split for e in resolve(cfg.sft.tasks) + resolve(cfg.tasks.train)} == {"train"}
    assert load_config(QUICKSTART, ["grpo.steps=7", "spec=staged"]).grpo.steps == 7


@pytest.mark.parametrize("override, needle", [
    ("model.tiny_heads=7", "field 'model.tiny_heads': must divide model.tiny_hidden_size (128)"),
    ("sft.step=3", "unknown field 'sft.step'"),
    ("grpo.steps=many", "'grpo.steps': expected int"),
    ("grpo.num_generations=1", "'grpo.num_generations': GRPO needs at least 2"),
    ("model.tiny_tokenizer=nope", "field 'model.tiny_tokenizer': 'nope' is not a task family"),
    ("grpo.max_turns=-1", "field 'grpo.max_turns': must be 0 or more"),
])
def test_bad_overrides_name_the_field(override, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace(")", r"\)")) as e:
        load_config(QUICKSTART, [override])
    assert str(QUICKSTART) in str(e.value)


def test_sft_steps_need_sft_tasks():
    with pytest.raises(ConfigError, match="field 'sft.tasks': name the tasks"):
        load_config(QUICKSTART, ["sft.tasks="])
    assert load_config(QUICKSTART, ["sft.tasks=", "sft.steps=0"]).sft.steps == 0  # no warm start, no tasks


# --------------------------------------------------------------------------- prompts and tasks


def test_reference_reply_is_one_bash_tool_call_and_prompts_match_the_env():
    task = FAMILY.generate(4)
    reply = reference_reply(task)
    assert reply.startswith("<tool_call>") and '"name": "bash"' in reply
    assert "set -e" not in reply and "#!" not in reply
    messages = prompt_messages(task, "")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert task.instruction.strip() in messages[1]["content"]
    with pytest.raises(ValueError, match="need an empty workspace"):
        prompt_messages(get_family("logs-count").generate(0), "")


@pytest.mark.sandbox
def test_prompts_built_without_a_sandbox_are_the_environments():
    """SFT imitates replies to ``opening_messages`` (built without a sandbox for these tasks), GRPO's
    rollouts open with ``task_rows``' prompt plus what ``TerminalToolEnv.reset`` returns (TRL appends
    it to the user message), and the held-out evaluation plays ``TerminalEnv``: one conversation,
    with the quickstart's empty system prompt; the workspace a sandbox really holds lists as empty."""
    from termrl.env import LISTING_COMMAND, EnvConfig, TerminalEnv
    from termrl.reward.exports.trl_env import TerminalToolEnv
    from termrl.tasks.runtime import open_sandbox
    from termrl.training.grpo import task_rows
    from termrl.training.sft import opening_messages

    config = EnvConfig(system_prompt=load_config(QUICKSTART).env.system_prompt, static=False)
    for seed in (FAMILY.train_seeds.start + 3, FAMILY.heldout_seeds.start):
        task = FAMILY.generate(seed)
        with TerminalEnv(config) as env:
            env.reset(task)
            assert env.messages == prompt_messages(task, "") == opening_messages(task, config)
        [row] = task_rows([task], "")
        with TerminalToolEnv(config) as tool_env:
            observation = tool_env.reset(task_id=task.id)
        *head, user = row["prompt"]
        assert [*head, {**user, "content": user["content"] + observation}] == env.messages
        with open_sandbox(task) as box:
            assert box.exec(LISTING_COMMAND.format(n=51)).stdout.strip() == ""


def test_heldout_instructions_are_never_train_instructions():
    train = {FAMILY.generate(s).instruction for s in range(FAMILY.train_seeds.start, FAMILY.train_seeds.start + 3000)}
    held = {FAMILY.generate(s).instruction
            for s in range(FAMILY.heldout_seeds.start, FAMILY.heldout_seeds.start + 300)}
    assert len(held) == 300
    assert not train & held


def test_two_proportion_z():
    z, p = two_proportion_z(0.3, 0.45, 200, 200)
    assert 3.0 < z < 3.2 and 0.001 < p < 0.003
    assert two_proportion_z(0.0, 0.0, 100, 100) == (0.0, 1.0)
    assert two_proportion_z(0.6, 0.5, 100, 100)[0] < 0


# --------------------------------------------------------------------------- one-turn episodes


def test_a_one_turn_rollouts_calls_are_left_to_the_episodes_end():
    """``grpo.max_turns = 1`` is TRL's ``max_tool_calling_iterations = 0``: TRL's loop runs none of
    the reply's calls, and they are the calls ``episode_outcome`` runs."""
    call = _bash("ls")
    reply = {"role": "assistant", "content": "", "tool_calls": [call]}
    assert pending_calls([reply], 0) == [call]
    assert pending_calls([{"role": "assistant", "content": "done"}], 0) == []  # no call: nothing to run
    assert pending_calls([reply], None) == []  # no cap: TRL's loop ran them


def _one_turn(task, calls, verifier=None):
    """The quickstart's episode of ``task`` whose one reply made ``calls``: (outcome, its steps, tool calls)."""
    from termrl.env import EnvConfig
    from termrl.reward.exports.trl_env import TerminalToolEnv, episode_outcome, register_tasks

    register_tasks([task])
    with TerminalToolEnv(EnvConfig(system_prompt="", static=False, command_timeout_s=10), verifier=verifier) as env:
        env.reset(task_id=task.id)
        outcome = episode_outcome(env, calls)
        assert episode_outcome(env, calls) is outcome  # finished once: asked again, the same outcome
        return outcome, list(env.env.steps), env.tool_calls


@pytest.mark.sandbox
def test_a_one_turn_episode_runs_the_reply_and_verifies_it():
    from termrl.protocols import Ending

    seed = 5
    task = FAMILY.generate(seed)
    good, steps, calls = _one_turn(task, [_bash(_command(task))])
    assert good.verified and good.evidence.passed and good.evidence.test_pass_ratio == 1.0
    assert len(good.evidence.tests) == 2 and not [f for f in good.findings if f.severity == "high"]
    assert calls == 1 and [s.action["kind"] for s in steps] == ["command"] and good.ending is Ending.STEP_LIMIT
    assert steps[0].action["command"] == _command(task) and steps[0].exit_code == 0

    bad, steps, _ = _one_turn(task, [_bash("echo hi")])
    assert bad.verified and not bad.evidence.passed and bad.evidence.test_pass_ratio == 0.0
    assert steps[0].observation.startswith("exit code 0") and "hi" in steps[0].observation

    other, _, _ = _one_turn(task, [_bash(_command(FAMILY.generate(seed + 1)))])
    assert other.verified and not other.evidence.passed  # another seed's task wants other names

    nothing, steps, calls = _one_turn(task, [])  # a reply without tool calls: a submission
    assert nothing.verified and not nothing.evidence.passed and nothing.ending is Ending.SUBMITTED
    assert calls == 0 and [s.action["kind"] for s in steps] == ["submit"]

    # a second call reaches the task's one-step limit: refused, counted, not run
    twice, steps, calls = _one_turn(task, [_bash(_command(task)), _bash("rm -rf ./*")])
    assert twice.evidence.passed and calls == 2 and len(steps) == 1


@pytest.mark.sandbox
def test_a_one_turn_episode_sees_home_tampering():
    """The quickstart's episodes are finished like every other: HOME is snapshotted, so a command
    that plants a sitecustomize in the agent's HOME is caught."""
    seed = 11
    task = FAMILY.generate(seed)
    plant = ("mkdir -p ~/.local/lib/python3.11/site-packages && printf 'import builtins\\n' > "
             "~/.local/lib/python3.11/site-packages/sitecustomize.py")
    outcome, _, _ = _one_turn(task, [_bash(f"{_command(task)}\n{plant}")])
    clean, _, _ = _one_turn(task, [_bash(_command(task))])
    assert outcome.verified and outcome.evidence.passed
    home = [f for f in outcome.findings if f.kind == "tampering" and f.file.startswith("~/")]
    assert home and home[0].severity == "high" and "sitecustomize.py" in home[0].file, outcome.findings
    assert clean.verified and clean.evidence.passed and not clean.findings


@pytest.mark.sandbox
def test_a_one_turn_trace_step_is_the_environments():
    """A rollout's call and the same action as ``TerminalEnv.step`` reads it from a reply run
    through one function: the trace the verifier and the detectors read is the same, field for
    field, and so is the verdict."""
    from termrl.actions import render_tool_call
    from termrl.env import EnvConfig, TerminalEnv
    from termrl.episode import SandboxVerifier
    from termrl.protocols import Action, ActionKind

    class Recording:
        def __init__(self):
            self.traces, self.verify = [], SandboxVerifier(static=False)

        def __call__(self, task, box, before, after, trace):
            self.traces.append(trace)
            return self.verify(task, box, before, after, trace)

    task = FAMILY.generate(7)
    actions = [Action(ActionKind.COMMAND, command=_command(task)),
               Action(ActionKind.COMMAND, command="echo hi; echo oops >&2; exit 3"),
               Action(ActionKind.WRITE, path="notes.txt", content="x")]
    recording = Recording()
    for action in actions:
        arguments = {"command": action.command} if action.kind is ActionKind.COMMAND else \
            {"path": action.path, "content": action.content}
        name = "bash" if action.kind is ActionKind.COMMAND else "write_file"
        outcome, _, _ = _one_turn(task, [{"type": "function", "function": {"name": name, "arguments": arguments}}],
                                  verifier=recording)
        rollout = recording.traces[-1]
        with TerminalEnv(EnvConfig(system_prompt="", static=False, command_timeout_s=10),
                         verifier=recording) as env:
            env.reset(task)
            *_, terminated, truncated, info = env.step(render_tool_call(action))
            assert terminated or truncated  # the task's one step
        assert rollout == recording.traces[-1] == [env.steps[0].trace()], action
        assert outcome.evidence.passed == info["evidence"].passed
    assert recording.traces[0][0]["exit_code"] == 0 and recording.traces[0][0]["action"] == "command"
    assert recording.traces[2][0]["exit_code"] == 3 and "oops" in recording.traces[2][0]["output"]
    assert recording.traces[4][0]["command"] == "write notes.txt"


# --------------------------------------------------------------------------- the command


def _cli(*args, timeout=600):
    result = subprocess.run([sys.executable, "-m", "termrl", "quickstart", *args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    result.message = " ".join(result.stderr.split())  # rich wraps long lines
    return result


@pytest.mark.sandbox
def test_small_quickstart_runs_end_to_end(tmp_path):
    from termrl.rollout.store import read

    out = tmp_path / "qs"
    result = _cli("--out", str(out), "--json", *[a for k, v in SMALL.items() for a in ("--set", f"{k}={v}")])
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads(result.stdout)  # stdout is one JSON document: the trainers log on stderr
    assert results == json.loads((out / "results.json").read_text())
    assert results["algorithm"] == "grpo" and results["config"]["grpo"]["max_turns"] == 1

    sft = results["sft"]  # the warm start ran its steps on the reference solutions
    assert sft["steps"] == 120 and sft["examples"] == 128 and sft["last_loss"] < sft["first_loss"]
    assert (out / "sft" / "log_history.json").is_file() and (out / "sft" / "config.json").is_file()

    for name in ("heldout_before", "heldout"):  # the SFT model, then the RL model, on the same episodes
        assert results[name]["episodes"] == 8 and results[name]["errors"] == 0, name
        assert len(read(out / name.replace("_", "-"))) == 8
    for key in ("heldout_pass_rate_before", "heldout_pass_rate_after", "heldout_p_value"):
        assert 0.0 <= results[key] <= 1.0
    assert results["heldout_episodes"] == 8 and "heldout_z" in results

    training = results["training"]
    assert training["steps"] == 2 and training["unverified"] == 0 and training["rollouts"] == 2 * 16
    # episodes were finished while their batch still generated (one still queued when the rewards were
    # asked for is finished by the reward call instead)
    assert 2 * 16 // 2 <= training["finished_ahead"] <= 2 * 16
    assert {"reward_first_tenth", "reward_last_tenth", "zero_variance_groups"} <= set(training)

    rollouts = read(out / "rollouts")
    assert len(rollouts) == 2 * 16 and not [t for t in rollouts if t.error]
    ran = 0
    for t in rollouts:  # a reply with calls ran them (the one step the task allows); one without submitted
        kinds = [s.action["kind"] for s in t.steps]
        if kinds == ["submit"]:
            assert t.ending == "submitted", t.episode_id
            continue
        assert kinds in (["command"], ["write"]) and t.ending == "step_limit", (t.episode_id, kinds)
        assert t.steps[0].observation and t.steps[0].exit_code is not None, t.episode_id
        ran += 1
    assert ran, "the warm-started model's replies make tool calls, and they run"
    assert (out / "report.html").is_file() and (out / "final" / "config.json").is_file()


def test_cli_refuses_a_used_run_directory_and_bad_settings(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    result = _cli("--out", str(tmp_path))
    assert result.returncode == 2 and "already holds a run: pass --resume" in result.message, result.message
    assert (tmp_path / "config.json").read_text() == "{}" and "Traceback" not in result.stderr
    result = _cli("--out", str(tmp_path / "new"), "--set", "model.tiny_heads=7")
    assert result.returncode == 2 and "'model.tiny_heads'" in result.message and "Traceback" not in result.stderr
    result = _cli("--out", str(tmp_path / "new"), "--set", "grpo.stepz=3")
    assert result.returncode == 2 and "unknown field 'grpo.stepz'" in result.message
    assert not (tmp_path / "new").exists()


@pytest.mark.quickstart
def test_full_quickstart_rl_beats_sft(tmp_path):
    """The README's main job on its defaults: RL must measurably improve on the SFT warm start."""
    out = tmp_path / "qs"
    result = _cli("--out", str(out), timeout=3 * 3600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["heldout_episodes"] >= 100
    assert results["heldout_before"]["errors"] == results["heldout"]["errors"] == 0
    assert results["training"]["unverified"] == 0
    assert results["heldout_pass_rate_after"] > results["heldout_pass_rate_before"]
    assert results["heldout_p_value"] < 0.05, {k: v for k, v in results.items() if k.startswith("heldout_")}


@pytest.mark.sandbox
def test_sft_opens_with_the_environments_messages_in_every_action_format():
    """The warm start's prompts are the episode's own opening, the ``example`` format's worked
    turns included, built without a sandbox for an empty workspace."""
    from termrl.env import EnvConfig, TerminalEnv
    from termrl.training.sft import opening_messages

    task = FAMILY.generate(FAMILY.train_seeds.start + 5)
    for config in (EnvConfig(action_format="example"), EnvConfig(system_prompt="")):
        with TerminalEnv(config) as env:
            env.reset(task)
            assert opening_messages(task, config) == [dict(m) for m in env.messages]
    assert len(opening_messages(task, EnvConfig(action_format="example"))) > 2  # the example's turns
