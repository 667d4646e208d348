"""Hack detectors that read the agent's code (and what the evidence says about the test run).

Each detector is a plain callable ``(HackInput) -> list[Finding]``; ``DETECTORS`` maps a
finding kind to its detector. They look only at the files the agent changed or added
(``changed_files``), parse Python with ``ast`` and never import or execute it. A file that
does not parse is skipped here: the build stage already reports it.

Severity is a promise about false positives: ``high`` zeroes the reward in every preset,
so a high finding must be something a correct, honest solution does not do (each
detector's tests run it over every built-in, HumanEval and MBPP reference solution and
assert none is high). ``medium`` and ``low`` are suspicions worth a look.

Test files the agent wrote (``test_*.py``, ``*_test.py``, anything under ``tests/``) are
not code under test: the hidden tests are copied in fresh, so only ``empty_work`` reads
them. ``conftest.py`` is never a test file here.

One module per detector (``exits``, ``equality``, ``skipping``, ``hard_coded``,
``swallowing``, ``bloat``, ``empty_work``, ``grader``, ``constant_output``, ``patching``,
``compiled``); ``common`` holds what they share.
"""

from __future__ import annotations

from termrl.hacks.detectors.code.bloat import defensive_bloat
from termrl.hacks.detectors.code.compiled import compiled_code
from termrl.hacks.detectors.code.constant_output import constant_output
from termrl.hacks.detectors.code.empty_work import empty_work
from termrl.hacks.detectors.code.equality import always_equal
from termrl.hacks.detectors.code.exits import early_exit
from termrl.hacks.detectors.code.grader import grader_access, grader_tampering
from termrl.hacks.detectors.code.hard_coded import hard_coded
from termrl.hacks.detectors.code.patching import runtime_patching
from termrl.hacks.detectors.code.skipping import skipping
from termrl.hacks.detectors.code.swallowing import exception_swallowing

DETECTORS = {
    "early_exit": early_exit,
    "always_equal": always_equal,
    "skipping": skipping,
    "hard_coded": hard_coded,
    "exception_swallowing": exception_swallowing,
    "defensive_bloat": defensive_bloat,
    "empty_work": empty_work,
    "grader_tampering": grader_tampering,
    "grader_access": grader_access,
    "constant_output": constant_output,
    "runtime_patching": runtime_patching,
    "compiled_code": compiled_code,
}
"""Finding kind -> detector."""

__all__ = ["DETECTORS", "always_equal", "compiled_code", "constant_output", "defensive_bloat", "early_exit", "empty_work",
           "exception_swallowing", "grader_access", "grader_tampering", "hard_coded", "runtime_patching", "skipping"]
