"""``termrl train CONFIG.toml``: one validated config for GRPO, RFT and DPO.

A config is TOML; every field has a default except ``algorithm``, ``model`` and
``tasks.train``. ``--set key=value`` overrides any field by its dotted name (the value is
read as a TOML value, a bare word as a string): ``--set grpo.learning_rate=1e-5``.
Unknown sections or fields, wrong types and impossible values are errors that name the
file, the field and the fix.

    algorithm = "grpo"                 # grpo | rft | dpo
    output_dir = "runs/grpo-logs"

    [model]
    path = "Qwen/Qwen2.5-Coder-1.5B-Instruct"   # a local directory (or a hub id on a GPU box)
    # tiny = true                      # or build a tiny model from config (tests, CPU smoke runs)

    [tasks]
    train = "logs-count:0-999"
    heldout = "logs-count:heldout:0-99"

    [grpo]
    steps = 200
    num_generations = 8
    use_vllm = true                    # GPU path: TRL's vLLM generation

Immutable task data stays in the tasks; this is only what a run tunes.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termrl.actions import ACTION_FORMATS
from termrl.policies import is_local_path
from termrl.tasks.families import FAMILIES
from termrl.training.mix import check_weights

ALGORITHMS = ("grpo", "rft", "dpo")
EVAL_BACKENDS = ("transformers", "ctranslate2", "llama.cpp")


class ConfigError(ValueError):
    """A config that cannot run: names the file, the field and the fix."""


@dataclass
class ModelConfig:
    path: str = ""
    """A Hugging Face model directory (or a hub id where downloads are allowed); empty with tiny."""
    tiny: bool = False
    """Build a small model and tokenizer locally from config instead (nothing downloaded)."""
    tiny_hidden_size: int = 64
    """Hidden size of the tiny model."""
    tiny_layers: int = 2
    """Layers of the tiny model."""
    tiny_heads: int = 4
    """Attention heads of the tiny model (as many key/value heads); must divide ``tiny_hidden_size``."""
    tiny_max_positions: int = 4096
    """Context length the tiny model's config declares (TRL stops a rollout's tool rounds there)."""
    tiny_tokenizer: str = ""
    """The tiny model's tokenizer: "" trains one on a small built-in terminal corpus; a family name
    trains one on that family's own instructions and reference commands, with merges that never
    cross a space, digit or punctuation mark, and a chat template without tool schemas
    (``termrl.policies.tiny.quickstart_tokenizer``)."""
    tiny_vocab_size: int = 2000
    """Upper bound on the tiny tokenizer's vocabulary."""
    tiny_tokenizer_seeds: int = 3000
    """With ``tiny_tokenizer`` a family: the train seeds whose text trains the tokenizer."""
    dtype: str = "auto"
    """auto, float32 or bfloat16."""


@dataclass
class TasksConfig:
    train: str = ""
    """SUITE of training tasks: builtin, FAMILY:SEEDS, a directory, humaneval, mbpp."""
    heldout: str = ""
    """SUITE evaluated at the end (and per RFT round); empty: no held-out evaluation."""
    transfer: str = ""
    """A second held-out SUITE that training never touches (other families, builtin tasks), evaluated
    before and after like ``heldout``: does a gain transfer? Empty: none."""
    weights: dict[str, float] = field(default_factory=dict)
    """Relative weights of ``train``'s parts (joined by ``+``), each named as written there; a part
    not named weighs 1. Given: training draws from the parts in these proportions, each part's tasks
    in a fixed shuffled order, all of them before any repeats (``termrl.training.mix``); GRPO takes
    as many tasks as its steps use, RFT ``rft.tasks_per_round`` fresh ones a round. Empty: every
    task of ``train`` is one pool, as one suite."""


