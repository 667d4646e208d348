"""The SFT warm start of ``termrl train`` (``[sft]``): imitate reference solutions, then train by RL.

Each task of ``sft.tasks`` gives one conversation: the opening messages of its episode (the
system prompt and the task's first observation, exactly what the RL stage's rollouts and the
evaluation see) and its reference solution as one ``bash`` tool call (``reference_reply``). TRL's
``SFTTrainer`` trains on the reply's tokens only, for a fixed budget of ``sft.steps``: a warm
start that leaves the model good but not perfect, so that RL has room to show what it adds.
The run's "before" evaluation plays the warm-started model, so ``heldout_pass_rate_before`` and
``..._after`` measure the RL stage alone.

That is ``sft.source = "reference"``. With ``"episodes"`` the demonstrations are whole episodes
instead: each task is played through ``TerminalEnv`` in the run's action format by
``ReferencePolicy`` (reply 1 runs the reference solution, reply 2 submits), the episodes are
stored (``reference_episodes``; a resumed run plays only the missing ones) and only the verified
ones are kept (passed, no high-severity hack finding, no unparseable reply: ``demo_verdict``).
Their chats (``trajdata.sft_rows``: system prompt, instruction, reply, observation, submit) train
with ``assistant_only_loss``, as RFT does, so the model learns the action format, to read the
observation, and to submit.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import initial_messages, starts_empty, workspace_listing
from termrl.eval.metrics import is_harness_failure
from termrl.policies.scripted import ReferencePolicy, reference_command
from termrl.policies.tiny import reference_reply
from termrl.protocols import Task, Trajectory
from termrl.rollout.accounting import Accountant
from termrl.rollout.runner import RolloutConfig, play_stored
from termrl.training import trajdata

LOG_HISTORY = "log_history.json"
"""The trainer's logged metrics per step (``TrainerState.log_history``), beside the saved model."""


def opening_messages(task: Task, env: EnvConfig) -> list[dict]:
    """The messages an episode of ``task`` opens with under ``env`` (its system prompt and first
    observation): built directly for a task whose workspace starts empty, else read from a
    sandbox started for it."""
    if starts_empty(task):  # as TerminalEnv.reset opens it, example turns included
        return initial_messages(task, env.prompt, workspace_listing(task.workdir, [], env.listing_entries), env.example)
    with TerminalEnv(env) as terminal:
        terminal.reset(task)
        return [dict(m) for m in terminal.messages]


def sft_rows(tasks: Sequence[Task], env: EnvConfig) -> list[dict]:
    """``{"prompt": opening messages, "completion": [the reference reply]}`` per task; a task
    without a reference solution is a ValueError naming it."""
    return [{"prompt": opening_messages(task, env),
             "completion": [{"role": "assistant", "content": reference_reply(task)}]} for task in tasks]


KEPT = "kept"


def demo_verdict(traj: Trajectory) -> str:
    """Whether a demonstration is imitated: "kept", or the first reason against it among
    harness_failure (sandbox, verifier or policy failed), format_error (a reply the environment
    could not parse), hacked (a high-severity hack finding) and failed (verified, not passed)."""
    if is_harness_failure(traj):
        return "harness_failure"
    if any(s.format_error for s in traj.steps):
        return "format_error"
    if trajdata.hacked(traj):
        return "hacked"
    if not traj.passed or not traj.steps:
        return "failed"
    return KEPT


def reference_episodes(tasks: Sequence[Task], rollout: RolloutConfig, directory: str | Path, *,
                       accountant: Accountant | None = None,
                       label: str | None = None) -> tuple[list[Trajectory], dict]:
    """One ``ReferencePolicy`` episode of each task with a reference solution, in
    ``rollout.env.action_format``, stored in the ``TrajectoryStore`` at ``directory`` (those stored
    already are not played again). Returns the verified ones (``demo_verdict``) and a report:
    tasks, played, kept, dropped (reason -> episodes; "no_reference": tasks not played, having no
    reference solution) and dropped_tasks (reason -> the first 20 task ids)."""
    playable, dropped_tasks = [], {}
    for task in tasks:
        try:
            reference_command(task)
        except ValueError:
            dropped_tasks.setdefault("no_reference", []).append(task.id)
        else:
            playable.append(task)
    policy = ReferencePolicy(rollout.env.action_format)
    ids = {t.id for t in playable}
    stored = play_stored(playable, policy, dataclasses.replace(rollout, samples=1), directory, accountant=accountant,
                         label=label, about=f"{policy.name}, the reference solutions") if playable else []
    episodes = sorted((t for t in stored if t.task_id in ids and t.sample == 0), key=lambda t: t.episode_id)
    kept = []
    for traj in episodes:
        why = demo_verdict(traj)
        if why == KEPT:
            kept.append(traj)
        else:
            dropped_tasks.setdefault(why, []).append(traj.task_id)
    report = {"tasks": len(tasks), "played": len(episodes), "kept": len(kept),
              "dropped": {why: len(names) for why, names in sorted(dropped_tasks.items())},
              "dropped_tasks": {why: names[:20] for why, names in sorted(dropped_tasks.items())}}
    return kept, report


