"""The red-team suite: every attack of ``attacks.ATTACKS`` run as an agent's command, once through
``termrl sandbox run`` and once as a step of a ``TerminalEnv`` episode, and checked from the host:

- contained: the attack reports no ``ESCAPE``, the host's loopback services (TCP, UDP, an abstract
  unix socket) saw no client, host files are unchanged and no file appeared outside the sandbox;
- the harness returns: a typed result within the limit (the CLI's JSON, the episode's ending),
  and in an episode the next command runs and the submission is verified as usual;
- nothing leaks: the secret (in a file in the host's /root and /tmp, in the harness's environment,
  in a decoy host process's argv and environment, in the hidden tests) is in no output;
- nothing is left behind: no process carrying the attack's mark, no sandbox directory, cgroup or
  mount, no zombie.

Concurrent sandboxes are attacked by each other in ``test_concurrent_sandboxes_cannot_reach_each_other``.
The threat model in ``termrl/sandbox/__init__.py`` lists which test covers which class.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from termrl.actions import render_tool_call
from termrl.env import EnvConfig, TerminalEnv
from termrl.protocols import Action, ActionKind, Ending, Limits, Task, TaskFile
from termrl.sandbox import bwrap, cgroups
from termrl.sandbox.bwrap import RUNTIME_DIR, BwrapSandbox
from tests.redteam.attacks import ATTACKS, CLASSES, Attack, fill

pytestmark = [pytest.mark.sandbox, pytest.mark.redteam]

PROJECT = Path(__file__).resolve().parents[2]
WATCHED_HOST_PATHS = ["/usr/termrl-rt-written", "/usr/local/bin/termrl-rt-written", "/etc/termrl-rt-written",
                      "/etc/termrl-rt", "/etc/cron.d/termrl", "/tmp/cron-ran", "/tmp/x", "/opt/termrl-rt-written",
                      "/var/termrl-rt-written"]
HASHED_HOST_FILES = ["/etc/passwd", "/etc/hostname", "/proc/sys/kernel/sysrq", "/proc/sys/kernel/core_pattern",
                     "/proc/sys/net/ipv4/ip_forward", "/proc/sys/kernel/hostname"]


@dataclass
class Host:
    """What the attacks aim at, on the host side, and what they must not change."""

    token: str
    values: dict[str, str]
    secret_files: list[Path]
    host_tmp: Path
    runtime: Path
    """The sandboxes' directory for this suite's harnesses (``TERMRL_SANDBOX_DIR``): what other
    harnesses on the machine do at the same time is not counted."""
    hits: dict[str, int] = field(default_factory=lambda: {"tcp": 0, "udp": 0, "abstract": 0})

    def state(self) -> dict:
        return {"hits": dict(self.hits),
                "secrets": {str(p): p.read_bytes() for p in self.secret_files},
                "host_tmp": sorted(os.listdir(self.host_tmp)),
                "watched": [p for p in WATCHED_HOST_PATHS if os.path.lexists(p)],
                "hashed": {p: _digest(p) for p in HASHED_HOST_FILES},
                "sandbox_dirs": sorted(os.listdir(self.runtime)) if self.runtime.is_dir() else [],
                "cgroups": _cgroups(), "mounts": _mounts(self.runtime), "zombies": _zombies()}


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _cgroups() -> set[str]:
    return {p.name for c in ("memory", "pids") for p in (cgroups.ROOT / c / cgroups.PARENT).glob("*") if p.is_dir()}


def _live_sandboxes() -> set[str]:
    """Sandboxes whose folder exists, in any harness's sandboxes' folder on this machine (the
    default one, this suite's, a bench's): a sandbox's cgroups live only while its folder does."""
    folders = {RUNTIME_DIR, bwrap.RUNTIME_DIR, *Path(tempfile.gettempdir()).glob("termrl*sandboxes*")}
    return {p.name for d in folders if d.is_dir() for p in d.iterdir()}


def _mounts(runtime: Path) -> list[str]:
    """Host mount points in the sandboxes' directory (each sandbox's tmpfs while it lives)."""
    root = str(runtime)
    return sorted(line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                  if line.split()[4].startswith(root))


