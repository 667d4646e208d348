"""The CPU quickstart: its reward, its prompts, a small end-to-end run, the CLI, and (opt in,
``-m quickstart``) the full default run, where RL must beat the SFT warm start."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from termrl.eval.metrics import two_proportion_z
from termrl.policies.tiny import prompt_messages, reference_reply
from termrl.tasks.families import get_family
from termrl.training.config import ConfigError, from_overrides
from termrl.training.quickstart import QuickstartConfig, SingleActionEvaluator, check_family, run_quickstart

pytestmark = [pytest.mark.filterwarnings("ignore")]

FAMILY = get_family("one-command")

SMALL = QuickstartConfig(hidden_size=32, layers=1, heads=2, tokenizer_seeds=60, sft_examples=8, sft_steps=4,
                         sft_batch_size=4, grpo_steps=2, prompts_per_step=2, num_generations=2,
                         max_completion_tokens=24, heldout_episodes=4, eval_workers=2, verifier_workers=2)


def test_reference_reply_is_one_bash_tool_call_and_prompts_match_the_env():
    task = FAMILY.generate(4)
    reply = reference_reply(task)
    assert reply.startswith("<tool_call>") and '"name": "bash"' in reply
    assert "set -e" not in reply and "#!" not in reply
    messages = prompt_messages(task, "")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert task.instruction.strip() in messages[1]["content"]


@pytest.mark.sandbox
def test_prompts_built_without_a_sandbox_are_the_environments():
    """The quickstart trains on ``prompt_messages`` (no sandbox) and is evaluated in ``TerminalEnv``:
    both come from ``termrl.episode.initial_messages``, and the workspace a sandbox really holds
    for such a task lists as empty."""
    from termrl.env import LISTING_COMMAND, EnvConfig, TerminalEnv
    from termrl.tasks.runtime import open_sandbox

    for seed in (FAMILY.train_seeds.start + 3, FAMILY.heldout_seeds.start):
        task = FAMILY.generate(seed)
        with TerminalEnv(EnvConfig(system_prompt=QuickstartConfig().system_prompt)) as env:
            env.reset(task)
            assert env.messages == prompt_messages(task, QuickstartConfig().system_prompt)
        with open_sandbox(task) as box:
            assert box.exec(LISTING_COMMAND.format(n=51)).stdout.strip() == ""


def test_heldout_instructions_are_never_train_instructions():
    train = {FAMILY.generate(s).instruction for s in range(FAMILY.train_seeds.start, FAMILY.train_seeds.start + 3000)}
    held = {FAMILY.generate(s).instruction
            for s in range(FAMILY.heldout_seeds.start, FAMILY.heldout_seeds.start + 300)}
    assert len(held) == 300
    assert not train & held


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="unknown field 'sft_step'"):
        from_overrides(QuickstartConfig, ["sft_step=3"])
    with pytest.raises(ConfigError, match="'grpo_steps': expected int"):
        from_overrides(QuickstartConfig, ["grpo_steps=many"])
    with pytest.raises(ConfigError, match="num_generations must be at least 2"):
        from_overrides(QuickstartConfig, ["num_generations=1"])
    assert from_overrides(QuickstartConfig, ["grpo_steps=7", "spec=graded"]).grpo_steps == 7
    with pytest.raises(ValueError, match="unknown task family 'nope'"):
        check_family(QuickstartConfig(family="nope"))
    with pytest.raises(ValueError, match="need an empty workspace"):
        check_family(QuickstartConfig(family="logs-count"))


def test_two_proportion_z():
    z, p = two_proportion_z(0.3, 0.45, 200, 200)
    assert 3.0 < z < 3.2 and 0.001 < p < 0.003
    assert two_proportion_z(0.0, 0.0, 100, 100) == (0.0, 1.0)
    assert two_proportion_z(0.6, 0.5, 100, 100)[0] < 0


@pytest.mark.sandbox
def test_single_action_evaluator_runs_verifies_and_caches():
    from termrl.verify.pool import VerifierPool

    seed = 5
    task = FAMILY.generate(seed)
    with VerifierPool(workers=1, static=False) as pool:
        evaluator = SingleActionEvaluator("one-command", pool)
        good, findings = evaluator(None, reference_reply(task), {"seed": seed})
        assert good.verified and good.passed and good.test_pass_ratio == 1.0 and len(good.tests) == 2
        assert not [f for f in findings if f.severity == "high"]
        bad, _ = evaluator(None, '<tool_call>\n{"name": "bash", "arguments": {"command": "echo hi"}}\n</tool_call>',
                           {"seed": seed})
        assert bad.verified and not bad.passed and bad.test_pass_ratio == 0.0
        garbled, _ = evaluator(None, "<tool_call>{not json", {"seed": seed})
        assert garbled.verified and not garbled.passed
        runs = evaluator.runs
        again, _ = evaluator(None, reference_reply(task), {"seed": seed})
        assert evaluator.runs == runs and again.passed  # answered from the cache
        other, _ = evaluator(None, reference_reply(task), {"seed": seed + 1})
        assert other.verified and not other.passed  # another seed's task wants other names


@pytest.mark.sandbox
def test_single_action_evaluator_sees_home_tampering():
    """The quickstart's episodes are finished like every other: HOME is snapshotted, so a
    command that plants a sitecustomize in the agent's HOME is caught (it used to see nothing)."""
    from termrl.actions import render_tool_call
    from termrl.protocols import Action, ActionKind
    from termrl.verify.pool import VerifierPool

    seed = 11
    task = FAMILY.generate(seed)
    honest = reference_reply(task).removeprefix("<tool_call>").removesuffix("</tool_call>")
    command = json.loads(honest)["arguments"]["command"]
    plant = ("mkdir -p ~/.local/lib/python3.11/site-packages && printf 'import builtins\\n' > "
             "~/.local/lib/python3.11/site-packages/sitecustomize.py")
    hack = render_tool_call(Action(ActionKind.COMMAND, command=f"{command}\n{plant}"))
    with VerifierPool(workers=1, static=False) as pool:
        evaluator = SingleActionEvaluator("one-command", pool, cache_size=0)
        outcome = evaluator.outcome(hack, seed)
        clean = evaluator.outcome(reference_reply(task), seed)
    assert outcome.verified and outcome.evidence.passed
    home = [f for f in outcome.findings if f.kind == "tampering" and f.file.startswith("~/")]
    assert home and home[0].severity == "high" and "sitecustomize.py" in home[0].file, outcome.findings
    assert clean.verified and clean.evidence.passed and not clean.findings


