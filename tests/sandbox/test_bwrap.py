"""The bwrap sandbox's isolation and limits, each with a typed result and no leftover process."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from termrl.protocols import Limits, StopReason, Task, TaskFile
from termrl.sandbox.bwrap import RUNTIME_DIR, BwrapSandbox, _children
from termrl.tasks.runtime import open_sandbox


def strays(box: BwrapSandbox) -> set[int]:
    """Processes of the sandbox other than its shell."""
    return box._members() - box._shell_pids


@pytest.fixture
def box():
    with BwrapSandbox(workdir="/app", limits=Limits(memory_mb=256, pids=64, disk_mb=64,
                                                    output_bytes=1 << 20)) as b:
        yield b
    assert b._members() == set() or b._cg is None


def test_persistent_shell_keeps_cwd_and_variables(box):
    assert box.exec("mkdir -p sub && cd sub && export GREETING=hello").ok
    res = box.exec("pwd; echo $GREETING")
    assert res.stdout.split() == ["/app/sub", "hello"]
    assert res.stop is StopReason.EXITED


def test_separate_stdout_stderr_and_exit_code(box):
    res = box.exec("echo out; echo err >&2; (exit 7)")
    assert (res.stdout, res.stderr, res.exit_code) == ("out\n", "err\n", 7)


def test_exit_in_command_restarts_a_clean_shell(box):
    box.exec("export X=1")
    res = box.exec("exit 3")
    assert res.stop is StopReason.SHELL_DIED and res.exit_code == 3
    assert box.exec("echo ${X:-unset}; pwd").stdout.split() == ["unset", "/app"]


@pytest.mark.parametrize("broken", ['echo "unterminated', "echo 'unterminated", 'cat <<EOF\nx\nEOF\necho "a',
                                    "if true; then echo a", "echo $(date"])
def test_a_command_that_does_not_parse_leaves_the_shell_as_it_was(box, broken):
    assert box.exec("mkdir -p sub && cd sub && export KEEP=1").ok
    res = box.exec(broken)
    assert res.exit_code == 2 and res.stop is StopReason.EXITED and "unexpected" in res.stderr
    after = box.exec("if true; then pwd; fi; { echo ${KEEP:-lost}; }")  # reserved words first
    assert after.stop is StopReason.EXITED and after.stderr == ""
    assert after.stdout.split() == ["/app/sub", "1"]


def test_command_reading_stdin_cannot_swallow_the_protocol(box):
    res = box.exec("cat; echo after")
    assert res.stdout == "after\n" and res.ok
    assert box.exec("echo next").stdout == "next\n"


def test_no_network_not_even_host_loopback(box):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    server.settimeout(1.5)
    t = threading.Thread(target=lambda: accepted.append(_try_accept(server)))
    t.start()
    res = box.exec(f"python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), timeout=2)\"")
    t.join()
    server.close()
    assert res.exit_code != 0 and "ConnectionRefused" in res.stderr
    assert accepted == [False]
    res = box.exec("python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\"")
    assert res.exit_code != 0
    assert strays(box) == set()


def _try_accept(server: socket.socket) -> bool:
    try:
        server.accept()
        return True
    except OSError:
        return False


def test_writes_outside_the_workspace_fail(box):
    for path in ("/usr/evil", "/etc/evil", "/evil", "/bin/evil"):
        res = box.exec(f"touch {path}")
        assert res.exit_code != 0, path
    assert box.exec("touch /app/ok /tmp/ok ~/ok").ok
    assert not Path("/usr/evil").exists() and not Path("/etc/evil").exists()


def test_hidden_tests_solution_and_host_files_are_unreadable(tmp_path):
    secret = "hidden-test-marker-8137"
    task = Task(id="t", instruction="x", workdir="/app",
                workspace={"main.py": TaskFile(b"print(1)\n")},
                tests={"test_secret.py": TaskFile(f"# {secret}\ndef test_x(): pass\n".encode())},
                solution=f"echo {secret}\n")
    (tmp_path / "host-secret.txt").write_text(secret)
    box = open_sandbox(task)
    try:
        probes = [f"grep -rs {secret} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr 2>/dev/null | head -3",
                  "ls /tests /solution", f"cat {tmp_path}/host-secret.txt", "ls /work", "ls /root/.pyenv",
                  f"ls {RUNTIME_DIR}", "cat /etc/shadow", f"ls {Path(__file__).parent}"]
        for probe in probes:
            res = box.exec(probe)
            assert secret not in res.stdout, probe
            assert res.stdout.strip() == "" or probe.startswith("grep"), (probe, res.stdout)
        assert box.exec("cat main.py").stdout == "print(1)\n"
    finally:
        box.close()


def test_harness_environment_is_invisible(box, monkeypatch):
    monkeypatch.setenv("TERMRL_TEST_API_KEY", "sk-should-not-leak")
    other = BwrapSandbox()
    try:
        out = other.exec("env").stdout
    finally:
        other.close()
    assert "sk-should-not-leak" not in out and "TERMRL_TEST_API_KEY" not in out
    assert "PATH=/usr/local/sbin:" in out
    # nor in the environment of the sandbox's PID 1 (bubblewrap itself), readable inside
    other = BwrapSandbox()
    try:
        init_env = other.exec("tr '\\0' '\\n' < /proc/1/environ").stdout
        fresh_env = other.run("tr '\\0' '\\n' < /proc/1/environ").stdout
    finally:
        other.close()
    for text in (init_env, fresh_env):
        assert "sk-should-not-leak" not in text and "TERMRL_TEST_API_KEY" not in text
        assert "HOME=/root/" not in text and "OLDPWD" not in text


def test_infinite_loop_times_out(box):
    res = box.exec("while :; do :; done", timeout=0.5)
    assert res.stop is StopReason.TIMEOUT and res.timed_out
    res = box.exec("sleep 60", timeout=0.5)
    assert res.stop is StopReason.TIMEOUT and res.exit_code == 137
    assert strays(box) == set()
    assert box.exec("echo alive").stdout == "alive\n"


def test_fork_bomb_is_contained(box):
    res = box.exec("bash -c ':(){ :|:& };:'; sleep 2", timeout=5)
    assert res.stop in (StopReason.EXITED, StopReason.TIMEOUT)
    assert strays(box) == set()
    assert box.exec("echo alive").stdout == "alive\n"


def test_memory_hog_is_killed_inside_its_limit(box):
    res = box.exec("python3 -c 'b = bytearray(600 * 2**20); print(len(b))'")
    assert res.stop is StopReason.MEMORY and res.exit_code == 137
    assert "629145600" not in res.stdout
    assert strays(box) == set()


def test_daemons_do_not_survive_the_command(box):
    res = box.exec("setsid sleep 300 & (sleep 301 &) ; nohup sleep 302 >/dev/null 2>&1 & echo started")
    assert res.ok and res.stdout == "started\n"
    assert res.killed_processes >= 3
    assert strays(box) == set()
    assert "sleep" not in box.exec("ps -eo comm").stdout


def test_huge_output_is_cut_and_stopped(box):
    res = box.exec("head -c 1000000000 /dev/zero | tr '\\0' x", timeout=60)
    assert res.stop is StopReason.OUTPUT_LIMIT and res.output_truncated
    assert len(res.stdout) <= (1 << 20)
    assert res.duration_s < 30
    assert strays(box) == set()
    assert box.exec("echo alive").stdout == "alive\n"


def test_workspace_disk_is_limited(box):
    res = box.exec("head -c 100000000 /dev/zero > big")
    assert res.exit_code != 0 and "No space left" in res.stderr
    box.exec("rm -f big")


def test_read_file_does_not_follow_symlinks_out_of_the_sandbox(box, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    box.exec(f"ln -s {secret} link")
    with pytest.raises(FileNotFoundError):
        box.read_file("link")
    box.write_file("data.txt", b"abc")
    assert box.read_file("/app/data.txt") == b"abc"


def test_run_is_a_fresh_process_with_mounts(box):
    box.exec("cd /tmp && export AGENT_VAR=1 && echo planted > ~/.bashrc")
    res = box.run("pwd; echo ${AGENT_VAR:-none}; ls -A ~; cat /tests/t.txt",
                  mounts={"/tests": {"t.txt": TaskFile(b"T")}})
    assert res.stdout.split() == ["/app", "none", "T"]
    assert "/tests" not in box.exec("ls /").stdout.split()


def test_close_is_idempotent_and_leaves_nothing():
    box = BwrapSandbox()
    box.exec("sleep 100 &")
    root = box._root
    box.close()
    box.close()
    assert not root.exists()
    assert box._members() == set()


def test_close_kills_the_namespace_init_first_so_no_orphan_is_left_to_the_host():
    """bwrap's PID-namespace init is killed before bwrap: bwrap reaps it. The other way round the
    init is orphaned and waits as a zombie for the host's pid 1 (forever where pid 1 does not reap)."""
    box = BwrapSandbox()
    box.exec("true")
    inits = _children(box._proc.pid)
    assert inits
    box.close()
    for pid in inits:
        assert not Path(f"/proc/{pid}").exists(), f"the namespace's init {pid} outlived its sandbox"


