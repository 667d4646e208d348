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
  (``termrl.verify.isolate``). Modules the hidden tests import from a
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

Not isolated, or weaker:

- Grading is out of reach only for code the tests *import*: tests that read
  the agent's source and ``exec`` it, or run it with ``runpy``, run it in
  the test process (the canaries and the grader detectors are the net there).
  Programs the tests run as subprocesses were always outside. The hidden
  tests are readable during verification (the worker can open /tests): a
  solution that reads them is caught by the detectors (``test_access``,
  ``grader_access``) and by impossible variants, not by the sandbox.

- The kernel is shared (no seccomp filter beyond bubblewrap's defaults): a
  kernel exploit escapes. Use the docker backend with gVisor, or VMs, for
  adversaries with exploits.
- /usr and /etc of the host are readable (world-readable files only, when the
  harness is root). Do not keep secrets in world-readable files there.
- CPU time is not capped, only wall time; two sandboxes compete for cores.
- Without root on the host: no cgroups (memory and process limits are not
  enforced; strays are found by PID namespace instead) and no tmpfs (no disk
  limit), and the sandbox runs as the harness's own uid.
- ``--die-with-parent`` follows the thread that created the sandbox: create,
  use and close a sandbox from one thread.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Mapping, Sequence

from termrl.protocols import Limits, Sandbox

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
        from termrl.sandbox.bwrap import BwrapSandbox
        return BwrapSandbox(workdir=workdir, limits=limits, dirs=dirs, env=env,
                            command_timeout=command_timeout, binds=binds, system_root=system_root)
    if backend == "local":
        from termrl.sandbox.local import LocalSandbox
        return LocalSandbox(workdir=workdir, limits=limits, dirs=dirs, env=env,
                            command_timeout=command_timeout)
    if backend == "docker":
        from termrl.sandbox.docker import DockerSandbox
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
