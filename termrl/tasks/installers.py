"""What a Dockerfile's ``RUN`` or a test script installs, and what termrl builds in its place.

A task runs as its author ran it: what its environment installs is built once, at prepare
time, into cached read-only layers (``termrl.tasks.sysenv``, ``pyenv``, ``npmenv``); an episode
never installs and never reaches a network. This module recognises the installers real
Terminal-Bench and Harbor tasks use and says what stands in for each:

- installers whose site this machine reaches (Debian's archive, PyPI, the npm registry) run
  as themselves at prepare time: ``apt-get install``, ``pip``/``uv`` installs, ``npm install``
  (a project's, and ``-g``);
- well-known toolchain downloaders from sites it does not reach map to the Debian packages
  that ship the same toolchain (``TOOLCHAINS``: the Go tarball, NodeSource, rustup, the
  deadsnakes PPA), each substitution written down in the task's manifest;
- a Gradle build that needs only JUnit 5 and AssertJ runs with Debian's JUnit 5 console
  launcher (``JUNIT``); one that needs anything else from Maven Central is unsupported,
  naming the dependency. So is a Go module with requirements (the module proxy is out of
  reach). Never a task run wrong.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Toolchain:
    what: str
    """The installer, as a person names it."""
    pattern: str
    """Recognises it in a RUN line."""
    packages: tuple[str, ...]
    """The Debian packages that stand in for it."""


TOOLCHAINS = (
    Toolchain("the Go toolchain tarball", r"(golang\.org|go\.dev|dl\.google\.com)/\S*go\d[\w.]*\.linux-\S*\.tar\.gz",
              ("golang-go",)),
    Toolchain("NodeSource's setup script", r"deb\.nodesource\.com/setup_", ("nodejs", "npm")),
    Toolchain("rustup", r"sh\.rustup\.rs|rustup-init|static\.rust-lang\.org/rustup", ("rustc", "cargo")),
    Toolchain("the deadsnakes PPA", r"add-apt-repository\s+(-y\s+)?ppa:deadsnakes/ppa", ()),
)


def toolchain_of(run: str) -> Toolchain | None:
    return next((t for t in TOOLCHAINS if re.search(t.pattern, run)), None)


_VERSION_CHECK = re.compile(r"^\S+\s+(--version|-version|version|-v|-V)$")


def is_version_check(commands: list[str]) -> bool:
    """A RUN that only prints tool versions (``go version && node --version``): nothing to build."""
    return bool(commands) and all(_VERSION_CHECK.match(c) for c in commands)


# --------------------------------------------------------------------------- Java

_JDK = re.compile(r"^openjdk-(\d+)-(jdk|jre|jdk-headless|jre-headless)$")


@functools.lru_cache(maxsize=None)
def debian_has(package: str) -> bool:
    """Whether the host's apt knows a candidate for ``package``."""
    res = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True)
    m = re.search(r"Candidate:\s*(\S+)", res.stdout)
    return bool(m) and m.group(1) != "(none)"


def jdk_stand_in(package: str) -> str | None:
    """For an ``openjdk-N-*`` the host's release lacks, the nearest N it has (the higher of two
    equally near); None when ``package`` is not a JDK or Debian has it."""
    m = _JDK.match(package)
    if not m or debian_has(package):
        return None
    want, kind = int(m.group(1)), m.group(2)
    for n in sorted(range(8, 31), key=lambda v: (abs(v - want), -v)):
        if n != want and debian_has(f"openjdk-{n}-{kind}"):
            return f"openjdk-{n}-{kind}"
    return None


# --------------------------------------------------------------------------- Gradle

JUNIT = "/usr/local/bin/termrl-junit"
"""Stands in for ``gradle test`` on a build that needs only JUnit 5 and AssertJ."""
JUNIT_PACKAGES = ("junit5", "libassertj-core-java", "libbyte-buddy-java")
GRADLE_DEPENDENCY = re.compile(r"""^\s*(?:test)?(?:implementation|api|compileOnly|runtimeOnly|testRuntimeOnly|"""
                               r"""testCompileOnly|compile|testCompile)\s*(?:\(\s*)?(?:platform\s*\(\s*)?["']([^"']+)["']""",
                               re.M | re.I)
JUNIT_SERVES = ("org.junit:junit-bom", "org.junit.jupiter:junit-jupiter", "org.junit.jupiter:junit-jupiter-api",
                "org.junit.jupiter:junit-jupiter-engine", "org.junit.jupiter:junit-jupiter-params",
                "org.junit.platform:junit-platform-launcher", "org.assertj:assertj-core")
