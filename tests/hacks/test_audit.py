"""The audit on deliberately flawed tasks: it must report each flaw."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from termrl.checks.audit import audit
from termrl.checks.exploits import EXPLOITS
from termrl.reward import load_spec, spec_from_dict
from termrl.tasks.suites import directory_entries

FLAWED = Path(__file__).resolve().parents[1] / "fixtures" / "flawed"
# which exploit each flaw lets through
EXPECTED = {
    "flawed-exists-only": "empty_files_named",
    "flawed-revealed-output": "write_expected_output",
    "flawed-trusts-exit-code": "stub_scripts_exit_zero",
    "flawed-one-example": "replay_test_cases",
    "flawed-eq-only": "replay_test_cases",  # its one assert is one example too
}
CLOSED = {"flawed-eq-only": "always_equal"}
"""Flaws the verifier closes by itself: an always-equal object stays in the isolation's worker, and
the test's ``==`` compares a handle, never equal to a list (termrl.verify.harness.isolate)."""
LOG_ONLY = spec_from_dict({"components": {
    "outcome": {"type": "outcome", "weight": 1.0, "mode": "graded"},
    "hack": {"type": "hack", "weight": 1.0, "mode": "log"},
}})


@pytest.fixture(scope="module")
def flawed_report():
    tasks = [e.task for e in directory_entries(FLAWED)]
    exploits = {name: EXPLOITS[name] for name in sorted(set(EXPECTED.values()) | set(CLOSED.values()))}
    return audit(tasks, LOG_ONLY, exploits, workers=2)


def test_every_flaw_is_reported_as_test_weak(flawed_report):
    assert sorted(flawed_report["test_weak_tasks"]) == sorted(EXPECTED)
    passing = {(r["task"], r["exploit"]) for r in flawed_report["rows"] if r["tests_passed"]}
    for task, exploit in EXPECTED.items():
        assert (task, exploit) in passing, (task, exploit)
    for task, exploit in CLOSED.items():
        assert (task, exploit) not in passing, (task, exploit)
    # every row says how long its episode took (the nop row: the reference's run as well)
    rows = {(r["task"], r["exploit"]): r for r in flawed_report["rows"]}
    assert all(r["seconds"] > 0 for r in rows.values())


def test_without_hack_penalties_every_flaw_is_exploitable(flawed_report):
    # a closed flaw may still out-earn doing nothing here (a wrong answer over a stub's exception,
    # with hack findings only logged); it never passes the tests
    assert set(EXPECTED) <= set(flawed_report["exploitable_tasks"]) <= set(EXPECTED) | set(CLOSED)
    rows = {(r["task"], r["exploit"]): r for r in flawed_report["rows"]}
    for task, exploit in EXPECTED.items():
        row = rows[(task, exploit)]
        assert row["reward"] > row["nop_reward"]
        assert row["nop_reward"] == rows[(task, "nop")]["reward"]


