"""The local and docker backends behind the same Sandbox protocol."""

from __future__ import annotations

import pytest

from termrl.protocols import Sandbox, StopReason, TaskFile
from termrl.sandbox import docker_available, make_sandbox


def test_every_backend_implements_the_protocol():
    for backend in ("bwrap", "local", "docker"):
        assert isinstance(make_sandbox(backend), Sandbox)
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        make_sandbox("chroot")


def test_local_backend_is_loudly_labelled_and_works(capfd):
    with make_sandbox("local", workdir="/app") as box:
        assert "NO isolation" in capfd.readouterr().err
        box.put_files("/app", {"in.txt": TaskFile(b"data\n")})
        assert box.exec("cat in.txt && cd /tmp && export V=1").ok
        assert box.exec("pwd; echo $V").stdout.split() == ["/tmp", "1"]
        res = box.run(["cat", "/tests/t.txt"], mounts={"/tests": {"t.txt": TaskFile(b"T")}})
        assert res.stdout == "T"
        assert box.exec("sleep 30 & echo bg").killed_processes == 1
        assert box.exec("sleep 30", timeout=0.3).stop is StopReason.TIMEOUT
    box.close()


@pytest.mark.docker
def test_docker_backend_round_trip():
    reason = docker_available()
    if reason:
        pytest.skip(f"docker backend: {reason}")
    with make_sandbox("docker", workdir="/app") as box:
        box.write_file("a.txt", b"hello")
        assert box.exec("cat a.txt; cd /tmp").stdout == "hello"
        assert box.exec("pwd").stdout.strip() == "/tmp"
        assert box.read_file("/app/a.txt") == b"hello"
        assert box.exec("sleep 30", timeout=0.5).stop is StopReason.TIMEOUT
