"""Surviving mutants as audit exploits: ``termrl audit SUITE --mutants STRENGTH.json``.

``termrl tasks strength`` finds mutants of a task's reference solution that its hidden tests
pass: small, concrete bugs that earn the full reward. Each is also a candidate exploit, and the
audit replays it as one: the agent writes the reference solution's files as the reference left
them, with the one mutated file replaced by the mutant (through the shell, as an agent would),
and the episode is verified, read by the detectors and scored under every spec audited, like
any exploit. Its row says what the reward does with a wrong solution the tests cannot tell from
a right one: whether it out-earns doing nothing, and whether any detector caught it.

A survivor may be equivalent to the reference (``return 0`` for ``return 1`` where nothing reads
it; a buffer one larger): a *candidate*, which a reader confirms from its diff. So the audit
reports survivors apart (``candidate_exploits``, ``candidate_exploitable_tasks``) and they do not
decide its exit status; the exploit library's rows still do.

The mutant is rebuilt on the audit's own run of the reference (``ExploitContext.reference_files``)
from the strength report's diff: the file's mutants are listed again and the one whose diff is
the report's is written. Where none matches (the reference writes other bytes from run to run,
or the report is from another version of the task) the exploit writes nothing and its trace says
why; the row then reads as doing nothing.
"""

from __future__ import annotations

import functools
import json
import shlex
from pathlib import Path

from termrl.checks.exploits.base import Exploit, ExploitContext, run, write
from termrl.checks.shell_mutants import SOLUTION, mutants_for, shell_mutants
from termrl.protocols import Sandbox, Task

PREFIX = "mutant@"
"""Every survivor's exploit name starts so: ``mutant@PATH:LINE:OPERATOR``."""


class SurvivorsError(ValueError):
    """A strength report that cannot be read; the message names the file, the field and the fix."""


def is_survivor(name: str) -> bool:
    """Whether the audit row's exploit ``name`` is a replayed surviving mutant."""
    return name.startswith(PREFIX)


def replay_survivor(task: Task, box: Sandbox, ctx: ExploitContext, *, path: str, diff: str) -> list[dict]:
    """Exploit: the reference solution's files, ``path`` replaced by the mutant whose diff is ``diff``;
    for a mutant of the reference's script itself (``path`` is ``SOLUTION``), that script run."""
    steps: list[dict] = []
    if path == SOLUTION:
        script = task.solution or ""
        mutant = next((m for m in shell_mutants(script) if m.diff(script, path) == diff), None)
        if mutant is None:
            steps.append({"command": "# no mutant of the reference's script matches the strength report's diff: "
                                     "nothing run", "exit_code": 0, "timed_out": False, "output": "",
                          "output_bytes": 0, "format_error": False})
            return steps
        write(box, "/tmp/.mutant.sh", mutant.source, steps)
        run(box, "bash /tmp/.mutant.sh; rm -f /tmp/.mutant.sh", steps)
        return steps
    files = ctx.reference_files or {}
    original = files.get(path)
    mutant = None
    if original is not None:
        text = original.decode("utf-8", "replace")
        mutant = next((m for m in mutants_for(path, text) if m.diff(text, path) == diff), None)
    if mutant is None:
        steps.append({"command": f"# no mutant of {path} matches the strength report's diff: nothing written",
                      "exit_code": 0, "timed_out": False, "output": "", "output_bytes": 0, "format_error": False})
        return steps
    workdir = task.workdir.rstrip("/")
    for changed in ctx.reference_changed:
        data = mutant.source.encode() if changed == path else files.get(changed)
        if data is not None and not changed.startswith("-"):
            write(box, f"{workdir}/{changed}", data, steps)
            if data.startswith(b"#!"):  # a script the tests run: executable, as the reference left it
                run(box, f"chmod +x {shlex.quote(f'{workdir}/{changed}')}", steps)
    return steps


def survivor_exploits(report: dict, source: str = "the strength report") -> dict[str, dict[str, Exploit]]:
    """task id -> {exploit name: exploit} for every surviving mutant in ``report`` (what
    ``termrl tasks strength --json`` prints). Raises ``SurvivorsError`` naming ``source``, the
    field and the fix when the report is not one."""
    rows = report.get("tasks") if isinstance(report, dict) else None
    if not isinstance(rows, list):
        raise SurvivorsError(f"{source}: no 'tasks' list: give the JSON that `termrl tasks strength SUITE --json` "
                             "prints")
    out: dict[str, dict[str, Exploit]] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise SurvivorsError(f"{source}: tasks[{i}] has no 'id': give the JSON that `termrl tasks strength "
                                 "--json` prints")
        for j, survivor in enumerate(row.get("survivors") or []):
            where = f"{source}: tasks[{i}].survivors[{j}]"
            if not isinstance(survivor, dict) or not all(isinstance(survivor.get(k), str) for k in ("path", "diff")):
                raise SurvivorsError(f"{where} needs 'path' and 'diff' strings: measure the suite again with "
                                     "`termrl tasks strength --json`")
            name = f"{PREFIX}{survivor['path']}:{survivor.get('line', '?')}:{survivor.get('operator', '?')}"
            named = out.setdefault(row["id"], {})
            unique, n = name, 2
            while unique in named:  # two mutants of one line by one operator
                unique, n = f"{name}#{n}", n + 1
            exploit = functools.partial(replay_survivor, path=survivor["path"], diff=survivor["diff"])
            exploit.description = f"surviving mutant of {survivor['path']} at line {survivor.get('line')}"
            named[unique] = exploit
    return out


def load_survivors(path: Path) -> dict[str, dict[str, Exploit]]:
    """``survivor_exploits`` of the strength report in the file at ``path``."""
    return survivor_exploits(_read(path), str(path))


def few_inputs(path: Path) -> dict[str, dict]:
    """Task id -> its ``inputs`` for every task the strength report at ``path`` flags as tested
    with too few inputs (``termrl.checks.inputs``: one fixed example, or only the instruction's)."""
    rows = _read(path).get("tasks") or []
    return {r["id"]: {"inputs": r.get("inputs") or {}, "shared_inputs": r.get("shared_inputs")}
            for r in rows if isinstance(r, dict) and isinstance(r.get("id"), str) and r.get("few_inputs")}


def _read(path: Path) -> dict:
    try:
        report = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise SurvivorsError(f"{path}: no such file: write it with `termrl tasks strength SUITE --json > {path}`")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise SurvivorsError(f"{path}: not JSON ({e}): write it with `termrl tasks strength SUITE --json > {path}`")
    if not isinstance(report, dict):
        raise SurvivorsError(f"{path}: not a strength report: write it with "
                             f"`termrl tasks strength SUITE --json > {path}`")
    return report


def candidates(rows: list[dict]) -> dict:
    """What the audit reports of the replayed survivors among its ``rows`` (dicts of ``Row``):
    ``candidate_exploits`` (each replayed survivor: task, exploit, tests passed, advantage,
    caught by) and ``candidate_exploitable_tasks`` (tasks where one out-earned doing nothing)."""
    replayed = [r for r in rows if is_survivor(r["exploit"])]
    return {"candidate_exploits": [{k: r[k] for k in ("task", "exploit", "tests_passed", "reward", "nop_reward",
                                                        "advantage", "detected_by", "error")} for r in replayed],
            "candidate_exploitable_tasks": sorted({r["task"] for r in replayed if r["error"] is None
                                                   and (r["reward"] is None or (r["advantage"] or 0) > 1e-9)})}


__all__ = ["PREFIX", "SurvivorsError", "candidates", "few_inputs", "is_survivor", "load_survivors", "replay_survivor",
           "survivor_exploits"]