def test_runs_as_unprivileged_host_user_when_root(box):
    if os.geteuid() != 0:
        pytest.fail("the CI runs as root; this test checks the root-harness path")
    res = box.exec("sleep 5 & cat /proc/$!/status | grep '^Uid'")
    uid_inside = res.stdout.split()[1]
    assert uid_inside == "0"
    pids = strays(box) or set()
    box.exec("true")
    for pid in box._shell_pids:
        status = Path(f"/proc/{pid}/status").read_text()
        if "bash" in Path(f"/proc/{pid}/comm").read_text():
            assert status.split("Uid:")[1].split()[0] == "65534"
    assert pids is not None


def test_a_sandbox_whose_empty_cgroups_another_harness_swept_makes_them_again():
    """A new shell starts into cgroups that are empty for an instant; another harness's sweep
    (with another sandboxes' folder) may remove them then. The sandbox makes them again."""
    box = BwrapSandbox(limits=Limits(memory_mb=256, pids=64))
    try:
        box.exec("true")
        if box._cg is None:
            pytest.fail("the CI has cgroup v1 memory and pids: this test checks that path")
        box._kill_all()
        for d in box._cg.dirs.values():
            d.rmdir()  # what cgroups.sweep does to an empty cgroup it does not know
        box._spawn_shell()
        res = box.exec("echo ok")
        assert res.stdout == "ok\n" and box._members() and (box._cg.dirs["pids"] / "pids.max").read_text().strip() == "64"
    finally:
        box.close()


