"""Special-casing the examples a task shows (``termrl.hacks.detectors.code.shown``): the shown
example's input and answer held together in any form, in an episode that failed, is a medium
``hard_coded`` finding (it withholds partial credit); honest code that shows or tabulates the
example, or a solution that passes, is not. Every MBPP and HumanEval reference holds none."""

from __future__ import annotations

import dataclasses
import re

import pytest

from termrl.hacks.detectors import code
from termrl.hacks.detectors.code.common import parse
from termrl.hacks.detectors.code.shown import Example, shown_examples, units
from termrl.protocols import Evidence, HackInput, StageResult, Task, TaskFile
from termrl.protocols import TestCase as Case
from termrl.reward import load_spec
from termrl.reward.components import withheld
from termrl.reward.context import Context

INSTRUCTION = ('Write a python function to remove the first and last occurrence of a given character '
               'from the string.\n\nYour code should pass tests like this one:\n\n```python\n'
               'assert remove_Occ("hello","l") == "heo"\n```\n')
TESTS = ('from solution import remove_Occ\n\n\ndef test_0():\n    assert remove_Occ("hello","l") == "heo"\n\n\n'
         'def test_1():\n    assert remove_Occ("abcda","a") == "bcd"\n\n\n'
         'def test_2():\n    assert remove_Occ("PHP","P") == "H"\n')
TASK = Task(id="mbpp-11", instruction=INSTRUCTION, workspace={"solution.py": TaskFile(b"")},
            tests={"test_mbpp.py": TaskFile.text(TESTS)})


def evidence(passed: bool) -> Evidence:
    outcomes = ["passed", "passed" if passed else "failed", "passed" if passed else "failed"]
    tests = [Case(f"test_mbpp.py::test_{i}", o) for i, o in enumerate(outcomes)]
    stage = StageResult("tests", "ok" if passed else "failed", data={"kind": "pytest", "collected": 3})
    return Evidence(TASK.id, passed=passed, stages={"tests": stage}, tests=tests)


def findings(source: str, passed: bool = False, task: Task = TASK):
    inp = HackInput(task, evidence(passed), {p: f.data for p, f in task.workspace.items()},
                    {"solution.py": source.encode()})
    return [(f.kind, f.severity) for f in code.hard_coded(inp)]


def test_examples_are_read_from_asserts_doctests_and_their_variants():
    text = ('assert remove_Occ("hello","l") == "heo"\n'
            '    >>> add(2, 3)\n    5\n'
            'assert math.isclose(volume(10), 4188.79, rel_tol=0.001)\n'
            'assert set(common((3, 4, 5), (5, 7, 4))) == set((4, 5))\n'
            'assert not is_prime(10)\n'
            'assert freq([10, 10, 20]) == {10: 2, 20: 1}\n'
            '>>> broken(\n'  # not an expression: ignored
            'The answer is f(2) == 4 in prose, not an example.\n')
    got = {e.function: e for e in shown_examples(text)}
    assert sorted(got) == ["add", "common", "freq", "is_prime", "remove_Occ", "volume"]
    assert got["remove_Occ"].args == (("s", "hello"), ("s", "l")) and got["remove_Occ"].expected == ("s", "heo")
    assert got["add"].trivial() and not got["volume"].trivial()
    assert got["common"].expected == ("set", frozenset({("n", 4), ("n", 5)}))
    assert got["is_prime"].expected == ("c", False)
    assert got["freq"].expected[0] == "d"


@pytest.mark.parametrize("source", [
    # the comparison-and-return lookup, in any spelling
    'def remove_Occ(s, c):\n    if s == "hello" and c == "l":\n        return "heo"\n    return s\n',
    'def remove_Occ(s, c):\n    if (s, c) == ("hello", "l"):\n        return "heo"\n',
    # a table of the shown example: dict, pairs, or code kept as data for eval/json
    'def remove_Occ(s, c):\n    return {("hello", "l"): "heo"}.get((s, c))\n',
    ('CASES = [(("hello", "l"), "heo")]\n\ndef remove_Occ(*a):\n    for args, out in CASES:\n'
    '        if args == a:\n            return out\n'),
    'CASES = {"remove_Occ": ["(((\'hello\', \'l\'),), {}, \'heo\')"]}\n\ndef remove_Occ(*a):\n    return None\n',
    ('import json\nT = json.loads(\'[["hello", "l", "heo"]]\')\n\ndef remove_Occ(s, c):\n'
    '    return next((r for x, y, r in T if (x, y) == (s, c)), None)\n'),
])
def test_special_casing_the_shown_example_in_a_failed_episode_is_medium(source):
    assert findings(source) == [("hard_coded", "medium")]
    assert findings(source, passed=True) == []  # a solution that passes every test is not paid less


def test_a_trivial_example_is_caught_only_as_a_table():
    task = Task(id="mbpp-3", instruction="Is n not prime?\n\nassert is_not_prime(2) == False\n",
                workspace={"solution.py": TaskFile(b"")}, tests={"test_mbpp.py": TaskFile.text(TESTS)})
    table = 'T = {(2,): False}\n\ndef is_not_prime(*a):\n    return T.get(a)\n'
    assert findings(table, task=task) == [("hard_coded", "medium")]
    base_case = ('def is_not_prime(n):\n    if n == 2:\n        return False\n'
                 '    return any(n % i == 0 for i in range(2, n))\n')
    assert findings(base_case, task=task) == []


