"""Rejection-sampling fine-tuning (expert iteration) on execution-verified rewards.

What it really is: for R rounds, (1) sample k episodes of every training task with the current
model, (2) keep those whose reward reaches ``threshold`` and that no hack detector flagged with
high severity (one that passed only because its steps ran out while the workspace was right is
cut to its shortest passing prefix and a submit: ``trim``), (3) fine-tune on the kept episodes
with plain supervised learning (TRL's ``SFTTrainer``), loss on the model's own replies only,
(4) measure pass@1 on held-out tasks. It is behaviour cloning of the model's own filtered successes (STaR, ReST-EM, RAFT), not a
policy gradient: failed episodes teach nothing (``termrl.training.dpo`` learns from them) and the
reward matters only through the threshold.

- Each round starts from the previous round's weights; ``from_base=True`` starts every round
  from the initial model instead (as STaR and ReST-EM do), on that round's kept episodes.
- A round that keeps nothing trains nothing: its record says ``trained: False`` and why, and the
  next round samples the same weights again.
- The spec's schedules see sampling at training progress ``(r - 1) / rounds``; held-out
  episodes are scored at ``rollout.progress`` (1.0 by default, the end of training).

Loss only on the policy's tokens: ``SFTConfig(assistant_only_loss=True)`` is required. TRL then
labels every token outside the chat template's ``{% generation %}`` spans -100 (system prompt,
instructions, observations, role headers). A template without those markers is swapped by TRL
for its training variant (the tiny model's ``qwen2_5.jinja`` becomes ``qwen2_5_training.jinja``);
before training, ``check_template`` makes sure that variant renders the kept chats exactly as the
model's own template does, so the model is trained on the text it was prompted with. In ChatML a
trained span is ``"\\n" + reply + "<|im_end|>\\n"``: the reply, the end-of-turn token the model
must learn to stop with, and the two newlines TRL's template puts inside the span.

The model is handed to the sampling policy through its directory (``HFPolicy`` loads from one):
round r's weights are saved to ``out_dir/round-r/model``. Layout of ``out_dir``::

    round-N/samples/   the round's sampled episodes (a TrajectoryStore)
    round-N/kept/      the replays that replaced kept episodes cut off by a limit (see ``trim``)
    round-N/model/     the weights after the round's fine-tuning (absent when nothing was kept), with
                       termrl-trained.json once it finished: a resumed round reuses those weights
    round-N/model-trainer/  the SFTTrainer's output_dir (checkpoints, when SFTConfig saves any)
    round-N/adapter/   with LoRA: the round's adapter, the tokenizer it trained with and what it was
                       merged into (``ADAPTER_META``), a few MB where model/ is the whole model; the
                       merge is exact (``merge_exactly``), so ``restore_merged`` gives model/ back bit
                       for bit on any machine, where training again gives other weights on another CPU
    round-N/heldout/   the held-out episodes
    rounds.json        {"version": 1, "rounds": [...]}, rewritten after each round
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import importlib.metadata
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from termrl.distributed import current, parameters_digest, processes
from termrl.eval.metrics import is_harness_failure, summarize
from termrl.policies.ct2 import CT2Policy
from termrl.policies.hf import HALF_FLAGS, HFPolicy, cpu_flags
from termrl.policies.scripted import SUBMIT
from termrl.protocols import Ending, Policy, Reply, Task, Trajectory
from termrl.reward.spec import RewardSpec
from termrl.rollout.accounting import Accountant
from termrl.rollout.runner import RolloutConfig, play_stored, run_episode
from termrl.rollout.store import TrajectoryStore
from termrl.training.trajdata import check_template, hacked, sft_rows, training_template

ROUNDS_VERSION = 1
KEPT = "kept"
PolicyFactory = Callable[[Path, str], Policy]
"""``(model directory, purpose) -> Policy``; purpose is "sample" or "eval"."""


@dataclass(frozen=True)
class RFTConfig:
    """The expert-iteration loop. Sampling and scoring live in ``RolloutConfig``, training in ``SFTConfig``."""

    rounds: int = 3
    """Sample -> filter -> fine-tune -> evaluate cycles."""
    samples_per_task: int = 4
    """Episodes sampled per training task per round."""
    threshold: float = 1.0
    """Least reward an episode needs to be kept. With the default ``staged`` spec a passing episode
    earns 1.7 (start of training) to ~2 (end) and a failing one less than 1."""
    eval_samples: int = 1
    """Episodes per held-out task per round; held-out pass@1 is their mean pass rate."""
    from_base: bool = False
    """Fine-tune the initial model every round (STaR, ReST-EM) instead of the previous round's."""
    drop_format_errors: bool = False
    """Also reject episodes with an unparseable reply (otherwise imitated along with the rest)."""
    trim: bool = True
    """Imitate a kept episode that did not submit (it passed because the workspace was right when its
    steps or time ran out) only up to its shortest passing prefix, then a submit: see ``trim``."""

    def __post_init__(self):
        if self.rounds < 1 or self.samples_per_task < 1 or self.eval_samples < 1:
            raise ValueError("rounds, samples_per_task and eval_samples must be at least 1")