def test_single_action_trace_step_is_the_environments():
    """The evaluator and ``TerminalEnv`` run an action through one function: the trace step
    the verifier and the detectors read is the same, field for field."""
    from termrl.env import EnvConfig, TerminalEnv
    from termrl.verify.pool import VerifierPool

    class Recording:
        def __init__(self, pool):
            self.pool, self.traces = pool, []

        workdir = "/workspace"

        def verify_files(self, task, files, trace, modes=None, folders=None):
            self.traces.append(trace)
            return self.pool.verify_files(task, files, trace=trace, modes=modes, folders=folders)

    seed = 7
    task = FAMILY.generate(seed)
    replies = [reference_reply(task),
               '<tool_call>\n{"name": "bash", "arguments": {"command": "echo hi; echo oops >&2; exit 3"}}\n</tool_call>',
               '<tool_call>\n{"name": "write_file", "arguments": {"path": "notes.txt", "content": "x"}}\n</tool_call>',
               "<tool_call>{not json"]
    with VerifierPool(workers=1, static=False) as pool:
        recording = Recording(pool)
        evaluator = SingleActionEvaluator("one-command", recording, cache_size=0)
        for reply in replies:
            evidence, _ = evaluator(None, reply, {"seed": seed})
            with TerminalEnv(EnvConfig(max_steps=1, command_timeout_s=10.0, static=False)) as env:
                env.reset(task)
                *_, info = env.step(reply)
            assert recording.traces[-1] == [env.steps[0].trace()], reply
            assert evidence.passed == info["evidence"].passed
    assert recording.traces[1][0]["exit_code"] == 3 and "oops" in recording.traces[1][0]["output"]
    assert recording.traces[3][0]["format_error"] and recording.traces[3][0]["command"] is None


