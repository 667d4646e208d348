"""What real tasks install, done at prepare time: toolchain downloads mapped to Debian's
packages, test-script installs taken out of the script, each substitution written down."""

from __future__ import annotations

import json

import pytest

from termrl.protocols import TaskFile, TestKind as Kind
from termrl.tasks import installers, npmenv
from termrl.tasks.formats import docker_env
from termrl.tasks.formats.docker_env import parse_dockerfile
from termrl.tasks.formats.docker_env import test_spec_for as spec_for
from termrl.tasks.installers import JUNIT, NPM_MOUNT, rewrite_test_script



def dockerfile(tmp_path, text: str):
    (tmp_path / "Dockerfile").write_text(text)
    (tmp_path / "workspace").mkdir(exist_ok=True)
    (tmp_path / "workspace" / "main.go").write_text("package main\n")
    return parse_dockerfile(tmp_path / "Dockerfile", tmp_path)


@pytest.fixture
def host_lacks_toolchains(monkeypatch):
    """A host with none of the toolchains installed, whose apt knows openjdk-17 but not 21."""
    monkeypatch.setattr(docker_env, "debian_package_installed", lambda name: name in ("tmux", "curl"))
    monkeypatch.setattr(installers, "debian_has", lambda name: "openjdk-17" in name or not name.startswith("openjdk"))


def test_the_go_tarball_is_debian_s_go_and_env_paths_expand(tmp_path, host_lacks_toolchains):
    env = dockerfile(tmp_path, 'FROM buildpack-deps:jammy\nRUN apt-get update && apt-get install -y tmux curl\n'
                               'RUN ARCH=$(uname -m) && if [ "$ARCH" = "x86_64" ]; then GOARCH="amd64"; else false; fi && '
                               'curl -L "https://golang.org/dl/go1.21.5.linux-$GOARCH.tar.gz" -o go.tar.gz && '
                               'tar -C /usr/local -xzf go.tar.gz && rm go.tar.gz\n'
                               'ENV PATH="/usr/local/go/bin:$PATH"\nENV GO111MODULE=on\nRUN go version\n'
                               'WORKDIR /app\nCOPY workspace/ ./\n')
    assert env.unsupported is None
    assert env.system_packages == ["golang-go"]
    assert env.substitutions == ["the Go toolchain tarball -> Debian's golang-go"]
    assert env.env["PATH"] == "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert env.setup == []  # the download and the version check are not episode setup


def test_nodesource_rustup_and_the_deadsnakes_ppa(tmp_path, host_lacks_toolchains):
    env = dockerfile(tmp_path, "FROM ubuntu:22.04\n"
                               "RUN curl -fsSL https://deb.nodesource.com/setup_20.x | bash - && apt-get install -y nodejs\n"
                               "RUN npm install -g jest@^29.6.4 eslint@^8.49.0\n"
                               "RUN curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y\n"
                               'ENV PATH="/root/.cargo/bin:${PATH}"\n'
                               "RUN apt-get update && apt-get install -y software-properties-common && "
                               "add-apt-repository ppa:deadsnakes/ppa && apt-get install -y python3.11\n"
                               "WORKDIR /app\n")
    assert env.unsupported is None
    assert set(env.system_packages) == {"nodejs", "npm", "npm:jest@^29.6.4", "npm:eslint@^8.49.0", "rustc",
                                        "cargo", "python3.11"}
    assert env.substitutions == ["NodeSource's setup script -> Debian's nodejs npm", "rustup -> Debian's rustc cargo",
                                 "the deadsnakes PPA -> Debian's packages of the same names"]
    assert env.env["PATH"].startswith("/root/.cargo/bin:/usr/local/sbin:")


