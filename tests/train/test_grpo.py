"""GRPO through TRL's environment_factory: real trainer, real sandboxes, a tiny local model.

A random tiny model never emits a tool call, so the rollouts that must call tools are
scripted: ``Scripted`` replaces the model's ``generate`` (what TRL calls to sample each
turn) and replays fixed replies, as mini-swe-agent's ``DeterministicModel`` does. Everything
else is real: TRL parses the tool calls with the chat template, calls the environment's
tools (which run in bubblewrap), masks the tool results, the episodes are verified and
scored, and the loss and the optimizer update the model's weights.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("peft")

from termrl.env import EnvConfig, TerminalEnv  # noqa: E402
from termrl.protocols import Action, ActionKind, Task, TaskFile  # noqa: E402
from termrl.reward.exports.trl import ZeroVarianceStats, trl_reward_funcs  # noqa: E402
from termrl.reward.exports.trl_env import (  # noqa: E402
    EnvironmentFactory,
    TerminalToolEnv,
    episode_outcome,
    pending_calls,
)
from termrl.reward.spec import load_spec  # noqa: E402
from termrl.training.grpo import task_rows, train_grpo  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

HELLO = Task(
    id="grpo-test-hello",
    instruction="Write the word hello into the file out.txt.",
    workspace={"README.md": TaskFile.text("notes\n")},
    tests={"test_out.py": TaskFile.text(
        "from pathlib import Path\n\n\ndef test_out():\n"
        "    assert Path('/workspace/out.txt').read_text().strip() == 'hello'\n")},
)
CONFIG = EnvConfig(static=False, command_timeout_s=30)


def call(name: str, **arguments) -> str:
    """A tool call as the model writes it with TRL's qwen2_5 template."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


GOOD = [call("write_file", path="out.txt", content="hello\n")]
BAD = [call("bash", command="echo nope")]
DONE = "Done."


class Scripted:
    """Stands in for ``model.generate``: each row's reply comes from a script.

    ``scripts``: text found in the prompt (the task's instruction) -> one script per member of
    a group (a list of tool-call replies). The turn is the number of tool responses in the
    row; past its script, a rollout answers ``DONE`` (no tool call: the episode ends)."""

    def __init__(self, tokenizer, scripts: dict[str, list[list[str]]]):
        self.tok, self.scripts = tokenizer, scripts
        self.response = tokenizer.convert_tokens_to_ids("<tool_response>")

    def __call__(self, input_ids, attention_mask=None, **kwargs):
        rows, seen = [], {}
        for row in input_ids:
            text = self.tok.decode(row)
            marker = next(m for m in self.scripts if m in text)
            turn = int((row == self.response).sum())
            if turn == 0:
                script = self.scripts[marker][seen.get(marker, 0) % len(self.scripts[marker])]
                seen[marker] = seen.get(marker, 0) + 1
            else:
                script = next(s for s in self.scripts[marker] if s[0] in text)
            reply = (script[turn] if turn < len(script) else DONE) + "<|im_end|>"
            rows.append(torch.cat([row, torch.tensor(self.tok(reply, add_special_tokens=False)["input_ids"])]))
        width = max(len(r) for r in rows)
        return torch.stack([torch.cat([r, torch.full((width - len(r),), self.tok.pad_token_id)]) for r in rows])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from termrl.policies.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny"), hidden_size=16, layers=1, heads=2)


def load(path, scripts=None):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    if scripts is not None:
        model.generate = Scripted(tokenizer, scripts)
    return model, tokenizer


def config(tmp_path, **overrides):
    from trl import GRPOConfig

    kwargs = dict(output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", max_steps=2,
                  activation_checkpointing=False,
                  per_device_train_batch_size=2, num_generations=2, max_completion_length=128,
                  learning_rate=1e-2, logging_steps=1, save_strategy="no", seed=0, disable_tqdm=True)
    return GRPOConfig(**{**kwargs, **overrides})


def capture_batches(monkeypatch) -> list[dict]:
    """Record what TRL hands to the loss: ids, masks (tool_mask included) and advantages."""
    from trl import GRPOTrainer

    batches: list[dict] = []
    original = GRPOTrainer._generate_and_score_completions

    def wrapper(self, inputs):
        out = original(self, inputs)
        batches.append({k: v.detach().clone() if torch.is_tensor(v) else v for k, v in out.items()})
        return out

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", wrapper)
    return batches


def leftover_sandboxes() -> list[str]:
    """Sandboxes this process opened and did not close: bwrap children, or runtime dirs we own."""
    from termrl.sandbox.bwrap import held_by

    return held_by(os.getpid())


def logged(trainer, key: str) -> list[float]:
    return [row[key] for row in trainer.state.log_history if key in row]


def model_logp(model, batch, i: int) -> float:
    """Summed log-probability of rollout ``i``'s own tokens (tool results excluded)."""
    ids = torch.cat([batch["prompt_ids"][i], batch["completion_ids"][i]])[None]
    mask = torch.cat([batch["prompt_mask"][i], batch["completion_mask"][i]])[None]
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[0, :-1]
    logps = torch.log_softmax(logits.float(), -1).gather(-1, ids[0, 1:, None])[:, 0]
    n = batch["completion_ids"].size(1)
    keep = (batch["completion_mask"][i] * batch["tool_mask"][i]).bool()
    return float(logps[-n:][keep].sum())