def _zombies() -> int:
    """Zombies the host must reap: children of the host's pid 1 or of this test process, other
    than bwrap's own. A sandbox process that escaped its PID namespace's teardown would be one;
    zombies inside a live sandbox (another harness's fork bomb) are its namespace's business.
    (bwrap exits as soon as it has the command's exit status, before its namespace's init is
    reaped, so that init passes through the host's pid 1: see the threat model.)"""
    count = 0
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                comm = (p / "comm").read_text().strip()
                fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            count += fields[0] == "Z" and comm != "bwrap" and int(fields[1]) in (1, os.getpid())
    return count


def marked(mark: str) -> list[int]:
    """Host processes whose environment carries ``mark``: what an attack left running."""
    found = []
    needle = f"RT_MARK={mark}".encode()
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if needle in (p / "environ").read_bytes():
                    found.append(int(p.name))
            except OSError:
                continue
    return found


def _serve_tcp(host: Host, server: socket.socket) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        host.hits["tcp" if server.family != socket.AF_UNIX else "abstract"] += 1
        try:
            conn.sendall(host.token.encode())
        finally:
            conn.close()


def _serve_udp(host: Host, server: socket.socket) -> None:
    while True:
        try:
            server.recvfrom(100)
        except OSError:
            return
        host.hits["udp"] += 1


@pytest.fixture(scope="module")
def host(tmp_path_factory, monkeypatch_module):
    token = "RTSECRET" + secrets.token_hex(12)
    name = "termrl-rt-" + secrets.token_hex(4)
    secret_dir = tmp_path_factory.mktemp("rt-secret")
    host_tmp = tmp_path_factory.mktemp("rt-must-stay-empty")
    runtime = Path(tempfile.mkdtemp(prefix="termrl-rt-sandboxes-"))  # beside the default one: the
    runtime.chmod(0o711)  # sandbox's user (nobody) must reach its own folders in there
    monkeypatch_module.setenv("TERMRL_SANDBOX_DIR", str(runtime))  # the CLI's sandboxes
    monkeypatch_module.setattr(bwrap, "RUNTIME_DIR", runtime)  # this process's
    files = [secret_dir / name]
    root_secret = Path("/root") / name
    try:
        root_secret.write_text(token)
        files.append(root_secret)
    except OSError:
        pass  # not root: the /root attack still runs, the sandbox's /root is its own either way
    files[0].write_text(token)
    monkeypatch_module.setenv("TERMRL_RT_SECRET", token)  # the harness's environment never enters a sandbox

    tcp = socket.create_server(("127.0.0.1", 0))
    tcp6 = None
    if socket.has_ipv6:
        try:
            tcp6 = socket.create_server(("::1", tcp.getsockname()[1]), family=socket.AF_INET6)
        except OSError:
            pass
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    abstract_name = "termrl-rt-" + secrets.token_hex(6)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen()
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", "decoy", token],
                             env={**os.environ, "RT_DECOY": token})
    values = {"TCP_PORT": str(tcp.getsockname()[1]), "UDP_PORT": str(udp.getsockname()[1]),
              "ABSTRACT": abstract_name, "SECRET_NAME": name, "SECRET_DIR": str(secret_dir),
              "PROJECT": str(PROJECT), "HOST_TMP": str(host_tmp), "DECOY_PID": str(decoy.pid),
              "HARNESS_PID": str(os.getpid())}
    h = Host(token=token, values=values, secret_files=files, host_tmp=host_tmp, runtime=runtime)
    servers = [s for s in (tcp, tcp6, abstract) if s is not None]
    for s in servers:
        threading.Thread(target=_serve_tcp, args=(h, s), daemon=True).start()
    threading.Thread(target=_serve_udp, args=(h, udp), daemon=True).start()
    try:
        yield h
    finally:
        decoy.kill()
        decoy.wait()
        for s in servers + [udp]:
            s.close()
        root_secret.unlink(missing_ok=True)
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def script_of(attack: Attack, host: Host, mark: str) -> str:
    return f"export RT_MARK={mark}\n" + fill(attack.script, host.values)


