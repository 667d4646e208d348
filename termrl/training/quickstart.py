"""The CPU quickstart: a model built from nothing learns a task family by SFT, then by GRPO.

``run_quickstart(out_dir)`` does, on two CPU cores and with nothing downloaded:

1. **Build.** A byte-level BPE tokenizer trained on the family's own text (instructions,
   reference commands, the system prompt, the chat template's tokens), with TRL's
   ``qwen2_5.jinja`` chat template, and a small randomly initialised ``Qwen2ForCausalLM``.
   The pre-tokenizer isolates every space, digit and punctuation mark, so a name or a number
   is the same tokens in the instruction and in the command: copying it is an exact copy.
2. **SFT warm start** (TRL ``SFTTrainer``) on reference-solution conversations of train
   seeds: system prompt and instruction as the prompt, the reference command as one
   ``<tool_call>`` as the completion; the loss is on the completion tokens only. SFT gets a
   fixed, small compute budget (``sft_steps``), which leaves the model good but not perfect.
3. **GRPO** (TRL ``GRPOTrainer``) on other train seeds. The reward is termrl's reward spec
   through ``trl_reward_funcs``: each completion's first action runs in a fresh bwrap
   sandbox holding its task, the workspace it leaves is verified by the task's hidden tests
   on a warm ``VerifierPool``, the hack detectors read the episode, the spec scores it
   (``partial`` by default: a pass plus half credit per hidden test, so a group in which no
   sample passes still has signal). Episodes are single-action, since the family's tasks need
   one command: a reward function over TRL's plain completions needs no live sandbox per
   completion during generation, and identical completions of a task are verified once.
   Each completion's episode starts as soon as the model has finished it, while the rest of
   the batch still generates (``termrl.training.ahead``). Multi-turn GRPO over ``TerminalEnv``
   (TRL's ``environment_factory``) is ``termrl.training.grpo``; ``termrl train`` runs it.
4. **Held-out evaluation** of the SFT model and of the RL model on the same held-out seeds,
   through ``run_rollouts`` (``TerminalEnv`` episodes, full ``verify``) and ``summarize``,
   sampled at the temperature GRPO trained with: pass@1 of one sample per seed.

The JSON it returns holds ``sft_heldout_pass_rate``, ``rl_heldout_pass_rate`` and
``heldout_episodes``, a two-proportion z-test of the difference, the time of each phase,
the model's size, the step counts and the config.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from termrl.env import EnvConfig, TerminalEnv
from termrl.episode import PoolVerifier, harness_failure
from termrl.eval.metrics import summarize, two_proportion_z
from termrl.policies.hf import HFPolicy
from termrl.policies.tiny import build_tiny_model, prompt_messages, quickstart_tokenizer, reference_reply
from termrl.protocols import Evidence, Finding, HarnessError, Outcome
from termrl.report import write_report
from termrl.reward.exports.trl import trl_reward_funcs
from termrl.reward.spec import load_spec
from termrl.rollout.runner import RolloutConfig, run_rollouts
from termrl.rollout.store import TrajectoryStore
from termrl.sandbox.warm import warm_sandboxes_closed
from termrl.tasks.families import get_family
from termrl.training.ahead import rewards_ahead_trainer
from termrl.training.config import trl_checkpointing
from termrl.verify.pool import VerifierPool

SYSTEM_PROMPT = ""
"""The quickstart's system prompt: none. A model trained from scratch learns the reply format
from the demonstrations, not from a prompt it cannot read; and every constant token of the
prompt dilutes the attention it must learn to aim at the values it copies (with a 60-token
system prompt, the model had not learnt to copy after 600 SFT steps). Training and evaluation
use the same one (``EnvConfig.system_prompt``)."""



@dataclass(frozen=True)
class QuickstartConfig:
    """Everything the quickstart does, with defaults sized for ~10 minutes on 2 CPU cores."""

    family: str = "one-command"
    """Task family (``termrl.tasks.families``); its tasks must be solvable by one command."""
    seed: int = 0
    """Seeds the model's initial weights, data order and sampling."""
    # -- model
    hidden_size: int = 128
    """Width of the Qwen2 model (the MLP is 4x); must divide by ``heads``."""
    layers: int = 2
    """Transformer layers."""
    heads: int = 8
    """Attention heads (as many key/value heads)."""
    vocab_size: int = 1000
    """Upper bound on the tokenizer's vocabulary (the family's text yields fewer merges)."""
    tokenizer_seeds: int = 3000
    """Train seeds whose instructions and reference commands train the tokenizer."""
    # -- SFT
    sft_examples: int = 256
    """Reference solutions SFT learns from (train seeds 0..N-1), repeated over the steps."""
    sft_steps: int = 200
    """SFT optimizer steps: the warm start's fixed compute budget, set to leave GRPO room (at 225
    the SFT model came to pass 0.41-0.46 of the held-out seeds and GRPO gained too little to show)."""
    sft_batch_size: int = 16
    """Conversations per SFT step."""
    sft_learning_rate: float = 3e-3
    """SFT learning rate (constant; AdamW with beta2 0.95)."""
    # -- GRPO
    grpo_steps: int = 300
    """GRPO optimizer steps (one generation round each, with ``grpo_iterations`` = 1)."""
    prompts_per_step: int = 4
    """Train tasks per GRPO step."""
    num_generations: int = 8
    """Completions sampled per task: the group GRPO's advantages are relative to."""
    grpo_learning_rate: float = 3e-4
    """GRPO learning rate (constant)."""
    grpo_beta: float = 0.0
    """KL coefficient against the SFT model (TRL's ``beta``; 0 loads no reference model)."""
    grpo_iterations: int = 1
    """Optimizer steps on each generation batch (TRL's ``num_iterations``; >1 clips the ratio)."""
    temperature: float = 1.0
    """Sampling temperature of GRPO's generations and of both held-out evaluations."""
    max_completion_tokens: int = 64
    """Longest completion, in tokens (the longest reference command needs about 50)."""
    spec: str = "partial"
    """Reward spec (preset name or TOML path): ``partial`` is 1 for a pass plus half the share of
    hidden tests passed, so a reply with the right path but the wrong content still earns 0.25."""
    verifier_workers: int = 3
    """Warm verification sandboxes, and completions verified at once (torch idles meanwhile)."""
    warm_sandboxes: int = 3
    """Episode sandboxes kept started ahead (``termrl.sandbox.warm``): they start while the
    model generates, not while the reward waits."""
    rewards_ahead: bool = True
    """Start each completion's episode as soon as the model has finished it, while the rest of
    the batch still generates (``termrl.training.ahead``); the rewards are the same either way."""
    # -- evaluation
    heldout_episodes: int = 500
    """Held-out seeds evaluated (one episode each), for the SFT model and for the RL model."""
    eval_workers: int = 8
    """Evaluation episodes alive at once (their turns are generated as one batch)."""
    system_prompt: str = SYSTEM_PROMPT
    """System prompt of every conversation, formatted with ``workdir``."""
    torch_threads: int = 1
    """CPU threads torch uses. One: on a shared 2-core machine, two threads that contend with
    other processes made a training step ~10x slower; the other core runs the sandboxes."""

    def __post_init__(self):
        if self.hidden_size % self.heads:
            raise ValueError(f"hidden_size {self.hidden_size} must be a multiple of heads {self.heads}")
        if self.num_generations < 2:
            raise ValueError("num_generations must be at least 2: GRPO's advantage compares a group")
        if min(self.heldout_episodes, self.sft_examples, self.sft_steps, self.grpo_steps) < 1:
            raise ValueError("heldout_episodes, sft_examples, sft_steps and grpo_steps must be at least 1")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0: GRPO samples its groups")
        if self.grpo_iterations < 1 or self.grpo_beta < 0:
            raise ValueError("grpo_iterations must be at least 1 and grpo_beta at least 0")


