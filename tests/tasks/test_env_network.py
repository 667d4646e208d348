"""Task environments built from the real package sources: PyPI and Debian's mirror. Opt in with
-m network (``.ci/run`` runs them when both answer); the default tier never downloads."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from termrl.checks.validate import check_task
from termrl.tasks import envs
from termrl.tasks.formats import load_task
from termrl.tasks.formats.harbor import load_harbor
from termrl.tasks.runtime import open_sandbox
from termrl.tasks.suites import Entry

from .conftest import HARBOR_DIR, copy_fixture

pytestmark = [pytest.mark.network, pytest.mark.sandbox]


@pytest.fixture
def online(monkeypatch):
    for name in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "TERMRL_APT_DEBS"):
        monkeypatch.delenv(name, raising=False)
    cache = Path(tempfile.mkdtemp(prefix="termrl-net-cache-"))
    cache.chmod(0o755)
    monkeypatch.setenv("TERMRL_CACHE", str(cache))
    yield cache
    shutil.rmtree(cache, ignore_errors=True)


def test_a_dockerfile_s_pip_and_apt_installs_build_from_the_real_sources(tmp_path, online):
    root = copy_fixture(HARBOR_DIR / "dedupe-contacts", tmp_path)
    dockerfile = root / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "\nRUN pip3 install --break-system-packages tomli-w==1.0.0\n"
                                                   "RUN apt-get update && apt-get install -y sl\n")
    task = load_harbor(root)
    assert task.python_requirements == ("tomli-w==1.0.0",) and task.system_packages == ("sl",)
    results = []
    [entry] = envs.prepare([Entry(task.id, task=task)], results.append)
    assert [r.error for r in results] == [None, None] and entry.task.unsupported is None
    box = open_sandbox(task)
    try:
        res = box.run(["/bin/bash", "-c", "python3 -c 'import tomli_w; print(tomli_w.dumps({\"a\": 1}))' && "
                                          "test -x /usr/games/sl && echo sl"])
        assert res.ok and res.stdout.split() == ["a", "=", "1", "sl"], res.stderr
    finally:
        box.close()


def before_workdir(root, lines: str) -> None:
    """Put Dockerfile ``lines`` before the task's WORKDIR line."""
    dockerfile = root / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("WORKDIR", lines + "WORKDIR"))


GRADLE = ('plugins {\n    id "java"\n}\nrepositories {\n    mavenCentral()\n}\ndependencies {\n'
          '    testImplementation platform("org.junit:junit-bom:5.10.0")\n'
          '    testImplementation "org.junit.jupiter:junit-jupiter"\n'
          '    testImplementation "org.assertj:assertj-core:3.25.1"\n}\n')
JAVA_TEST = ('import org.junit.jupiter.api.Disabled;\nimport org.junit.jupiter.api.Test;\n'
             'import static org.assertj.core.api.Assertions.assertThat;\n\npublic class TwoferTest {\n'
             '    @Test\n    public void noName() {\n        assertThat(new Twofer().twofer(null)).isEqualTo("One for you, one for me.");\n    }\n\n'
             '    @Disabled("Remove to run test")\n    @Test\n    public void aName() {\n'
             '        assertThat(new Twofer().twofer("Alice")).isEqualTo("One for Alice, one for me.");\n    }\n}\n')