def episode_rows(episodes: Sequence[Trajectory], tools: Sequence[dict] = ()) -> list[dict]:
    """The kept demonstrations as TRL conversational rows (``{"messages": [...]}``, the episode's chat
    as the policy lived it: ``trajdata.sft_rows``); train with ``assistant_only_loss=True`` so the
    replies carry the loss and the instruction and observations do not. ``tools``: the tool schemas
    the episodes' policy was prompted with (``EnvConfig.tools``: the native format's), put in each
    row's ``tools`` (JSON) so the chat template renders them in training as it did when prompting."""
    return trajdata.sft_rows(episodes, tools=tools)


def dropped_summary(report: dict) -> str:
    """``report``'s drops in words, e.g. "2 dropped (failed 1, no_reference 1)"; "none dropped"."""
    dropped = report["dropped"]
    if not dropped:
        return "none dropped"
    return f"{sum(dropped.values())} dropped (" + ", ".join(f"{why} {n}" for why, n in dropped.items()) + ")"


def progress_callback(name: str, keys: Sequence[str], say: Callable[[str], None] | None = None):
    """A ``TrainerCallback`` that reports ``keys`` of the trainer's logs to ``say`` (default:
    stderr) about ten times a run, as means since the last report."""
    from transformers import TrainerCallback  # heavy: transformers

    say = say or (lambda message: print(message, file=sys.stderr, flush=True))

    class Progress(TrainerCallback):
        def __init__(self):
            self.seen: list[list[float]] = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not state.is_world_process_zero:  # under a launcher, rank 0 reports
                return
            if logs and all(k in logs for k in keys):
                self.seen.append([float(logs[k]) for k in keys])
            every = max(1, state.max_steps // 10)
            if self.seen and (state.global_step % every == 0 or state.global_step == state.max_steps):
                means = [sum(col) / len(col) for col in zip(*self.seen)]
                say(f"termrl train: {name} step {state.global_step}/{state.max_steps}: "
                    + ", ".join(f"{k} {m:.3f}" for k, m in zip(keys, means)))
                self.seen = []

    return Progress()


def train_sft(model_dir: Path, out_dir: Path, rows: list[dict], args, say: Callable[[str], None] | None = None) -> dict:
    """SFT from ``model_dir`` on ``rows`` (``sft_rows``; or ``episode_rows`` with
    ``args.assistant_only_loss``, the chat template checked as RFT checks it) with TRL's
    ``SFTConfig`` ``args``; saves the model, its tokenizer and ``log_history.json`` to ``out_dir``. Returns steps, examples, the
    mean training loss and the first and last logged loss (logged every ``args.logging_steps``)."""
    from datasets import Dataset  # heavy: datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback  # heavy: transformers
    from trl import SFTTrainer  # heavy: trl

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if args.assistant_only_loss:  # conversational rows (episode_rows): the template must mark the replies
        path = args.chat_template_path
        template = Path(path).read_text() if path and path.endswith((".jinja", ".j2")) else \
            trajdata.training_template(tokenizer)
        trajdata.check_template(tokenizer, rows, template)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         callbacks=[progress_callback("SFT", ("loss", "mean_token_accuracy"), say)])
    if len(trainer.train_dataset) == 0:  # TRL drops rows whose replies all lie past max_length
        raise ValueError(f"every demonstration's replies lie past max_length={args.max_length} tokens: raise "
                         "sft.max_length to cover the prompt and the first reply")
    trainer.remove_callback(PrinterCallback)
    trained = trainer.train()
    out_dir = Path(out_dir)
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(out_dir)
    (out_dir / LOG_HISTORY).write_text(json.dumps(trainer.state.log_history))  # the step metrics, for reports
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {"steps": trainer.state.global_step, "examples": len(rows), "train_loss": trained.training_loss,
            "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None}


__all__ = ["KEPT", "LOG_HISTORY", "demo_verdict", "dropped_summary", "episode_rows", "opening_messages",
           "progress_callback", "reference_episodes", "sft_rows", "train_sft"]