# --------------------------------------------------------------------------- the adapter alone


def rewards_of(env, spec, trainer_state=None) -> dict[str, float | None]:
    funcs = trl_reward_funcs(spec)
    kwargs = {"trainer_state": trainer_state} if trainer_state is not None else {}
    return {f.__name__: f(prompts=["p"], completions=["c"], environments=[env], **kwargs)[0] for f in funcs}


def reference(spec, actions, progress) -> dict[str, float | None]:
    """What TerminalEnv itself scores for the same actions (evaluation's code path)."""
    env = TerminalEnv(CONFIG, spec=spec, progress=progress)
    env.reset(HELLO)
    for action in actions:
        env.step(action)
    *_, info = env.step(Action(ActionKind.SUBMIT))
    return {f"termrl/{name}": c.contribution or 0.0 for name, c in info["reward"].components.items()}


@pytest.mark.sandbox
def test_adapter_scores_like_terminal_env():
    from types import SimpleNamespace

    spec = load_spec("staged")  # schedules: the weights depend on the training progress
    [row] = task_rows([HELLO])
    env = TerminalToolEnv(CONFIG)
    first = env.reset(**row)
    assert HELLO.instruction in first and "README.md" in first
    assert env.bash("cat README.md").startswith("exit code 0\nnotes")
    assert "wrote 6 bytes" in env.write_file("out.txt", "hello\n")
    got = rewards_of(env, spec, SimpleNamespace(global_step=1, max_steps=2))
    assert env.env.box is None and env.ending.value == "submitted"
    want = reference(spec, [Action(ActionKind.COMMAND, command="cat README.md"),
                            Action(ActionKind.WRITE, path="out.txt", content="hello\n")], progress=0.5)
    assert got == pytest.approx(want) and set(got) == {f"termrl/{n}" for n in spec.component_names}
    assert got["termrl/outcome"] > 0
    # finishing is idempotent: asking again neither re-verifies nor changes anything
    assert rewards_of(env, spec, SimpleNamespace(global_step=1, max_steps=2)) == got


@pytest.mark.sandbox
def test_the_factorys_environments_ask_the_judge_about_passing_episodes_only():
    """GRPO's episodes reach a spec's judge component through the environment factory."""
    from termrl.reward.judge import ModelJudge
    from termrl.reward.spec import spec_from_dict

    asked = []

    def complete(messages):
        asked.append(messages[-1]["content"])
        return '{"verdict": "special_cases", "reason": "scripted"}'

    spec = spec_from_dict({"components": {"outcome": {"type": "outcome", "weight": 1.0},
                                          "judge": {"type": "judge", "weight": 0.5}}})
    env = EnvironmentFactory(CONFIG, tasks={HELLO.id: HELLO}, judge=ModelJudge(complete, "scripted"))()
    env.reset(task_id=HELLO.id)
    env.write_file("out.txt", "hello\n")
    assert rewards_of(env, spec) == pytest.approx({"termrl/outcome": 1.0, "termrl/judge": -0.5})
    assert len(asked) == 1 and "+hello" in asked[0]
    env.reset(task_id=HELLO.id)  # a failing episode: no judge asked; the component has no value,
    env.write_file("out.txt", "bye\n")  # so its reward function adds nothing to the sum
    assert rewards_of(env, spec) == {"termrl/outcome": 0.0, "termrl/judge": 0.0} and len(asked) == 1
    assert "judge" not in episode_outcome(env).evidence.stages


@pytest.mark.sandbox
def test_adapter_hack_is_capped_and_harness_failure_is_none():
    spec = load_spec("coderl")
    env = TerminalToolEnv(CONFIG)
    env.reset(task_id=HELLO.id)
    env.write_file("out.txt", "hello\n")
    env.write_file("conftest.py", "import pytest\n")  # code that runs inside the test process
    got = rewards_of(env, spec)
    assert got["termrl/outcome"] == 1.0  # the tests pass...
    assert sum(got.values()) == pytest.approx(-1.0)  # ...but a high finding caps the total at the floor
    assert "tampering" in {f.kind for f in episode_outcome(env).findings}

    env.reset(task_id=HELLO.id)  # the sandbox dies mid-episode: verification fails, never 0
    env.write_file("out.txt", "hello\n")
    env.env.box.close()
    assert set(rewards_of(env, spec).values()) == {None}

    broken = Task(id="grpo-test-broken", instruction="x", unsupported="needs the network")
    env.reset(task_id=HELLO.id)
    factory = EnvironmentFactory(CONFIG, tasks={broken.id: broken})
    failed = factory()
    assert "failed to start" in failed.reset(task_id=broken.id)
    assert "not run" in failed.bash("ls")
    assert set(rewards_of(failed, spec).values()) == {None} and failed.ending.value == "error"
    env._close()