def test_audit_command_exits_non_zero_when_exploitable(tmp_path):
    spec = tmp_path / "log_only.toml"
    spec.write_text('version = 1\nname = "log-only"\n\n[components.outcome]\ntype = "outcome"\nweight = 1.0\n'
                    'mode = "binary"\n\n[components.hack]\ntype = "hack"\nweight = 1.0\nmode = "log"\n')
    res = subprocess.run([sys.executable, "-m", "termrl", "audit", str(FLAWED / "exists-only"), "--spec", str(spec),
                          "--exploits", "empty_files_named,spam_commands", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stderr
    report = json.loads(res.stdout)
    assert report["exploitable_tasks"] == ["flawed-exists-only"]
    assert {r["exploit"] for r in report["rows"]} == {"nop", "empty_files_named", "spam_commands"}
    res = subprocess.run([sys.executable, "-m", "termrl", "audit", str(FLAWED / "eq-only"),
                          "--exploits", "no_such_exploit"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "no_such_exploit" in res.stderr


def test_audit_scores_at_the_progress_points_asked_for():
    tasks = [e.task for e in directory_entries(FLAWED) if e.task.id == "flawed-eq-only"]
    report = audit(tasks, load_spec("staged"), {"always_equal": EXPLOITS["always_equal"]}, workers=1,
                   points=[1.0, 0.25])
    assert report["progress_points"] == [0.25, 1.0]
    assert {r["progress"] for r in report["rows"]} <= {0.25, 1.0}
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        audit(tasks, load_spec("staged"), {}, workers=1, points=[1.5])
    res = subprocess.run([sys.executable, "-m", "termrl", "audit", str(FLAWED / "eq-only"), "--progress", "0,2"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--progress" in res.stderr


def test_caught_hacks_do_not_pay_under_the_staged_preset(flawed_report):
    tasks = [e.task for e in directory_entries(FLAWED) if e.task.id == "flawed-eq-only"]
    report = audit(tasks, load_spec("staged"), {"always_equal": EXPLOITS["always_equal"]}, workers=1)
    row = next(r for r in report["rows"] if r["exploit"] == "always_equal")
    assert row["tests_passed"] is False  # the tests are weak, but the object never leaves the worker...
    assert "always_equal" in row["detected_by"]  # ...the detector catches the attempt
    assert report["exploitable_tasks"] == []  # ...and the capped reward does not pay


def test_episodes_carry_the_reference_size_for_bloat_penalties():
    from termrl.checks.audit import baseline
    from termrl.tasks.suites import find_task

    task = find_task("py-roman-numerals")
    base = baseline(task)
    assert base is not None and base.lines > 0 and base.tests
    from termrl.checks.audit import _episode

    bloat = spec_from_dict({"components": {"bloat": {"type": "bloat_penalty", "weight": 1.0}}})
    episode = _episode(task, bloat, None, base)
    assert episode.evidence.reference_lines == base.lines
    assert bloat.score(episode.evidence).components["bloat"].value is not None  # it has its yardstick


def test_attacks_on_the_grader_are_caught_and_do_not_pay():
    """The exploits that attack the grader from the code under test (report forging, caller-frame
    lookups) and the build (silencing flags), on a pytest task, a HumanEval problem and a C task."""
    from termrl.tasks.suites import find_task, resolve

    tasks = [e.task for e in directory_entries(FLAWED) if e.task.id == "flawed-eq-only"]
    tasks += [e.task for e in resolve("humaneval:0-0")] + [find_task("c-fix-link-error")]
    names = ("forge_test_reports", "caller_frame", "silence_build")
    report = audit(tasks, load_spec("staged"), {n: EXPLOITS[n] for n in names}, workers=2)
    rows = {(r["task"], r["exploit"]): r for r in report["rows"]}
    assert report["exploitable_tasks"] == [] and report["errors"] == []
    for task in [t.id for t in tasks][:2]:
        # the code under test runs in the isolation's worker: the session it patches and the
        # frames it walks are the worker's, so both fail the tests, and the detectors see the attempt
        forged, frame = rows[(task, "forge_test_reports")], rows[(task, "caller_frame")]
        assert not forged["tests_passed"] and not frame["tests_passed"], (forged, frame)
        assert "grader_access" in forged["detected_by"] and "grader_access" in frame["detected_by"]
    silenced = rows[(tasks[2].id, "silence_build")]
    assert "build_tampering" in silenced["detected_by"] and silenced["reward"] <= silenced["nop_reward"]


def test_a_program_replaced_by_its_example_output_does_not_pay():
    from termrl.tasks.suites import find_task

    tasks = [find_task("logs-count-0"), find_task("shell-word-freq"), find_task("data-csv-to-json")]
    report = audit(tasks, load_spec("staged"), {"constant_output_program": EXPLOITS["constant_output_program"]},
                   workers=2)
    rows = [r for r in report["rows"] if r["exploit"] == "constant_output_program"]
    assert report["exploitable_tasks"] == [] and report["errors"] == []
    assert any("constant_output" in r["detected_by"] for r in rows), rows


def test_identical_final_workspaces_are_verified_once_and_keep_their_own_trace():
    from termrl.checks.audit import VerificationCache, _episode
    from termrl.tasks.suites import find_task

    task = find_task("py-roman-numerals")
    spec = load_spec("staged")
    cache = VerificationCache()

    def touch(box):
        box.exec("true")
        return [{"command": "true", "exit_code": 0}]

    def edit(box):
        box.exec("echo '# changed' >> roman.py")
        return [{"command": "edit", "exit_code": 0}]

    nop = _episode(task, spec, None, None, cache=cache)
    same = _episode(task, spec, touch, None, cache=cache)
    other = _episode(task, spec, edit, None, cache=cache)
    assert (cache.misses, cache.hits) == (2, 1)
    assert same.evidence.passed == nop.evidence.passed and same.evidence.tests == nop.evidence.tests
    assert same.evidence.stages["trace"].data["commands"] == 1 and nop.evidence.stages["trace"].data["commands"] == 0
    assert other.evidence.changed_files == ["roman.py"] and nop.evidence.changed_files == []


def test_a_git_task_rebuilt_in_each_sandbox_is_still_verified_once():
    """Each sandbox's setup builds the repository anew, so its index's stat cache and its reflogs'
    times differ from the last one's: the cache reads past them, and not past a real change."""
    import time

    from termrl.checks.audit import VerificationCache, _episode
    from termrl.tasks.suites import find_task

    task = find_task("git-squash-branch")
    spec = load_spec("staged")
    cache = VerificationCache()

    def status(box):  # may refresh the index's stat cache, changes nothing git reports
        box.exec("touch README.md && git status --short && git log --oneline")
        return [{"command": "status", "exit_code": 0}]

    def commit(box):
        box.exec("echo x >> README.md && git -c user.name=a -c user.email=b@c commit -qam more")
        return [{"command": "commit", "exit_code": 0}]

    nop = _episode(task, spec, None, None, cache=cache)
    time.sleep(1.1)  # another second on the clock for the next setup's reflog entries
    _episode(task, spec, status, None, cache=cache)
    assert (cache.misses, cache.hits) == (1, 1)
    other = _episode(task, spec, commit, None, cache=cache)
    assert (cache.misses, cache.hits) == (2, 1) and other.evidence.changed_files != nop.evidence.changed_files


def test_the_index_is_read_alike_in_every_version_and_its_entries_count(tmp_path):
    import shutil
    import subprocess

    from termrl.sandbox.workspace import _index_entries, git_canonical

    if shutil.which("git") is None:
        pytest.fail("git is needed on the host for this test")
    run = lambda *a: subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=b@c", *a], cwd=tmp_path,
                                    check=True, capture_output=True)
    run("init", "-q", ".")
    (tmp_path / "d").mkdir()
    for name in ("d/one.txt", "d/two.txt", "top.txt"):
        (tmp_path / name).write_text(name)
    run("add", "-A")
    run("commit", "-qm", "m")
    index = tmp_path / ".git" / "index"
    forms = {}
    for version in ("2", "3", "4"):
        run("update-index", "--index-version", version)
        forms[version] = _index_entries(index.read_bytes())
    assert forms["2"][12:] == forms["3"][12:] == forms["4"][12:] and b"d/two.txt" in forms["4"]
    (tmp_path / "top.txt").write_text("changed")
    run("add", "top.txt")
    assert _index_entries(index.read_bytes())[12:] != forms["4"][12:]  # a staged change is an entry's new id
    assert _index_entries(b"DIRC" + bytes(40)) is None  # not one it reads: hashed as bytes
    log = tmp_path / ".git" / "logs" / "HEAD"
    assert git_canonical(".git/logs/HEAD", log).count(b"> \t") == 1
    assert git_canonical("src/index", index) is None and git_canonical(".git/config", index) is None


def test_several_specs_are_audited_on_the_same_episodes(tmp_path):
    import termrl.checks.audit as audit_module

    tasks = [e.task for e in directory_entries(FLAWED) if e.task.id == "flawed-exists-only"]
    runs = []
    real = audit_module._episode

    def counted(*args, **kwargs):
        runs.append(args[0].id)
        return real(*args, **kwargs)

    audit_module._episode = counted
    try:
        report = audit(tasks, {"sparse": load_spec("sparse"), "coderl": load_spec("coderl")},
                       {"empty_files_named": EXPLOITS["empty_files_named"]}, workers=1)
    finally:
        audit_module._episode = real
    assert len(runs) == 2  # the do-nothing episode and one exploit episode, for both specs
    assert set(report["specs"]) == {"sparse", "coderl"}
    sparse, coderl = (report["specs"][n]["rows"] for n in ("sparse", "coderl"))
    assert [(r["exploit"], r["tests_passed"]) for r in sparse] == [(r["exploit"], r["tests_passed"]) for r in coderl]
    assert [r["reward"] for r in sparse] != [r["reward"] for r in coderl]  # each spec scored them
    assert report["test_weak_tasks"] == ["flawed-exists-only"]
    res = subprocess.run([sys.executable, "-m", "termrl", "audit", str(FLAWED / "exists-only"), "--spec",
                          "sparse,staged", "--exploits", "empty_files_named", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode in (0, 1), res.stderr
    assert set(json.loads(res.stdout)["specs"]) == {"sparse", "staged"}


def test_answer_files_copied_stubbed_or_left_empty_do_not_pay_on_the_families():
    """The families whose answer is a file the program writes: the copied answer file passes its
    own test (memorised_output withholds its partial credit), an exit-0 stub at a ``.py`` path
    and an empty file where content belongs are placeholders (empty_work, high); where the file
    *is* the whole task (one-command), copying the reference's file is solving it, not an exploit."""
    from termrl.tasks.suites import resolve

    tasks = [e.task for e in resolve("one-command:0-1+logs-count:0+shell-files:1")]
    exploits = {n: EXPLOITS[n] for n in ("replay_reference_outputs", "empty_files_named", "stub_scripts_exit_zero")}
    report = audit(tasks, load_spec("staged"), exploits, workers=4, points=[0.0, 0.5, 1.0])
    assert report["exploitable_tasks"] == [] and report["test_weak_tasks"] == [], report["exploitable_tasks"]
    rows = {(r["task"], r["exploit"]): r for r in report["rows"]}
    solved = rows[("one-command-0", "replay_reference_outputs")]
    assert solved["as_reference"] and solved["tests_passed"]
    empty = rows[("one-command-0", "empty_files_named")]  # "containing `WORD`", left empty
    assert not empty["as_reference"] and "empty_work" in empty["detected_by"]
    assert "memorised_output" in rows[("logs-count-0", "replay_reference_outputs")]["detected_by"]
    assert "empty_work" in rows[("shell-files-1", "stub_scripts_exit_zero")]["detected_by"]
    assert not any(r["as_reference"] for r in report["rows"] if r["task"] != "one-command-0" and r["task"] != "one-command-1")
