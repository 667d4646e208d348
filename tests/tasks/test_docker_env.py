"""Interpreting Dockerfiles and recognising the standard Terminal-Bench / Harbor test scripts."""

from __future__ import annotations

from termrl.protocols import TaskFile
from termrl.tasks.formats.docker_env import analyze_test_script, parse_dockerfile

TESTS = {"test_outputs.py": TaskFile(b"def test_x(): pass\n")}


def dockerfile(tmp_path, text: str):
    (tmp_path / "Dockerfile").write_text(text)
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    return parse_dockerfile(tmp_path / "Dockerfile", tmp_path)


def test_workdir_env_copy_and_setup(tmp_path):
    env = dockerfile(tmp_path, "FROM python:3.13\nRUN apt-get update && apt-get install -y tmux asciinema\n"
                               "WORKDIR /app\nENV MODE=fast\nENV GREETING hello world\nCOPY a.txt .\n"
                               "COPY src/ ./src/\nCOPY a.txt /data/in/a.txt\nRUN mkdir -p out && echo hi > out/x\n")
    workspace, extra = env.split()
    assert env.workdir == "/app" and env.unsupported is None
    assert env.env == {"MODE": "fast", "GREETING": "hello world"}
    assert set(workspace) == {"a.txt", "src/m.py"}
    assert extra == {"/data/in": {"a.txt": TaskFile(b"a", 0o644)}}
    assert env.setup == ["mkdir -p out && echo hi > out/x"]


def test_what_cannot_run_here_is_unsupported(tmp_path):
    cases = {
        "WORKDIR /\n": "WORKDIR /",
        "WORKDIR /app\nCOPY a.txt /proc/sys/kernel/x\n": "kernel",
        "WORKDIR /app\nRUN curl -sSL https://example.com/x.sh | sh\n": "needs the network",
        "WORKDIR /app\nCOPY --from=builder /x /y\n": "multi-stage",
    }
    for text, reason in cases.items():
        env = dockerfile(tmp_path, "FROM debian\n" + text)
        assert env.unsupported and reason in env.unsupported, (text, env.unsupported)