@pytest.mark.sandbox
def test_adapter_step_limit_and_closing():
    env = TerminalToolEnv(EnvConfig(static=False, max_steps=2))
    env.reset(task_id=HELLO.id)
    box = env.env.box
    assert env.bash("true").startswith("exit code 0")
    assert "step limit (2 steps) is reached" in env.bash("true")
    refused = env.bash("touch x")
    assert "not run" in refused and "step limit" in refused and env.tool_calls == 3
    assert box._closed  # reaching the limit finished (and closed) the episode, as in evaluation
    assert rewards_of(env, "coderl")["termrl/outcome"] < 0

    env.reset(task_id=HELLO.id)
    abandoned = env.env.box
    env.reset(task_id=HELLO.id)  # a rollout that was never scored: reset closes it
    assert abandoned._closed
    factory = EnvironmentFactory(CONFIG)
    other = factory()
    other.reset(task_id=HELLO.id)
    factory.close()
    assert other.env.box is None
    env._close()
    assert not leftover_sandboxes()


def test_rewards_need_environments_and_spec_weights():
    [f, *_] = trl_reward_funcs("coderl")
    with pytest.raises(ValueError, match="environment_factory"):
        f(prompts=["p"], completions=["c"])
    with pytest.raises(ValueError, match="reward spec"):
        train_grpo(None, None, [HELLO], "coderl", config(Path("/tmp"), reward_weights=[1.0, 2.0]))


def test_zero_variance_groups_are_counted():
    stats = ZeroVarianceStats()
    stats.update([1.0, -0.3, 0.0, 0.0, None, 1.0, None, None], ["a"] * 8, num_generations=2)
    assert (stats.last_groups, stats.last_zero) == (4, 3)  # equal totals, one verified, none verified
    stats.update([1.0, 1.0, 0.5], ["a", "a", "b"], num_generations=2)  # does not divide: by prompt
    assert (stats.last_groups, stats.last_zero, stats.groups, stats.zero) == (2, 2, 6, 5)


# --------------------------------------------------------------------------- the trainer


@pytest.mark.sandbox
def test_grpo_trains_through_environment_factory(tiny, tmp_path, monkeypatch):
    from termrl.rollout.accounting import Accountant

    batches = capture_batches(monkeypatch)
    from termrl.tasks.suites import find_task

    logs = find_task("logs-count-3").instruction.strip()[:60]
    scripts = {"Write the word hello": [GOOD, BAD],
               logs: [[call("bash", command="ls")], [call("write_file", path="x.sh", content="exit 1\n")]]}
    model, tokenizer = load(tiny, scripts)
    before = {k: v.clone() for k, v in model.named_parameters()}
    accountant = Accountant()
    trainer = train_grpo(model, tokenizer, [HELLO, "logs-count-3"], "coderl", config(tmp_path),
                         accountant=accountant, env_config=CONFIG)

    assert any(not torch.equal(before[k], v) for k, v in trainer.model.named_parameters())
    assert sorted(t.__name__ for t in trainer.tools) == ["bash", "write_file"]  # lifecycle methods are private
    for name in ("outcome", "hack"):
        assert logged(trainer, f"rewards/termrl/{name}/mean")
    assert pytest.approx(0.2) in logged(trainer, "rewards/termrl/outcome/mean")  # hello: (1 - 0.6) / 2
    assert logged(trainer, "tools/call_frequency") == [1.0, 1.0]
    zero = logged(trainer, "termrl/zero_variance_groups")
    stats = trainer.reward_funcs[0].scorer.stats
    assert len(zero) == 2 and all(0.0 <= z <= 1.0 for z in zero) and stats.groups == 2
    # a group counts as zero-variance exactly when TRL gives all its rollouts advantage 0
    assert zero == [float(not b["advantages"].abs().sum()) for b in batches]
    assert 0.0 in zero  # the hello group: one rollout solves, the other does not

    # environment tokens are masked: tool results are 0 in tool_mask, the model's own tokens 1
    for batch in batches:
        for i in range(batch["completion_ids"].size(0)):
            ids, keep = batch["completion_ids"][i], batch["completion_mask"][i].bool()
            tool = batch["tool_mask"][i].bool()
            own = tokenizer.decode(ids[keep & tool])
            env_part = tokenizer.decode(ids[keep & ~tool])
            assert re.fullmatch(r"<tool_call>\n.*\n</tool_call><\|im_end\|>Done\.<\|im_end\|>", own, re.S), own
            assert env_part.startswith("\n<|im_start|>user\n<tool_response>\n")
            assert env_part.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n")
            assert re.search(r"wrote \d+ bytes to /workspace/|exit code 0", env_part)
    phases = accountant.summary()["phases"]
    for phase in ("training", "environment", "verification", "reward"):
        assert phases[phase]["busy_s"] > 0, phase
    assert not leftover_sandboxes()
    assert all(e.env.box is None for e in trainer.environment_factories[None].environments)