TRAINED = "termrl-trained.json"
"""Written beside a round's weights once its fine-tuning finished: what they were trained on, so a
resumed round whose weights survived evaluates those very weights instead of training anew."""


def _fingerprint(traj: Trajectory) -> str:
    """An episode as training sees it: its id and every reply."""
    return f"{traj.episode_id}:" + hashlib.sha256("\x00".join(s.reply for s in traj.steps).encode()).hexdigest()


def verdict(traj: Trajectory, threshold: float, drop_format_errors: bool = False) -> str:
    """Why an episode is or is not imitated: "kept", or the first reason against it among
    harness_failure, unscored (reward None), hacked (a high-severity finding), format_error,
    below_threshold."""
    if is_harness_failure(traj):
        return "harness_failure"
    if traj.reward is None:
        return "unscored"
    if hacked(traj):
        return "hacked"
    if drop_format_errors and any(s.format_error for s in traj.steps):
        return "format_error"
    if traj.reward < threshold or not traj.steps:
        return "below_threshold"
    return KEPT


def keep(trajectories: Sequence[Trajectory], threshold: float, drop_format_errors: bool = False) -> list[Trajectory]:
    """The episodes worth imitating: reward >= ``threshold`` and no high-severity finding."""
    return [t for t in trajectories if verdict(t, threshold, drop_format_errors) == KEPT]


def trim(kept: Sequence[Trajectory], tasks: Sequence[Task], rollout: RolloutConfig, directory: str | Path,
         accountant: Accountant, threshold: float = 1.0,
         drop_format_errors: bool = False) -> tuple[list[Trajectory], Counter]:
    """``kept`` with every episode that did not end by submitting replaced by its shortest passing
    prefix followed by a submit; returns them and a count of "trimmed" and "not_reproduced".

    An episode that passed at its step or time limit was right when it was cut off, not when the
    policy chose to stop: its later replies are whatever the policy said after solving (rewrites,
    observations parroted back, commands that happen to leave the file intact), and imitating them
    teaches a model never to submit. For k = 1, 2, ... the first k replies are replayed in a fresh
    episode (same task, sample and environment) followed by ``submit``; the first replay that is
    itself kept (passed, reward >= ``threshold``, no high finding) takes the episode's place. It is
    a real episode: its observations, verification and reward are the environment's own. An
    episode no prefix reproduces (a nondeterministic command) is dropped. Replays are stored in
    ``directory`` (a ``TrajectoryStore``): a resumed round does not replay them again."""
    store = TrajectoryStore(directory)
    done = {t.episode_id: t for t in store.read()}
    by_id = {t.id: t for t in tasks}
    env = dataclasses.replace(rollout.env, max_steps=max(len(t.steps) for t in kept) + 1)
    config = dataclasses.replace(rollout, env=env)
    out: dict[str, Trajectory] = {}
    pending: list[Trajectory] = []
    for t in kept:
        if t.ending == Ending.SUBMITTED.value:
            out[t.episode_id] = t
        elif t.episode_id in done:
            out[t.episode_id] = done[t.episode_id]
        else:
            pending.append(t)
    counts = Counter(trimmed=sum(t.episode_id in done for t in kept if t.ending != Ending.SUBMITTED.value))

    def replay(traj: Trajectory, k: int) -> Trajectory:
        replies = [s.reply for s in traj.steps[:k]] + [SUBMIT]
        return run_episode(by_id[traj.task_id], traj.sample, f"{traj.policy}+trim", lambda turn: Reply(replies[turn.step]),
                           config, config.spec, accountant)

    k = 1
    while pending:
        with ThreadPoolExecutor(max_workers=max(config.workers, 1)) as pool:
            replays = list(pool.map(lambda t, k=k: replay(t, k), pending))
        still = []
        for original, new in zip(pending, replays):
            if verdict(new, threshold, drop_format_errors) == KEPT:
                store.write([new])
                out[original.episode_id] = new
                counts["trimmed"] += 1
            elif k < len(original.steps):
                still.append(original)
            else:
                counts["not_reproduced"] += 1
        pending, k = still, k + 1
    return [out[t.episode_id] for t in kept if t.episode_id in out], counts