@dataclass
class EnvSection:
    max_steps: int | None = None
    """Replies per episode; default: each task's own limit."""
    time_limit_s: float | None = None
    """Seconds of sandbox and generation time per episode; default: the task's."""
    command_timeout_s: float = 120.0
    """The longest one command may run."""
    observation_chars: int = 4000
    """Observation budget (head and tail kept)."""
    backend: str = "bwrap"
    """Sandbox backend: bwrap, docker or local."""
    action_format: str = "tool_call"
    """How episodes ask the model to act (sampling for RFT, DPO and evaluation): tool_call, native,
    json, bash or example (``termrl.actions.ACTION_FORMATS``). GRPO's own rollouts are TRL's
    native tool loop whatever this says."""
    warm_sandboxes: int = 0
    """Episode sandboxes of each task shape kept started ahead (``termrl.sandbox.warm``), so
    episodes do not wait for their sandbox to start; 0: each starts its own."""
    system_prompt: str | None = None
    """Every episode's system prompt (``{workdir}`` is filled in), for training and evaluation;
    unset: the action format's own (GRPO: the native format's). "" sends an empty one: a model
    trained from nothing learns the format from its warm start, not from a prompt."""
    static: bool = True
    """Run the static checks stage of verification (``EnvConfig.static``)."""


@dataclass
class LoraConfig:
    enabled: bool = False
    """Train a LoRA adapter (peft) instead of every weight."""
    r: int = 16
    """Adapter rank."""
    alpha: int = 32
    """LoRA alpha."""
    dropout: float = 0.05
    """Dropout on the adapter's input."""
    target_modules: str = "all-linear"
    """Modules that get adapters (peft's target_modules)."""


@dataclass
class GRPOSection:
    steps: int = 100
    """Optimizer steps."""
    learning_rate: float = 1e-6
    """AdamW learning rate."""
    num_generations: int = 8
    """Rollouts per task (the group whose mean is the baseline)."""
    batch_size: int = 8
    """Rollouts per device per step (a multiple of num_generations)."""
    gradient_accumulation_steps: int = 1
    """Batches accumulated per optimizer step."""
    max_completion_length: int = 1024
    """Tokens of one rollout (all turns), tool results included."""
    max_turns: int = 0
    """Replies per rollout (TRL's ``max_tool_calling_iterations`` + 1); the calls of the last one
    run when the episode is finished. 1: GRPO on one reply per episode. 0: no cap."""
    num_iterations: int = 1
    """Optimizer steps on each generation batch (TRL's ``num_iterations``; above 1 clips the ratio)."""
    lr_scheduler: str = "linear"
    """Learning-rate schedule (transformers' ``lr_scheduler_type``: linear, constant, cosine...)."""
    adam_beta2: float = 0.999
    """AdamW's beta2."""
    temperature: float = 1.0
    """Sampling temperature of rollouts."""
    beta: float = 0.0
    """KL coefficient against the reference model (0: no reference model)."""
    use_vllm: bool = False
    """Generate with vLLM (needs a GPU and vllm installed)."""
    vllm_mode: str = "colocate"
    """colocate (vLLM in the training process) or server (trl vllm-serve)."""
    vllm_server_base_url: str = ""
    """Server mode: where ``trl vllm-serve`` listens, e.g. "http://10.0.0.5:8000" (empty: TRL's
    default, port 8000 of this machine)."""
    workers: int = 2
    """Episodes verified, and rollouts' tool calls run, at once (TRL alone runs the calls one
    rollout after another)."""
    verifier_workers: int = 0
    """Warm verification sandboxes the episodes' hidden tests run on (``VerifierPool``); 0: each
    episode is verified in a sandbox of its own. Ignored with ``ray.address``."""
    remote: list[str] = field(default_factory=list)
    """``termrl serve`` servers that play the episodes instead of this process, e.g.
    ["http://10.0.0.7:8000"] (each episode on the next, in turn). Each must serve the training
    tasks (``--suite`` as ``tasks.train``); the rewards are still scored here, by this run's spec."""
    remote_token_env: str = "TERMRL_SERVE_TOKEN"
    """The environment variable holding the servers' bearer token (unset: none is sent)."""


