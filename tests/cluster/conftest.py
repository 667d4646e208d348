"""A real Ray cluster on this machine: a head (no CPUs) and two worker nodes, each ``ray start``
its own process group, on 127.0.0.1 only; stopped by the process groups it started."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

LAUNCHER = Path(__file__).with_name("raynode.py")
DRIVER_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
"""A driver's environment: Ray then keeps 127.0.0.1 as this machine's address (see raynode.py)."""
NODE_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_health_check_period_ms": "1000",
            "RAY_health_check_timeout_ms": "1000", "RAY_health_check_failure_threshold": "3"}
"""A node's: a killed node is declared dead after about 3 s instead of about 15."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    address: str
    temp: Path
    sandboxes: Path
    nodes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start_node(self, name: str, *args: str, timeout: float = 120) -> None:
        env = {**os.environ, **NODE_ENV, "TERMRL_SANDBOX_DIR": str(self.sandboxes)}
        with open(self.temp / f"{name}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, str(LAUNCHER), "start", "--node-ip-address=127.0.0.1",
                                     "--disable-usage-stats", "--block", *args],
                                    stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.nodes[name] = proc
        deadline = time.monotonic() + timeout
        while "Ray runtime started" not in (self.temp / f"{name}.log").read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray node {name} did not start:\n{(self.temp / f'{name}.log').read_text()[-3000:]}")
            time.sleep(0.5)

    def kill(self, name: str) -> None:
        """SIGKILL the node's whole process group: its raylet, its workers and their sandboxes."""
        proc = self.nodes.pop(name)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def stop(self) -> None:
        for name in list(self.nodes)[::-1]:
            proc = self.nodes[name]
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
            self.kill(name)

    def driver(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(args, check=False, env={**os.environ, **DRIVER_ENV}, capture_output=True, text=True,
                              timeout=timeout)

    def alive_workers(self) -> int:
        code = ("import json, ray; ray.init(address=%r, log_to_driver=False); "
                "print(json.dumps(sum(1 for n in ray.nodes() if n['Alive'] and n['Resources'].get('CPU'))))")
        out = self.driver(sys.executable, "-c", code % self.address, timeout=120)
        return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else -1


@pytest.fixture(scope="module")
def cluster():
    # a temp dir of its own: `ray start` otherwise records the cluster in /tmp/ray, and every
    # later ray.init() on this machine would join it instead of starting its own
    temp = Path(tempfile.mkdtemp(prefix="trl-ray-"))
    sandboxes = Path(tempfile.mkdtemp(prefix="trl-ray-sbx-"))
    sandboxes.chmod(0o711)
    port = _free_port()
    c = Cluster(f"127.0.0.1:{port}", temp, sandboxes)
    try:
        c.start_node("head", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false",
                     f"--temp-dir={temp / 'ray'}", "--ray-client-server-port", str(_free_port()))
        for name in ("a", "b"):
            c.start_node(name, f"--address={c.address}", "--num-cpus=1", f"--resources={json.dumps({name: 1})}")
        deadline = time.monotonic() + 60
        while c.alive_workers() != 2:
            if time.monotonic() > deadline:
                raise RuntimeError("the two worker nodes did not join the head")
            time.sleep(1)
        yield c
    finally:
        c.stop()
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(sandboxes, ignore_errors=True)
