"""``--ray [ADDRESS]`` on the command line: the value may be left out, and what cannot run on a
cluster is refused before anything starts."""

from __future__ import annotations

import subprocess
import sys


def termrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "termrl", *args], capture_output=True, text=True, timeout=300,
                          check=False)


def test_a_local_model_is_refused_on_a_cluster_with_what_to_do_instead(tmp_path):
    for ray in (["--ray"], ["--ray", "10.0.0.1:6379"]):
        res = termrl("eval", "--policy", "hf:/models/x", "--suite", "logs-count:0-1", *ray, "--out", str(tmp_path / "x"))
        assert res.returncode == 2, res.stderr
        assert "vllm serve" in res.stderr and "openai:" in res.stderr and "Traceback" not in res.stderr
        assert not (tmp_path / "x").exists(), "refused before anything ran"


def test_ray_alone_before_another_option_or_a_suite_means_a_local_ray():
    from termrl.cli import with_optional_values

    assert with_optional_values(["audit", "--ray", "--json", "builtin"]) == ["audit", "--ray", "local", "--json",
                                                                            "builtin"]
    assert with_optional_values(["audit", "--ray", "builtin"]) == ["audit", "--ray", "local", "builtin"]
    assert with_optional_values(["audit", "builtin", "--ray", "head:6379"]) == ["audit", "builtin", "--ray",
                                                                               "head:6379"]
    assert with_optional_values(["eval", "--ray", "auto"]) == ["eval", "--ray", "auto"]
