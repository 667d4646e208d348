"""The SFT warm start of ``termrl train`` (``[sft]``): imitate reference solutions, then train by RL.

Each task of ``sft.tasks`` gives one conversation: the opening messages of its episode (the
system prompt and the task's first observation, exactly what the RL stage's rollouts and the
evaluation see) and its reference solution as one ``bash`` tool call (``reference_reply``). TRL's
``SFTTrainer`` trains on the reply's tokens only, for a fixed budget of ``sft.steps``: a warm
start that leaves the model good but not perfect, so that RL has room to show what it adds.
The run's "before" evaluation plays the warm-started model, so ``heldout_pass_rate_before`` and
``..._after`` measure the RL stage alone.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import initial_messages, starts_empty, workspace_listing
from termrl.policies.tiny import reference_reply
from termrl.protocols import Task

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
    """SFT from ``model_dir`` on ``rows`` (``sft_rows``) with TRL's ``SFTConfig`` ``args``; saves
    the model, its tokenizer and ``log_history.json`` to ``out_dir``. Returns steps, examples and
    the first and last logged loss."""
    from datasets import Dataset  # heavy: datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback  # heavy: transformers
    from trl import SFTTrainer  # heavy: trl

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         callbacks=[progress_callback("SFT", ("loss", "mean_token_accuracy"), say)])
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    out_dir = Path(out_dir)
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(out_dir)
    (out_dir / LOG_HISTORY).write_text(json.dumps(trainer.state.log_history))  # the step metrics, for reports
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {"steps": trainer.state.global_step, "examples": len(rows),
            "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None}


__all__ = ["LOG_HISTORY", "opening_messages", "progress_callback", "sft_rows", "train_sft"]