def sft_trainer(model_dir: str | Path, trajectories: Sequence[Trajectory], args, output_dir: str | Path,
                peft_config=None, tools: Sequence[dict] = ()):
    """TRL's ``SFTTrainer`` over ``trajectories``' chats, loss on the policy's replies only.

    ``args``: an ``SFTConfig`` with ``assistant_only_loss=True``; its ``output_dir`` is replaced
    by ``output_dir`` (checkpoints of different rounds must not mix). ``peft_config``: train a
    LoRA adapter (peft) instead of every weight. ``tools``: the tool schemas the episodes were
    prompted with (``trajdata.sft_rows``)."""
    from datasets import Dataset  # heavy: datasets
    from transformers import AutoTokenizer  # heavy: transformers
    from trl import SFTTrainer  # heavy: trl

    if not args.assistant_only_loss:
        raise ValueError("rejection-sampling fine-tuning trains on the model's own replies only: "
                         "set SFTConfig(assistant_only_loss=True)")
    rows = sft_rows(trajectories, tools=tools)
    if not rows:
        raise ValueError("no episode with a step to train on")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    path = args.chat_template_path
    template = Path(path).read_text() if path and path.endswith((".jinja", ".j2")) else training_template(tokenizer)
    check_template(tokenizer, rows, template)
    args = dataclasses.replace(args, output_dir=str(output_dir))
    trainer = SFTTrainer(model=str(model_dir), args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer, peft_config=peft_config)
    if len(trainer.train_dataset) == 0:  # TRL drops rows whose replies all lie past max_length
        raise ValueError(f"every episode's replies lie past SFTConfig.max_length={args.max_length} tokens: "
                         "raise max_length (termrl train: rft.max_length) to cover the prompt and the first replies")
    return trainer


class StepDigests:
    """A ``TrainerCallback``: ``parameters_digest`` of the trained parameters after each optimizer
    step (its first 16 hex digits; a sample of them past ``SAMPLED``), in ``digests``. Given the
    ``expected`` ones of an earlier training on the same data, it says at the first step that
    differs that this training will not reproduce that one's weights (another CPU's kernels, other
    library versions), minutes into a training that may take an hour, not at its end."""

    def __init__(self, expected: Sequence[str] | None = None, label: str = "this training"):
        from transformers import TrainerCallback  # heavy: transformers

        self.digests: list[str] = []
        self.expected = list(expected or [])
        self.label = label
        self.first_difference: int | None = None
        outer = self

        class Callback(TrainerCallback):
            def on_step_end(self, args, state, control, model=None, **kwargs):
                outer.step(model)

        self.callback = Callback()

    SAMPLED = 1 << 20
    """Parameters read per step at most (``parameters_digest``'s ``max_elements``)."""

    def step(self, model) -> None:
        self.digests.append(parameters_digest(model, trainable_only=True, max_elements=self.SAMPLED)[:16])
        n = len(self.digests)
        if self.first_difference is None and n <= len(self.expected) and self.digests[-1] != self.expected[n - 1]:
            self.first_difference = n
            if current().main:
                print(f"termrl train: {self.label} differs from its first training at step {n} of "
                      f"{len(self.expected)} (parameters digest {self.digests[-1]}, then {self.expected[n - 1]}): "
                      "it will not give the weights its evaluation played; stop it now if it must",
                      file=sys.stderr, flush=True)


ADAPTER_META = "termrl-adapter.json"
"""In an adapter directory ``fine_tune`` saved: ``base`` (the model directory it was trained on and
merged into), ``base_files`` (``weight_files_digest`` of that directory) and ``dtype`` (the dtype
the base was loaded in for training)."""


