"""Every CLI command, run as a subprocess the way a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BUILTIN = Path(__file__).resolve().parents[2] / "termrl" / "tasks" / "builtin"


def termrl(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_sandbox_run_json_reports_exit_code_and_streams():
    res = termrl("sandbox", "run", "--json", "--", "echo out; echo err >&2; exit 4")
    assert res.returncode == 4
    data = json.loads(res.stdout)
    assert data["exit_code"] == 4 and data["timed_out"] is False and data["stop"] == "exited"
    assert data["stdout"] == "out\n" and data["stderr"] == "err\n"


def test_sandbox_run_argv_workspace_and_timeout(tmp_path):
    (tmp_path / "hello.txt").write_text("from the host\n")
    res = termrl("sandbox", "run", "--workspace", str(tmp_path), "--workdir", "/app", "--", "cat", "hello.txt")
    assert res.returncode == 0 and res.stdout == "from the host\n"
    res = termrl("sandbox", "run", "--json", "--timeout", "0.5", "--", "sleep 30")
    data = json.loads(res.stdout)
    assert data["timed_out"] is True and data["stop"] == "timeout"


def test_sandbox_run_memory_limit():
    res = termrl("sandbox", "run", "--json", "--memory-mb", "128", "--",
                 "python3 -c 'b = bytearray(400 * 2**20)'")
    assert json.loads(res.stdout)["stop"] == "memory"


def test_sandbox_run_bad_workspace_is_a_clear_error(tmp_path):
    res = termrl("sandbox", "run", "--workspace", str(tmp_path / "missing"), "--", "true")
    assert res.returncode == 2
    assert "--workspace" in res.stderr and "not a directory" in res.stderr
    assert "Traceback" not in res.stderr


def test_tasks_list_and_show():
    res = termrl("tasks", "list", "--json")
    ids = [t["id"] for t in json.loads(res.stdout)["tasks"]]
    assert len(ids) >= 40 and "shell-count-errors" in ids
    res = termrl("tasks", "show", "shell-count-errors", "--json")
    info = json.loads(res.stdout)
    assert info["category"] == "shell" and info["hidden_tests"] == ["test_count_errors.py"]
    assert "count_errors.sh" in info["instruction"]
    res = termrl("tasks", "show", "no-such-task")
    assert res.returncode == 2 and "no task 'no-such-task'" in res.stderr and "Traceback" not in res.stderr


def test_json_is_alone_on_stdout_whatever_else_prints_there():
    """Ray's driver prints a dead node's message on stdout from a thread, at any time (a CI run
    saw it land after eval's JSON); a library's print or a child's output may too. With --json
    they go to stderr and stdout holds the one document."""
    script = """if True:
        import os, sys, threading, time
        import termrl.cli.tasks as command
        from termrl.cli import main
        def chatter():
            while True:
                print("(2) raylet has lagging heartbeats", flush=True)
                time.sleep(0.005)
        entries = command._entries
        def noisy_entries(suite):  # the command has started: a thread and a child print
            threading.Thread(target=chatter, daemon=True).start()
            os.system("echo from a child")
            time.sleep(0.05)
            return entries(suite)
        command._entries = noisy_entries
        sys.argv = ["termrl", "tasks", "list", "--json"]
        try:
            main()
        finally:
            time.sleep(0.05)  # the thread prints after the JSON too
    """
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "shell-count-errors" in [t["id"] for t in json.loads(res.stdout)["tasks"]]
    assert "raylet has lagging heartbeats" in res.stderr and "from a child" in res.stderr


def test_tasks_validate_directory_json(tmp_path):
    res = termrl("tasks", "validate", str(BUILTIN / "shell-count-errors"), "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["tasks"]
    assert [(r["id"], r["category"], r["valid"]) for r in rows] == [("shell-count-errors", "shell", True)]
    assert rows[0]["reason"]


def test_tasks_validate_fails_on_a_broken_task(tmp_path):
    import shutil

    broken = tmp_path / "suite" / "broken"
    shutil.copytree(BUILTIN / "shell-count-errors", broken)
    (broken / "solution" / "solve.sh").write_text("echo 'I do nothing'\n")
    toml = broken / "task.toml"
    toml.write_text(toml.read_text().replace('id = "shell-count-errors"', 'id = "broken"'))
    malformed = tmp_path / "suite" / "malformed"
    shutil.copytree(BUILTIN / "shell-count-errors", malformed)
    (malformed / "task.toml").write_text('version = 1\ndifficulty = "impossible"\n')
    res = termrl("tasks", "validate", str(tmp_path / "suite"), "--json")
    assert res.returncode == 1
    rows = {r["id"]: r for r in json.loads(res.stdout)["tasks"]}
    assert rows["broken"]["valid"] is False and "reference solution fails" in rows["broken"]["reason"]
    assert rows["malformed"]["valid"] is False
    assert "task.toml" in rows["malformed"]["reason"] and "difficulty" in rows["malformed"]["reason"]


def test_unknown_suite_is_a_clear_error():
    res = termrl("tasks", "validate", "no-such-suite")
    assert res.returncode == 2 and "unknown suite" in res.stderr and "Traceback" not in res.stderr


def _stub_workspace(tmp_path, task_id: str, solved: bool) -> Path:
    """The task's initial workspace, optionally with the reference solution applied (bash, locally)."""
    import shutil

    ws = tmp_path / ("solved" if solved else "untouched")
    shutil.copytree(BUILTIN / task_id / "workspace", ws)
    if solved:
        subprocess.run(["bash", str(BUILTIN / task_id / "solution" / "solve.sh")], cwd=ws, check=True)
    return ws


def test_verify_json_reports_tests_and_error_classes(tmp_path):
    res = termrl("verify", "--task", "py-roman-numerals", "--workspace",
                 str(_stub_workspace(tmp_path, "py-roman-numerals", solved=False)), "--json")
    assert res.returncode == 1, res.stderr
    ev = json.loads(res.stdout)
    assert ev["passed"] is False and ev["verified"] is True
    # the stub raises NotImplementedError: no answer, classified as a wrong answer (taxonomy)
    assert ev["error_classes"] == ["wrong_answer"]
    assert ev["tests"] and all(t["outcome"] == "failed" for t in ev["tests"])
    assert {"boundary", "core"} <= {tag for t in ev["tests"] for tag in t["tags"]}
    res = termrl("verify", "--task", "py-roman-numerals", "--workspace",
                 str(_stub_workspace(tmp_path, "py-roman-numerals", solved=True)), "--json")
    ev = json.loads(res.stdout)
    assert res.returncode == 0 and ev["passed"] is True and ev["error_classes"] == []
    assert ev["stages"]["quality"]["status"] == "ok" and "complexity" in ev["stages"]["quality"]["data"]


def test_reward_explain_json_and_table(tmp_path):
    ws = _stub_workspace(tmp_path, "py-roman-numerals", solved=False)
    res = termrl("reward", "explain", "--task", "py-roman-numerals", "--workspace", str(ws),
                 "--spec", "coderl", "--json")
    data = json.loads(res.stdout)
    assert data["total"] == -0.3
    assert data["components"]["outcome"]["value"] == -0.3
    res = termrl("reward", "explain", "--task", "py-roman-numerals", "--workspace", str(ws),
                 "--spec", "staged", "--progress", "0.8")
    assert res.returncode == 0 and "complexity" in res.stdout and "lint" in res.stdout and "total" in res.stdout
    res = termrl("reward", "explain", "--task", "py-roman-numerals", "--workspace", str(ws),
                 "--spec", str(tmp_path / "missing.toml"))
    assert res.returncode == 2 and "missing.toml" in res.stderr and "Traceback" not in res.stderr


def test_a_pipe_gets_one_task_a_line_and_a_closed_pipe_ends_quietly():
    ids = [t["id"] for t in json.loads(termrl("tasks", "list", "builtin", "--json").stdout)["tasks"]]
    res = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m termrl tasks list builtin | head -3"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0 and res.stderr == ""
    assert [line.split("\t")[0].strip() for line in res.stdout.splitlines()] == ids[:3]
    assert len(termrl("tasks", "list", "builtin").stdout.splitlines()) == len(ids)  # one line a task, no more
    for json_flag in ([], ["--json"]):  # the reader is gone before termrl writes a byte
        proc = subprocess.Popen([sys.executable, "-m", "termrl", "tasks", "list", "builtin", *json_flag],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()
        assert proc.wait(timeout=300) == 0 and proc.stderr.read() == b"", json_flag


def test_help_shows_flags_without_a_value():
    res = termrl("tasks", "list", "--help")
    lines = {line.split()[1]: line for line in res.stdout.splitlines() if line.startswith("│ --")}
    assert "<bool>" not in res.stdout and set(lines) == {"--json", "--help"}
    spec = next(line for line in termrl("eval", "--help").stdout.splitlines() if "--spec" in line)
    assert "<str>" in spec  # an option that takes a value still says what


def test_generating_commands_start_with_one_malloc_arena():
    """glibc fixes its arena limit when a first thread needs an arena: eval and train restart once
    with MALLOC_ARENA_MAX=1 (CTranslate2's decoding otherwise page-faults its buffers every step)."""
    code = ("import os, sys; from termrl.cli import restart_with_malloc_arena\n"
            "restart_with_malloc_arena(sys.argv[1:]); print(os.environ.get('MALLOC_ARENA_MAX'))")
    clean = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "TERMRL_TUNE_MALLOC")}

    def arena(*args: str, **env: str) -> str:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                              check=True, env={**clean, **env}).stdout.strip()

    assert arena("eval", "--policy", "ct2:x") == "1" and arena("train", "c.toml") == "1"
    assert arena("tasks", "list") == "None"
    assert arena("eval", TERMRL_TUNE_MALLOC="0") == "None"
    assert arena("eval", MALLOC_ARENA_MAX="4") == "4"  # the user's own setting stands