"""The Maven coordinates Debian's JUnit 5 and AssertJ serve."""

JUNIT_SCRIPT = r"""#!/bin/bash
# termrl-junit: stands in for `gradle test` on a build that needs only JUnit 5 and AssertJ:
# javac, then the JUnit Platform console launcher, from Debian's packages (junit5,
# libassertj-core-java). Exit 0 when every test passes, as gradle's.
set -u
J=/usr/share/java
LIBS="$J/assertj-core.jar:$J/byte-buddy.jar"
out=$(mktemp -d)
mkdir -p "$out/main" "$out/test"
mapfile -t main < <(find src/main/java -name '*.java' 2>/dev/null | sort)
if [ ${#main[@]} -gt 0 ]; then
  javac -nowarn -encoding UTF-8 -d "$out/main" "${main[@]}" || { echo "termrl-junit: compileJava FAILED"; exit 1; }
fi
[ -d src/main/resources ] && cp -r src/main/resources/. "$out/main/"
mapfile -t tests < <(find src/test/java -name '*.java' 2>/dev/null | sort)
if [ ${#tests[@]} -eq 0 ]; then echo "termrl-junit: no test sources under src/test/java"; exit 1; fi
javac -nowarn -encoding UTF-8 -cp "$out/main:$J/junit-platform-console-standalone.jar:$LIBS" -d "$out/test" \
  "${tests[@]}" || { echo "termrl-junit: compileTestJava FAILED"; exit 1; }
[ -d src/test/resources ] && cp -r src/test/resources/. "$out/test/"
java -jar "$J/junit-platform-console-standalone.jar" --disable-banner --details=tree --fail-if-no-tests \
  --class-path "$out/main:$out/test:$LIBS" --scan-class-path "$out/test"
"""


def gradle_blocker(build_gradle: str) -> str | None:
    """The first dependency of a Gradle build that Debian's JUnit 5 and AssertJ do not serve
    (Maven Central is out of reach), or None."""
    for coordinate in GRADLE_DEPENDENCY.findall(build_gradle):
        group_artifact = ":".join(coordinate.split(":")[:2])
        if group_artifact not in JUNIT_SERVES:
            return coordinate
    if re.search(r"\bkotlin\b|\bgroovy\b|plugins\s*\{[^}]*id\s*[(\s]['\"](?!java['\"])", build_gradle):
        return "a Gradle plugin other than java"
    return None


# --------------------------------------------------------------------------- Rust crates

CARGO_HOME_DIR = "/usr/share/termrl/cargo"
"""In a task's system layer: the Cargo configuration that replaces crates.io with the crates
Debian packages (``librust-NAME-dev``, under /usr/share/cargo/registry); the sandbox mounts it
at ``/.cargo``, where Cargo looks from any working directory."""
CARGO_CONFIG = """# termrl: crates.io is out of reach; Debian's packaged crates stand in for it.
[source.crates-io]
replace-with = "debian-packages"

[source.debian-packages]
directory = "/usr/share/cargo/registry"

[net]
offline = true
"""


def crate_package(crate: str) -> str:
    """The Debian package of a crate: ``librust-NAME-dev`` (``_`` as ``-``)."""
    return f"librust-{crate.lower().replace('_', '-')}-dev"


# --------------------------------------------------------------------------- test scripts


@dataclass
class ScriptInstalls:
    """What a test script installs, and the script with each install done ahead of time."""

    text: str
    python_requirements: list[str] = field(default_factory=list)
    system_packages: list[str] = field(default_factory=list)
    npm_project: bool = False
    """It runs ``npm install`` (or ``npm ci``) on the workdir's package.json."""
    junit: bool = False
    """It runs ``gradle test``, now ``termrl-junit``."""
    cargo_registry: bool = False
    """Its crates come from Debian's packages (``CARGO_CONFIG``)."""
    substitutions: list[str] = field(default_factory=list)
    unsupported: str | None = None
    network: str | None = None
    """A line that still reaches the network after the rewrite."""