def assert_clean(host: Host, before: dict, mark: str, *outputs: str) -> None:
    """The host-side half of every attack's check."""
    text = "\n".join(outputs)
    assert host.token not in text, "the secret leaked into the output"
    # an attack's own report starts a line (a killed job's echoed source text does not)
    escapes = [line for line in text.splitlines() if line.lstrip().startswith("ESCAPE:")]
    assert not escapes, escapes
    deadline = time.monotonic() + 5
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked(mark) == [], "processes of the attack outlived it"

    def leaked_cgroups(after):
        """Cgroups that appeared and belong to no live sandbox (other harnesses' come and go)."""
        return after["cgroups"] - before["cgroups"] - _live_sandboxes()

    def settled(after):
        rest = [k for k in before if k not in ("zombies", "cgroups")]
        return (all(after[k] == before[k] for k in rest) and after["zombies"] <= before["zombies"]
                and not leaked_cgroups(after))

    # a closing sandbox may still be tearing down; and bwrap exits before its namespace's init
    # is reaped, so that init passes through the host's pid 1 (see the threat model)
    after = host.state()
    deadline = time.monotonic() + 15
    while not settled(after) and time.monotonic() < deadline:
        time.sleep(0.2)
        after = host.state()
    assert after["zombies"] <= before["zombies"], "the attack left zombies on the host"
    assert not leaked_cgroups(after), "the attack's cgroups outlived its sandbox"
    for key in before.keys() - {"zombies", "cgroups"}:
        assert after[key] == before[key], f"{key} changed on the host: {before[key]!r} -> {after[key]!r}"


def test_the_catalogue_is_large_and_covers_every_class():
    assert len(ATTACKS) >= 40 and len({a.name for a in ATTACKS}) == len(ATTACKS)
    assert {a.cls for a in ATTACKS} == set(CLASSES)
    assert all(a.proves for a in ATTACKS)


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_through_termrl_sandbox_run(attack, host):
    mark = f"cli-{attack.name}-{secrets.token_hex(3)}"
    before = host.state()
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "termrl", "sandbox", "run", "--json", "--timeout", str(attack.timeout),
                          "--memory-mb", "512", "--", script_of(attack, host, mark)],
                         capture_output=True, text=True, timeout=attack.timeout + 120)
    wall = time.monotonic() - started
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    result = json.loads(res.stdout)  # a typed result, whatever the command did
    assert wall < attack.timeout + 60
    if attack.times_out and not attack.protocol:
        assert result["timed_out"] or result["stop"] != "exited", result
    assert len(result["stdout"]) + len(result["stderr"]) <= (1 << 20) + 4096  # the output budget held
    assert "\x1b" not in res.stdout  # control sequences come back escaped, never raw
    assert_clean(host, before, mark, result["stdout"], result["stderr"], res.stderr)


HIDDEN_TEST = """# {token}: a hidden test's secret, never readable while the agent works
from pathlib import Path


def test_greeting():
    assert Path("greeting.txt").read_text() == "hello\\n"
"""

CHECK = ("sleep 0.3; echo hello > greeting.txt; a=$(cat *.log 2>/dev/null | wc -c); sleep 0.5; "
         "b=$(cat *.log 2>/dev/null | wc -c); [ \"$a\" = \"$b\" ] || echo 'ESCAPE: a daemon still writes'; "
         "echo alive-$((40+2)); cat greeting.txt")


def cmd(command: str) -> str:
    return render_tool_call(Action(ActionKind.COMMAND, command=command))


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_as_an_episode_step(attack, host):
    mark = f"env-{attack.name}-{secrets.token_hex(3)}"
    task = Task(id="redteam", instruction="Write hello into greeting.txt.", workdir="/app",
                workspace={"notes.md": TaskFile(b"# notes\n")},
                tests={"test_rt_hidden.py": TaskFile(HIDDEN_TEST.format(token=host.token).encode())},
                limits=Limits(memory_mb=512, pids=128, disk_mb=512))
    before = host.state()
    env = TerminalEnv(EnvConfig(max_steps=5, command_timeout_s=attack.timeout))
    started = time.monotonic()
    try:
        env.reset(task)
        attack_obs, *_ = env.step(cmd(script_of(attack, host, mark)))
        if attack.recover:
            env.step(cmd(attack.recover))
        check_obs, *_ = env.step(cmd(f"export RT_MARK={mark}; ulimit -S -n 1024 -f unlimited -v unlimited 2>/dev/null;"
                                     + CHECK))
        _, reward, term, trunc, info = env.step(render_tool_call(Action(ActionKind.SUBMIT)))
    finally:
        env.close()
    wall = time.monotonic() - started
    assert wall < attack.timeout + 90
    assert term and info["ending"] is Ending.SUBMITTED, info
    assert "alive-42" in check_obs and "hello" in check_obs, check_obs  # the shell works after the attack
    if attack.times_out:
        assert env.steps[0].timed_out or "timeout" in attack_obs or "stopped" in attack_obs, attack_obs
    evidence = info["evidence"]
    assert evidence.passed, evidence  # no daemon rewrote the answer, verification ran as usual
    observations = [s.observation for s in env.steps]
    assert_clean(host, before, mark, *observations)