@dataclass
class SFTSection:
    steps: int = 0
    """SFT warm-start steps before the algorithm (and before the "before" evaluation); 0: none."""
    tasks: str = ""
    """SUITE whose reference solutions are imitated (repeated over the steps), as ``source`` says;
    use seeds training never sees."""
    batch_size: int = 8
    """Conversations per step."""
    learning_rate: float = 1e-5
    """AdamW learning rate."""
    lr_scheduler: str = "constant"
    """Learning-rate schedule (transformers' ``lr_scheduler_type``)."""
    adam_beta2: float = 0.999
    """AdamW's beta2."""
    max_length: int = 1024
    """Tokens of one conversation."""
    source: str = "reference"
    """What SFT imitates (``SFT_SOURCES``). "reference": each task's reference solution as one bash
    tool call answering its opening messages (one reply, no observation, no submit; the tiny
    quickstart's warm start). "episodes": each task played through the environment in the run's
    action format (``env.action_format``; GRPO: native) by ``ReferencePolicy`` -- its reference
    solution's commands, then a submit -- stored in OUTPUT_DIR/sft/episodes; only the verified
    episodes (passed, no high-severity hack finding, no unparseable reply) are imitated, as
    multi-turn chats with the loss on the replies only: a real model learns the action format and
    to submit. sft.json says how many were played and kept, and why the others were dropped."""


SFT_SOURCES = ("reference", "episodes")
"""``sft.source`` choices."""


@dataclass
class RFTSection:
    rounds: int = 3
    """Sample -> filter -> fine-tune -> evaluate cycles."""
    samples_per_task: int = 4
    """Episodes sampled per training task per round."""
    tasks_per_round: int = 0
    """Training tasks a round samples, the next ones of the mix of ``tasks.train`` (by
    ``tasks.weights``): each round new tasks until the suite runs out. 0: every task of
    ``tasks.train``, each round."""
    threshold: float = 1.0
    """Least reward an episode needs to be kept (and no high-severity finding)."""
    epochs: float = 1.0
    """SFT epochs over the kept episodes per round."""
    learning_rate: float = 1e-5
    """SFT learning rate."""
    batch_size: int = 4
    """SFT batch size."""
    temperature: float = 1.0
    """Sampling temperature."""
    trim: bool = True
    """Imitate a kept episode that ran out of steps or time only up to its shortest passing prefix,
    then a submit (``termrl.training.rft.trim``); false: every reply of it."""
    max_length: int = 1024
    """SFT sequence length in tokens (prompt and replies); an episode's replies past it are not
    imitated."""


@dataclass
class DPOSection:
    samples_per_task: int = 4
    """Episodes sampled per training task to build preference pairs."""
    min_gap: float = 0.0
    """Least reward difference of a pair (ties are never paired)."""
    steps: int = 100
    """Optimizer steps."""
    learning_rate: float = 5e-7
    """DPO learning rate."""
    beta: float = 0.1
    """DPO beta."""
    batch_size: int = 4
    """Pairs per step."""
    temperature: float = 1.0
    """Sampling temperature."""


@dataclass
class EvalSection:
    samples: int = 1
    """Episodes per held-out task."""
    temperature: float = 1.0
    """Sampling temperature of the held-out evaluation."""
    max_new_tokens: int = 512
    """Tokens per reply."""
    workers: int = 2
    """Episodes alive at once."""
    stop_at_action: bool = False
    """End each sampled reply (RFT, DPO, evaluation) at its first whole action: the environment
    runs nothing after it, and on a CPU the tokens after it are most of the generation time."""
    backend: str = "transformers"
    """What generates RFT's and DPO's samples and the evaluations (before and after): "transformers"
    (``HFPolicy``, in ``model.dtype``), "ctranslate2" (``CT2Policy``: the weights, each RFT round's
    merged ones too, converted once to int8 and cached; faster on a CPU, results/ct2; CPU only, on
    ``threads`` threads; replies' log-probs are the raw model's) or "llama.cpp" (``LlamaCppPolicy``:
    the same, converted to GGUF q8_0 and served by ``llama-server`` on ``threads`` threads; the
    fastest one stream on a CPU, results/cpu-engines; needs ``scripts/build_llamacpp.sh``). GRPO
    generates with TRL either way."""
    threads: int = 0
    """CPU threads of the "ctranslate2" or "llama.cpp" engine; 0: the run's ``threads``. On a CPU
    that the sandboxes share, fewer than the cores: llama.cpp on 2 threads beside other work ran
    at a sixth of its speed on 1 (results/cpu-engines)."""
    before: bool = True
    """Also evaluate the initial model on the held-out (and transfer) tasks, at the same decoding:
    results.json then has ``heldout_pass_rate_before/after`` and the test of the change."""


