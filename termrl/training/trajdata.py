"""Trajectories as training rows: what TRL's ``SFTTrainer`` and ``DPOTrainer`` read.

Each row is an episode's chat (``termrl.rollout.chat.conversation``: what the policy saw and
what it said, in order), rendered through the same chat template the policy was prompted with.
Two approximations remain: a reply is re-tokenized from its text (the tokens a model sampled
need not be the tokenizer's canonical ones), and a long episode whose ``HFPolicy`` prompt lost
its oldest messages is trained on the whole chat (truncated only by the trainer's ``max_length``).

``dpo_pairs`` ranks episodes of the same prompt by their execution reward; a reward hack
caught with high severity is always the rejected side.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from termrl.eval.metrics import is_harness_failure
from termrl.protocols import Trajectory
from termrl.rollout.chat import conversation

HIGH = "high"
"""The finding severity that disqualifies an episode from ever being imitated or preferred."""


def hacked(traj: Trajectory) -> bool:
    """True when a hack detector flagged the episode with a high-severity finding."""
    return any(f.get("severity") == HIGH for f in traj.findings)


def _first(traj: Trajectory, prompts: Mapping[str, list[dict]] | None) -> list[dict] | None:
    return traj.prompt or (prompts or {}).get(traj.task_id)


def sft_rows(trajectories: Iterable[Trajectory], *, prompts: Mapping[str, list[dict]] | None = None,
             system_prompt: str | None = None, tools: Sequence[dict] = ()) -> list[dict]:
    """One ``{"messages": [...]}`` row per episode with at least one step: TRL's conversational
    language-modeling format; train with ``SFTConfig(assistant_only_loss=True)`` so that only the
    policy's replies carry loss. ``prompts``: task id -> first messages, for trajectories without
    a stored prompt. ``tools``: the tool schemas the policy was prompted with (the native action
    format's), put in each row's ``tools`` (JSON) so the chat template renders them in training as
    it did when prompting. Selecting which episodes to imitate is the caller's business."""
    extra = {"tools": json.dumps(list(tools))} if tools else {}
    return [{"messages": conversation(t, _first(t, prompts), system_prompt=system_prompt), **extra}
            for t in trajectories if t.steps]


def training_template(tokenizer) -> str | None:
    """The chat template whose ``{% generation %}`` spans mark the assistant's tokens: None when
    the tokenizer's own has them, else TRL's training variant of it (``get_training_chat_template``,
    what ``SFTTrainer`` swaps in for ``assistant_only_loss``)."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers  # heavy: trl

    if has_generation_markers(tokenizer.chat_template):
        return None
    try:
        return get_training_chat_template(tokenizer)
    except ValueError as e:
        raise ValueError(f"cannot tell the policy's tokens from the rest of the chat: {e} Give the tokenizer a chat "
                         "template with {% generation %} markers that renders these chats exactly like its own "
                         "(e.g. trl/chat_templates/qwen2_5_training.jinja for a Qwen2.5 ChatML template; "
                         "SFTConfig.chat_template_path does it for SFT)") from None


def check_template(tokenizer, rows: Iterable[dict], template: str | None) -> None:
    """Raise unless ``template`` renders every row's ``messages`` exactly as the tokenizer's own
    template does: training must see the text the policy was prompted with."""
    if template is None:
        return
    for i, row in enumerate(rows):
        own = tokenizer.apply_chat_template(row["messages"], tokenize=False)
        if tokenizer.apply_chat_template(row["messages"], tokenize=False, chat_template=template) != own:
            raise ValueError(f"row {i}: the training chat template renders this chat differently from the model's "
                             "own template, so training would not see what the policy saw; give the tokenizer a "
                             "template with {% generation %} markers that renders identically")


def dpo_pairs(trajectories: Iterable[Trajectory], *, prompts: Mapping[str, list[dict]] | None = None,
              min_gap: float = 0.0, max_pairs_per_prompt: int | None = None,
              system_prompt: str | None = None) -> list[dict]:
    """Preference pairs from execution: TRL's conversational ``prompt``/``chosen``/``rejected`` rows.

    Episodes pair only with episodes of the same task *and* the same first messages. An episode
    takes part when it was scored (no harness failure), has a reward (not None) and has a step.
    Of two such episodes:

    - one hacked (a high-severity finding), one clean: the clean one is chosen, whatever the
      rewards (``reason`` "hack"); ``min_gap`` does not apply, the finding is the preference;
    - both hacked: never paired (a hack is never chosen);
    - both clean: the higher reward is chosen when the gap is positive and at least ``min_gap``
      (``reason`` "reward"); equal rewards are never paired.

    ``prompt`` holds the first messages, ``chosen``/``rejected`` the rest of each chat (replies
    and the observations between them). Pairs of a prompt come hack pairs first (the best-paid
    hack first), then reward pairs (the largest gap first); ``max_pairs_per_prompt`` keeps the
    first. Rows also carry ``task_id``, ``chosen_id``, ``rejected_id``, ``chosen_reward``,
    ``rejected_reward`` and ``reason``.
    """
    if min_gap < 0:
        raise ValueError(f"min_gap must be >= 0, got {min_gap}")
    groups: dict[tuple[str, str], dict[str, tuple[Trajectory, list[dict]]]] = defaultdict(dict)
    for t in trajectories:
        if is_harness_failure(t) or t.reward is None or not t.steps:
            continue
        chat = conversation(t, _first(t, prompts), system_prompt=system_prompt)
        first = chat[: len(chat) - (2 * len(t.steps) - 1)]  # a chat is its first messages + 2 * steps - 1
        groups[(t.task_id, json.dumps(first))][t.episode_id] = (t, chat[len(first):])
    rows = []
    for (task_id, first), group in sorted(groups.items()):
        candidates = []
        episodes = [group[eid] for eid in sorted(group)]
        for i, (a, _) in enumerate(episodes):
            for b, _ in episodes[i + 1:]:
                pair = _order(a, b, min_gap)
                if pair is None:
                    continue
                chosen, rejected, reason = pair
                candidates.append({
                    "prompt": json.loads(first), "chosen": group[chosen.episode_id][1],
                    "rejected": group[rejected.episode_id][1], "task_id": task_id,
                    "chosen_id": chosen.episode_id, "rejected_id": rejected.episode_id,
                    "chosen_reward": chosen.reward, "rejected_reward": rejected.reward, "reason": reason})
        candidates.sort(key=_priority)
        rows += candidates[:max_pairs_per_prompt]
    return rows


def _priority(row: dict) -> tuple[bool, float]:
    """Hack pairs first, the best-paid hack first; then reward pairs, the largest gap first."""
    if row["reason"] == "hack":
        return False, -row["rejected_reward"]
    return True, row["rejected_reward"] - row["chosen_reward"]


def _order(a: Trajectory, b: Trajectory, min_gap: float) -> tuple[Trajectory, Trajectory, str] | None:
    """(chosen, rejected, reason) for two scored episodes, or None when they must not be paired."""
    if hacked(a) and hacked(b):
        return None
    if hacked(a) or hacked(b):
        return (b, a, "hack") if hacked(a) else (a, b, "hack")
    gap = a.reward - b.reward
    if gap == 0 or abs(gap) < min_gap:
        return None
    return (a, b, "reward") if gap > 0 else (b, a, "reward")