@pytest.mark.sandbox
def test_grpo_pushes_up_the_better_rollout(tiny, tmp_path, monkeypatch):
    """The reward moves the policy the right way: the solving rollout's log-probability rises
    against the failing one's. (A random tiny model never solves a task by sampling, so mean
    reward cannot rise within a CPU test: its rollouts are scripted, and the check is on the
    policy that GRPO's advantages train.)"""
    batches = capture_batches(monkeypatch)
    model, tokenizer = load(tiny, {"Write the word hello": [GOOD, BAD]})
    initial, _ = load(tiny)
    trainer = train_grpo(model, tokenizer, [HELLO], "coderl", config(tmp_path, max_steps=3), env_config=CONFIG)
    first = batches[0]
    assert first["advantages"][0] > 0 > first["advantages"][1]  # GOOD is rollout 0 of its group
    good = model_logp(trainer.model, first, 0) - model_logp(initial, first, 0)
    bad = model_logp(trainer.model, first, 1) - model_logp(initial, first, 1)
    assert good > 0 and good > bad + 1.0, (good, bad)
    assert logged(trainer, "rewards/termrl/outcome/mean") == [pytest.approx(0.2)] * 3  # (1 - 0.6) / 2


@pytest.mark.sandbox
def test_grpo_lora_trains_only_the_adapter(tiny, tmp_path):
    from peft import LoraConfig

    model, tokenizer = load(tiny, {"Write the word hello": [GOOD, BAD]})
    base = {k: v.clone() for k, v in model.named_parameters()}
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    trainer = train_grpo(model, tokenizer, [HELLO], "coderl", config(tmp_path), peft_config=lora,
                         env_config=CONFIG)
    changed = {k for k, v in trainer.model.named_parameters() if "lora_" in k and v.abs().sum() > 0
               and "lora_B" in k}
    assert changed, "the LoRA adapter did not move"
    assert logged(trainer, "tools/call_frequency") == [1.0, 1.0]
    for k, v in trainer.model.named_parameters():
        if "lora_" not in k:
            name = k.replace("base_model.model.", "").replace(".base_layer", "")
            assert torch.equal(v, base[name]), k
    assert not leftover_sandboxes()


@pytest.mark.sandbox
def test_grpo_with_the_models_own_samples(tiny, tmp_path):
    """No script: the random model's own text (no valid tool call) ends each episode at once."""
    model, tokenizer = load(tiny)
    trainer = train_grpo(model, tokenizer, [HELLO], "sparse", config(tmp_path, max_steps=1,
                         max_completion_length=24), env_config=CONFIG)
    assert logged(trainer, "rewards/termrl/outcome/mean") == [0.0]
    assert logged(trainer, "termrl/zero_variance_groups") == [1.0]
    assert not leftover_sandboxes()


def two_calls(*calls: str) -> str:
    return "\n".join(calls)


SLOW = "sleep 0.4; echo"
"""Each rollout's command sleeps: run one rollout after another, they cannot overlap."""
AHEAD_SCRIPTS = {"Write the word hello": [
    # one reply holding four calls: TRL refuses an unknown tool and arguments that do not bind
    # before they reach the environment; the others run in their order
    [two_calls(call("bash", command=f"{SLOW} one-a > a.txt"), call("nosuch", x=1), call("bash", cmd="x"),
               call("write_file", path="b.txt", content="one-b\n")),
     *["(unused: a turn is the number of tool responses, and that reply got four)"] * 3,
     call("bash", command=f"{SLOW} one-c; cat a.txt b.txt")],
    [call("bash", command=f"{SLOW} two-a > out.txt"), call("bash", command=f"{SLOW} two-b"),
     call("write_file", path="out.txt", content="hello\n")],
    [call("bash", command=f"{SLOW} three-a")],
    [call("write_file", path="c.txt", content="three\n"), call("bash", command=f"{SLOW} four-b; cat c.txt")],
]}


def run_ahead_batch(tiny, tmp_path, monkeypatch, workers: int):
    """One GRPO step of 4 scripted rollouts; what TRL handed the loss, each call the environments
    ran: (episode, action, start, end), each episode's end (None, "finish", start, end, thread:
    its verification and detectors) and the end of TRL's tool loop (None, "loop", end, end)."""
    import threading
    import time

    from termrl.training.ahead import grpo_trainer_class

    batches = capture_batches(monkeypatch)
    ran: list[tuple] = []
    original, finish = TerminalToolEnv._run, TerminalEnv._finish

    def timed(self, action):
        start = time.monotonic()
        try:
            return original(self, action)
        finally:
            ran.append((self.episode, action.to_dict(), start, time.monotonic()))

    def timed_finish(self, ending):  # the episode's end: verified, read by the detectors (once per episode)
        start = time.monotonic()
        try:
            return finish(self, ending)
        finally:
            ran.append((None, "finish", start, time.monotonic(), threading.current_thread().name))

    trainer_class = grpo_trainer_class()
    loop = trainer_class._tool_call_loop

    def timed_loop(self, *args, **kwargs):
        try:
            return loop(self, *args, **kwargs)
        finally:
            ran.append((None, "loop", time.monotonic(), time.monotonic()))

    monkeypatch.setattr(TerminalToolEnv, "_run", timed)
    monkeypatch.setattr(TerminalEnv, "_finish", timed_finish)
    monkeypatch.setattr(trainer_class, "_tool_call_loop", timed_loop)
    model, tokenizer = load(tiny, AHEAD_SCRIPTS)
    trainer = train_grpo(model, tokenizer, [HELLO], "coderl", config(
        tmp_path / str(workers), max_steps=1, per_device_train_batch_size=4, num_generations=4,
        max_completion_length=1024), env_config=CONFIG, workers=workers)
    monkeypatch.undo()
    responses = []
    for i in range(batches[0]["completion_ids"].size(0)):
        ids, keep = batches[0]["completion_ids"][i], batches[0]["completion_mask"][i].bool()
        responses.append(tokenizer.decode(ids[keep & ~batches[0]["tool_mask"][i].bool()]))
    return responses, ran, batches[0]["advantages"], trainer


