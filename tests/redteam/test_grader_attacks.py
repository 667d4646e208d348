"""Every attack of ``grader_attacks.GRADER_ATTACKS`` played as an episode of its built-in task:

- the mechanism took effect in the sandbox (the episode's observations match the attack's
  ``shows``, and where verification shows it too, an attack-specific check of the outcome), so
  a contained result is never a vacuous one;
- it is contained: under every reward preset the episode earns no more than its bar (submitting
  at once, or the attack's ``control``, the same work without the trick, when that earns more),
  unless a high-severity finding names the hack. An episode the harness could not verify (reward
  None, or an exception out of the environment) is not contained: a failure that would have cost
  reward is then dropped from training instead.

An attack that gets through raises ``Escaped``; the ones known to (holes in termrl, each named in
its reason) are marked ``xfail(strict=True, raises=Escaped)``: fix the harness, then remove the
mark. A broken mechanism check fails the test whatever the mark.

Each test prints its row: per preset the attack's total, the bar and what doing nothing earns.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import pytest

from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import Action, ActionKind, Outcome, TestsData
from termrl.reward.spec import load_spec
from termrl.tasks.suites import find_task
from tests.redteam.grader_attacks import CLASSES, GRADER_ATTACKS, GraderAttack

pytestmark = [pytest.mark.sandbox, pytest.mark.redteam]

PRESETS = ("staged", "partial", "sparse", "coderl", "rltf")
CONFIG = EnvConfig(static=False, max_steps=12, command_timeout_s=60)


class Escaped(AssertionError):
    """The attack earned more than its bar without a high finding, or left no verdict."""


@dataclass
class Played:
    totals: dict[str, float | None] = field(default_factory=dict)
    findings: tuple = ()
    """(kind, severity) pairs."""
    outcome: Outcome | None = None
    observations: str = ""
    error: str | None = None
    """An exception that came out of the environment instead of an outcome."""

    @property
    def high(self) -> bool:
        return any(severity == "high" for _, severity in self.findings)

    @property
    def tests(self) -> dict[str, str]:
        return {t.nodeid.rsplit("::", 1)[-1]: t.outcome for t in self.outcome.evidence.tests} if self.outcome else {}


def play(task, actions: list[Action]) -> Played:
    """One episode: ``actions``, then the submission; its totals under every preset."""
    env = TerminalEnv(CONFIG)
    played = Played()
    try:
        env.reset(task)
        for action in [*actions, Action(ActionKind.SUBMIT)]:
            observation, _, terminated, truncated, info = env.step(action)
            played.observations += observation + "\n"
            if terminated or truncated:
                break
    except Exception as e:  # noqa: BLE001 - what the harness let out is the result
        played.error = f"{type(e).__name__}: {e}"[:300]
        return played
    finally:
        env.close()
    outcome = played.outcome = info["outcome"]
    played.findings = tuple(sorted({(f.kind, f.severity) for f in outcome.findings}))
    for preset in PRESETS:
        played.totals[preset] = (load_spec(preset).score(outcome.evidence, findings=outcome.findings).total
                                 if outcome.evidence.verified else None)
    return played


@functools.cache
def nothing(task_id: str) -> Played:
    """Submitting at once, shared by the attacks on one task."""
    return play(find_task(task_id), [])


def run_data(p: Played) -> TestsData:
    return TestsData.of(p.outcome.evidence)



# ---- what verification shows of each mechanism (where it shows) ----------------------------------

def _cut_short(p: Played, control: Played | None, none: Played) -> None:
    # the run ended early, and every test it did not finish is in the report as an error
    assert set(p.tests) == set(none.tests), (p.tests, none.tests)
    unfinished = [t for t in p.outcome.evidence.tests if t.exc_type in ("Interrupted", "NotRun")]
    assert unfinished and all(t.outcome == "error" and t.error_class == "runtime.crash" for t in unfinished)


def _interrupted(p: Played, control: Played | None, none: Played) -> None:
    _cut_short(p, control, none)
    assert run_data(p).exit_code == 2 and "runtime.crash" in p.outcome.evidence.error_classes  # "interrupted"


def _killed(p: Played, control: Played | None, none: Played) -> None:
    _cut_short(p, control, none)
    assert "runtime.crash" in p.outcome.evidence.error_classes
    assert control.tests["test_to_roman_all_values"] == "passed" and "failed" in control.tests.values()


def _table_ran(p: Played, control: Played | None, none: Played) -> None:
    assert p.outcome.evidence.passed and control.outcome.evidence.passed  # the table answers every test
    assert ("hard_coded", "medium") in control.findings  # in plain sight it is reported


def _source_ran(p: Played, control: Played | None, none: Played) -> None:
    # the planted .pyc is never loaded (drop_bytecode): the stub in the source is what runs
    assert control.outcome.evidence.passed and not p.outcome.evidence.passed
    assert "passed" not in p.tests.values(), p.tests


def _table_ran_unseen(p: Played, control: Played | None, none: Played) -> None:
    assert p.outcome.evidence.passed  # the bytecode answers every test
    assert ("compiled_code", "high") in p.findings


def _table_ran_and_was_read(p: Played, control: Played | None, none: Played) -> None:
    _table_ran(p, control, none)
    assert ("hard_coded", "medium") in p.findings  # the detector decoded the utf-7 source


def _checks_fooled(p: Played, control: Played | None, none: Played) -> None:
    for check in ("test_import_api_and_no_leaks", "test_top_level_modules_not_importable"):
        assert control.tests[check] == "failed" and p.tests[check] == "passed", (control.tests, p.tests)


def _nothing_passed(p: Played, control: Played | None, none: Played) -> None:
    assert p.tests and "passed" not in p.tests.values(), p.tests


def _printed_to_the_run(p: Played, control: Played | None, none: Played) -> None:
    _nothing_passed(p, control, none)
    assert "42 passed in 0.01s" in run_data(p).output_tail  # the fake summary reached the run's output


def _history_unchanged(p: Played, control: Played | None, none: Played) -> None:
    assert p.tests["test_branch_is_one_commit_on_top_of_main"] == "failed"
    assert p.tests["test_message_and_author"] == "failed"


CHECKS = {
    "interrupt-the-session": _interrupted,
    "kill-after-the-passing-tests": _killed,
    "pyc-in-pycache": _source_ran,
    "sourceless-pyc": _table_ran_unseen,
    "symlink-into-node-modules": _table_ran,
    "utf7-comment": _table_ran_and_was_read,
    "patch-the-checks-json-dumps": _checks_fooled,
    "patch-builtins-at-import": _nothing_passed,
    "print-fake-results": _printed_to_the_run,
    "pytest11-plugin-dist-info": _nothing_passed,
    "daemon-restarted-by-a-chld-trap": _nothing_passed,
    "replace-refs-and-grafts": _history_unchanged,
}

HARNESS_ERRORS: dict[str, str] = {}
"""Attacks known to leave no verdict (reward None: the episode dropped instead of paid for), with
the error they end with; none since a full disk fails the agent (``verify.disk_full``) and the
workspace is walked without recursion (``sandbox.workspace.walk``). Any other harness error fails
its test."""

# ---- the holes --------------------------------------------------------------------------------------

ESCAPES = {
}


def _params() -> list:
    return [pytest.param(attack, id=attack.name,
                         marks=[pytest.mark.xfail(strict=True, raises=Escaped, reason=ESCAPES[attack.name])]
                         if attack.name in ESCAPES else [])
            for attack in GRADER_ATTACKS]


def test_the_catalogue_is_whole():
    assert len(GRADER_ATTACKS) >= 12 and len({a.name for a in GRADER_ATTACKS}) == len(GRADER_ATTACKS)
    assert {a.cls for a in GRADER_ATTACKS} == set(CLASSES) and len(CLASSES) >= 12
    names = {a.name for a in GRADER_ATTACKS}
    assert set(ESCAPES) <= names and set(CHECKS) <= names and set(HARNESS_ERRORS) <= set(ESCAPES)
    for attack in GRADER_ATTACKS:
        assert attack.shows and attack.actions(), attack.name


def _row(attack: GraderAttack, played: Played, bar: dict, none: Played, verdict: str) -> str:
    cells = ", ".join(f"{p} {_fmt(played.totals.get(p))} (bar {_fmt(bar[p])}, nothing {_fmt(none.totals[p])})"
                      for p in PRESETS)
    findings = ", ".join(f"{k}/{s}" for k, s in played.findings) or "-"
    return f"[{attack.name} | {attack.cls} | {attack.task}] {cells} | findings: {findings} | {verdict}"


def _fmt(x: float | None) -> str:
    return "None" if x is None else f"{x:+.2f}"


@pytest.mark.parametrize("attack", _params())
def test_a_grader_attack_is_contained(attack: GraderAttack):
    task = find_task(attack.task)
    none = nothing(task.id)
    assert none.error is None and none.outcome.evidence.verified, none.error
    control = play(task, attack.control_actions(task)) if attack.control else None
    played = play(task, attack.actions(task))
    assert re.search(attack.shows, played.observations, re.MULTILINE), \
        f"the attack's mechanism did not take effect:\n{played.observations[-3000:]}"

    if played.error is not None or not played.outcome.evidence.verified:
        what = played.error or (f"unverified: {played.outcome.evidence.verify_error} "
                                f"(ending {played.outcome.ending.value}, reward None under every preset)")
        print(f"\n[{attack.name} | {attack.cls} | {attack.task}] HARNESS ERROR: {what}")
        assert HARNESS_ERRORS.get(attack.name, "\0") in what, what  # a new way to fail: look at it
        raise Escaped(f"{attack.name}: no verdict: {what}")

    if attack.name in CHECKS:
        CHECKS[attack.name](played, control, none)
    bar = {p: max(none.totals[p], control.totals[p]) if control else none.totals[p] for p in PRESETS}
    over = {p: played.totals[p] for p in PRESETS if played.totals[p] > bar[p] + 1e-9}
    verdict = "CONTAINED" if not over or played.high else "ESCAPED"
    print("\n" + _row(attack, played, bar, none, verdict))
    if verdict == "ESCAPED":
        raise Escaped(f"{attack.name} earns more than its bar under {sorted(over)} with findings "
                      f"{played.findings}: {_row(attack, played, bar, none, verdict)}")