# --------------------------------------------------------------------------- data


def check_family(config: QuickstartConfig) -> None:
    """Raise ValueError unless ``config.family`` exists and its tasks are what the quickstart
    can train on: an empty workspace and a reference solution to imitate."""
    try:
        family = get_family(config.family)
    except KeyError as e:
        raise ValueError(f"family: {e.args[0]}") from None
    for seed in (family.train_seeds.start, family.heldout_seeds.start):
        task = family.generate(seed)
        prompt_messages(task, config.system_prompt)
        reference_reply(task)


def build_model(dest: Path, config: QuickstartConfig) -> tuple[Any, int]:
    """Tokenizer and random Qwen2 model of ``config``, saved to ``dest``; returns the
    tokenizer (``quickstart_tokenizer``) and the model's parameter count."""
    from transformers import AutoModelForCausalLM  # heavy: transformers

    tokenizer = quickstart_tokenizer(config.family, config.tokenizer_seeds, config.vocab_size,
                                     config.system_prompt)
    build_tiny_model(dest, hidden_size=config.hidden_size, layers=config.layers, heads=config.heads,
                     seed=config.seed, max_positions=512, tokenizer=tokenizer)
    parameters = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(dest).parameters())
    return tokenizer, parameters


# --------------------------------------------------------------------------- reward


