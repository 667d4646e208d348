"""Sandboxes: where the agent's commands and the hidden tests run.

Backends: ``bwrap`` (default, daemonless), ``docker`` (when a daemon answers),
``local`` (NO isolation, debugging only).

Threat model of the ``bwrap`` backend
-------------------------------------
The adversary is the policy being trained: it writes arbitrary commands and
code, and it is rewarded for passing tests, so it will try to read the tests,
tamper with them, or escape its limits. It is not assumed to hold kernel
exploits.

Isolated (enforced by the kernel, tested in tests/sandbox/):

- Identity: when the harness is root, every sandbox process runs as the
  host's ``nobody`` (uid 65534), seen as uid 0 inside a user namespace, and
  cannot create further user namespaces. It holds Docker's default
  capabilities inside that namespace only (``NAMESPACE_CAPS``): they act on the
  sandbox's own files, never on host files, whose owners are not mapped. Host
  files readable only by root (/etc/shadow, /root) stay unreadable.
- Filesystem: a fresh root with the host's /usr and /etc read-only; a private
  writable workdir (at the path the task expects, e.g. /app), /tmp and HOME
  (/root), on a tmpfs of ``disk_mb``. Nothing else of the host is mounted: not
  the host's home, not /work, not the project, not other sandboxes, not the
  hidden tests or the reference solution (those exist only on the harness
  side until verification, and verification runs in a fresh process).
- Network: a private network namespace with only its own loopback; the host's
  loopback services are unreachable.
- Processes: a private PID namespace; bubblewrap's --die-with-parent and
  --new-session (no TIOCSTI into the harness's terminal). Every process joins
  the sandbox's cgroups, so after each command every process it left behind
  (background jobs, setsid daemons, double forks) is killed.
- Limits: wall time per command; memory of all processes together (cgroup,
  OOM-killed inside the sandbox); number of processes (cgroup pids.max, so a
  fork bomb stalls in place); output bytes kept per command (the command is
  stopped past the budget); workspace disk (tmpfs size).
- Environment: built from scratch (``BASE_ENV``); the harness's variables, API
  keys among them, never enter.

- The grader (pytest's process, its report): out of the agent code's reach
  (``termrl.verify.harness.isolate``). Modules the hidden tests import from a
  writable place run in a separate worker interpreter; the test process sees
  plain data and handles, never the agent's objects, so code under test cannot
  patch pytest's reports, read the test's frames, or hand over an always-equal
  object. The report is signed with a key that exists only in the test
  process (taken out of its environment before any agent code runs; the
  process is non-dumpable, and bwrap reads its options from a memory file, so
  /proc/1/cmdline shows none); a report written by anything else fails the
  check and the run is ``grader_tampering``. Every run also carries canary
  tests (one must pass, one must fail). Tested in tests/verify/test_isolate.py
  and tests/verify/test_canary.py.

Attacked by the red-team suite (``tests/redteam``, ``pytest -m redteam``, run by ``.ci/run``):
64 attack programs, each run through ``termrl sandbox run`` and as a step of a ``TerminalEnv``
episode, each checked from the host (a secret planted in the host's /root and /tmp, in the
harness's environment, in a decoy host process's argv and environment and in the hidden tests
is in no output; host loopback services see no client; host files are unchanged; no process,
sandbox directory, cgroup or mount is left; in an episode the next command runs and the
submission verifies as usual). By class (``tests/redteam/attacks.py`` names each attack and
what it proves):

- network: host loopback over TCP, ::1 and UDP; outside addresses (gateway, public DNS, cloud
  metadata); DNS; raw and packet sockets; the host's abstract unix sockets; host daemons'
  socket files.
- host files: the host's /root, /tmp, /home, /work and this checkout; a search of the whole
  tree for a planted secret's name; the hidden tests while the agent works; /proc/1 and every
  /proc/PID (the harness, a decoy); /sys and the host's cgroups; the shell's descriptors; raw
  devices; /etc/shadow.
- writes outside the workspace: /usr, /etc, /bin, /lib; bind, tmpfs and proc mounts and
  remounts; device nodes; /proc/sys and sysrq; symlinks and hard links toward host paths
  (also through the harness's later reads of the workspace); tar and zip members with ../,
  absolute paths and links.
- privilege: setuid programs, nested user namespaces, other namespaces and pivot_root,
  ptrace and signals to host pids, capabilities held, kernel modules, kexec and BPF.
- resources: fork bomb, memory, disk of the workspace and of /tmp, a 200 GB sparse file,
  inode exhaustion, 64 MB of binary output, an endless line, CPU spin, a sleep past the limit,
  zombie floods, descriptor exhaustion.
- persistence: setsid/nohup daemons, double forks, disowned jobs, at/cron/systemd timers; a
  daemon that rewrites the answer while verification runs
  (``test_a_daemon_cannot_change_the_answer_during_verification``).
- the shell: closing stdin/stdout/stderr, ``exec`` replacing it, ``exit``, ``kill -9 $$``,
  ``kill -9 -1``, terminal escape sequences, TIOCSTI, ``ulimit``, ignored signals, a command
  that blocks without reading its input, a 4 MB environment variable, functions named like
  the protocol's commands (``:``, ``eval``, ``printf``, ``disown``, ``command``, ``builtin``).
- interference between concurrent sandboxes: one lists, kills (``kill -9 -1``, ``pkill``),
  searches, connects to and writes into another while it runs
  (``test_concurrent_sandboxes_cannot_reach_each_other``,
  ``test_concurrent_cli_sandboxes_cannot_kill_each_other``).

What the suite found, and what changed:

- A fork bomb (``:(){ :|:& };:``) defines a shell function named ``:``, and every command
  line the harness sent started with ``:``: the bomb went off again before each later
  command. The protocol's line now starts with an assignment and calls ``builtin eval`` and
  ``builtin printf`` (``termrl.sandbox.shell.command_line``).
- Killing a fork bomb's processes raced its forks; ``pids.max`` is now 0 while the harness
  kills (``CgroupPair.no_forks``).
- A sandbox closed from outside used to kill bwrap before its PID namespace's init,
  orphaning that init (a zombie under the host's pid 1 per closed sandbox); the init is now
  killed first, so the kernel tears the namespace down and bwrap reaps it.

Not isolated, or weaker:

- Grading is out of reach only for code the tests *import*: tests that read
  the agent's source and ``exec`` it, or run it with ``runpy``, run it in
  the test process (the canaries and the grader detectors are the net there).
  Programs the tests run as subprocesses were always outside.
- The hidden tests are out of reach of the code under test while they run
  (``termrl.verify.harness.confine``, Linux Landlock): the worker and every program a
  test starts through ``subprocess`` can neither read, list nor change the
  test folders or the report's folder (a test's own programs, in the test
  folder, excepted; a test file a test names on a program's command line
  stays readable to that program). Not covered: programs a test starts with
  ``os.posix_spawn``, ``os.fork`` or ``pty.spawn``; the agent's programs that
  one of the tests' own programs runs in turn (it runs free, and so do its
  children); a Terminal-Bench or Harbor task's own test script and what it
  runs outside pytest; kernels without Landlock (before 5.13) or containers
  whose seccomp profile refuses it, where ``TestsData.tests_hidden`` is False
  and the detectors (``out_of_bounds``, ``grader_access``) and impossible
  variants are the net. How often real tasks meet these (600 and 400 tasks
  drawn from zjysteven/terminal-bench-env, 2026-12-05): no ``test.sh`` of
  400 runs anything but pytest and its set-up, no ``test_outputs.py`` of 600
  ``exec``s the agent's source or uses ``runpy`` (8 ``compile`` it without
  running it); 13 of 600 import it (by path, or with its folder put on
  ``sys.path``: both isolated), 116 use ``subprocess`` (confined).

- The kernel is shared (no seccomp filter beyond bubblewrap's defaults): a
  kernel exploit escapes. Use the docker backend with gVisor, or VMs, for
  adversaries with exploits.
- /usr and /etc of the host are readable (world-readable files only, when the
  harness is root). Do not keep secrets in world-readable files there.
- CPU time is not capped, only wall time; two sandboxes compete for cores.
- Without root on the host: no cgroups (memory and process limits are not
  enforced; strays are found by PID namespace instead) and no tmpfs (no disk
  limit), and the sandbox runs as the harness's own uid.
- bwrap exits as soon as it has the command's exit status, before its PID namespace's init
  is reaped; that init (a zombie for an instant) is reaped by the host's pid 1. Under a pid 1
  that does not reap (some containers), run termrl under an init (``docker run --init``,
  tini), or these zombies accumulate, one per command.
- An agent can break its own shell (``ulimit -u 1``, a 4 MB exported variable, a full disk):
  the harness returns a typed result for every later command, and ``exit`` gives the agent a
  clean shell; the disk stays full until the agent frees it.
- The persistent shell is the agent's: what it reports (a command's exit code, its output)
  can be forged by the agent (``exec`` a program that answers the protocol). Nothing that
  decides a reward trusts it except the ``command_success`` process reward, which ``|| true``
  games anyway: never weight it alone. Verification runs in a fresh process.
- Observations carry a command's output as text, control characters included: whatever prints
  them to a terminal must escape them (``termrl sandbox run --json`` does; its plain mode
  writes the command's bytes as they came, like ``docker run``).
- ``--die-with-parent`` follows the thread that created the sandbox: create,
  use and close a sandbox from one thread.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Mapping, Sequence

from termrl.protocols import Limits, Sandbox
from termrl.sandbox.bwrap import BwrapSandbox
from termrl.sandbox.docker import DockerSandbox
from termrl.sandbox.local import LocalSandbox

BACKENDS = ("bwrap", "docker", "local")


def make_sandbox(backend: str = "bwrap", workdir: str = "/workspace", limits: Limits = Limits(),
                 dirs: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 command_timeout: float = 120.0, binds: Mapping[str, str] | None = None,
                 system_root: str | None = None) -> Sandbox:
    """Create (not start) a sandbox of the given backend. ``binds``: {sandbox path: host
    directory} mounted read-only (a task's built environment); ``system_root``: a folder whose
    ``usr`` and ``etc`` replace the host's (a task's system layer). Both bwrap only."""
    if (binds or system_root) and backend != "bwrap":
        raise ValueError(f"the {backend} backend cannot mount a task's built environment: use bwrap")
    if backend == "bwrap":
        return BwrapSandbox(workdir=workdir, limits=limits, dirs=dirs, env=env,
                            command_timeout=command_timeout, binds=binds, system_root=system_root)
    if backend == "local":
        return LocalSandbox(workdir=workdir, limits=limits, dirs=dirs, env=env,
                            command_timeout=command_timeout)
    if backend == "docker":
        return DockerSandbox(workdir=workdir, limits=limits, dirs=dirs, env=env,
                             command_timeout=command_timeout)
    raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def docker_available() -> str | None:
    """None when a Docker daemon answers, else the reason it cannot be used."""
    if not shutil.which("docker"):
        return "the docker client is not installed"
    try:
        res = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                             capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "docker info timed out"
    if res.returncode != 0:
        return "no Docker daemon is reachable: " + (res.stderr.strip().splitlines() or ["?"])[-1]
    return None