def test_a_jdk_debian_lacks_is_the_nearest_it_has_and_paths_follow(tmp_path, host_lacks_toolchains):
    env = dockerfile(tmp_path, "FROM buildpack-deps:jammy\n"
                               "RUN apt-get update && apt-get install -y ca-certificates-java openjdk-21-jdk\n"
                               "ENV JAVA_HOME=/usr/lib/jvm/java-21-openjdk-amd64\nENV PATH=$JAVA_HOME/bin:$PATH\n"
                               "RUN java -version && javac -version\nWORKDIR /app\n"
                               "RUN if [ -f ./gradlew ]; then chmod +x ./gradlew; fi\n")
    assert env.system_packages == ["ca-certificates-java", "openjdk-17-jdk"]
    assert env.substitutions == ["openjdk-21-jdk -> openjdk-17-jdk (Debian's nearest)"]
    assert env.env["JAVA_HOME"] == "/usr/lib/jvm/java-17-openjdk-amd64"
    assert env.env["PATH"].startswith("/usr/lib/jvm/java-17-openjdk-amd64/bin:/usr/local/sbin")
    assert env.setup == ["if [ -f ./gradlew ]; then chmod +x ./gradlew; fi"]  # a compound command stays whole


def test_update_alternatives_is_a_link_and_unknown_downloads_stay_unsupported(tmp_path, host_lacks_toolchains):
    env = dockerfile(tmp_path, "FROM debian\nRUN update-alternatives --install /usr/bin/python python "
                               "/usr/bin/python3 1\nWORKDIR /app\n")
    assert env.links == {"python": "/usr/bin/python3"} and env.unsupported is None
    env = dockerfile(tmp_path, "FROM debian\nWORKDIR /app\nRUN curl -sSL https://example.com/tool.tgz | tar xz\n")
    assert env.unsupported and "needs the network" in env.unsupported


PACKAGE_JSON = json.dumps({"name": "@exercism/two-fer", "scripts": {"test": "jest"},
                           "devDependencies": {"jest": "^29.7.0"}}).encode()
BUILD_GRADLE = (b'plugins {\n    id "java"\n}\nrepositories {\n    mavenCentral()\n}\ndependencies {\n'
                b'    testImplementation platform("org.junit:junit-bom:5.10.0")\n'
                b'    testImplementation "org.junit.jupiter:junit-jupiter"\n'
                b'    testImplementation "org.assertj:assertj-core:3.25.1"\n}\n')