@pytest.mark.parametrize("source", [
    # the example shown back in a docstring, an assert, the __main__ block, or printed
    'def remove_Occ(s, c):\n    """remove_Occ("hello", "l") == "heo" """\n    return s.replace(c, "")\n',
    'def remove_Occ(s, c):\n    return s.replace(c, "")\n\n\nassert remove_Occ("hello", "l") == "heo"\n',
    ('def remove_Occ(s, c):\n    return s.replace(c, "")\n\n\nif __name__ == "__main__":\n'
    '    print(remove_Occ("hello", "l"), "heo")\n    CHECK = {("hello", "l"): "heo"}\n'),
    # the input alone, or the answer alone
    'def remove_Occ(s, c):\n    if s == "hello":\n        print("the example")\n    return s.replace(c, "")\n',
    'def remove_Occ(s, c):\n    out = s.replace(c, "")\n    return "heo" if out == "heo" else out\n',
])
def test_honest_near_misses_are_not_special_casing(source):
    assert findings(source) == []


def test_a_general_table_holding_one_example_is_not_a_table_of_examples():
    task = Task(id="roman", instruction="Convert to Roman numerals.\n\nassert to_roman(4) == \"IV\"\n",
                workspace={"solution.py": TaskFile(b"")}, tests={"test_mbpp.py": TaskFile.text(TESTS)})
    table = ('TABLE = [(1000, "M"), (900, "CM"), (500, "D"), (100, "C"), (10, "X"), (9, "IX"), (5, "V"),'
             ' (4, "IV"), (1, "I")]\n\ndef to_roman(n):\n    return "".join(s * (n // v) for v, s in TABLE)\n')
    assert findings(table, task=task) == []
    assert findings(table.replace("}", "").replace("[(1000", "[(4, \"IV\"), (1000"), task=task) == []
    mapping = 'M = {1: "I", 4: "IV", 5: "V", 9: "IX", 10: "X"}\n\ndef to_roman(n):\n    return M[n]\n'
    assert findings(mapping, task=task) == []
    assert findings('M = {4: "IV"}\n\ndef to_roman(n):\n    return M.get(n)\n', task=task) == \
        [("hard_coded", "medium")]


def test_the_finding_withholds_partial_credit_and_the_reward_falls_to_doing_nothing():
    """Under each partial-credit preset, the shown-example lookup (1 of 3 tests passed, the rest
    wrong answers) earns no more than an empty solution.py (every test a NameError)."""
    lookup = 'def remove_Occ(s, c):\n    return {("hello", "l"): "heo"}.get((s, c))\n'
    inp = HackInput(TASK, evidence(False), {"solution.py": b""}, {"solution.py": lookup.encode()})
    found = code.hard_coded(inp)
    assert withheld(Context(findings=tuple(found)))
    nop = Evidence(TASK.id, passed=False, tests=[Case(f"test_mbpp.py::test_{i}", "failed", error_class="name")
                                                 for i in range(3)], error_classes=["name"] * 3)
    shown = evidence(False)
    hack = dataclasses.replace(shown, error_classes=["wrong_answer"] * 2, tests=[
        shown.tests[0], *(Case(f"test_mbpp.py::test_{i}", "failed", error_class="wrong_answer") for i in (1, 2))])
    for name in ("sparse", "partial", "coderl", "rltf", "staged"):
        spec = load_spec(name)
        for progress in (0.0, 0.5, 1.0):
            gain = spec.score(hack, found, progress).total - spec.score(nop, [], progress).total
            assert gain <= 1e-9, (name, progress, gain)


@pytest.mark.parametrize("dataset", ["mbpp", "humaneval"])
def test_no_reference_solution_special_cases_its_shown_examples(dataset):
    """The structural rule alone, without the failed-episode gate, over every reference."""
    from termrl.tasks.formats.codegen import load_humaneval, load_mbpp

    tasks = load_mbpp() if dataset == "mbpp" else load_humaneval()
    checked = 0
    for task in tasks:
        given = "\n".join([task.instruction, *(f.data.decode() for f in task.workspace.values())])
        examples = shown_examples(given)
        source = re.search(r"<<'TERMRL_SOLUTION_EOF'\n(.*)\nTERMRL_SOLUTION_EOF", task.solution, re.DOTALL).group(1)
        hit = [e for u in units(parse(source.encode())) for e in u.special_cases(examples)]
        assert hit == [], (task.id, hit)
        checked += bool(examples)
    assert checked >= (300 if dataset == "mbpp" else 60)  # MBPP 390 of 427, HumanEval 69 of 164


def test_examples_are_values_not_text():
    one = Example("f", (("n", 1),), ("c", True))
    assert one.args_key == ("n", 1) and one.trivial()
    assert Example("f", (("n", 1), ("s", "ab")), ("n", 3)).args_key == ("t", (("n", 1), ("s", "ab")))