class SingleActionEvaluator:
    """``evaluate(prompt, completion, row)`` for ``trl_reward_funcs``: one-action episodes.

    The row's ``seed`` regenerates its task. The completion is one reply of a ``TerminalEnv``
    episode limited to one step: it is parsed and run as in evaluation (a format error or a
    submission runs nothing), and the episode is finished by ``termrl.episode.finish_episode``
    like every other (workspace and HOME snapshots, hack detectors) except that the hidden
    tests run on the warm ``pool`` (``PoolVerifier``). A harness failure gives unverified
    evidence: its reward is None, never 0.
    """

    def __init__(self, family: str, pool, backend: str = "bwrap", command_timeout_s: float = 10.0,
                 cache_size: int = 4096, observation_chars: int = 4000, phase=None, warm_sandboxes: int = 0):
        self.family, self.pool, self.phase = get_family(family), pool, phase
        """``phase``: an ``Accountant.phase`` the episodes' environment, verification and detection time go to."""
        self.config = EnvConfig(max_steps=1, backend=backend, command_timeout_s=command_timeout_s,
                                observation_chars=observation_chars, warm_sandboxes=warm_sandboxes)
        """``warm_sandboxes``: episode sandboxes kept started ahead (``termrl.sandbox.warm``)."""
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[int, str], tuple] = OrderedDict()
        self._lock = threading.Lock()
        self.runs = 0
        """Episodes actually run (the rest were answered from the cache)."""

    def __call__(self, prompt: object, completion: str, row: dict) -> tuple[Evidence, Sequence[Finding]]:
        """Evidence and findings of ``completion`` on the task of ``row["seed"]``.

        With ``cache_size`` > 0 an identical completion on the same seed is answered from a
        cache of verified results (GRPO's groups repeat themselves more as the policy
        sharpens). Only sound for deterministic tasks, as the quickstart's family is; pass
        ``cache_size=0`` otherwise. Unverified results are never cached."""
        key = (int(row["seed"]), completion)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        outcome = self.outcome(completion, int(row["seed"]))
        result = (outcome.evidence, outcome.findings)
        if self.cache_size and outcome.verified:
            with self._lock:
                self._cache[key] = result
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return result

    def outcome(self, completion: str, seed: int) -> Outcome:
        """The one-step episode of ``completion`` on the task of ``seed``, finished and unscored."""
        self.runs += 1
        task = self.family.generate(seed)
        with TerminalEnv(self.config, verifier=PoolVerifier(self.pool), phase=self.phase) as env:
            try:
                env.reset(task)
            except HarnessError as e:
                return harness_failure(task.id, e, "reset")
            env.step(completion)
            return env.outcome


# --------------------------------------------------------------------------- phases