def test_a_test_script_s_installs_are_taken_out_and_recorded():
    script = ("#!/bin/bash\nset -Eeuo pipefail\ncd /app\n"
              "pip3 install --no-cache-dir pytest requests==2.31.0 2>/dev/null || pip install --no-cache-dir pytest\n"
              "apt-get update && apt-get install -y jq\n"
              "if [ -f package.json ]; then\n    npm install\nfi\n"
              "if [ -f ./gradlew ]; then\n    ./gradlew test --no-daemon --console=plain\nfi\n"
              "cargo add regex 2>/dev/null || true\n"
              "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\nuv init\n"
              "uv add pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    done = rewrite_test_script(script, {"package.json": PACKAGE_JSON, "build.gradle": BUILD_GRADLE})
    assert done.unsupported is None and done.network is None, (done.unsupported, done.network)
    assert done.python_requirements == ["pytest", "requests==2.31.0", "pytest", "pytest==8.4.1"]
    assert done.system_packages == ["jq"] and done.npm_project and done.junit
    assert f"ln -sfn {NPM_MOUNT}/node_modules node_modules" in done.text
    assert f"    {JUNIT}\n" in done.text and "gradlew test" not in done.text
    assert "python3 -m pytest $TEST_DIR/test_outputs.py -rA" in done.text
    assert "pip3 install" not in done.text and "curl" not in done.text and "apt-get" not in done.text
    assert any("cargo add regex skipped" in s for s in done.substitutions)
    assert any("termrl-junit" in s for s in done.substitutions)


@pytest.mark.parametrize("script, files, reason", [
    ("./gradlew test\n", {"build.gradle": BUILD_GRADLE.replace(b"}\n", b'    implementation "org.json:json:2019"\n}\n')},
     "build.gradle needs org.json:json:2019 from Maven Central"),
    ("./gradlew test\n", {}, "no build.gradle"),
    ("cargo add rand\n", {}, "crates.io is out of reach"),
    ("go mod download\n", {"go.mod": b"module x\n\ngo 1.18\n\nrequire github.com/pkg/errors v0.9.1\n"},
     "go.mod requires github.com/pkg/errors v0.9.1"),
    ("npm install\n", {}, "no package.json"),
    ("pip install -r missing.txt\n", {}, "-r missing.txt, which is not in the workdir"),
])
def test_an_install_that_cannot_be_prepared_names_what_blocks_it(script, files, reason):
    done = rewrite_test_script(script, files)
    assert done.unsupported and reason in done.unsupported, done.unsupported


def test_what_still_reaches_the_network_is_named_and_go_without_requirements_runs():
    done = rewrite_test_script("go mod download\ngo mod tidy\ngit clone https://github.com/x/y.git\n",
                               {"go.mod": b"module x\n\ngo 1.18\n"})
    assert done.unsupported is None and done.network == "git clone https://github.com/x/y.git"
    assert done.text.startswith("go mod download\ngo mod tidy\n")
    assert rewrite_test_script("echo 'chmod +x ./gradlew'\nchmod +x ./gradlew\n", {}).network is None


def test_requirement_files_and_sourced_scripts_are_read_from_the_task():
    done = rewrite_test_script("pip install --use-pep517 -r requirements.txt\n",
                               {"requirements.txt": b"numpy>=1.20  # arrays\n-e .\n\nscipy\n"})
    assert done.python_requirements == ["numpy>=1.20", "scipy"]
    tests = {"setup.sh": TaskFile(b"apt-get install -y curl\ncurl -LsSf https://astral.sh/uv/install.sh | sh\n"
                                  b"uv init\nuv add pytest\n"),
             "test_outputs.py": TaskFile(b"def test_x(): pass\n")}
    spec, reason, plan = spec_for("#!/bin/bash\nsource $TEST_DIR/setup.sh\nuv run pytest $TEST_DIR/test_outputs.py\n",
                                       tests, "run-tests.sh", (), Kind.SCRIPT, "run-tests.sh")
    assert reason is None and spec.kind is Kind.SCRIPT
    assert b"curl" not in plan.tests["setup.sh"].data and "python3 -m pytest" in plan.script


def test_npm_installs_that_differ_only_in_name_share_one_environment():
    a = (("package.json", PACKAGE_JSON),)
    b = (("package.json", json.dumps({"name": "other", "description": "x", "scripts": {"test": "jest ./*"},
                                      "devDependencies": {"jest": "^29.7.0"}}).encode()),)
    c = (("package.json", json.dumps({"devDependencies": {"jest": "^28.0.0"}}).encode()),)
    assert npmenv.key(a) == npmenv.key(b) != npmenv.key(c)
    assert npmenv.install_view(npmenv.install_view(a)) == npmenv.install_view(a)


def test_a_library_built_from_source_is_debian_s_and_the_script_s_folders_stay():
    script = ("cat <<'EOF' > setup.sh\ngit clone https://github.com/google/googletest.git -b v1.14.0\ncd googletest\n"
              "mkdir build\ncd build\ncmake ..\nmake\nmake install\n\nmkdir outputs\nEOF\nsh setup.sh\nmake test\n")
    done = rewrite_test_script(script, {})
    assert done.unsupported is None and done.network is None
    assert done.system_packages == ["libgtest-dev", "libgmock-dev"]
    assert done.text == ("cat <<'EOF' > setup.sh\nmkdir -p googletest\ncd googletest\nmkdir build\ncd build\n"
                         "true\ntrue\ntrue\n\nmkdir outputs\nEOF\nsh setup.sh\nmake test\n")  # the task's own make runs


def test_pytest_options_bring_the_plugins_that_give_them():
    done = rewrite_test_script("if (pytest --cov=. --cov-report=json:c.json --json-report --json-report-file=r.json "
                               "unit_tests) > log 2>&1; then echo ok; fi\n", {})
    assert done.python_requirements == ["pytest-cov", "pytest-json-report"]
    assert "pytest --cov=." in done.text  # the command itself runs as written


def test_a_workdir_script_that_downloads_at_test_time_is_unsupported_naming_it():
    workspace = {"unit_test_script.sh": TaskFile(b"#!/bin/sh\n./gradlew test\n"),
                 "build.gradle": TaskFile(BUILD_GRADLE)}
    _, reason, _ = spec_for("#!/bin/bash\nif (sh unit_test_script.sh) > log; then echo ALL_PASSED; fi\n",
                            {"t.py": TaskFile(b"")}, "run-tests.sh", (), Kind.SCRIPT, "run-tests.sh", workspace)
    assert reason and "the workdir's unit_test_script.sh" in reason and "gradlew test" in reason
    workspace["unit_test_script.sh"] = TaskFile(b"#!/bin/sh\nmake test\n")
    _, reason, _ = spec_for("#!/bin/bash\nsh unit_test_script.sh\n", {"t.py": TaskFile(b"")}, "run-tests.sh", (),
                            Kind.SCRIPT, "run-tests.sh", workspace)
    assert reason is None


def test_crates_come_from_debian_s_packaged_crates_and_a_path_dependency_needs_none():
    toml = b'[package]\nname = "x"\n\n[dependencies]\ntime = "0.3"\nlocal = { path = "../local" }\n' \
           b'[dev-dependencies]\nproc_macro2 = "1"\n'
    done = rewrite_test_script("cargo test --verbose\n", {"Cargo.toml": toml})
    assert done.unsupported is None and done.cargo_registry
    assert done.system_packages == ["librust-time-dev", "librust-proc-macro2-dev"]
    assert "debian-packages" in installers.CARGO_CONFIG and 'directory = "/usr/share/cargo/registry"' in installers.CARGO_CONFIG
    done = rewrite_test_script("cargo test\n", {"Cargo.toml": toml.split(b"[dependencies]")[0]})
    assert not done.cargo_registry and done.system_packages == []


def test_tests_that_call_a_remote_judge_are_named():
    judge = TaskFile(b'import os, time, json, requests\nBASE = os.environ.get("BASE_URL", "http://38.80.122.117:8081")\n')
    assert docker_env.tests_reach_network({"test_outputs.py": judge}) == (
        "tests/test_outputs.py calls a remote service (http://38.80.122.117:8081): the tests need the network")
    local = TaskFile(b'import requests\nURL = "http://127.0.0.1:8000/health"\n')
    text_only = TaskFile(b'EXPECTED = "see https://example.org/docs"\n')
    assert docker_env.tests_reach_network({"test_a.py": local, "test_b.py": text_only}) is None


def test_a_replaced_command_keeps_the_shell_keyword_before_it():
    done = rewrite_test_script("if [ -f ./gradlew ]; then ./gradlew test; elif [ -f build.gradle ]; then gradle test; fi\n"
                               "if true; then npm install; else pip install x; fi\n",
                               {"build.gradle": BUILD_GRADLE, "package.json": PACKAGE_JSON})
    assert done.text.splitlines() == [
        f"if [ -f ./gradlew ]; then {JUNIT}; elif [ -f build.gradle ]; then {JUNIT}; fi",
        f"if true; then ln -sfn {NPM_MOUNT}/node_modules node_modules; else true; fi"]


def test_a_library_the_sources_include_but_nothing_installs_comes_from_debian(monkeypatch):
    monkeypatch.setattr(docker_env, "debian_package_installed", lambda name: False)
    workspace = {"unit_tests/t.cpp": TaskFile(b'#include "gtest/gtest.h"\n#include <vector>\nTEST(A, B) {}\n')}
    _, reason, plan = spec_for("#!/bin/bash\nmake test -f makefile_test\n", {"t.py": TaskFile(b"")}, "run-tests.sh",
                               (), Kind.SCRIPT, "run-tests.sh", workspace)
    assert reason is None and plan.system_packages == ["libgtest-dev"]
    assert plan.substitutions == ["#include <gtest/gtest.h>: Debian's libgtest-dev (the library the task's image had)"]


def test_the_task_s_own_make_after_a_library_build_without_install_still_runs():
    done = rewrite_test_script("git clone https://github.com/google/googletest.git\ncd googletest\ncmake .\nmake\n"
                               "cd /app\necho built\nmake test -f makefile_test\n", {})
    assert done.text.splitlines() == ["mkdir -p googletest", "cd googletest", "true", "true", "cd /app",
                                      "echo built", "make test -f makefile_test"]
    done = rewrite_test_script("git clone https://github.com/google/googletest.git\ncd googletest\nmkdir build\n"
                               "cd build\ncmake ..\nmake\ncd /app\nmake test\n", {})
    assert done.text.splitlines()[-2:] == ["cd /app", "make test"]
