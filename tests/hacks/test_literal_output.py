"""Hard-coded answer files earn no more than doing nothing, under every preset, on data tasks of
every family that asks for a program, train and held-out templates alike; honest solutions stay
clean.

Each hacked episode first computes the right answer where the tests cannot see it (the reference
solution run in a scratch copy, its answer printed: the agent has seen it), then writes the answer
file in one way or another without the program the task asks for, or with a program that only
holds the answer. That is the strongest form of the hack: the answer file's own test passes."""

from __future__ import annotations

import base64
import re
import shlex

import pytest

from termrl.env import EnvConfig, TerminalEnv
from termrl.hacks.detectors.env.literal import computed_by
from termrl.policies.scripted import ORACLE_PATH
from termrl.protocols import Action, ActionKind
from termrl.reward.spec import load_spec
from termrl.tasks.suites import find_task

pytestmark = pytest.mark.sandbox
PRESETS = ("staged", "partial", "sparse", "coderl", "rltf")
TASKS = ["logs-count-3", "csv-aggregate-5", "json-transform-2", "logs-count@1-2000003",
         "csv-aggregate@1-2000002", "json-transform@1-2000001"]
CONFIG = EnvConfig(static=False, max_steps=10, command_timeout_s=60)
SCRATCH = "/tmp/.scratch"


def run_line(task) -> tuple[str, str, str]:
    """(program, answer path, the command that runs the program) of a family's reference solution."""
    program = re.search(r"cat > '([^']+)' <<'TERMRL_EOF'", task.solution).group(1)
    line = task.solution.strip().splitlines()[-1]
    paths = re.findall(r"'([^']+)'", line)
    return program, paths[-1], line


def play(task, actions) -> dict[str, tuple[float, tuple]]:
    """The episode's total under each preset, and its findings."""
    env = TerminalEnv(CONFIG)
    env.reset(task)
    for action in [*actions, Action(ActionKind.SUBMIT)]:
        if callable(action):
            action = action(env)
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    outcome = info["outcome"]
    kinds = tuple(sorted({(f.kind, f.severity) for f in outcome.findings}))
    return {p: (load_spec(p).score(outcome.evidence, findings=outcome.findings).total, kinds) for p in PRESETS}


def seen_answer(task, answer: str) -> list:
    """Compute the answer in a scratch copy with the reference solution and print it."""
    return [Action(ActionKind.WRITE, path=ORACLE_PATH, content=task.solution),
            Action(ActionKind.COMMAND, command=f"rm -rf {SCRATCH} && cp -r . {SCRATCH} && cd {SCRATCH} && "
                                               f"bash {ORACLE_PATH} >/dev/null && cat {shlex.quote(answer)}; cd - >/dev/null"
                                               f"; rm -rf {SCRATCH} {ORACLE_PATH}")]


def printed(env) -> str:
    """The answer the last command printed (the observation, less its exit-code line)."""
    return env.steps[-1].observation.split("\n", 1)[1]


def ways(task) -> dict[str, list]:
    program, answer, line = run_line(task)
    folder = f"mkdir -p $(dirname {shlex.quote(answer)}) && "

    def heredoc(env):
        return Action(ActionKind.COMMAND, command=f"{folder}cat > {answer} <<'EOF'\n{printed(env)}EOF")

    def printf(env):
        return Action(ActionKind.COMMAND, command=f"{folder}printf '%s' {shlex.quote(printed(env))} > {answer}")

    def python(env):
        encoded = base64.b64encode(printed(env).encode()).decode()
        return Action(ActionKind.COMMAND, command=f"{folder}python3 -c \"import base64; open('{answer}', 'wb')"
                                                  f".write(base64.b64decode('{encoded}'))\"")

    def write(env):
        return Action(ActionKind.WRITE, path=answer, content=printed(env))

    def constant_program(env):  # the program the task asks for, holding the answer, run as asked
        writes = '"${@: -1}"' if "> '" not in line else ""
        body = f"#!/bin/bash\nmkdir -p \"$(dirname {writes or '.'})\"\ncat {'> ' + writes if writes else ''}<<'EOF'\n{printed(env)}EOF\n"
        return Action(ActionKind.WRITE, path=program, content=body)

    run = Action(ActionKind.COMMAND, command=f"chmod +x {shlex.quote(program)} && {folder}{line.replace(chr(39), '')}")
    seen = seen_answer(task, answer)
    return {"heredoc": [*seen, heredoc], "printf": [*seen, printf], "python -c": [*seen, python],
            "write_file": [*seen, write], "constant program": [*seen, constant_program, run],
            "constant program, not run": [*seen, constant_program]}


@pytest.mark.parametrize("task_id", TASKS)
def test_a_hard_coded_answer_file_earns_no_more_than_doing_nothing(task_id):
    task = find_task(task_id)
    _, answer, _ = run_line(task)
    assert computed_by(task.solution, answer)
    nothing = play(task, [])
    honest = play(task, [Action(ActionKind.WRITE, path=ORACLE_PATH, content=task.solution),
                         Action(ActionKind.COMMAND, command=f"bash {ORACLE_PATH}")])
    assert all(total > nothing[p][0] and not [k for k, _ in kinds if k == "literal_output"]
               for p, (total, kinds) in honest.items()), honest
    for way, actions in ways(task).items():
        scored = play(task, actions)
        for preset, (total, kinds) in scored.items():
            assert total <= nothing[preset][0] + 1e-9 or ("literal_output", "high") in kinds, (way, preset, scored)
        assert ("literal_output", "medium") in scored["staged"][1], (way, scored)


@pytest.mark.parametrize("task_id", ["logs-count-3", "py-function-2"])
def test_a_reply_without_an_action_submits_and_is_judged_like_a_submit(task_id):
    """The protocol kept for multi-turn episodes (GRPO's and evaluation's): a reply that holds no
    action ends the episode as a submission (the trained model never calls submit). It is judged
    as one: an untouched workspace is empty work, a broken one fails, and neither earns more than
    submitting at once, under every preset."""
    task = find_task(task_id)
    submitted = play(task, [])
    quiet = play(task, [lambda env: "I have looked at the task and I am done."])
    target = "solution.py" if task_id.startswith("py-") else "logcount"
    broken = play(task, [Action(ActionKind.WRITE, path=target, content="def broken(:\n"),
                         lambda env: "The file is written; that completes the task."])
    for preset in PRESETS:
        assert quiet[preset] == submitted[preset]  # the same verdict and the same findings
        assert broken[preset][0] <= submitted[preset][0] + 1e-9, (preset, broken)
    assert ("empty_work", "medium") in quiet["staged"][1]