def _progress(name: str, say: Callable[[str], None], keys: Sequence[str]):
    """A ``TrainerCallback`` (defined here: transformers loads only when training runs)."""
    from transformers import TrainerCallback  # heavy: transformers

    class Progress(TrainerCallback):
        """Reports ``keys`` of the trainer's logs to ``say`` about ten times a run (means since the last report)."""

        def __init__(self, name: str, say: Callable[[str], None], keys: Sequence[str]):
            self.name, self.say, self.keys, self.seen = name, say, keys, []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and all(k in logs for k in self.keys):
                self.seen.append([float(logs[k]) for k in self.keys])
            every = max(1, state.max_steps // 10)
            if self.seen and (state.global_step % every == 0 or state.global_step == state.max_steps):
                means = [sum(col) / len(col) for col in zip(*self.seen)]
                self.say(f"{self.name} step {state.global_step}/{state.max_steps}: "
                         + ", ".join(f"{k} {m:.3f}" for k, m in zip(self.keys, means)))
                self.seen = []

    return Progress(name, say, keys)


LOG_HISTORY = "log_history.json"
"""The trainer's logged metrics per step (``TrainerState.log_history``), beside the saved model."""


def train_sft(init_dir: Path, out_dir: Path, config: QuickstartConfig, seeds: Sequence[int],
              say: Callable[[str], None] = print) -> dict:
    """SFT from ``init_dir`` on the reference replies of ``seeds``; saves to ``out_dir``."""
    from datasets import Dataset  # heavy: datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback  # heavy: transformers
    from trl import SFTConfig, SFTTrainer  # heavy: trl

    family = get_family(config.family)
    rows = []
    for seed in seeds:
        task = family.generate(seed)
        rows.append({"prompt": prompt_messages(task, config.system_prompt),
                     "completion": [{"role": "assistant", "content": reference_reply(task)}]})
    args = SFTConfig(output_dir=str(out_dir / "trainer"), use_cpu=True, bf16=False, report_to="none",
                     max_steps=config.sft_steps, per_device_train_batch_size=config.sft_batch_size,
                     learning_rate=config.sft_learning_rate, lr_scheduler_type="constant", adam_beta2=0.95,
                     weight_decay=0.0, completion_only_loss=True, max_length=512, logging_steps=10,
                     save_strategy="no", seed=config.seed, disable_tqdm=True, dataloader_num_workers=0,
                     **trl_checkpointing(SFTConfig))
    tokenizer = AutoTokenizer.from_pretrained(init_dir)
    model = AutoModelForCausalLM.from_pretrained(init_dir)
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                         callbacks=[_progress("SFT", say, ("loss", "mean_token_accuracy"))])
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(out_dir)
    (out_dir / LOG_HISTORY).write_text(json.dumps(trainer.state.log_history))  # the step metrics, for reports
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    return {"steps": trainer.state.global_step, "examples": len(rows),
            "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None}


def grpo_rows(config: QuickstartConfig, seeds: Sequence[int]) -> list[dict]:
    """GRPO's dataset: the prompt of each seed's task, and the seed (the evaluator regenerates the task)."""
    family = get_family(config.family)
    return [{"prompt": prompt_messages(family.generate(s), config.system_prompt), "seed": s} for s in seeds]


def grpo_args(config: QuickstartConfig, out_dir: Path):
    """The quickstart's ``GRPOConfig`` (CPU, no checkpoints, a log line per step)."""
    from trl import GRPOConfig  # heavy: trl

    return GRPOConfig(output_dir=str(out_dir / "trainer"), use_cpu=True, bf16=False, report_to="none",
                      max_steps=config.grpo_steps, per_device_train_batch_size=config.prompts_per_step
                      * config.num_generations, num_generations=config.num_generations,
                      num_iterations=config.grpo_iterations, max_completion_length=config.max_completion_tokens,
                      temperature=config.temperature, learning_rate=config.grpo_learning_rate,
                      lr_scheduler_type="constant", adam_beta2=0.95, weight_decay=0.0, beta=config.grpo_beta,
                      logging_steps=1, save_strategy="no", seed=config.seed, disable_tqdm=True,
                      dataloader_num_workers=0, **trl_checkpointing(GRPOConfig))


def train_grpo(sft_dir: Path, out_dir: Path, config: QuickstartConfig, seeds: Sequence[int],
               say: Callable[[str], None] = print) -> dict:
    """GRPO from ``sft_dir`` on ``seeds`` with the spec's reward from sandboxed execution."""
    from datasets import Dataset  # heavy: datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback  # heavy: transformers
    from trl import GRPOTrainer  # heavy: trl

    rows = grpo_rows(config, seeds)
    batch = config.prompts_per_step * config.num_generations
    args = grpo_args(config, out_dir)
    tokenizer = AutoTokenizer.from_pretrained(sft_dir)
    model = AutoModelForCausalLM.from_pretrained(sft_dir)
    spec = load_spec(config.spec)
    with VerifierPool(workers=config.verifier_workers, static=False) as pool, warm_sandboxes_closed():
        evaluator = SingleActionEvaluator(config.family, pool, warm_sandboxes=config.warm_sandboxes)
        funcs = trl_reward_funcs(spec, evaluator, workers=config.verifier_workers)
        trainer_class = rewards_ahead_trainer() if config.rewards_ahead else GRPOTrainer
        trainer = trainer_class(model=model, reward_funcs=funcs, args=args, train_dataset=Dataset.from_list(rows),
                                processing_class=tokenizer, callbacks=[_progress("GRPO", say, ("reward",))])
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(out_dir)
    (out_dir / LOG_HISTORY).write_text(json.dumps(trainer.state.log_history))  # the step metrics, for reports
    rewards = [e["reward"] for e in trainer.state.log_history if "reward" in e]
    tenth = max(1, len(rewards) // 10)
    return {"steps": trainer.state.global_step, "completions": trainer.state.global_step * batch,
            "sandbox_episodes": evaluator.runs, "unverified": funcs[0].scorer.unverified,
            "evaluations_taken_ahead": funcs[0].scorer.taken_ahead,
            "reward_first_tenth": _mean(rewards[:tenth]), "reward_last_tenth": _mean(rewards[-tenth:])}


def heldout_progress(name: str, total: int, say: Callable[[str], None],
                     every_s: float = 10.0) -> Callable[[Any], None]:
    """An ``on_episode`` for ``run_rollouts`` that tells ``say`` the episodes done and their pass
    rate at most every ``every_s`` seconds (the first after ``every_s``).

    >>> said = []
    >>> tally = heldout_progress("held-out after SFT", 4, said.append, every_s=0)
    >>> for passed in (True, False): tally(type("T", (), {"passed": passed})())
    >>> said
    ['held-out after SFT: 1/4 seeds, pass 1.00', 'held-out after SFT: 2/4 seeds, pass 0.50']
    """
    done, passed, last = [0], [0], [time.perf_counter()]

    def on_episode(trajectory) -> None:
        done[0] += 1
        passed[0] += bool(trajectory.passed)
        now = time.perf_counter()
        if now - last[0] >= every_s:
            last[0] = now
            say(f"{name}: {done[0]}/{total} seeds, pass {passed[0] / done[0]:.2f}")

    return on_episode


def evaluate_heldout(model_dir: Path, config: QuickstartConfig, seeds: Sequence[int], store_dir: Path,
                     on_episode: Callable[[Any], None] | None = None) -> dict:
    """pass@1 on ``seeds`` (one sampled episode each) through the rollout runner and ``summarize``;
    ``on_episode`` sees each finished episode (``heldout_progress``)."""
    family = get_family(config.family)
    policy = HFPolicy(model_dir, temperature=config.temperature, max_new_tokens=config.max_completion_tokens,
                      seed=config.seed, max_batch=config.eval_workers)
    rollout = RolloutConfig(samples=1, workers=config.eval_workers, spec=config.spec,
                            env=EnvConfig(system_prompt=config.system_prompt, static=False, command_timeout_s=10.0))
    trajectories = run_rollouts([family.generate(s) for s in seeds], policy, rollout, on_episode=on_episode)
    summary = summarize(trajectories)
    store_dir.mkdir(parents=True, exist_ok=True)
    for old in store_dir.glob("part-*.parquet"):  # a rerun in the same folder replaces its episodes
        old.unlink()
    TrajectoryStore(store_dir).write(trajectories)  # every episode, for termrl report
    (store_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    replies = [{"seed": t.seed, "passed": t.passed, "ending": t.ending, "error": t.error,
                "reply": t.steps[0].reply if t.steps else None} for t in sorted(trajectories, key=lambda t: t.seed)]
    (store_dir / "replies.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    return summary


# --------------------------------------------------------------------------- the whole run


def run_quickstart(out_dir: Path, config: QuickstartConfig | None = None,
                   progress: Callable[[str], None] | None = None) -> dict:
    """Build, SFT, GRPO, evaluate both on held-out seeds; write ``quickstart.json`` in
    ``out_dir`` and return it. ``progress`` receives one-line messages as the run goes."""
    import torch  # heavy: torch

    config = config or QuickstartConfig()
    check_family(config)
    say = progress or (lambda message: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    family = get_family(config.family)
    start = family.train_seeds.start
    sft_seeds = range(start, start + config.sft_examples)
    grpo_seeds = range(sft_seeds.stop, sft_seeds.stop + max(1, config.grpo_steps * config.prompts_per_step))
    heldout = range(family.heldout_seeds.start, family.heldout_seeds.start + config.heldout_episodes)
    timings: dict[str, float] = {}
    started = time.perf_counter()

    def phase(name: str, message: str, fn: Callable[[], Any]) -> Any:
        say(message)
        t0 = time.perf_counter()
        result = fn()
        timings[name] = round(time.perf_counter() - t0, 1)
        return result

    threads = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)
    try:
        with _quiet():
            tokenizer, parameters = phase("build_s", "building the tokenizer and the model",
                                     lambda: build_model(out_dir / "init", config))
            sft = phase("sft_s", f"SFT: {config.sft_steps} steps of {config.sft_batch_size} on "
                                 f"{config.sft_examples} reference solutions",
                        lambda: train_sft(out_dir / "init", out_dir / "sft", config, sft_seeds, say))
            sft_eval = phase("sft_eval_s", f"evaluating the SFT model on {len(heldout)} held-out seeds",
                             lambda: evaluate_heldout(out_dir / "sft", config, heldout, out_dir / "eval_sft",
                                                      heldout_progress("held-out after SFT", len(heldout), say)))
            say(f"SFT held-out pass@1: {sft_eval['pass@1']:.3f}")
            grpo = phase("grpo_s", f"GRPO: {config.grpo_steps} steps x {config.prompts_per_step} tasks x "
                                   f"{config.num_generations} samples",
                         lambda: train_grpo(out_dir / "sft", out_dir / "rl", config, grpo_seeds, say))
            rl_eval = phase("rl_eval_s", f"evaluating the RL model on {len(heldout)} held-out seeds",
                            lambda: evaluate_heldout(out_dir / "rl", config, heldout, out_dir / "eval_rl",
                                                     heldout_progress("held-out after RL", len(heldout), say)))
    finally:
        torch.set_num_threads(threads)
    timings["total_s"] = round(time.perf_counter() - started, 1)
    sft_rate, rl_rate = sft_eval["pass@1"] or 0.0, rl_eval["pass@1"] or 0.0
    n_sft, n_rl = (max(1, e["episodes"] - e["errors"]) for e in (sft_eval, rl_eval))
    z, p_value = two_proportion_z(sft_rate, rl_rate, n_sft, n_rl)
    report = {
        "version": 1,
        "family": config.family,
        "sft_heldout_pass_rate": sft_rate,
        "rl_heldout_pass_rate": rl_rate,
        "heldout_episodes": len(heldout),
        "improvement": rl_rate - sft_rate,
        "z": round(z, 3),
        "p_value": p_value,
        "evaluation": (f"pass@1: one episode per held-out seed ({heldout.start}-{heldout.stop - 1}), sampled at "
                       f"temperature {config.temperature}, verified by the hidden tests in a sandbox; z and "
                       f"p_value: two-proportion z-test of RL against SFT"),
        "heldout_errors": {"sft": sft_eval["errors"], "rl": rl_eval["errors"]},
        "heldout_mean_reward": {"sft": sft_eval["mean_reward"], "rl": rl_eval["mean_reward"]},
        "reward_scale": load_spec(config.spec).scale(),
        "model": {"parameters": parameters, "hidden_size": config.hidden_size,
                  "layers": config.layers, "heads": config.heads, "vocab": len(tokenizer)},
        "sft": sft,
        "grpo": grpo,
        "timings": timings,
        "config": asdict(config),
        "out_dir": str(out_dir),
    }
    (out_dir / "quickstart.json").write_text(json.dumps(report, indent=1))

    say(f"report: {write_report([out_dir], out_dir / 'report.html')}")
    say(f"held-out mean reward: SFT {_num(sft_eval['mean_reward'])} -> RL {_num(rl_eval['mean_reward'])} "
        f"({report['reward_scale']})")
    say(f"held-out pass@1: SFT {sft_rate:.3f} -> RL {rl_rate:.3f} over {len(heldout)} episodes each "
        f"(z={z:.2f}, p={p_value:.2g}), {timings['total_s']:.0f} s in all")
    return report


@contextmanager
def _quiet():
    """No progress bars (datasets, transformers) and no FutureWarnings from the libraries' configs."""
    import datasets  # heavy: datasets
    import transformers  # heavy: transformers

    bars = datasets.is_progress_bar_enabled()
    verbosity = transformers.logging.get_verbosity()
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        if bars:
            datasets.enable_progress_bars()
        transformers.logging.set_verbosity(verbosity)
        transformers.utils.logging.enable_progress_bar()


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


__all__ = ["QuickstartConfig", "SingleActionEvaluator", "build_model", "check_family", "evaluate_heldout",
           "heldout_progress", "run_quickstart", "train_grpo", "train_sft"]