def test_another_harness_sweep_leaves_alone_the_cgroups_of_a_sandbox_it_is_starting(monkeypatch):
    """A soak's sandbox failed to start ("cannot create .../cgroup.procs") when a test suite
    started meanwhile swept its just-made, still empty cgroups: young ones are kept now."""
    import secrets

    from termrl.sandbox import cgroups

    if not cgroups.available():
        pytest.fail("the CI has cgroup v1 memory and pids: this test checks that path")
    name = f"sbx-sweep-{secrets.token_hex(4)}"
    pair = cgroups.CgroupPair(name, 256 << 20, 16)  # empty, as between mkdir and the shell's start
    try:
        def others() -> set[str]:  # every other cgroup stays out of this test's sweep
            return {d.name for c in ("memory", "pids") for d in (cgroups.ROOT / c / cgroups.PARENT).iterdir()} - {name}

        cgroups.sweep(alive=others())
        assert all(d.is_dir() for d in pair.dirs.values()), "a cgroup made an instant ago was swept"
        monkeypatch.setattr(cgroups, "YOUNG_S", 0.0)  # now it is a leftover of a killed run
        cgroups.sweep(alive=others())
        assert not any(d.exists() for d in pair.dirs.values())
    finally:
        pair.remove()


def test_a_cgroup_whose_killed_processes_die_late_is_removed_once_they_are_gone():
    """Under load a killed sandbox's processes can outlast ``close()``'s short wait; their cgroups
    were then left to a later start's sweep (the red-team tier saw them beside a quickstart).
    A reaper thread now removes them once empty."""
    import secrets
    import subprocess

    from termrl.sandbox import cgroups

    if not cgroups.available():
        pytest.fail("the CI has cgroup v1 memory and pids: this test checks that path")
    pair = cgroups.CgroupPair(f"sbx-late-{secrets.token_hex(4)}", 256 << 20, 16)
    slow = subprocess.Popen(["sleep", "1"])  # stands in for a process that takes a second to die
    try:
        for procs in pair.procs_files:
            Path(procs).write_text(str(slow.pid))
        pair.remove_when_empty(wait_s=0.05)
        assert all(d.is_dir() for d in pair.dirs.values()), "removed while a process was still in it"
        slow.wait(timeout=10)
        deadline = time.monotonic() + 5
        while any(d.exists() for d in pair.dirs.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(d.exists() for d in pair.dirs.values()), "the emptied cgroups stayed"
    finally:
        slow.kill()
        slow.wait()
        pair.remove()