@pytest.mark.sandbox
def test_the_rollouts_tool_calls_run_at_once_and_give_trl_what_one_after_another_gives(tiny, tmp_path,
                                                                                      monkeypatch):
    serial, ran_serial, adv_serial, trainer_serial = run_ahead_batch(tiny, tmp_path, monkeypatch, workers=1)
    ahead, ran_ahead, adv_ahead, trainer_ahead = run_ahead_batch(tiny, tmp_path, monkeypatch, workers=4)
    finishes = {name: [r for r in ran if r[1] == "finish"] for name, ran in (("serial", ran_serial),
                                                                          ("ahead", ran_ahead))}
    loop_end = {name: [r[2] for r in ran if r[1] == "loop"] for name, ran in (("serial", ran_serial),
                                                                              ("ahead", ran_ahead))}
    assert [len(f) for f in finishes.values()] == [4, 4]  # every episode finished once either way
    for trainer in (trainer_serial, trainer_ahead):  # and never played again
        assert [e.replayed for e in trainer.environment_factories[None].environments] == [0] * 4
    assert [len(e) for e in loop_end.values()] == [1, 1]
    ran_serial, ran_ahead = ([r for r in ran if r[1] not in ("finish", "loop")] for ran in (ran_serial, ran_ahead))

    # what TRL masks in as tool results, and so the rewards, are the same either way
    assert ahead == serial
    assert torch.equal(adv_ahead, adv_serial) and adv_serial.abs().sum() > 0  # one rollout passes
    assert "Tool nosuch not found" in serial[0] and "one-a\none-b" in serial[0]

    def calls(ran):  # each rollout's calls, in the order they ran; episode numbers differ between runs
        by_episode: dict[int, list] = {}
        for episode, action, *_ in sorted(ran, key=lambda r: r[2]):
            by_episode.setdefault(episode, []).append(action)
        return sorted(by_episode.values(), key=lambda actions: str(actions[0]))

    assert calls(ran_ahead) == calls(ran_serial)  # every call once, in its rollout's order
    assert sum(len(c) for c in calls(ran_serial)) == 9  # 3 + 3 + 1 + 2: the refused two never ran

    def overlapping(ran):
        return sum(a[0] != b[0] and a[2] < b[3] and b[2] < a[3] for a in ran for b in ran) // 2

    assert overlapping(ran_serial) == 0
    assert overlapping(ran_ahead) >= 3  # the four first calls, the second round's three

    # a rollout that stopped calling tools is finished while the others still call: the third after
    # round 1, the first and fourth after round 2; the second calls tools until the loop's end
    assert trainer_serial.episodes_finished_ahead == 0 and trainer_ahead.episodes_finished_ahead == 3
    inside = [f for f in finishes["ahead"] if f[3] < loop_end["ahead"][0]]
    assert len(inside) == 3 and all(f[4].startswith("termrl-finish") for f in inside)
    assert all(f[2] > loop_end["serial"][0] for f in finishes["serial"])  # TRL's order: all after the loop
    assert not leftover_sandboxes()


def test_a_reply_that_calls_anything_but_its_environments_tools_is_left_to_trl():
    from termrl.reward.exports.trl_env import _calls_of

    env, other = TerminalToolEnv(CONFIG), TerminalToolEnv(CONFIG)

    def standalone(x: str) -> str:
        return x

    async def later(x: str) -> str:
        return x

    tools = {"bash": env.bash, "write_file": env.write_file, "standalone": standalone}

    def fn(name, **arguments):
        return {"type": "function", "function": {"name": name, "arguments": arguments}}

    ok = [fn("bash", command="ls"), {"type": "other"}, "junk", fn(["bash"]), fn("nosuch"), fn("bash", cmd="x"),
          {"type": "function", "function": {"name": "bash", "arguments": "ls"}}, fn("write_file", path="a", content="")]
    assert _calls_of(env, tools, {}, ok) == [(env.bash, {"command": "ls"}),
                                             (env.write_file, {"path": "a", "content": ""})]
    assert _calls_of(env, tools, {}, [fn("bash", command="ls"), fn("standalone", x="y")]) is None
    assert _calls_of(env, tools, {"later": later}, [fn("bash", command="ls"), fn("later", x="y")]) is None
    assert _calls_of(env, {"bash": other.bash}, {}, [fn("bash", command="ls")]) is None  # another rollout's tool


@pytest.mark.sandbox
def test_sandboxes_close_when_training_fails(tiny, tmp_path):
    model, tokenizer = load(tiny, {"Write the word hello": [GOOD, BAD]})
    scripted = model.generate

    def fail_after_tools(input_ids, **kwargs):  # the rollouts' sandboxes are open at this point
        if (input_ids == scripted.response).any():
            raise RuntimeError("generation failed")
        return scripted(input_ids, **kwargs)

    model.generate = fail_after_tools
    with pytest.raises(RuntimeError, match="generation failed"):
        train_grpo(model, tokenizer, [HELLO], "coderl", config(tmp_path), env_config=CONFIG)
    assert not leftover_sandboxes()