NPM_MOUNT = "/opt/termrl/node"
"""Where a task's prepared ``node_modules`` is mounted read-only (``termrl.tasks.npmenv``)."""
_SEP = re.compile(r"(\|\||&&|;|\||\(|\)|`|\$\()")
_REDIRECTS = r"(\s+\d?>>?\s*\S+|\s+\d?>&\d)*"
_PIP = re.compile(r"^(?:python3?\s+-m\s+)?pip3?\s+install\s+(.*?)" + _REDIRECTS + r"$")
_UV_ADD = re.compile(r"^uv\s+(?:add|pip\s+install)\s+(.*?)" + _REDIRECTS + r"$")
_APT = re.compile(r"^(?:sudo\s+)?apt(?:-get)?\s+(update|install|upgrade)\b(.*?)" + _REDIRECTS + r"$")
_NPM_PROJECT = re.compile(r"^npm\s+(?:install|i|ci)((?:\s+-{1,2}[\w-]+(?:=\S+)?)*)" + _REDIRECTS + r"$")
_GRADLE_TEST = re.compile(r"^(?:\./gradlew|gradle)\s+((?:clean\s+)?test|build|check)((?:\s+-{1,2}[\w=.-]+)*)"
                          + _REDIRECTS + r"$")
_CARGO_ADD = re.compile(r"^cargo\s+add\s+(\S+)" + _REDIRECTS + r"$")
_UV_SETUP = [re.compile(p) for p in (r"^(curl|wget)\s.*astral\.sh/uv\S*(\s.*)?$", r"^(ba)?sh(\s+-s\b.*)?$",
                                     r"^uv\s+(init|venv|sync)\b.*$", r"^(source|\.)\s+\S*\.local/bin/env$")]
_UV_RUN = re.compile(r"^uv\s+run\s+(?:--\S+\s+)*(pytest|python3?)\b")
NETWORK = re.compile(r"https?://|^(sudo\s+)?(curl|wget|git\s+clone|apt(-get)?\s+install|pip3?\s+install|uv\s+(add|pip)|"
                     r"uvx|npm\s+(i|install|ci|add)|yarn|cargo\s+(add|install|fetch)|go\s+(get|install)|"
                     r"\./gradlew\s|gradle\s|mvn\s|\./mvnw\s)")
"""A command that reaches the network (checked on each command of a line, after the rewrite)."""


PYTEST_PLUGINS = {"--cov": "pytest-cov", "--json-report": "pytest-json-report", "--ctrf": "pytest-json-ctrf",
                  "--timeout": "pytest-timeout", "--html": "pytest-html", "--benchmark": "pytest-benchmark",
                  "-n": "pytest-xdist", "--numprocesses": "pytest-xdist", "--reruns": "pytest-rerunfailures"}
"""A pytest option -> the plugin that adds it: a test script that passes the option ran where its
image had the plugin installed."""
_PYTEST = re.compile(r"^(?:python3?\s+-m\s+)?(?:py\.test|pytest)(\s.*)?$")

SOURCE_BUILDS = {"github.com/google/googletest": ("googletest", ("libgtest-dev", "libgmock-dev"))}
"""A library a test script clones and builds from source -> (its folder, the Debian packages that
ship it built): the clone becomes an empty folder and its build steps (cmake, make, make
install) become ``true``, so the script's ``cd`` lines still land where they did."""
_BUILD_STEP = re.compile(r"^\s*(cmake|make|ninja|meson|\./configure)\b[^;&|]*$")


HEADERS = {"gtest/gtest.h": ("libgtest-dev",), "gmock/gmock.h": ("libgmock-dev",),
           "boost/": ("libboost-all-dev",)}
