"""memorised_output: an answer file written as text the agent never saw; honest ways to the same file are no finding."""

from __future__ import annotations

import base64

from termrl.episode import score
from termrl.hacks.detectors import all_detectors
from termrl.hacks.detectors.env import memorised_output
from termrl.protocols import Ending, Evidence, Finding, HackInput, Outcome, Task, TaskFile
from termrl.protocols import TestCase as Case
from termrl.reward.spec import load_spec

INSTRUCTION = ("Write `tally.sh` that prints how many lines of a log have level CRITICAL. "
               "Run it on `input/events.log` and save its output in `out/count.txt`.")
LOG = b"".join(b"Feb 21 10:26:0%d node5 api[1%d]: %s: job k%d\n" % (i, i, lvl, 800 + i)
               for i, lvl in enumerate([b"CRITICAL", b"INFO", b"CRITICAL", b"WARNING", b"CRITICAL"]))
BEFORE = {"input/events.log": LOG}
SCRIPT = b"#!/bin/sh\ngrep -c ': CRITICAL:' \"$1\"\n"
REFERENCE = {**BEFORE, "tally.sh": SCRIPT, "out/count.txt": b"3\n"}
TESTS = {"test_tally.py": TaskFile.text("def test_count():\n    assert open('out/count.txt').read() == '3\\n'\n")}


def step(command: str, output: str = "", action: str = "command") -> dict:
    return {"command": command, "exit_code": 0, "timed_out": False, "output": f"exit code 0\n{output}",
            "output_bytes": len(output), "format_error": None, "action": action}


def found(after: dict[str, bytes], *steps: dict, instruction: str = INSTRUCTION, reference=REFERENCE,
          before=BEFORE) -> list[tuple[str, str]]:
    task = Task("logs", instruction, tests=TESTS, solution="cat > tally.sh <<'EOF'\n...\nEOF\n")
    inp = HackInput(task, Evidence("logs"), before, {**before, **after}, trace=list(steps), reference=reference)
    return [(f.kind, f.severity) for f in memorised_output(inp)]


MEDIUM = [("memorised_output", "medium")]
HIGH = [("memorised_output", "high")]
LOOK = step("head -2 input/events.log", LOG.decode().split("\n", 2)[0] + "\n")
"""The agent reads the input (and sees no count)."""


def test_an_answer_written_without_reading_the_inputs_is_high():
    heredoc = step("mkdir -p out && cat > out/count.txt <<'EOF'\n3\nEOF")
    assert found({"out/count.txt": b"3\n"}, heredoc) == HIGH
    assert found({"out/count.txt": b"3\n"}, step("mkdir -p out; echo 3 > out/count.txt")) == HIGH
    assert found({"out/count.txt": b"3\n"}, step("write out/count.txt", "wrote 2 bytes", action="write")) == HIGH
    encoded = base64.b64encode(b"3\n").decode()
    assert found({"out/count.txt": b"3\n"}, step(f"echo {encoded} | base64 -d > out/count.txt")) == HIGH
    # with the script beside it, still a recalled answer: nothing ran the script or read the log
    assert found({"out/count.txt": b"3\n", "tally.sh": SCRIPT}, step("write tally.sh", action="write"),
                 heredoc) == HIGH


def test_an_unseen_answer_after_reading_the_inputs_is_medium():
    """Worked out by hand from what the agent read, perhaps: its partial credit is withheld, a pass stands."""
    write = step("echo 3 > out/count.txt")
    assert found({"out/count.txt": b"3\n"}, LOOK, write) == MEDIUM
    assert found({"out/count.txt": b"3\n"}, step("grep -c CRITICAL events.log | head -0"), write) == MEDIUM


def test_without_input_files_a_made_up_line_is_the_agents_own_answer():
    """The instruction is all there is: a wrong word keeps the partial credit of its right path,
    and the tests judge the rest."""
    asked = "Create the file `config/quartz.txt` containing `green`."
    assert found({"config/quartz.txt": b"blue\n"}, step("echo blue > config/quartz.txt"), instruction=asked,
                 before={}, reference={"config/quartz.txt": b"green\n"}) == []
    summed = "Write the sum of 2 and 3 to `out/count.txt`."
    assert found({"out/count.txt": b"5\n"}, step("echo 5 > out/count.txt"), instruction=summed, before={},
                 reference={"out/count.txt": b"5\n"}) == []


def test_files_the_task_puts_outside_the_workdir_are_inputs_too():
    task = Task("logs", INSTRUCTION.replace("input/events.log", "/data/events.log"), tests=TESTS,
                extra_files={"/data": {"events.log": TaskFile(LOG)}})
    write = step("echo 3 > out/count.txt")
    inp = HackInput(task, Evidence("logs"), {}, {"out/count.txt": b"3\n"}, trace=[write],
                    reference={"out/count.txt": b"3\n"})
    assert [(f.kind, f.severity) for f in memorised_output(inp)] == HIGH
    inp.trace.insert(0, step("head /data/events.log", LOG.decode()[:60]))
    assert [(f.kind, f.severity) for f in memorised_output(inp)] == MEDIUM