# --------------------------------------------------------------------------- the episode scorer


class FakeEnv:
    """What the scorer reads of a rollout: its episode id, task id and finished outcome."""

    def __init__(self, episode: int, task_id: str, passed: bool):
        from termrl.protocols import Ending, Evidence, Outcome

        self.episode, self.task_id, self.finished, self.pending = episode, task_id, 0, []
        self._outcome = Outcome(Ending.SUBMITTED, Evidence(task_id, passed=passed))

    def _finish(self, pending=()):
        self.finished += 1
        self.pending.append(list(pending))
        return self._outcome


def test_scorer_finishes_each_episode_once_and_calls_back_once_per_batch():
    from types import SimpleNamespace

    from termrl.reward.exports.trl import BatchScorer

    spec = load_spec("coderl")
    batches, metrics = [], {}
    views = trl_reward_funcs(spec, num_generations=2, on_batch=batches.append)
    scorer = views[0].scorer
    assert isinstance(scorer, BatchScorer) and all(v.scorer is scorer for v in views)
    envs = [FakeEnv(i, "a" if i < 2 else "b", passed=i in (0, 2, 3)) for i in range(4)]
    state = SimpleNamespace(global_step=1, max_steps=4)
    out = {}
    for view in reversed(views):  # whichever view asks first, the batch is finished and logged once
        out[view.__name__] = view(prompts=["p"] * 4, completions=["c"] * 4, environments=envs,
                                  trainer_state=state, log_metric=lambda k, v: metrics.setdefault(k, []).append(v))
    assert [e.finished for e in envs] == [1, 1, 1, 1] and scorer.evaluations == 4
    assert [e.pending for e in envs] == [[[]]] * 4  # no cap: TRL ran every call, none is left for the scorer
    assert len(batches) == 1 and batches[0].groups == [0, 0, 1, 1]
    assert batches[0].environments == envs
    totals = [sum(out[v.__name__][i] for v in views) for i in range(4)]
    assert totals == pytest.approx([r.total for r in batches[0].rewards])
    assert metrics["termrl/zero_variance_groups"] == [0.5]  # group a differs, group b both passed
    assert metrics["termrl/unverified_fraction"] == [0.0] and scorer.stats.groups == 2

    again = [FakeEnv(i, "a", passed=False) for i in range(4, 8)]  # new episode ids: a new batch
    views[0](prompts=["p"] * 4, completions=["c"] * 4, environments=again, trainer_state=state)
    assert [e.finished for e in again] == [1, 1, 1, 1] and len(batches) == 2 and scorer.stats.groups == 4
    assert scorer.evaluations == 8 and scorer.taken_ahead == 0 and scorer.unverified == 0


# --------------------------------------------------------------------------- calls left at the cap


def fn(name: str, **arguments) -> dict:
    """A tool call as TRL parses it into a reply's ``tool_calls``."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def reply(*calls: dict, content: str = "") -> dict:
    return {"role": "assistant", "content": content, **({"tool_calls": list(calls)} if calls else {})}


def result(content: str) -> dict:
    return {"role": "tool", "name": "bash", "content": content}


def test_pending_calls_are_the_calls_of_a_reply_left_at_the_cap():
    ls, cat, pwd = fn("bash", command="ls"), fn("bash", command="cat a"), fn("bash", command="pwd")
    one = [reply(ls, cat)]
    three = [reply(ls), result("a"), reply(pwd), result("b"), reply(cat)]
    # capped: the reply that reached the cap keeps its calls, in their order; TRL never ran them
    assert pending_calls(one, 0) == [ls, cat]
    assert pending_calls(three, 2) == [cat]
    # uncapped: TRL's loop ran every call
    assert pending_calls(one, None) == [] and pending_calls(three, None) == []
    # rolled back (fewer replies than the cap): the calls ran, only their overlong results were dropped
    assert pending_calls(one, 1) == [] and pending_calls(three, 3) == [] and pending_calls(three[:3], 2) == []
    # the last message is not a reply with calls: nothing is left
    assert pending_calls(three[:4], 0) == []  # a tool result
    assert pending_calls([reply(ls), result("a"), reply(content="Done.")], 0) == []  # a reply without calls
    assert pending_calls([], 0) == [] and pending_calls("<tool_call>...</tool_call>", 0) == []


def one_command_task(seed: int = 7):
    """A ``one-command`` family task and its reference command, as a parsed tool call."""
    from termrl.policies.tiny import reference_reply
    from termrl.reward.exports.trl_env import register_tasks
    from termrl.tasks.families import get_family

    family = get_family("one-command")
    task = family.generate(family.train_seeds.start + seed)
    register_tasks([task])
    text = reference_reply(task)
    assert text.startswith("<tool_call>") and text.endswith("</tool_call>")
    call_ = json.loads(text.removeprefix("<tool_call>").removesuffix("</tool_call>"))
    assert call_["name"] == "bash"
    return task, fn("bash", **call_["arguments"])


def commands(env: TerminalToolEnv) -> list[str]:
    """The commands of ``env``'s episode, in its trace's order."""
    return [s.action["command"] for s in env.env.steps if s.action and s.action.get("kind") == "command"]


COUNT = "echo ran >> .runs; wc -l < .runs"
"""Appends a line each time it runs and prints how many lines there are."""
ROOMY = EnvConfig(static=False, command_timeout_s=30, max_steps=4)
"""The family's tasks allow one step; with more, a call run twice would show in the trace."""


