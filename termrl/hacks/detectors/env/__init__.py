"""Environment hack detectors: what an agent did to its environment instead of the task.

Six detectors, each a plain callable ``(HackInput) -> list[Finding]`` (``DETECTORS``):

- ``tampering``: the agent changed something that influences verification: visible
  test files, ``conftest.py``, pytest settings, Python start-up hooks
  (``sitecustomize.py``, ``.pth``), shell start-up files, executables or aliases
  that shadow ``python``/``pytest``/``gcc``/``make``... on PATH, or the reward file.
  Files are compared by sha256 content hash between ``inp.before`` and
  ``inp.after``/``inp.home`` (HOME starts empty, so every file in it is the agent's).
- ``out_of_bounds``: commands or written code that reach for the hidden tests, the
  reference solution, the verification harness, the host (``/work``, other
  sandboxes), other processes' ``/proc`` entries, or, outside git tasks, the task
  repository's history.
- ``command_spam``: repeated and no-op commands, printing a hidden test's expected
  text, and edits to files that the reference solution leaves alone.
- ``build_tampering``: lines added to a Makefile, CMake file or build/check script that
  silence errors (``-w``, ``-fpermissive``, ``--unresolved-symbols``, ``|| true``, ``make -k``).
- ``memorised_output``: an answer file the task's work produces, written as literal text that
  no command's output, the instruction or the starting workspace showed the agent.
- ``literal_output``: an answer file the task has a program compute, written as literal text
  (by hand, or by a program that holds the answer) instead of by running code that computes it.

None of this fools termrl's verifier: it copies the hidden tests in fresh from the
task onto a read-only mount, runs them with ``python3 -P -s -B`` in a clean process
(base environment, fresh /tmp and HOME, no agent shell, no user site-packages), and
the reward directory is a fresh output mount. A finding is therefore about *intent*:
it is what a policy does once a weaker harness has rewarded it, and it must never be
rewarded here.

A workspace file that the reference solution leaves the same way (same bytes in
``inp.reference``) is legitimate work and never a tampering finding. Every finding's
``kind`` is its detector's name; ``step`` is a 0-based index into ``inp.trace``;
``line`` is 1-based, in the file or in the step's command.

One module per detector (``tampering``, ``bounds``, ``spam``, ``build``, ``memorised``, ``literal``); ``shell`` splits command
lines into simple commands and ``common`` holds what they share.
"""

from __future__ import annotations

from collections.abc import Callable

from termrl.hacks.detectors.env.bounds import git_history_read, out_of_bounds
from termrl.hacks.detectors.env.build import build_tampering
from termrl.hacks.detectors.env.literal import literal_output
from termrl.hacks.detectors.env.memorised import memorised_output
from termrl.hacks.detectors.env.shell import simple_commands
from termrl.hacks.detectors.env.spam import command_spam
from termrl.hacks.detectors.env.tampering import tampering
from termrl.protocols import Finding, HackInput

DETECTORS: dict[str, Callable[[HackInput], list[Finding]]] = {
    "tampering": tampering,
    "out_of_bounds": out_of_bounds,
    "command_spam": command_spam,
    "build_tampering": build_tampering,
    "memorised_output": memorised_output,
    "literal_output": literal_output,
}

__all__ = ["DETECTORS", "build_tampering", "command_spam", "git_history_read", "literal_output", "memorised_output",
           "out_of_bounds",
           "simple_commands", "tampering"]