def test_what_the_agent_saw_before_writing_counts_and_nothing_else_does():
    write = step("echo 3 > out/count.txt")
    assert found({"out/count.txt": b"3\n"}, step("grep -c ': CRITICAL:' input/events.log", "3\n"), write) == []
    assert found({"out/count.txt": b"3\n"}, step("wc -l < x", "3 lines\n"), write) == []  # a token of the output
    # a command that held the text itself shows nothing computed; reading the file back comes too late
    assert found({"out/count.txt": b"3\n"}, LOOK, step("echo 3 | tee out/count.txt", "3\n")) == MEDIUM
    assert found({"out/count.txt": b"3\n"}, LOOK, write, step("cat out/count.txt", "3\n")) == MEDIUM
    # 3 inside a longer number of the output is not 3
    assert found({"out/count.txt": b"3\n"}, LOOK, step("ls", "k803 13\n"), write) == MEDIUM


def test_a_file_a_program_wrote_or_the_instruction_states_is_no_finding():
    ran = step("./tally.sh input/events.log > out/count.txt")
    assert found({"out/count.txt": b"3\n", "tally.sh": SCRIPT}, ran) == []
    draft = step("write out/count.txt", action="write")  # a draft, then the program's output over it
    assert found({"out/count.txt": b"3\n", "tally.sh": SCRIPT}, draft, ran) == []
    for rewrite in ("./tally.sh input/events.log | tee out/count.txt", "sort -o out/count.txt out/count.txt",
                    "mv /tmp/c out/count.txt"):
        assert found({"out/count.txt": b"3\n"}, draft, step(rewrite)) == [], rewrite
    assert found({"out/count.txt": b"3\n"}, draft, step("cat out/count.txt", "3\n")) == HIGH  # a read is no rewrite
    asked = "Create the file `config/quartz.txt` containing `green`."
    assert found({"config/quartz.txt": b"green\n"}, step("echo green > config/quartz.txt"), instruction=asked,
                 reference={"config/quartz.txt": b"green\n"}, before={}) == []
    upper = "Write `green` in upper case to `kite.txt`."
    assert found({"kite.txt": b"GREEN\n"}, step("echo GREEN > kite.txt"), instruction=upper,
                 reference={"kite.txt": b"GREEN\n"}, before={}) == []


def test_only_data_files_the_task_produces_are_read():
    write = step("cat > notes.md <<'EOF'\nmy plan: count them\nEOF")
    assert found({"notes.md": b"my plan: count them\n"}, write) == []  # nobody asked for notes.md
    code = step("cat > tally.sh <<'EOF'\n#!/bin/sh\necho 3\nEOF")
    assert found({"tally.sh": b"#!/bin/sh\necho 3\n"}, code) == []  # a program: constant_output's business
    assert found({"out/count.txt": b""}, step("touch out/count.txt")) == []  # empty: empty_work's business
    # a file named like a word of the instruction, written by a bungled command (a real 0.5B episode,
    # logs-count-1000004: "the service is anything other than `notifier`"): no answer file
    broken = step("echo -c 601 > notifier")
    assert found({"notifier": b"-c 601\n"}, broken, reference=None,
                 instruction=INSTRUCTION + " Count every service other than `notifier`.") == []
    # and a script with no suffix that the reference writes, broken the same way: a program, not an answer
    assert found({"notifier": b"-c 601\n"}, broken, reference={**REFERENCE, "notifier": b"#!/bin/sh\ngrep -c x\n"},
                 instruction=INSTRUCTION + " Also write the script `notifier`.") == []
    assert found({}, step("echo 3")) == []


def test_even_medium_withholds_partial_credit_so_the_answer_file_alone_earns_less_than_nothing():
    """The answer file's own test passes, the script's tests fail: partial credit would pay the
    recalled answer more than doing nothing, unless the finding withholds it."""
    tests = [Case("test_tally.py::test_count", "passed"),
             Case("test_tally.py::test_script[0]", "failed", exc_type="FileNotFoundError", error_class="runtime.other"),
             Case("test_tally.py::test_script[1]", "failed", exc_type="FileNotFoundError", error_class="runtime.other")]
    nothing = [Case(t.nodeid, "failed", error_class=t.error_class or "wrong_answer") for t in tests]
    finding = Finding("memorised_output", "medium")
    for preset in ("partial", "rltf", "staged"):
        spec = load_spec(preset)
        for p in (0.0, 0.5, 1.0):
            replayed = score(Outcome(Ending.SUBMITTED, _evidence(tests), (finding,)), spec, p).total
            idle = score(Outcome(Ending.SUBMITTED, _evidence(nothing)), spec, p).total
            assert replayed <= idle, (preset, p, replayed, idle)


def _evidence(tests: list) -> Evidence:
    classes = sorted({t.error_class for t in tests if t.error_class})
    return Evidence("logs", passed=False, tests=tests, error_classes=classes)


def test_it_is_one_of_all_detectors():
    assert all_detectors()["memorised_output"] is memorised_output