@pytest.mark.sandbox
def test_one_turn_scorer_runs_the_replys_calls_once_and_only_at_the_cap():
    task, reference_call = one_command_task()
    completion = [reply(reference_call, fn("bash", command=COUNT))]
    got = {}
    for cap in (0, None):
        env = TerminalToolEnv(ROOMY)
        env.reset(task_id=task.id)
        funcs = trl_reward_funcs("coderl", max_tool_calling_iterations=cap)
        got[cap] = {f.__name__: f(prompts=["p"], completions=[completion], environments=[env])[0] for f in funcs}
        assert funcs[0].scorer.evaluations == 1 and funcs[0].scorer.unverified == 0
        got[cap, "env"] = env

    # cap 0: the scorer runs the reply's calls, each once, then submits; the reference passes
    env = got[0, "env"]
    assert commands(env) == [reference_call["function"]["arguments"]["command"], COUNT]
    assert env.env.steps[1].observation.split()[-1] == "1"  # appended once
    assert env.ending.value == "submitted" and env.outcome.evidence.passed
    assert got[0]["termrl/outcome"] == 1.0 and env.replayed == 0
    assert env.env.box is None  # finished and closed

    # no cap: TRL's loop ran the calls (here: it did not, so nothing ran); the scorer only submits
    env = got[None, "env"]
    assert commands(env) == [] and env.ending.value == "submitted"
    assert env.outcome.evidence.verified and not env.outcome.evidence.passed
    assert got[None]["termrl/outcome"] < 0


def wait_finished(env: TerminalToolEnv, timeout_s: float = 60.0) -> None:
    """Wait until the finish started ahead has ended ``env``'s episode (the reward call after it
    then waits for that finish to return: one finish at a time per environment)."""
    import time

    deadline = time.monotonic() + timeout_s
    while env.outcome is None:
        assert time.monotonic() < deadline, "the episode finished ahead never ended"
        time.sleep(0.05)


@pytest.mark.sandbox
def test_an_episode_finished_ahead_is_taken_or_played_again_with_trls_reply():
    import copy

    task, reference_call = one_command_task()
    right = [reply(reference_call)]
    wrong = [reply(fn("bash", command="echo wrong > wrong.txt"))]
    funcs = trl_reward_funcs("coderl", max_tool_calling_iterations=0, workers=2)
    scorer = funcs[0].scorer
    env = TerminalToolEnv(ROOMY)

    # decoded ahead as TRL decodes it (an equal reply, another object): the finish is taken as it is
    env.reset(task_id=task.id)
    scorer.finish_ahead(env, copy.deepcopy(right))
    wait_finished(env)
    out = {f.__name__: f(prompts=["p"], completions=[right], environments=[env])[0] for f in funcs}
    assert scorer.taken_ahead == 1 and scorer.evaluations == 0 and env.replayed == 0
    assert commands(env) == [reference_call["function"]["arguments"]["command"]]  # ran once
    assert out["termrl/outcome"] == 1.0 and env.outcome.evidence.passed

    # decoded ahead otherwise than TRL (the reply ahead would pass): played again with TRL's reply
    scorer.forget_started()  # the next batch, as the trainer does
    env.reset(task_id=task.id)
    scorer.finish_ahead(env, right)
    wait_finished(env)
    assert env.outcome.evidence.passed  # what was finished ahead
    out = {f.__name__: f(prompts=["p"], completions=[wrong], environments=[env])[0] for f in funcs}
    assert env.replayed == 1 and commands(env) == ["echo wrong > wrong.txt"]
    assert not env.outcome.evidence.passed and out["termrl/outcome"] < 0
    assert scorer.unverified == 0
    scorer.close()
    env._close()
    assert not leftover_sandboxes()


class Streaming(Scripted):
    """``Scripted``, showing each decoding step to the stopping criteria as ``generate`` does (the
    trainer's ``FinishedRows`` starts a row's reward when the row emits its end token)."""

    def __call__(self, input_ids, attention_mask=None, stopping_criteria=None, **kwargs):
        out = super().__call__(input_ids, attention_mask, **kwargs)
        for end in range(input_ids.shape[1] + 1, out.shape[1] + 1):
            for criterion in stopping_criteria or ():
                criterion(out[:, :end], None)
        return out