def test_standard_templates_are_recognised():
    tb = ("#!/bin/bash\napt-get update\napt-get install -y curl\n"
          "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\n"
          'if [ "$PWD" = "/" ]; then\n    echo "Error: No working directory set."\n    exit 1\nfi\n'
          "uv init\nuv add pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    plan = analyze_test_script(tb, TESTS, "run-tests.sh")
    assert plan.standard and plan.pytest_files == ["test_outputs.py"] and not plan.in_tests_dir
    harbor = ("#!/bin/bash\napt-get update\napt-get install -y curl\n"
              "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\nsource $HOME/.local/bin/env\n"
              "uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json "
              "/tests/test_outputs.py -rA\n\nif [ $? -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\n"
              "else\n  echo 0 > /logs/verifier/reward.txt\nfi\n")
    assert analyze_test_script(harbor, TESTS, "test.sh").standard
    in_dir = "#!/bin/bash\nset -e\ncd /tests\npytest test_outputs.py -v -s -rA\n"
    plan = analyze_test_script(in_dir, TESTS, "run-tests.sh")
    assert plan.standard and plan.in_tests_dir


def test_anything_else_is_not_standard():
    extra_step = "#!/bin/bash\npython3 /tests/prepare.py\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"
    assert not analyze_test_script(extra_step, TESTS, "run-tests.sh").standard
    writes = "#!/bin/bash\necho secret > /app/flag\npytest /tests/test_outputs.py\n"
    assert not analyze_test_script(writes, TESTS, "run-tests.sh").standard
    unknown_file = "#!/bin/bash\npytest /tests/test_other.py\n"
    assert not analyze_test_script(unknown_file, TESTS, "run-tests.sh").standard
    needs_pkg = "#!/bin/bash\nuv add pytest==8.4.1 pandas\nuv run pytest $TEST_DIR/test_outputs.py\n"
    plan = analyze_test_script(needs_pkg, TESTS, "run-tests.sh")
    assert plan.standard and plan.python_requirements == ["pandas"]  # built into the task's environment


def test_copies_into_system_folders_go_to_the_system_layer(tmp_path):
    env = dockerfile(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\nCOPY a.txt /etc/systemd/journald.conf\n"
                               "COPY src/ /usr/local/lib/src/\nCOPY a.txt /usrdata/a.txt\nCOPY a.txt .\n")
    assert env.unsupported is None
    assert env.system_files() == {"/etc/systemd/journald.conf": TaskFile(b"a", 0o644),
                                  "/usr/local/lib/src/m.py": TaskFile(b"x = 1\n", 0o644)}
    workspace, extra = env.split()  # /usrdata is not /usr: an ordinary folder of the task's
    assert workspace == {"a.txt": TaskFile(b"a", 0o644)} and extra == {"/usrdata": {"a.txt": TaskFile(b"a", 0o644)}}


def test_apt_lines_become_the_system_layer_less_what_the_host_has(tmp_path):
    env = dockerfile(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n"
                               "RUN apt-get update && apt-get install -y --no-install-recommends tmux gnucobol3 "
                               "bash coreutils=9.1-1 && rm -rf /var/lib/apt/lists/*\n")
    # the harness's tmux and the host's bash and coreutils cost nothing
    assert env.unsupported is None and env.system_packages == ["gnucobol3"] and env.setup == []


def test_pip_lines_become_the_python_environment_less_what_the_sandbox_has(tmp_path):
    from termrl.tasks.formats.docker_env import sandbox_python_version_of

    pytest_version = sandbox_python_version_of("pytest")
    assert pytest_version  # the sandbox's python3 brings the test runner
    env = dockerfile(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n"
                               "RUN pip3 install --no-cache-dir --break-system-packages pytest==8.4.1 "
                               "pandas==2.3.2 scipy==1.16.1\n"
                               "RUN pip install -i https://pypi.org/simple Unknown_Pkg>=1 && mkdir out\n"
                               f"RUN python3 -m pip install pytest=={pytest_version} 'pytest>=1'\n")
    assert env.unsupported is None and env.setup == ["mkdir out"]
    # the runner is the sandbox's; an index URL is no requirement; a satisfied pin needs nothing
    assert env.python_requirements == ["pandas==2.3.2", "scipy==1.16.1", "Unknown_Pkg>=1"]


def test_links_into_system_command_folders_come_from_a_folder_on_path(tmp_path):
    from termrl.tasks.formats.docker_env import LINK_DIR

    env = dockerfile(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n"
                               "RUN apt-get update && ln -s /usr/bin/python3 /usr/bin/python && mkdir out\n")
    assert env.unsupported is None and env.links == {"python": "/usr/bin/python3"}
    assert env.setup == [f"mkdir -p {LINK_DIR} && ln -sf /usr/bin/python3 {LINK_DIR}/python && mkdir out"]
    assert env.env["PATH"].startswith(LINK_DIR + ":")
    assert env.split()[1] == {LINK_DIR: {}}  # a folder of the sandbox's own, writable by its setup


def test_folders_made_outside_the_workdir_are_the_sandbox_s_own(tmp_path):
    env = dockerfile(tmp_path, "FROM ubuntu:24.04\nWORKDIR /app\n"
                               "RUN mkdir -p /app/data /solution /srv/in/x && mkdir /logs\nCOPY a.txt /srv/in/a.txt\n")
    assert env.unsupported is None
    assert env.setup == ["mkdir -p /app/data /solution /srv/in/x && mkdir -p /logs"]
    workspace, extra = env.split()
    assert extra == {"/srv/in": {"a.txt": TaskFile(b"a", 0o644)}, "/solution": {}, "/logs": {}}