def test_a_gradle_junit_exercise_on_a_jdk_debian_lacks_runs_with_debian_s_junit(tmp_path, online):
    from .test_prepared_installs import tb_task

    root = tb_task(tmp_path / "java-twofer", {
        "workspace/build.gradle": GRADLE,
        "workspace/src/main/java/Twofer.java": "public class Twofer {\n    public String twofer(String name) {\n"
                                               "        throw new UnsupportedOperationException();\n    }\n}\n",
        "tests/src/test/java/TwoferTest.java": JAVA_TEST,
    }, 'find "$TEST_DIR" -type f -name "*.java" -print0 | xargs -0 -I {} sed -i \'s/@Disabled("Remove to run test")//g\' "{}"\n'
       "mkdir -p src/test/java && cp -r $TEST_DIR/src/test/java/. src/test/java/\n"
       "if [ -f ./gradlew ]; then ./gradlew test --no-daemon; elif [ -f build.gradle ]; then gradle test --no-daemon; fi\n",
        "cat > src/main/java/Twofer.java <<'J'\npublic class Twofer {\n    public String twofer(String name) {\n"
        "        return \"One for \" + (name == null ? \"you\" : name) + \", one for me.\";\n    }\n}\nJ\n")
    before_workdir(root, "RUN apt-get update && apt-get install -y openjdk-21-jdk\nENV JAVA_HOME=/usr/lib/jvm/java-21-openjdk-amd64\n"
                   "ENV PATH=$JAVA_HOME/bin:$PATH\n")
    task = load_task(root)
    assert task.unsupported is None and any("termrl-junit" in s for s in task.substitutions)
    [entry] = envs.prepare([Entry(task.id, task=task)])
    row = check_task(entry.task)
    assert row.status == "valid", row.reason


def test_the_go_tarball_becomes_debian_s_go(tmp_path, online):
    from .test_prepared_installs import tb_task

    root = tb_task(tmp_path / "go-hello", {
        "workspace/go.mod": "module hello\n\ngo 1.18\n",
        "workspace/hello.go": "package hello\n\nfunc Hello() string { return \"\" }\n",
        "tests/hello_test.go": "package hello\n\nimport \"testing\"\n\nfunc TestHello(t *testing.T) {\n"
                               "\tif Hello() != \"Hello, World!\" {\n\t\tt.Fatal(Hello())\n\t}\n}\n",
    }, "go mod download\ncp $TEST_DIR/*_test.go .\ngo test ./...\n",
        "cat > hello.go <<'G'\npackage hello\n\nfunc Hello() string { return \"Hello, World!\" }\nG\n")
    before_workdir(root, 'RUN curl -L "https://golang.org/dl/go1.21.5.linux-amd64.tar.gz" -o go.tar.gz && '
                   "tar -C /usr/local -xzf go.tar.gz\nENV PATH=\"/usr/local/go/bin:$PATH\"\n")
    task = load_task(root)
    assert task.unsupported is None and task.substitutions == ("the Go toolchain tarball -> Debian's golang-go",)
    [entry] = envs.prepare([Entry(task.id, task=task)])
    row = check_task(entry.task)
    assert row.status == "valid", row.reason


def test_a_crate_from_crates_io_comes_from_debian_s_packaged_crates(tmp_path, online):
    from .test_prepared_installs import tb_task

    root = tb_task(tmp_path / "rust-crate", {
        "workspace/Cargo.toml": '[package]\nname = "parse"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                '[dependencies]\nanyhow = "1.0"\n',
        "workspace/src/lib.rs": "pub fn double(s: &str) -> anyhow::Result<i64> { unimplemented!() }\n",
        "tests/tests/parse.rs": "#[test]\nfn doubles() { assert_eq!(parse::double(\"21\").unwrap(), 42); }\n",
    }, "mkdir -p tests && cp -r $TEST_DIR/tests/* tests/\ncargo test\n",
        "cat > src/lib.rs <<'R'\npub fn double(s: &str) -> anyhow::Result<i64> {\n"
        "    Ok(2 * s.trim().parse::<i64>()?)\n}\nR\n")
    before_workdir(root, "RUN curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y\n"
                   'ENV PATH="/root/.cargo/bin:${PATH}"\n')
    task = load_task(root)
    assert task.unsupported is None and "librust-anyhow-dev" in task.system_packages
    [entry] = envs.prepare([Entry(task.id, task=task)])
    row = check_task(entry.task)
    assert row.status == "valid", row.reason