@pytest.mark.sandbox
def test_a_finish_still_queued_ahead_never_replays_an_episode_the_reward_call_finished():
    import threading
    from types import SimpleNamespace

    task, reference_call = one_command_task()
    funcs = trl_reward_funcs("coderl", max_tool_calling_iterations=0, workers=1)
    scorer = funcs[0].scorer
    release = threading.Event()
    busy = SimpleNamespace(episode=-1, _finish=lambda pending: release.wait(60))  # holds the one worker
    env = TerminalToolEnv(ROOMY)
    env.reset(task_id=task.id)
    scorer.finish_ahead(busy, [])
    scorer.finish_ahead(env, [reply(reference_call)])  # queued behind it: decoded ahead, it would pass
    timer = threading.Timer(2.0, release.set)  # a reward call that waits for the queue gets it in 2 s
    timer.start()
    wrong = [reply(fn("bash", command="echo wrong > wrong.txt"))]  # what TRL decoded
    out = {f.__name__: f(prompts=["p"], completions=[wrong], environments=[env])[0] for f in funcs}
    release.set()
    scorer.close()  # the queued finish has run by now
    timer.cancel()
    assert out["termrl/outcome"] < 0
    # the episode the trainer stores (on_batch reads env) is the one the reward was computed for
    assert commands(env) == ["echo wrong > wrong.txt"] and not env.outcome.evidence.passed
    env._close()


@pytest.mark.sandbox
def test_grpo_on_one_reply_per_episode(tiny, tmp_path, monkeypatch):
    """``max_tool_calling_iterations=0``: TRL runs no tool; each rollout's reply calls run once, in
    the episode the trainer finishes as soon as the reply has ended, and the solving rollout is
    pushed up."""
    task, reference_call = one_command_task()
    batches = capture_batches(monkeypatch)
    good = [call("bash", **reference_call["function"]["arguments"])]
    bad = [call("bash", command=f"{COUNT}; echo nope")]
    model, tokenizer = load(tiny)
    model.generate = Streaming(tokenizer, {task.instruction.strip()[:40]: [good, bad]})
    before = {k: v.clone() for k, v in model.named_parameters()}
    scored = []

    def on_batch(batch):  # what termrl train stores: each rollout's trace, outcome and reward
        assert not any(env.replayed for env in batch.environments)  # decoded ahead as TRL decodes
        scored.append([(commands(env), [s.observation for s in env.env.steps if s.action
                                        and s.action.get("kind") == "command"][-1], outcome.evidence.passed,
                        reward.total)
                       for env, outcome, reward in zip(batch.environments, batch.outcomes, batch.rewards)])

    trainer = train_grpo(model, tokenizer, [task], "coderl", config(tmp_path, max_tool_calling_iterations=0),
                         env_config=ROOMY, on_batch=on_batch)

    assert trainer.state.global_step == 2
    assert any(not torch.equal(before[k], v) for k, v in trainer.model.named_parameters())
    scorer = trainer.reward_funcs[0].scorer
    assert scorer.unverified == 0 and scorer.stats.groups == 2
    # every episode was finished in generation, when its reply's end token came, and taken from there
    assert (trainer.rewards_ahead.during_generation, trainer.rewards_ahead.after_generation) == (4, 0)
    assert (scorer.taken_ahead, scorer.evaluations) == (4, 0)
    assert len(scored) == 2
    reference_command = reference_call["function"]["arguments"]["command"]
    for batch in scored:
        passed, failed = [r for r in batch if r[2]], [r for r in batch if not r[2]]
        assert len(passed) == len(failed) == 1
        assert passed[0][0] == [reference_command] and passed[0][3] == 1.0
        assert failed[0][0] == [f"{COUNT}; echo nope"] and failed[0][3] < 0
        assert failed[0][1].split()[-2:] == ["1", "nope"]  # the reply's calls ran once
    assert logged(trainer, "reward") == pytest.approx([sum(r[3] for r in batch) / 2 for batch in scored])
    first = batches[0]
    assert first["advantages"][0] > 0 > first["advantages"][1]  # good is rollout 0 of its group
    assert not first["tool_mask"].eq(0).any()  # TRL ran no tool: no tool result in the completions
    assert not leftover_sandboxes()


@pytest.mark.sandbox
def test_a_finish_runs_its_pending_calls_while_tool_calls_ahead_is_open():
    """A finish started ahead may run while TRL's thread holds ``ToolCallsAhead``'s block open (it
    hooks every environment's tool methods, and hands each of TRL's calls the result of a call it
    started): the pending calls run directly, once, and never take (or wait for) a result the
    block holds for TRL. Through the tool methods, this finish waited forever for one."""
    from concurrent.futures import Future

    import threading

    from termrl.reward.exports.trl_env import ToolCallsAhead, episode_outcome

    task, reference_call = one_command_task()
    env = TerminalToolEnv(ROOMY)
    env.reset(task_id=task.id)
    completion = [reply(reference_call, fn("bash", command=COUNT))]
    tools = {"bash": env.bash, "write_file": env.write_file}
    with ToolCallsAhead([env, TerminalToolEnv(ROOMY)], [tools, {}], [{}, {}], [completion, []], workers=2):
        assert env._ahead_of is not None
        env._ahead.append(Future())  # a call the block started for TRL, still running
        got = []
        finish = threading.Thread(target=lambda: got.append(episode_outcome(env, completion[-1]["tool_calls"])),
                                  daemon=True)
        finish.start()
        finish.join(60)
        assert not finish.is_alive(), "the finish waits for a result ToolCallsAhead holds for TRL"
        env._ahead.clear()
    outcome = got[0]
    assert commands(env) == [reference_call["function"]["arguments"]["command"], COUNT]
    assert env.env.steps[1].observation.split()[-1] == "1" and outcome.evidence.passed