@pytest.mark.sandbox
def test_small_quickstart_runs_end_to_end(tmp_path, monkeypatch):
    from termrl.training import quickstart

    every_episode = quickstart.heldout_progress
    monkeypatch.setattr(quickstart, "heldout_progress", lambda *a: every_episode(*a, every_s=0))
    lines = []
    report = run_quickstart(tmp_path / "qs", SMALL, progress=lines.append)
    assert report["heldout_episodes"] == 4
    for key in ("sft_heldout_pass_rate", "rl_heldout_pass_rate"):
        assert 0.0 <= report[key] <= 1.0
    assert report["heldout_errors"] == {"sft": 0, "rl": 0}
    assert report["sft"]["steps"] == 4 and report["grpo"]["steps"] == 2
    assert report["grpo"]["completions"] == 2 * 2 * 2 and report["grpo"]["unverified"] == 0
    # every completion's episode was started before TRL asked for the rewards (termrl.training.ahead)
    assert report["grpo"]["evaluations_taken_ahead"] == 2 * 2 * 2
    assert report["model"]["parameters"] > 0 and report["config"]["hidden_size"] == 32
    assert set(report["timings"]) >= {"build_s", "sft_s", "sft_eval_s", "grpo_s", "rl_eval_s", "total_s"}
    saved = json.loads((tmp_path / "qs" / "quickstart.json").read_text())
    assert saved["rl_heldout_pass_rate"] == report["rl_heldout_pass_rate"]
    for phase in ("eval_sft", "eval_rl"):
        replies = (tmp_path / "qs" / phase / "replies.jsonl").read_text().splitlines()
        assert len(replies) == 4
    assert any(line.startswith("SFT held-out pass@1") for line in lines)
    for model in ("SFT", "RL"):  # the held-out evaluations say how far they are
        assert [line.split(" seeds")[0] for line in lines if line.startswith(f"held-out after {model}:")] == [
            f"held-out after {model}: {n}/4" for n in range(1, 5)]
    assert lines[-1].startswith("held-out pass@1: SFT")
    assert lines[-2].startswith("held-out mean reward: SFT") and lines[-2].endswith("(spec partial: -1 .. 1.5)")
    assert report["reward_scale"] == "spec partial: -1 .. 1.5"
    # the run reads back as a report: its episodes (stored), its stages' logs, the page itself
    from termrl.report import load_run

    run = load_run(tmp_path / "qs")
    assert run.kind == "quickstart" and [len(p) for p in run.parts.values()] == [4, 4]
    assert "rl/train/reward" in run.scalars and any(k.startswith("sft/") for k in run.scalars)
    page = (tmp_path / "qs" / "report.html").read_text()
    assert '<section id="trajectories">' in page and any(line.startswith("report: ") for line in lines)


def _cli(*args, timeout=600):
    result = subprocess.run([sys.executable, "-m", "termrl", "quickstart", *args], capture_output=True, text=True,
                            timeout=timeout, check=False)
    result.message = " ".join(result.stderr.split())  # rich wraps long lines
    return result


def test_cli_rejects_bad_settings_and_an_existing_run(tmp_path):
    result = _cli("--set", "heads=7")
    assert result.returncode == 2 and "hidden_size 128 must be a multiple of heads 7" in result.message
    (tmp_path / "quickstart.json").write_text("{}")
    result = _cli("--out", str(tmp_path))
    assert result.returncode == 2 and "already holds a quickstart run" in result.message
    assert (tmp_path / "quickstart.json").read_text() == "{}"


@pytest.mark.sandbox
def test_cli_json(tmp_path):
    sets = [f"{k}={v}" for k, v in (("hidden_size", 32), ("layers", 1), ("heads", 2), ("tokenizer_seeds", 40),
                                    ("sft_examples", 4), ("sft_steps", 2), ("sft_batch_size", 2), ("grpo_steps", 1),
                                    ("prompts_per_step", 1), ("num_generations", 2), ("max_completion_tokens", 16),
                                    ("heldout_episodes", 2), ("eval_workers", 2), ("verifier_workers", 1))]
    result = _cli("--out", str(tmp_path / "qs"), "--json", *[a for s in sets for a in ("--set", s)])
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["heldout_episodes"] == 2
    assert {"sft_heldout_pass_rate", "rl_heldout_pass_rate", "z", "p_value"} <= set(report)
    assert "SFT held-out pass@1" in result.message


@pytest.mark.quickstart
def test_full_quickstart_rl_beats_sft(tmp_path):
    """The README's main job on its defaults: RL must measurably improve on the SFT warm start."""
    report = run_quickstart(tmp_path / "qs", progress=print)
    assert report["heldout_episodes"] >= 100
    assert report["heldout_errors"] == {"sft": 0, "rl": 0}
    assert report["rl_heldout_pass_rate"] > report["sft_heldout_pass_rate"]
    assert report["p_value"] < 0.05, report
