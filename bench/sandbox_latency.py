"""Sandbox latency, side by side with a plain subprocess in one run.

Prints:
  create_ms=    median time to create a fresh bwrap sandbox and run a first trivial command
  plain_ms=     median time of subprocess.run(["/bin/true"]) on the host
  exec_ms=      median latency of one command (/bin/true) inside a live sandbox
  exec_ratio=   exec_ms / plain_ms
  create_env_ms=  the same as create_ms, with a built task environment (a folder of a few
                  thousand files, termrl.tasks.pyenv) mounted read-only at its place
  env_added_ms=   create_env_ms - create_ms
  create_layer_ms=  the same, with a system layer (termrl.tasks.sysenv) as the sandbox's /usr and /etc
  layer_added_ms= create_layer_ms - create_ms
Targets on a 2-core machine: create_ms <= 20, exec_ratio <= 2.0, env_added_ms and layer_added_ms <= 5.

Usage: python bench/sandbox_latency.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from termrl.sandbox.bwrap import BwrapSandbox


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    create, plain, inside, with_env, with_layer = [], [], [], [], []
    from termrl.tasks import sysenv
    from termrl.tasks.pyenv import MOUNT

    # a system layer of the host's system plus one file (built once, then cached: seconds)
    layer = sysenv.build((), (("/etc/termrl-bench.conf", b"x = 1\n", 0o644),)).path

    env_dir = Path(tempfile.mkdtemp(prefix="termrl-bench-env-"))
    env_dir.chmod(0o755)
    for i in range(3000):  # the size of a pandas + scipy environment's file count, roughly
        sub = env_dir / f"pkg{i % 60}"
        sub.mkdir(exist_ok=True, mode=0o755)
        (sub / f"m{i}.py").write_text("X = 1\n")
    box = BwrapSandbox()
    box.exec("/bin/true")  # warm up
    for i in range(args.rounds):
        # interleave the three measurements so machine noise hits them alike
        t = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        plain.append(time.perf_counter() - t)

        t = time.perf_counter()
        res = box.exec("/bin/true")
        inside.append(time.perf_counter() - t)
        assert res.ok, res

        if i % 4 == 0:
            t = time.perf_counter()
            fresh = BwrapSandbox()
            first = fresh.exec("/bin/true")
            create.append(time.perf_counter() - t)
            assert first.ok, first
            fresh.close()

            t = time.perf_counter()
            fresh = BwrapSandbox(binds={MOUNT: str(env_dir)})
            first = fresh.exec(f"test -f {MOUNT}/pkg0/m0.py")
            with_env.append(time.perf_counter() - t)
            assert first.ok, first
            fresh.close()

            t = time.perf_counter()
            fresh = BwrapSandbox(system_root=str(layer))
            first = fresh.exec("test -f /etc/termrl-bench.conf")
            with_layer.append(time.perf_counter() - t)
            assert first.ok, first
            fresh.close()
    box.close()
    subprocess.run(["rm", "-rf", str(env_dir)], check=True)
    print(f"create_ms={median_ms(create):.2f}")
    print(f"plain_ms={median_ms(plain):.3f}")
    print(f"exec_ms={median_ms(inside):.3f}")
    print(f"exec_ratio={median_ms(inside) / median_ms(plain):.2f}")
    print(f"create_env_ms={median_ms(with_env):.2f}")
    print(f"env_added_ms={median_ms(with_env) - median_ms(create):.2f}")
    print(f"create_layer_ms={median_ms(with_layer):.2f}")
    print(f"layer_added_ms={median_ms(with_layer) - median_ms(create):.2f}")


if __name__ == "__main__":
    main()