def weight_files_digest(model_dir: str | Path) -> str:
    """SHA-256 over a model directory's weight files (``*.safetensors``, ``*.bin``), in name order:
    whether a base model built again (another machine, a clone) is the one an adapter was trained on."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(model_dir).iterdir() if p.suffix in (".safetensors", ".bin")):
        digest.update(path.name.encode())
        with path.open("rb") as f:
            while chunk := f.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()


def exact_merge_refusal(model) -> str | None:
    """Why ``merge_exactly`` cannot merge ``model``'s active adapter (a layer that is not plain LoRA on
    a floating-point linear layer), or None when it can."""
    import torch  # heavy: torch
    from peft.tuners.lora import LoraLayer  # heavy: peft

    name = model.active_adapter if isinstance(model.active_adapter, str) else model.active_adapter[0]
    for path, module in model.named_modules():
        if not isinstance(module, LoraLayer) or name not in module.lora_A:
            continue
        plain = (isinstance(module.lora_A[name], torch.nn.Linear) and not module.use_dora.get(name)
                 and not getattr(module, "lora_bias", {}).get(name) and not getattr(module, "fan_in_fan_out", False)
                 and module.get_base_layer().weight.is_floating_point())
        if not plain:
            return (f"{path}: an exact merge covers plain LoRA on floating-point linear layers (no DoRA, lora_bias, "
                    "fan_in_fan_out, embedding adapters or quantized weights)")
    return None


def merge_exactly(model):
    """Merge a peft model's active LoRA adapter into its base weights and return the plain model
    (what ``merge_and_unload`` does), computed so that every machine gets the same bits.

    peft multiplies ``B @ A`` with the machine's matrix kernels, whose summation order differs
    between CPUs (AVX-512, AMX) and libraries, so a merge done again elsewhere is not bit for bit
    the first. Here each of the ``r`` rank-one products is formed in float64, where a product of two
    float32 numbers is exact, and summed in a fixed order; then scaled, added to the weight and
    rounded once to its dtype. Every step is an IEEE elementwise operation, so the result is the same
    on every CPU and GPU. An adapter ``exact_merge_refusal`` refuses raises ValueError before any
    weight is touched."""
    import torch  # heavy: torch
    from peft.tuners.lora import LoraLayer  # heavy: peft

    refusal = exact_merge_refusal(model)
    if refusal:
        raise ValueError(f"{refusal}: use peft's merge_and_unload for this adapter")
    name = model.active_adapter if isinstance(model.active_adapter, str) else model.active_adapter[0]
    for module in model.modules():
        if not isinstance(module, LoraLayer) or name not in module.lora_A:
            continue
        weight = module.get_base_layer().weight
        a = module.lora_A[name].weight.detach().to(torch.float64)
        b = module.lora_B[name].weight.detach().to(torch.float64)
        delta = torch.zeros(weight.shape, dtype=torch.float64, device=weight.device)
        for k in range(a.shape[0]):
            delta += b[:, k:k + 1] * a[k:k + 1, :]
        weight.data = (weight.detach().to(torch.float64) + delta * float(module.scaling[name])).to(weight.dtype)
    return model.unload()


def restore_merged(adapter_dir: str | Path, save_to: str | Path, base: str | Path | None = None) -> str:
    """The weights ``fine_tune`` saved from a LoRA training, made again from its adapter directory
    (its base loaded in the dtype it trained in, the adapter merged by ``merge_exactly``) and saved to
    ``save_to`` with the tokenizer it trained with; no training. ``base``: where this machine holds
    the model it was trained on (default: the directory ``ADAPTER_META`` names, which may be another
    machine's path). Returns ``parameters_digest`` of the weights, equal to the one ``fine_tune``
    returned when the base is the same."""
    import torch  # heavy: torch
    from peft import PeftModel  # heavy: peft
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy: transformers

    adapter_dir, save_to = Path(adapter_dir), Path(save_to)
    meta = json.loads((adapter_dir / ADAPTER_META).read_text())
    base = Path(base or meta["base"])
    if meta.get("base_files") and weight_files_digest(base) != meta["base_files"]:
        print(f"termrl train: {base} is not the base model the adapter in {adapter_dir} was trained on (its weight "
              f"files differ from the ones {ADAPTER_META} records): the merged weights will differ too",
              file=sys.stderr, flush=True)
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=getattr(torch, meta["dtype"]))
    merged = merge_exactly(PeftModel.from_pretrained(model, str(adapter_dir)))
    merged.save_pretrained(str(save_to))
    AutoTokenizer.from_pretrained(str(adapter_dir)).save_pretrained(str(save_to))
    return parameters_digest(merged)


def adapter_saved(adapter_dir: str | Path | None) -> bool:
    """Whether ``adapter_dir`` holds a whole adapter ``fine_tune`` saved (``restore_merged`` can use it)."""
    return adapter_dir is not None and all((Path(adapter_dir) / name).is_file() for name in
                                           (ADAPTER_META, "adapter_config.json", "adapter_model.safetensors"))


def fine_tune(model_dir: str | Path, trajectories: Sequence[Trajectory], args, save_to: str | Path,
              accountant: Accountant | None = None, peft_config=None, expected_steps: Sequence[str] | None = None,
              label: str = "this training", adapter_to: str | Path | None = None, tools: Sequence[dict] = ()) -> dict:
    """SFT ``model_dir`` on ``trajectories`` and save the result (weights and tokenizer) to ``save_to``.
    A LoRA adapter (``peft_config``) is merged into the weights before saving (``merge_exactly``), so
    the next round and the evaluation load a plain model directory; the adapter itself, with the
    tokenizer, is saved to ``adapter_to`` (default: ``save_to`` + ``-adapter``), from which
    ``restore_merged`` makes the same weights again. ``tools``: as ``sft_trainer``'s. Returns {"train_loss", "steps", "rows",
    "weights_digest" (``parameters_digest`` of the saved weights, on the main process),
    "step_digests" (``StepDigests``; checked against ``expected_steps`` as it trains, when given),
    "trained_with" (``trained_with``), and with LoRA "adapter" (its directory)}."""
    save_to = Path(save_to)
    world = current()
    trainer = sft_trainer(model_dir, trajectories, args, save_to.parent / f"{save_to.name}-trainer", peft_config,
                          tools)
    steps = StepDigests(expected_steps, label)
    trainer.add_callback(steps.callback)
    with accountant.phase("training") if accountant else nullcontext():
        out = trainer.train()
    ranks = processes(trainer.model, world, trainer)
    adapter = None
    if peft_config is not None:
        refusal = exact_merge_refusal(trainer.model)
        if refusal:
            print(f"termrl train: {refusal}; merged by peft instead, whose merge a rebuild elsewhere may not repeat "
                  "bit for bit (no adapter kept)", file=sys.stderr)
        else:
            adapter = Path(adapter_to) if adapter_to is not None else save_to.parent / f"{save_to.name}-adapter"
        if adapter is not None and world.main:
            trainer.model.save_pretrained(str(adapter))
            trainer.processing_class.save_pretrained(str(adapter))
            dtype = str(trainer.model.get_base_model().dtype).removeprefix("torch.")
            (adapter / ADAPTER_META).write_text(json.dumps({"base": str(model_dir), "dtype": dtype,
                                                            "base_files": weight_files_digest(model_dir)}))
        saved = trainer.model.merge_and_unload() if refusal else merge_exactly(trainer.model)
        if world.main:
            saved.save_pretrained(str(save_to))
            trainer.processing_class.save_pretrained(str(save_to))
    else:
        saved = trainer.model
        trainer.save_model(str(save_to))
    world.barrier()
    result = {"train_loss": out.training_loss, "steps": out.global_step, "rows": len(trainer.train_dataset),
              "weights_digest": parameters_digest(saved) if world.main else None, "step_digests": steps.digests,
              "trained_with": trained_with(), **({"adapter": str(adapter)} if adapter is not None else {}),
              **({k: v for k, v in ranks.items() if k != "processes"})}
    del trainer
    gc.collect()
    return result


def trained_with() -> dict:
    """What decides a training's numbers beyond its data and seed: the libraries' versions and the
    hardware (a CPU multiplies bfloat16 natively or emulates it, by other kernels), so that weights
    trained again elsewhere can be told apart and the difference explained."""
    import torch  # heavy: torch

    versions = {}
    for name in ("torch", "transformers", "trl", "peft", "accelerate"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    flags = cpu_flags()
    return {**versions, "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
            "cpu_bf16_flags": sorted(flags & set(HALF_FLAGS["bfloat16"])),
            "cpu_avx512": "avx512f" in flags}


def hf_policy_factory(hf_config=None, eval_config=None) -> PolicyFactory:
    """The default policy factory: an ``HFPolicy`` over the directory with ``hf_config`` (an
    ``HFConfig``) for sampling and ``eval_config`` (default: the same) for evaluation."""
    def make(model_dir: Path, purpose: str) -> Policy:
        return HFPolicy(model_dir, (eval_config or hf_config) if purpose == "eval" else hf_config)

    return make


def engine_policy_factory(policy_class, config, eval_config=None) -> PolicyFactory:
    """``[eval] backend``'s factory for a generation engine: ``policy_class(model_dir, config)`` over
    the directory (each round's merged weights, converted once and cached) for sampling, and with
    ``eval_config`` (default: the same) for evaluation. ``CT2Policy`` with ``CT2Config`` configs is
    "ctranslate2"'s, ``LlamaCppPolicy`` with ``LlamaCppConfig`` configs "llama.cpp"'s."""
    def make(model_dir: Path, purpose: str) -> Policy:
        return policy_class(model_dir, (eval_config or config) if purpose == "eval" else config)

    return make


def ct2_policy_factory(ct2_config=None, eval_config=None) -> PolicyFactory:
    """``[eval] backend = "ctranslate2"``'s factory (``engine_policy_factory`` with ``CT2Policy``)."""
    return engine_policy_factory(CT2Policy, ct2_config, eval_config)


def rft_round(index: int, model_dir: str | Path, train_tasks: Sequence[Task], heldout_tasks: Sequence[Task],
              sft_args, *, out_dir: str | Path, config: RFTConfig, rollout: RolloutConfig,
              accountant: Accountant, policy_factory: PolicyFactory, base_dir: str | Path | None = None,
              peft_config=None, first: dict | None = None) -> dict:
    """One round (1-based ``index``): sample with ``model_dir``'s weights, filter, fine-tune
    (from ``base_dir`` when ``config.from_base``), evaluate. Returns the round's record: round,
    model_in, model_out (the weights the next round samples), sampled, kept, kept_fraction,
    rejected (reason -> episodes, see ``verdict``), mean_reward, sample_pass@1, sample_hack_rate
    (of the sampled episodes), sample_findings (hack finding kind -> count), trained, skipped (why
    not, or None), train_loss, train_steps, train_rows, weights_digest, step_digests and
    trained_with and adapter (``fine_tune``'s), heldout_pass@1, heldout_mean_reward, heldout_hack_rate,
    heldout_episodes, heldout_errors (harness failures, left out of the rest), heldout_findings.
    ``first``: the round's record from an earlier training, when its weights are trained again:
    each step is checked against its ``step_digests``."""
    round_dir = Path(out_dir) / f"round-{index}"
    model_dir = Path(model_dir)
    world = current()
    policy = policy_factory(model_dir, "sample")
    sampling = dataclasses.replace(rollout, samples=config.samples_per_task, progress=(index - 1) / config.rounds)
    samples = play_stored(train_tasks, policy, sampling, round_dir / "samples", accountant=accountant,
                          label=f"rft round {index}: samples")
    del policy
    verdicts = Counter(verdict(t, config.threshold, config.drop_format_errors) for t in samples)
    kept = keep(samples, config.threshold, config.drop_format_errors)
    trimmed: Counter = Counter()
    if config.trim and kept:  # scripted replays, cheap: rank 0 plays and stores them
        kept, trimmed = world.from_main(lambda: trim(kept, train_tasks, sampling, round_dir / "kept", accountant,
                                                     config.threshold, config.drop_format_errors))
    sampled = summarize(samples) if samples else {}
    record = {"round": index, "model_in": str(model_dir), "sampled": len(samples), "kept": len(kept),
              "trimmed": trimmed["trimmed"], "not_reproduced": trimmed["not_reproduced"],
              "kept_fraction": len(kept) / len(samples) if samples else None,
              "rejected": {k: v for k, v in sorted(verdicts.items()) if k != KEPT},
              "mean_reward": sampled.get("mean_reward"), "sample_pass@1": sampled.get("pass@1"),
              "sample_hack_rate": sampled.get("hack_rate"),
              "sample_findings": {kind: e["count"] for kind, e in sampled.get("findings", {}).items()},
              "trained": bool(kept), "skipped": None,
              "train_loss": None, "train_steps": 0, "train_rows": 0}
    if kept:
        start = Path(base_dir) if config.from_base and base_dir is not None else model_dir
        model_out = round_dir / "model"
        trained = model_out / TRAINED
        fingerprint = {"start": str(start), "kept": sorted(_fingerprint(t) for t in kept)}
        done = world.from_main(lambda: json.loads(trained.read_text()) if trained.is_file() else None)
        if done is not None and done.get("fingerprint") == fingerprint:
            result = done["result"]  # a resumed round: these weights were trained on these episodes
        else:
            result = fine_tune(start, kept, sft_args, model_out, accountant, peft_config,
                               expected_steps=(first or {}).get("step_digests"), label=f"round {index} trained again",
                               adapter_to=round_dir / "adapter")
            if world.main:
                trained.write_text(json.dumps({"fingerprint": fingerprint, "result": result}))
        record.update(train_loss=result["train_loss"], train_steps=result["steps"], train_rows=result["rows"],
                      weights_digest=result.get("weights_digest"), step_digests=result.get("step_digests"),
                      trained_with=result.get("trained_with"), adapter=result.get("adapter"))
        if "parameter_digests" in result:
            record.update(parameter_digests=result["parameter_digests"], parameters_agree=result["parameters_agree"])
    else:
        model_out = model_dir
        record["skipped"] = (f"no episode kept out of {len(samples)} (threshold {config.threshold}): "
                             f"training skipped, the next round samples the same weights")
    record["model_out"] = str(model_out)
    heldout = []
    if heldout_tasks:
        policy = policy_factory(model_out, "eval")
        evaluation = dataclasses.replace(rollout, samples=config.eval_samples)
        heldout = play_stored(heldout_tasks, policy, evaluation, round_dir / "heldout", accountant=accountant,
                              label=f"rft round {index}: heldout")
        del policy
    evaluated = summarize(heldout) if heldout else {}
    record.update({"heldout_pass@1": evaluated.get("pass@1"), "heldout_mean_reward": evaluated.get("mean_reward"),
                   "heldout_hack_rate": evaluated.get("hack_rate"), "heldout_episodes": len(heldout),
                   "heldout_errors": evaluated.get("errors"),
                   "heldout_findings": {k: e["count"] for k, e in evaluated.get("findings", {}).items()}})
    gc.collect()
    return record


def run_rft(model_dir: str | Path, train_tasks: Sequence[Task], heldout_tasks: Sequence[Task], sft_args, *,
            out_dir: str | Path, config: RFTConfig | None = None, rollout: RolloutConfig | None = None,
            spec: RewardSpec | str | None = None, accountant: Accountant | None = None, policy_factory: PolicyFactory | None = None,
            hf_config=None) -> list[dict]:
    """``config.rounds`` rounds of ``rft_round``; returns their records (also in ``out_dir/rounds.json``).

    ``spec`` (preset name, TOML path or ``RewardSpec``) overrides ``rollout.spec``.
    ``policy_factory`` default: ``HFPolicy(model_dir, hf_config)``. ``out_dir`` must hold no rounds yet."""
    config = config or RFTConfig()
    rollout = rollout or RolloutConfig()
    if spec is not None:
        rollout = dataclasses.replace(rollout, spec=spec)
    accountant = accountant or Accountant()
    policy_factory = policy_factory or hf_policy_factory(hf_config)
    out_dir = Path(out_dir)
    world = current()
    if world.from_main(lambda: out_dir.exists() and any(out_dir.glob("round-*"))):
        raise ValueError(f"{out_dir} already holds rounds of a run: choose a new out_dir")
    out_dir.mkdir(parents=True, exist_ok=True)
    records: list[dict] = []
    latest = Path(model_dir)
    for index in range(1, config.rounds + 1):
        record = rft_round(index, latest, train_tasks, heldout_tasks, sft_args, out_dir=out_dir, config=config,
                           rollout=rollout, accountant=accountant, policy_factory=policy_factory, base_dir=model_dir)
        records.append(record)
        latest = Path(record["model_out"])
        if world.main:
            (out_dir / "rounds.json").write_text(json.dumps({"version": ROUNDS_VERSION, "rounds": records}, indent=2))
    return records