@dataclass
class RaySection:
    address: str = ""
    """A Ray cluster to verify episodes on (GRPO's rollouts, RFT's and DPO's samples, the
    evaluations): its head's HOST:PORT, ``auto`` for the one ``ray start`` runs on this machine,
    or ``local`` for one started in this process; "" verifies on this machine. Not part of
    what a resumed run must keep: a run may resume on another cluster, or none."""
    verifier_actors: int = 2
    """Warm verifiers (Ray actors, one CPU each) on the cluster."""
    verifier_workers: int = 1
    """Sandboxes per actor: verifications each runs at once."""


@dataclass
class JudgeSection:
    policy: str = ""
    """A model judge of every passing episode (``termrl.reward.judge``): ``hf:PATH``,
    ``openai:BASE_URL`` (with ``model``) or ``discriminator:MODEL.json``; "" runs none. Its verdict is the evidence's ``judge``
    stage and the value of a spec's ``judge`` component (None without a judge)."""
    model: str = ""
    """The model name an ``openai:`` judge endpoint serves."""
    max_tokens: int = 200
    """Longest reply of the judge, in tokens."""


@dataclass
class LoggingConfig:
    tensorboard: bool = True
    """Write metrics for TensorBoard under OUTPUT_DIR/tensorboard."""
    wandb: bool = False
    """Also report to Weights & Biases (needs wandb installed and configured)."""
    save_steps: int = 50
    """Checkpoint every this many optimizer steps (kept: the last 2)."""


@dataclass
class TrainConfig:
    algorithm: str = ""
    """grpo, rft or dpo."""
    output_dir: str = ""
    """Run directory: checkpoints, trajectories, metrics, compute accounting, results."""
    seed: int = 0
    """Seed of sampling and training (and of the tiny model's initial weights)."""
    threads: int = 0
    """CPU threads torch uses; 0: torch's default. On a small shared CPU, 1 leaves the other
    cores to the sandboxes (two threads contending with them made a step about 10x slower)."""
    spec: str = "staged"
    """Reward spec: a preset (sparse, coderl, rltf, staged) or a TOML file."""
    model: ModelConfig = field(default_factory=ModelConfig)
    tasks: TasksConfig = field(default_factory=TasksConfig)
    env: EnvSection = field(default_factory=EnvSection)
    lora: LoraConfig = field(default_factory=LoraConfig)
    sft: SFTSection = field(default_factory=SFTSection)
    grpo: GRPOSection = field(default_factory=GRPOSection)
    rft: RFTSection = field(default_factory=RFTSection)
    dpo: DPOSection = field(default_factory=DPOSection)
    eval: EvalSection = field(default_factory=EvalSection)
    logging: LoggingConfig = field(default_factory=LoggingConfig)
    ray: RaySection = field(default_factory=RaySection)
    judge: JudgeSection = field(default_factory=JudgeSection)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word is a string


def apply_overrides(data: dict, overrides: list[str], source: str) -> dict:
    """``key=value`` pairs applied to the raw TOML table (dotted keys for sections)."""
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set grpo.learning_rate=1e-5")
        *parents, leaf = key.strip().split(".")
        table = data
        for part in parents:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise ConfigError(f"--set {item!r}: {part!r} in {source} is a value, not a section")
        table[leaf] = _parse_value(value.strip())
    return data


def from_overrides(cls, overrides: list[str], source: str = "--set"):
    """A ``cls`` dataclass from its defaults and ``key=value`` overrides, checked as a config
    file's fields are (unknown names, wrong types, the class's own checks: ConfigError)."""
    try:
        return _build(cls, apply_overrides({}, list(overrides), source), "", source)
    except (TypeError, ValueError) as e:
        if isinstance(e, ConfigError):
            raise
        raise ConfigError(f"{source}: {e}") from None