"""A C/C++ header the task's sources include -> the Debian packages that ship it: a task whose
image had the library (its test script does not install it) gets Debian's."""
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def headers_needed(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(Debian package, note) for each library ``files``' C/C++ sources include (``HEADERS``)."""
    out: dict[str, str] = {}
    for name, data in sorted(files.items()):
        if not name.endswith((".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp")):
            continue
        for header in _INCLUDE.findall(data.decode(errors="replace")):
            for prefix, debs in HEADERS.items():
                for deb in debs:
                    if header.startswith(prefix) and deb not in out:
                        out[deb] = f"#include <{header}>: Debian's {deb} (the library the task's image had)"
    return list(out.items())


def rewrite_test_script(text: str, workspace_files: dict[str, bytes]) -> ScriptInstalls:
    """``text`` with every install it runs replaced by ``true`` and recorded (built at prepare
    time instead); ``workspace_files`` (relative path -> bytes) answers what the installs read
    (``-r requirements.txt``, ``package.json``, ``build.gradle``, ``go.mod``)."""
    out = ScriptInstalls(text)
    lines = []
    building = False  # inside a known library's source build
    for line in text.splitlines(keepends=True):
        clone = re.match(r"^(\s*)git\s+clone\s+(?:-\S+\s+)*https?://(\S+?)(?:\.git)?(\s.*)?$", line.rstrip("\n"))
        source = clone and next((v for k, v in SOURCE_BUILDS.items() if clone.group(2).startswith(k)), None)
        if source:
            out.system_packages += list(source[1])
            _say(out, f"git clone {clone.group(2)} and its build -> Debian's {' '.join(source[1])}")
            lines.append(f"{clone.group(1)}mkdir -p {source[0]}\n")
            building = True
            continue
        if building and _BUILD_STEP.match(line):
            building = not re.match(r"^\s*make\s+install\b", line)
            lines.append(line[:len(line) - len(line.lstrip())] + "true\n")
            continue
        # the library's build is the lines right after its clone: mkdir, cd deeper into its folder
        # and build steps; anything else (cd /app) is the task's own again
        building = building and bool(re.match(r"^\s*(mkdir\s.*|cd\s+(?![/$~.])\S+\s*)?$", line))
        parts = split_commands(line.rstrip("\n"))
        for i in range(0, len(parts), 2):
            parts[i] = _rewrite_command(parts[i], out, workspace_files, line)
            if out.unsupported:
                return out
            command = re.sub(r"^(then|else|do|!)\s+", "", parts[i].strip())
            if out.network is None and not line.lstrip().startswith("#") and NETWORK.search(command):
                out.network = line.strip()
        new = "".join(parts) + ("\n" if line.endswith("\n") else "")
        lines.append(new)
    out.text = "".join(lines)
    return out


def _rewrite_command(segment: str, out: ScriptInstalls, files: dict[str, bytes], line: str) -> str:
    lead = re.match(r"^\s*(?:(?:then|else|do)\s+)?", segment).group(0)  # a keyword stays
    cmd = segment[len(lead):].strip()
    if not cmd or cmd.startswith("#"):
        return segment
    trail = segment[len(segment.rstrip()):]
    done = f"{lead}true{trail}"
    if m := _PIP.match(cmd) or _UV_ADD.match(cmd):
        reqs = _pip_requirements(m.group(1), files, out)
        if reqs is None:
            return segment
        out.python_requirements += reqs
        return done
    if m := _APT.match(cmd):
        if m.group(1) == "install":
            out.system_packages += [w.split("=")[0] for w in shlex.split(m.group(2)) if not w.startswith("-")]
        return done
    if any(p.match(cmd) for p in _UV_SETUP):
        return done
    if m := _UV_RUN.match(cmd):
        _pytest_plugins(cmd, out)
        return segment.replace(m.group(0), "python3 -m pytest" if m.group(1) == "pytest" else "python3", 1)
    if re.match(r"^python(\s|$)", cmd) and not _host_has("/usr/bin/python"):
        out.system_packages.append("python-is-python3")
        _say(out, "python -> Debian's python-is-python3 (the image's python command)")
    if _PYTEST.match(cmd):
        _pytest_plugins(cmd, out)
        return segment
    if _NPM_PROJECT.match(cmd):
        if "package.json" not in files:
            out.unsupported = f"test script runs {cmd!r} with no package.json in the workdir to prepare"
            return segment
        out.npm_project = True
        return f"{lead}ln -sfn {NPM_MOUNT}/node_modules node_modules{trail}"
    if m := _GRADLE_TEST.match(cmd):
        build = files.get("build.gradle", b"").decode(errors="replace")
        if not build:
            out.unsupported = f"test script runs {cmd!r}: no build.gradle in the workdir (Gradle's site is out of reach)"
            return segment
        blocker = gradle_blocker(build)
        if blocker:
            out.unsupported = (f"build.gradle needs {blocker} from Maven Central, which is out of reach here "
                               "(Debian's JUnit 5 and AssertJ serve only builds that need nothing else)")
            return segment
        out.junit = True
        _say(out, f"{cmd} -> termrl-junit (javac + Debian's JUnit 5 console launcher)")
        return f"{lead}{JUNIT}{trail}"
    if m := _CARGO_ADD.match(cmd):
        if not re.search(r"\|\|\s*true\b", line):  # only a failure the script tolerates may be skipped
            out.unsupported = f"test script runs {cmd!r}: crates.io is out of reach here"
            return segment
        _say(out, f"cargo add {m.group(1)} skipped (crates.io is out of reach; the script tolerates its failure)")
        return done
    if re.match(r"^cargo\s+(test|build|run|check)\b", cmd):
        crates = _cargo_dependencies(files.get("Cargo.toml", b"").decode(errors="replace"))
        if crates:
            debs = [crate_package(c) for c in crates]
            out.system_packages += debs
            out.cargo_registry = True
            _say(out, f"crates.io -> Debian's packaged crates ({' '.join(debs)}), through a Cargo source replacement")
        return segment
    if re.match(r"^go\s+mod\s+(download|tidy)\b", cmd):
        requires = _go_requires(files.get("go.mod", b"").decode(errors="replace"))
        if requires:
            out.unsupported = f"go.mod requires {requires[0]}, from the Go module proxy, which is out of reach here"
        return segment
    return segment


def split_commands(line: str) -> list[str]:
    """``line`` split at the shell's command separators outside quotes: [command, separator,
    command, ...] (as ``re.split`` with a group gives), so joining the parts gives the line back.

    >>> split_commands('echo "tests (python)" && npm install; (cd x)')
    ['echo "tests (python)" ', '&&', ' npm install', ';', ' ', '(', 'cd x', ')', '']
    """
    parts, start, i, quote = [], 0, 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 2
            continue
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            break  # a comment runs to the end of the line
        else:
            m = _SEP.match(line, i)
            if m:
                parts += [line[start:i], m.group(0)]
                i = start = m.end()
                continue
        i += 1
    parts.append(line[start:])
    return parts


def _pytest_plugins(cmd: str, out: ScriptInstalls) -> None:
    for word in cmd.split():
        plugin = PYTEST_PLUGINS.get(word.split("=")[0]) or next(
            (p for flag, p in PYTEST_PLUGINS.items() if flag.startswith("--") and word.startswith(flag + "-")), None)
        if plugin and plugin not in out.python_requirements:
            out.python_requirements.append(plugin)
            _say(out, f"pytest {word.split('=')[0]}: {plugin} from PyPI (the plugin the task's image had)")


def _host_has(path: str) -> bool:
    return os.path.exists(path)


def _say(out: ScriptInstalls, note: str) -> None:
    if note not in out.substitutions:
        out.substitutions.append(note)


def _pip_requirements(args: str, files: dict[str, bytes], out: ScriptInstalls) -> list[str] | None:
    words = shlex.split(args)
    reqs, skip = [], False
    for i, w in enumerate(words):
        if skip:
            skip = False
            continue
        if w in ("-r", "--requirement"):
            skip = True
            name = words[i + 1] if i + 1 < len(words) else ""
            data = files.get(name.removeprefix("./"))
            if data is None:
                out.unsupported = f"test script installs -r {name}, which is not in the workdir to prepare"
                return None
            reqs += [l.split("#")[0].strip() for l in data.decode(errors="replace").splitlines()
                     if l.split("#")[0].strip() and not l.strip().startswith("-")]
        elif w in ("-i", "--index-url", "--extra-index-url", "-c", "--constraint", "-t", "--target", "--python", "-p"):
            skip = True
        elif w in ("-e", "--editable"):
            out.unsupported = f"test script installs an editable project ({args.strip()!r})"
            return None
        elif not w.startswith("-"):
            reqs.append(w)
    return [r for r in reqs if r.lower() not in ("pip", "setuptools", "wheel")]


def _cargo_dependencies(cargo_toml: str) -> list[str]:
    """The crates a Cargo.toml depends on (any [*dependencies] table), by name."""
    try:
        data = tomllib.loads(cargo_toml) if cargo_toml else {}
    except tomllib.TOMLDecodeError:
        return []
    tables = [data.get(k, {}) for k in ("dependencies", "dev-dependencies", "build-dependencies")]
    tables += [t.get(k, {}) for t in data.get("target", {}).values() if isinstance(t, dict)
               for k in ("dependencies", "dev-dependencies")]
    return [name for table in tables if isinstance(table, dict) for name, spec in table.items()
            if not (isinstance(spec, dict) and "path" in spec)]


def _go_requires(go_mod: str) -> list[str]:
    block = re.search(r"^require\s*\((.*?)^\)", go_mod, re.M | re.S)
    lines = block.group(1).splitlines() if block else []
    lines += [m for m in re.findall(r"^require\s+([^(\s].*)$", go_mod, re.M)]
    return [l.split("//")[0].strip() for l in lines if l.split("//")[0].strip()]