def test_a_daemon_cannot_change_the_answer_during_verification(host):
    """The agent's last command leaves a daemon that rewrites the answer every 50 ms: verification
    runs on the workspace as it was when the agent submitted."""
    task = Task(id="redteam", instruction="Write hello into greeting.txt.", workdir="/app",
                tests={"test_rt_hidden.py": TaskFile(HIDDEN_TEST.format(token=host.token).encode())})
    mark = f"verify-{secrets.token_hex(3)}"
    with TerminalEnv(EnvConfig(max_steps=3)) as env:
        env.reset(task)
        env.step(cmd(f"export RT_MARK={mark}; echo hello > greeting.txt; "
                     "setsid sh -c 'sleep 0.2; while :; do echo bye > greeting.txt; sleep 0.05; done' "
                     ">/dev/null 2>&1 & echo started"))
        *_, info = env.step(render_tool_call(Action(ActionKind.SUBMIT)))
    assert info["evidence"].passed and marked(mark) == []


def test_concurrent_sandboxes_cannot_reach_each_other(host):
    """Two sandboxes at once: the attacker lists processes, kills everything it sees, searches for
    the other's files, connects to the other's loopback server and writes into its /tmp; the
    victim's long command finishes untouched."""
    port = 47811
    victim_cmd = ("echo victim-file > /tmp/victim-marker; touch victim-marker-ws; "
                  f"python3 -c \"import socket,time; s=socket.create_server(('127.0.0.1', {port})); "
                  "s.settimeout(6); c=None\ntry:\n    c,_=s.accept(); print('ESCAPE: the attacker connected')\n"
                  "except OSError: pass\" & sleep 6; wait; cat /tmp/victim-marker; ls /tmp; echo victim-done")
    attack_cmd = (f"sleep 1; ps -eo pid,args; for p in /proc/[0-9]*; do grep -l victim $p/cmdline 2>/dev/null "
                  f"| sed 's/^/ESCAPE: sees /'; done; find / -name 'victim-marker*' -not -path '/proc/*' "
                  f"2>/dev/null | sed 's/^/ESCAPE: found /'; python3 -c \"import socket\n"
                  f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=1); print('ESCAPE: connected')\n"
                  "except OSError as e: print('refused', e)\"; echo attacker > /tmp/victim-marker; "
                  "kill -9 -1; echo attacker-done")
    limits = Limits(memory_mb=256, pids=64, disk_mb=64)
    results = {}
    with BwrapSandbox(workdir="/app", limits=limits) as victim, BwrapSandbox(workdir="/app", limits=limits) as attacker:
        def run_victim():
            results["victim"] = victim.exec(victim_cmd, timeout=30)

        t = threading.Thread(target=run_victim)
        t.start()
        results["attacker"] = attacker.exec(attack_cmd, timeout=30)
        t.join()
        after = victim.exec("ls /tmp; echo still-here", timeout=10)
    v, a = results["victim"], results["attacker"]
    assert "attacker-done" in a.stdout + a.stderr or a.exit_code != 0
    assert "ESCAPE" not in a.stdout + a.stderr + v.stdout + v.stderr, (a.stdout, v.stdout)
    assert v.ok and "victim-done" in v.stdout and "victim-file" in v.stdout, (v.stdout, v.stderr)
    assert "still-here" in after.stdout and "victim-marker" in after.stdout


def test_concurrent_cli_sandboxes_cannot_kill_each_other(host):
    mark = f"pair-{secrets.token_hex(3)}"
    victim = subprocess.Popen([sys.executable, "-m", "termrl", "sandbox", "run", "--json", "--timeout", "30", "--",
                               f"export RT_MARK={mark}; sleep 6; echo victim-done"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    attacker = subprocess.run([sys.executable, "-m", "termrl", "sandbox", "run", "--json", "--", "kill -9 -1; "
                               "pkill -9 sleep; pkill -9 -f victim; echo done"], capture_output=True, text=True,
                              timeout=60)
    out, _ = victim.communicate(timeout=60)
    assert json.loads(attacker.stdout)["exit_code"] is not None
    assert json.loads(out)["stdout"].strip() == "victim-done"
    assert marked(mark) == []