def _coerce(value: Any, hint: Any, where: str, source: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        if value is None and type(None) in args:
            return None
        hint = next(a for a in args if a is not type(None))
    if origin is dict and isinstance(value, dict):
        return {str(k): _coerce(v, args[1], f"{where}.{k}", source) for k, v in value.items()}
    if origin is list and isinstance(value, list):
        return [_coerce(v, args[0], f"{where}[{i}]", source) for i, v in enumerate(value)]
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(hint, type) and isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
        return value
    name = getattr(hint, "__name__", str(hint))
    raise ConfigError(f"{source}: field {where!r}: expected {name}, got {value!r} ({type(value).__name__})")


def _build(cls, data: dict, prefix: str, source: str):
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: {prefix.rstrip('.') or 'the file'} must be a table of fields")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{source}: unknown field '{prefix}{unknown[0]}'; known in "
                          f"{prefix.rstrip('.') or 'the top level'}: {', '.join(known)}")
    values = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            values[name] = _build(hint, value, f"{prefix}{name}.", source)
        else:
            values[name] = _coerce(value, hint, f"{prefix}{name}", source)
    return cls(**values)


def _check(cfg: TrainConfig, source: str) -> None:
    def bad(field_name: str, fix: str) -> ConfigError:
        return ConfigError(f"{source}: field {field_name!r}: {fix}")

    if cfg.algorithm not in ALGORITHMS:
        raise bad("algorithm", f"{cfg.algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    if not cfg.output_dir:
        raise bad("output_dir", "set the run directory, e.g. output_dir = \"runs/my-run\"")
    if bool(cfg.model.path) == cfg.model.tiny:
        raise bad("model.path", "give a model directory in model.path, or set model.tiny = true (not both)")

    if is_local_path(cfg.model.path) and not (Path(cfg.model.path).expanduser() / "config.json").is_file():
        raise bad("model.path", f"{cfg.model.path} holds no model (no config.json): build one there, e.g. "
                                f"../shared/tools/qwen2.5-coder-0.5b.sh {cfg.model.path}, or --set model.path=DIR")
    if not cfg.tasks.train:
        raise bad("tasks.train", "name the training tasks, e.g. \"logs-count:0-999\" or \"builtin\"")
    wrong = check_weights(cfg.tasks.train, cfg.tasks.weights)
    if wrong:
        raise bad("tasks.weights", wrong)
    if cfg.rft.tasks_per_round < 0:
        raise bad("rft.tasks_per_round", "must be 0 (every training task each round) or a number of tasks")
    if cfg.grpo.batch_size % cfg.grpo.num_generations:
        raise bad("grpo.batch_size", f"must be a multiple of grpo.num_generations ({cfg.grpo.num_generations})")
    if cfg.grpo.num_generations < 2:
        raise bad("grpo.num_generations", "GRPO needs at least 2 rollouts per task to have a baseline")
    if cfg.grpo.vllm_mode not in ("colocate", "server"):
        raise bad("grpo.vllm_mode", "use \"colocate\" or \"server\"")
    if cfg.grpo.vllm_server_base_url and not cfg.grpo.vllm_server_base_url.startswith(("http://", "https://")):
        raise bad("grpo.vllm_server_base_url", "give the server's URL, e.g. \"http://10.0.0.5:8000\", or leave it empty")
    if cfg.env.action_format not in ACTION_FORMATS:
        raise bad("env.action_format", f"{cfg.env.action_format!r} is not one of {', '.join(ACTION_FORMATS)}")
    if cfg.model.dtype not in ("auto", "float32", "bfloat16"):
        raise bad("model.dtype", "use auto, float32 or bfloat16")
    if cfg.eval.backend not in EVAL_BACKENDS:
        raise bad("eval.backend", f"{cfg.eval.backend!r} is not one of {', '.join(EVAL_BACKENDS)} "
                                  "(ctranslate2: pip install ctranslate2, as scripts/setup.sh does; llama.cpp: "
                                  "bash scripts/build_llamacpp.sh)")
    for name, value in (("grpo.steps", cfg.grpo.steps), ("dpo.steps", cfg.dpo.steps),
                        ("rft.rounds", cfg.rft.rounds), ("rft.samples_per_task", cfg.rft.samples_per_task),
                        ("dpo.samples_per_task", cfg.dpo.samples_per_task), ("eval.samples", cfg.eval.samples),
                        ("logging.save_steps", cfg.logging.save_steps),
                        ("ray.verifier_actors", cfg.ray.verifier_actors),
                        ("ray.verifier_workers", cfg.ray.verifier_workers), ("judge.max_tokens", cfg.judge.max_tokens)):
        if value < 1:
            raise bad(name, "must be at least 1")
    if cfg.judge.policy and cfg.judge.policy.partition(":")[0] not in ("hf", "openai", "discriminator"):
        raise bad("judge.policy", "use hf:PATH, openai:BASE_URL (with judge.model) or discriminator:MODEL.json, "
                                  "or leave it empty")
    if cfg.judge.policy.startswith("openai:") and not cfg.judge.model:
        raise bad("judge.model", "name the model the judge endpoint serves")
    if cfg.env.warm_sandboxes < 0:
        raise bad("env.warm_sandboxes", "must be 0 or more")
    for name, value in (("grpo.max_turns", cfg.grpo.max_turns), ("grpo.verifier_workers", cfg.grpo.verifier_workers),
                        ("sft.steps", cfg.sft.steps), ("threads", cfg.threads),
                        ("eval.threads", cfg.eval.threads)):
        if value < 0:
            raise bad(name, "must be 0 or more")
    if cfg.grpo.num_iterations < 1:
        raise bad("grpo.num_iterations", "must be at least 1")
    for i, url in enumerate(cfg.grpo.remote):
        if not url.startswith(("http://", "https://", "ws://", "wss://")):
            raise bad(f"grpo.remote[{i}]", f"{url!r} is not a server url; write it as \"http://HOST:PORT\", "
                                            "where termrl serve listens")
    if cfg.grpo.remote and cfg.algorithm != "grpo":
        raise bad("grpo.remote", f"plays GRPO's episodes; algorithm {cfg.algorithm!r} plays its own "
                                 "(leave grpo.remote empty)")
    if cfg.sft.source not in SFT_SOURCES:
        raise bad("sft.source", f"{cfg.sft.source!r} is not one of {', '.join(SFT_SOURCES)}")
    if cfg.sft.steps and not cfg.sft.tasks:
        raise bad("sft.tasks", "name the tasks whose reference solutions SFT imitates, e.g. \"one-command:0-255\", "
                               "or set sft.steps = 0")
    if cfg.model.tiny and cfg.model.tiny_hidden_size % cfg.model.tiny_heads:
        raise bad("model.tiny_heads", f"must divide model.tiny_hidden_size ({cfg.model.tiny_hidden_size})")
    if cfg.model.tiny_tokenizer and cfg.model.tiny_tokenizer not in FAMILIES:
        raise bad("model.tiny_tokenizer", f"{cfg.model.tiny_tokenizer!r} is not a task family; use one of "
                                          f"{', '.join(sorted(FAMILIES))}, or \"\" for the built-in corpus")
    if cfg.dpo.samples_per_task < 2:
        raise bad("dpo.samples_per_task", "needs at least 2 episodes per task to make a pair")
    for name, value in (("grpo.learning_rate", cfg.grpo.learning_rate), ("rft.learning_rate", cfg.rft.learning_rate),
                        ("dpo.learning_rate", cfg.dpo.learning_rate), ("sft.learning_rate", cfg.sft.learning_rate)):
        if not value > 0:
            raise bad(name, "must be positive")


def load_config(path: str | Path | None = None, overrides: list[str] = (), data: dict | None = None) -> TrainConfig:
    """The validated config of ``path`` (or ``data``) with ``overrides`` applied."""
    source = str(path) if path is not None else "the config"
    if data is None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except FileNotFoundError:
            raise ConfigError(f"{source}: no such file") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{source}: not valid TOML ({e})") from None
    data = apply_overrides(dict(data), list(overrides), source)
    cfg = _build(TrainConfig, data, "", source)
    _check(cfg, source)
    return cfg


def trl_checkpointing(trl_config: type) -> dict:
    """TRL's own default for activation checkpointing (its ``gradient_checkpointing``: on),
    under the name transformers 5 reads (``activation_checkpointing``; the old name warns at
    every run), where transformers has it: the same setting, without the FutureWarning.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Args:
    ...     gradient_checkpointing: bool = True
    ...     activation_checkpointing: bool | None = None
    >>> trl_checkpointing(Args)
    {'activation_checkpointing': True}
    """
    fields = {f.name: f for f in dataclasses.fields(trl_config)}
    if "activation_checkpointing" not in fields or "gradient_checkpointing" not in fields:
        return {}
    return {"activation_checkpointing": fields["gradient_checkpointing"].default}
