"""Reading Terminal-Bench and Harbor environments (Dockerfiles, test scripts) without Docker.

termrl runs these tasks in its own sandbox, whose system is the host's /usr.
A Dockerfile is therefore *interpreted*: ``WORKDIR`` gives the workdir,
``COPY``/``ADD`` say which files of the task go where, ``ENV`` sets
variables, and ``RUN`` lines become setup commands, except the installs of
tools the harness itself uses (tmux, asciinema...). ``pip install`` lines
(and a test script's) become the task's Python environment: the requirements
the sandbox's python3 does not already satisfy, built once and mounted
(``termrl.tasks.pyenv``). A Debian package install the host cannot satisfy,
or anything else that needs the network, makes the task *unsupported*, with
the reason: it is never run wrong.

Standard test scripts download curl, uv and pytest at test time. When a
script is recognised as that template, its pytest files are run with the
sandbox's own pytest instead, which gives the same verdict.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement

from termrl.protocols import TaskFile, TestKind, TestSpec
from termrl.sandbox.bwrap import DEFAULT_PATH
from termrl.tasks import installers
from termrl.tasks.formats.common import TaskFormatError, read_tree

HARNESS_PACKAGES = {"tmux", "asciinema", "curl", "wget", "ca-certificates", "gnupg", "lsb-release",
                    "python3-pip", "python3-venv", "pipx", "software-properties-common", "apt-utils"}
"""Debian packages that the standard images install for the harness, not for the task."""
TEST_PY_PACKAGES = {"pytest", "pytest-json-ctrf", "pytest-json-report", "pytest-timeout"}
NETWORK_WORDS = re.compile(r"\b(curl|wget|apt-get|apt|pip3?|uv|uvx|npm|git\s+clone|conda)\b")


@dataclass
class Environment:
    workdir: str = "/app"
    env: dict[str, str] = field(default_factory=dict)
    setup: list[str] = field(default_factory=list)
    files: dict[str, TaskFile] = field(default_factory=dict)
    """Absolute path -> file, as the COPY/ADD lines place them."""
    dirs: set[str] = field(default_factory=set)
    """The directories COPY/ADD lines copy into."""
    python_requirements: list[str] = field(default_factory=list)
    """What its ``pip install`` lines install that the sandbox's python3 lacks (``termrl.tasks.pyenv``)."""
    system_packages: list[str] = field(default_factory=list)
    """What its ``apt-get install`` lines install that the host lacks (``termrl.tasks.sysenv``)."""
    links: dict[str, str] = field(default_factory=dict)
    """Command name -> target of its ``ln -s`` lines into the system's command folders (see ``LINK_DIR``)."""
    substitutions: list[str] = field(default_factory=list)
    """What runs instead of what (``termrl.tasks.installers``), one line each."""
    unsupported: str | None = None

    def is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.files)

    def system_files(self) -> dict[str, TaskFile]:
        """The files COPY puts into system folders (``LAYER_DIRS``): part of the task's system layer."""
        return {path: f for path, f in self.files.items() if self._system(path)}

    def _system(self, path: str) -> bool:
        return under(path, LAYER_DIRS) and not PurePosixPath(path).is_relative_to(self.workdir)

    def split(self) -> tuple[dict[str, TaskFile], dict[str, dict[str, TaskFile]]]:
        """(files of the workdir, {other copied-into directory: its files}); files copied into
        system folders are not in either (``system_files``)."""
        workspace: dict[str, TaskFile] = {}
        extra: dict[str, dict[str, TaskFile]] = {}
        outside = sorted((d for d in self.dirs if not PurePosixPath(d).is_relative_to(self.workdir)
                          and not self._system(d)), key=len)
        for path, f in self.files.items():
            if self._system(path):
                continue
            p = PurePosixPath(path)
            if p.is_relative_to(self.workdir):
                workspace[str(p.relative_to(self.workdir))] = f
                continue
            # the outermost copied-into directory holding it: one writable bind per tree
            home = next(d for d in outside if p.is_relative_to(d))
            extra.setdefault(home, {})[str(p.relative_to(home))] = f
        for d in outside:  # folders made or copied into that hold no file: empty, but there
            if not any(PurePosixPath(d).is_relative_to(k) for k in extra):
                extra[d] = {}
        return workspace, extra


@functools.lru_cache(maxsize=None)
def debian_package_installed(name: str) -> bool:
    """Whether the host has ``name`` installed, or an installed package that provides it
    (NodeSource's nodejs provides npm)."""
    res = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True)
    return res.returncode == 0 and "install ok installed" in res.stdout or name in _provided()


@functools.lru_cache(maxsize=1)
def _provided() -> frozenset[str]:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Provides}\n"], capture_output=True, text=True)
    names = set()
    for line in res.stdout.splitlines():
        status, _, provides = line.partition("\t")
        if "install ok installed" in status:
            names.update(p.strip().split(" ")[0] for p in provides.split(",") if p.strip())
    return frozenset(names)


def _logical_lines(text: str) -> list[str]:
    lines, cur = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        if cur.strip() and not cur.strip().startswith("#"):
            lines.append(cur.strip())
        cur = ""
    if cur.strip():
        lines.append(cur.strip())
    return lines


def missing_debian_packages(names: list[str]) -> list[str]:
    """The packages of ``names`` the host lacks (the ones the standard images install for the
    harness aside: the sandbox brings what the harness needs)."""
    return [p for p in names if p not in HARNESS_PACKAGES and not debian_package_installed(p)]


def missing_python_packages(specs: list[str]) -> list[str]:
    """The requirements of ``specs`` the sandbox's python3 does not satisfy (the test runner's
    own packages aside: the sandbox brings them)."""
    return [s for s in specs if _project(s) not in TEST_PY_PACKAGES and not sandbox_python_satisfies(s)]


def _project(spec: str) -> str:
    return re.split(r"[<>=!~\[;@ ]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def sandbox_python_satisfies(spec: str) -> bool:
    """Whether the sandbox's python3 already has a distribution meeting ``spec`` (``pandas``,
    ``numpy==1.26.4``, ``scipy>=1.10``); a requirement it cannot read is never satisfied."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    if req.url:
        return False
    if req.marker is not None and not req.marker.evaluate():
        return True  # not for this interpreter: nothing to install
    version = sandbox_python_version_of(req.name)
    return version is not None and (not req.specifier or req.specifier.contains(version, prereleases=True))


@functools.lru_cache(maxsize=None)
def sandbox_python_version_of(project: str) -> str | None:
    """The version of ``project`` installed for the sandbox's python3, or None."""
    res = subprocess.run(["/usr/bin/python3", "-I", "-c", "import importlib.metadata as m, sys\n"
                          "try: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: pass", project],
                         capture_output=True, text=True)
    return res.stdout.strip() or None if res.returncode == 0 else None


def _apt_packages(cmd: str) -> list[str] | None:
    words = shlex.split(cmd)
    if len(words) >= 2 and words[0] in ("apt-get", "apt") and words[1] == "install":
        return [w.split("=")[0] for w in words[2:] if not w.startswith("-")]
    return None


def _pip_packages(cmd: str) -> list[str] | None:
    words = shlex.split(cmd)
    if not words:
        return None
    if words[0] in ("pip", "pip3") and len(words) > 1 and words[1] == "install":
        rest = words[2:]
    elif words[:3] in (["uv", "pip", "install"], ["python", "-m", "pip"], ["python3", "-m", "pip"]):
        rest = words[3:] if words[0] == "uv" else words[4:]
    elif words[:2] == ["uv", "add"]:
        rest = words[2:]
    else:
        return None
    if any(w in ("-r", "--requirement", "-e", "--editable") or w.startswith(("-r", "--requirement="))
           for w in rest):
        return None
    out, skip = [], False
    for w in rest:
        if skip:
            skip = False
        elif w in PIP_VALUE_OPTIONS:
            skip = True
        elif not w.startswith("-"):
            out.append(w)
    return out


PIP_VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint",
                     "-t", "--target", "--prefix", "--root", "--platform", "--python-version", "--implementation",
                     "--abi", "--trusted-host", "--cache-dir", "--src", "--upgrade-strategy", "--progress-bar",
                     "--timeout", "--retries", "--proxy", "--python", "-p"}
"""pip options followed by a value: the value is not a requirement."""


def _split_commands(run: str) -> list[str]:
    return [c.strip() for c in re.split(r"&&|;", run) if c.strip()]


def parse_dockerfile(path: Path, context: Path) -> Environment:
    """Interpret a Dockerfile; files are read from ``context`` (the build context)."""
    env = Environment()
    text = path.read_text()
    workdir_set = False
    for line in _logical_lines(text):
        instr, _, arg = line.partition(" ")
        instr, arg = instr.upper(), arg.strip()
        if instr == "WORKDIR":
            arg = expand(arg, env.env)
            env.workdir = str(PurePosixPath(env.workdir) / arg) if not arg.startswith("/") else arg
            workdir_set = True
        elif instr == "ENV":
            env.env.update({k: expand(v, env.env) for k, v in _parse_env(arg).items()})
        elif instr in ("COPY", "ADD"):
            _copy(env, arg, context, path, instr)
        elif instr == "RUN":
            _run(env, arg, path)
        elif instr == "USER":
            if arg.split(":")[0] not in ("root", "0"):
                _say(env, f"USER {arg} -> root (the sandbox's one user, uid 0 in its own namespace)")
        elif instr in ("FROM", "LABEL", "CMD", "ENTRYPOINT", "EXPOSE", "SHELL", "ARG",
                       "VOLUME", "HEALTHCHECK", "STOPSIGNAL", "MAINTAINER", "ONBUILD"):
            continue
        else:
            raise TaskFormatError(path, None, f"unknown Dockerfile instruction {instr!r}")
        if env.unsupported:
            break
    if not workdir_set:
        env.workdir = "/app"
    _follow_stand_ins(env)
    if env.workdir == "/":
        env.unsupported = f"{path.name}: WORKDIR / cannot be a private workspace"
    return env


_VAR = re.compile(r"\$(?:\{(\w+)(?::([-+])([^}]*))?\}|(\w+))")


def expand(value: str, env: dict[str, str]) -> str:
    """Docker's substitution in ENV, WORKDIR and COPY: ``$VAR``, ``${VAR}``, ``${VAR:-default}``
    and ``${VAR:+alternative}``, from the variables set so far (``PATH`` is the base image's).

    >>> expand("/usr/local/go/bin:$PATH", {})
    '/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    >>> expand("${JAVA_HOME}/bin:${X:-none}", {"JAVA_HOME": "/usr/lib/jvm/java-17"})
    '/usr/lib/jvm/java-17/bin:none'
    """
    known = {"PATH": DEFAULT_PATH, **env}

    def one(m: re.Match) -> str:
        name = m.group(1) or m.group(4)
        current = known.get(name, "")
        if m.group(2) == "-":
            return current or m.group(3)
        if m.group(2) == "+":
            return m.group(3) if current else ""
        return current

    return _VAR.sub(one, value)


def _parse_env(arg: str) -> dict[str, str]:
    words = shlex.split(arg)
    if len(words) >= 2 and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return dict(w.split("=", 1) for w in words if "=" in w)


LINK_DIR = "/opt/termrl/bin"
"""Where a Dockerfile's links into the system's command folders go (first on PATH): the sandbox's
/usr is the host's, read-only."""
BIN_DIRS = ("/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/usr/local/sbin", "/sbin")
_LINK = re.compile(r"^ln\s+-(?:s|sf|fs)\s+(\S+)\s+(\S+)$")

SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/proc", "/sys", "/dev")
"""The host's system: read-only in the sandbox."""
LAYER_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
"""System folders a COPY may write into: its files go into the task's system layer (``termrl.tasks.sysenv``)."""


def under(path: str, dirs: tuple[str, ...]) -> bool:
    """Whether ``path`` is one of ``dirs`` or inside one (``/usrdata`` is not inside ``/usr``)."""
    return any(PurePosixPath(path).is_relative_to(d) for d in dirs)


def _copy(env: Environment, arg: str, context: Path, dockerfile: Path, instr: str) -> None:
    if arg.startswith("["):
        words = json.loads(arg)
    else:
        words = [w for w in shlex.split(arg) if not w.startswith("--")]
    if any(w.startswith("--from") for w in shlex.split(arg)) or len(words) < 2:
        env.unsupported = f"{dockerfile.name}: {instr} {arg}: multi-stage or malformed copies are not supported"
        return
    *sources, dest = words
    dest = expand(dest, env.env)
    if re.match(r"^https?://", sources[0]):
        env.unsupported = f"{dockerfile.name}: {instr} downloads {sources[0]} (no network here)"
        return
    dest_abs = str(PurePosixPath(env.workdir, dest))  # an absolute dest replaces the workdir
    if under(dest_abs, SYSTEM_DIRS) and not under(dest_abs, LAYER_DIRS):
        env.unsupported = f"{dockerfile.name}: {instr} into {dest_abs}: a kernel file system, not the task's"
        return
    into_dir = (dest.endswith("/") or dest in (".", "./") or len(sources) > 1
                or dest_abs == env.workdir or env.is_dir(dest_abs))
    if PurePosixPath(dest_abs).parent == PurePosixPath("/") and not into_dir:
        env.unsupported = f"{dockerfile.name}: {instr} to the file {dest_abs} at the root is not supported"
        return
    for src in sources:
        matches = sorted(context.glob(src)) if any(c in src for c in "*?[") else [context / src]
        for m in matches:
            if not m.exists():
                raise TaskFormatError(dockerfile, f"{instr} {src}",
                                      f"copies {src}, which is not in the build context {context}")
            if m.is_dir():
                env.dirs.add(dest_abs)
                for rel, f in read_tree(m).items():
                    env.files[f"{dest_abs}/{rel}"] = f
            elif into_dir or len(matches) > 1:
                env.dirs.add(dest_abs)
                env.files[f"{dest_abs}/{m.name}"] = TaskFile(m.read_bytes(), _mode(m))
            else:
                env.dirs.add(str(PurePosixPath(dest_abs).parent))
                env.files[dest_abs] = TaskFile(m.read_bytes(), _mode(m))


def _mode(p: Path) -> int:
    return 0o755 if p.stat().st_mode & 0o111 else 0o644


def _run(env: Environment, arg: str, dockerfile: Path) -> None:
    if arg.startswith("["):
        arg = " ".join(shlex.quote(w) for w in json.loads(arg))
    commands = _split_commands(arg)
    if re.search(r"(^|[;&|]\s*)(if|for|while|until|case)\s", arg) and not NETWORK_WORDS.search(arg):
        env.setup.append(arg)  # a compound command stays whole
        return
    if installers.is_version_check(commands):
        return  # `RUN go version`: prints, builds nothing
    toolchain = installers.toolchain_of(arg)
    if toolchain is not None:
        # the download dance (curl, tar, a PPA) is replaced whole; its package installs still count
        if toolchain.packages:
            env.system_packages += missing_debian_packages(list(toolchain.packages))
        _say(env, f"{toolchain.what} -> Debian's {' '.join(toolchain.packages) or 'packages of the same names'}")
        for cmd in commands:
            apt = _apt_packages(cmd)
            if apt is not None:
                _apt(env, apt)
        return
    kept = []
    for cmd in commands:
        alternative = _ALTERNATIVE.match(cmd)
        if alternative:  # update-alternatives --install LINK NAME PATH PRIORITY: a link, as ln -s
            cmd = f"ln -sf {alternative.group(2)} {alternative.group(1)}"
            if Path(alternative.group(1)).resolve() == Path(alternative.group(2)).resolve():
                continue  # the host's link already points there
        npm_global = _NPM_GLOBAL.match(cmd)
        if npm_global:
            env.system_packages += [f"npm:{p}" for p in shlex.split(npm_global.group(1)) if not p.startswith("-")]
            continue
        link = _LINK.match(cmd)
        if link and str(PurePosixPath(link.group(2)).parent) in BIN_DIRS:
            # `ln -s /usr/bin/python3 /usr/bin/python`: the same command name, from a folder on PATH
            if not env.links:
                env.dirs.add(LINK_DIR)
                env.env["PATH"] = f"{LINK_DIR}:{env.env.get('PATH', DEFAULT_PATH)}"
            env.links[PurePosixPath(link.group(2)).name] = link.group(1)
            kept.append(f"mkdir -p {LINK_DIR} && ln -sf {shlex.quote(link.group(1))} "
                        f"{LINK_DIR}/{shlex.quote(PurePosixPath(link.group(2)).name)}")
            continue
        words = cmd.split()
        if words[:1] == ["mkdir"]:
            # a folder outside the workdir becomes one of the sandbox's own (the root is read-only)
            made = [w for w in words[1:] if w.startswith("/") and not under(w, SYSTEM_DIRS + ("/tmp", "/root"))
                    and not PurePosixPath(w).is_relative_to(env.workdir)]
            env.dirs.update(str(PurePosixPath(w)) for w in made)
            if made and not any(w in ("-p", "--parents") or w.startswith("-") and "p" in w[1:2] for w in words):
                cmd = "mkdir -p " + cmd[len("mkdir"):].strip()
        apt = _apt_packages(cmd)
        pip = _pip_packages(cmd)
        if words[:2] in (["apt-get", "update"], ["apt", "update"]) or words[:1] == ["rm"] and "/var/lib/apt/lists" in cmd:
            continue
        if apt is not None:
            _apt(env, apt)
            continue
        if pip is not None:
            env.python_requirements += missing_python_packages(pip)
            continue
        if NETWORK_WORDS.search(cmd) and re.search(r"https?://|\b(curl|wget|git clone)\b", cmd):
            env.unsupported = f"{dockerfile.name}: RUN {cmd!r} needs the network"
            return
        kept.append(cmd)
    if kept:
        env.setup.append(" && ".join(kept))


_ALTERNATIVE = re.compile(r"^update-alternatives\s+--install\s+(\S+)\s+\S+\s+(\S+)\s+\d+$")
_NPM_GLOBAL = re.compile(r"^npm\s+(?:install|i)\s+(?:-g|--global)\s+(.+)$")


def _say(env: Environment, note: str) -> None:
    if note not in env.substitutions:
        env.substitutions.append(note)


def _apt(env: Environment, packages: list[str]) -> None:
    """Add ``packages`` the host lacks; a JDK the host's release lacks becomes the nearest it has."""
    for name in missing_debian_packages(packages):
        stand_in = installers.jdk_stand_in(name)
        if stand_in:
            _say(env, f"{name} -> {stand_in} (Debian's nearest)")
            name = stand_in
            if not missing_debian_packages([name]):
                continue
        env.system_packages.append(name)


def _follow_stand_ins(env: Environment) -> None:
    """Paths that name a substituted JDK (``JAVA_HOME=/usr/lib/jvm/java-21-openjdk-amd64``) name
    the one that stands in for it."""
    for note in env.substitutions:
        m = re.match(r"openjdk-(\d+)-\S+ -> openjdk-(\d+)-", note)
        if m:
            old, new = f"java-{m.group(1)}-openjdk", f"java-{m.group(2)}-openjdk"
            env.env = {k: v.replace(old, new) for k, v in env.env.items()}
            env.setup = [c.replace(old, new) for c in env.setup]


# --------------------------------------------------------------------------- test scripts


@dataclass
class ScriptPlan:
    """What a Terminal-Bench/Harbor test script amounts to."""

    standard: bool
    pytest_files: list[str] = field(default_factory=list)
    unsupported: str | None = None
    in_tests_dir: bool = False
    """The script cd's into the tests directory before running pytest."""
    python_requirements: list[str] = field(default_factory=list)
    """What the script's ``pip install`` (or ``uvx --with``) lines add to the sandbox's python3."""
    system_packages: list[str] = field(default_factory=list)
    """What the script's ``apt-get install`` lines add that the host lacks."""
    script: str | None = None
    """A script that is not the template, with its installs done ahead of time."""
    tests: dict[str, TaskFile] = field(default_factory=dict)
    """The test files, shell scripts among them rewritten the same way."""
    npm_project: bool = False
    """The script installs the workdir's package.json (``termrl.tasks.npmenv``)."""
    junit: bool = False
    """The script's ``gradle test`` runs as ``termrl-junit``."""
    cargo_registry: bool = False
    """Its crates come from Debian's packages (``installers.CARGO_CONFIG``)."""
    substitutions: list[str] = field(default_factory=list)


_PYTEST_RE = re.compile(r"^(?:uv\s+run\s+|uvx\s+.*?\s|python3?\s+-m\s+)?pytest(\s.*)?$")
_IGNORED = [
    r"^set\s+[-+]\w+", r"^echo\b[^>]*$", r"^apt(-get)?\s+update\b.*", r"^source\s+\S*(\.local/bin/env|activate)$",
    r"^\.\s+\S*(\.local/bin/env|activate)$", r"^(curl|wget)\s.*astral\.sh/uv.*\|\s*(ba)?sh.*$",
    r"^uv\s+init\b.*", r"^uv\s+venv\b.*", r"^export\s+PATH=.*",
    r"^mkdir\s+-p\s+/logs/verifier$", r"^(then|else|fi)$", r"^exit\s+\d+$", r"^true$",
    r'^if\s+\[\s+"?\$PWD"?\s+=\s+"?/"?\s+\]$', r"^if\s+\[\s+\$\?\s+-eq\s+0\s+\]$",
    r"^(mkdir\s+-p\s+\S+|cp\s+-r\s+\S+\s+\S+)$",
]


def analyze_test_script(text: str, tests: dict[str, TaskFile], script_name: str) -> ScriptPlan:
    """Recognise the standard 'install uv + pytest, run pytest' template."""
    files: list[str] = []
    requirements: list[str] = []
    packages: list[str] = []
    in_tests_dir = False
    for line in _logical_lines(text):
        if line.startswith("#!"):
            continue
        for cmd in _split_commands(line):
            cmd = re.sub(r"^(then|else)\s+", "", cmd)
            if any(re.match(p, cmd) for p in _IGNORED):
                continue
            if re.match(r"^cd\s+(\$TEST_DIR|\$\{TEST_DIR\}|/tests)/?$", cmd):
                in_tests_dir = True
                continue
            if re.match(r"^echo\s+\S+\s*>+\s*/logs/verifier/reward\.(txt|json)$", cmd):
                continue
            apt = _apt_packages(cmd)
            if apt is not None:
                packages += missing_debian_packages(apt)
                continue
            pip = _pip_packages(cmd)
            if pip is not None:
                requirements += missing_python_packages(pip)
                continue
            m = _PYTEST_RE.match(cmd)
            if m:
                if cmd.startswith("uvx"):
                    requirements += missing_python_packages(re.findall(r"(?:-w|--with)\s+(\S+)", cmd))
                args = shlex.split(m.group(1) or "")
                skip_next = False
                for a in args:
                    if skip_next:
                        skip_next = False
                        continue
                    if a in ("--ctrf", "--json-report-file", "--junitxml", "-k", "-m", "-p", "--timeout"):
                        skip_next = True
                        continue
                    if a.startswith("-"):
                        continue
                    rel = re.sub(r"^(\$TEST_DIR|\$\{TEST_DIR\}|/tests|/app/tests)/", "", a)
                    if rel in tests or any(fnmatch.fnmatch(t, rel.rstrip("/") + "/*") for t in tests):
                        files.append(rel)
                    elif rel in ("$TEST_DIR", "${TEST_DIR}", "/tests", "/app/tests", "."):
                        continue
                    else:
                        return ScriptPlan(False)
                continue
            return ScriptPlan(False)
    if not files and not any(_PYTEST_RE.match(c) for l in _logical_lines(text) for c in _split_commands(l)):
        return ScriptPlan(False)
    return ScriptPlan(True, pytest_files=files, in_tests_dir=in_tests_dir, python_requirements=requirements,
                      system_packages=packages)


def test_spec_for(script: str, tests: dict[str, TaskFile], name: str, env: tuple[tuple[str, str], ...],
                  fallback: TestKind, script_file: str,
                  workspace: dict[str, TaskFile] | None = None) -> tuple[TestSpec, str | None, ScriptPlan]:
    """The TestSpec of a Terminal-Bench/Harbor test script, why it cannot run here (or None), and
    its plan (what its installs add to the task's environment; ``plan.script`` and
    ``plan.tests``: the script and test files with those installs done ahead of time).

    The standard template runs its pytest files with the sandbox's pytest; any other script
    runs as it is (``fallback``), its installs built at prepare time
    (``termrl.tasks.installers``), unless what is left of it needs the network.
    """
    plan = analyze_test_script(script, tests, name)
    if plan.standard:
        return TestSpec(kind=TestKind.PYTEST, pytest_files=tuple(plan.pytest_files), env=env,
                        cwd="/tests" if plan.in_tests_dir else ""), None, plan
    files = {k: f.data for k, f in (workspace or {}).items()}
    plan = ScriptPlan(False, tests=dict(tests))
    reason = None
    scripts = {name: script, **{k: f.data.decode(errors="replace") for k, f in tests.items()
                                if k.endswith(".sh") and k != script_file}}
    for file, text in scripts.items():
        done = installers.rewrite_test_script(text, files)
        reason = reason or (f"{file}: {done.unsupported}" if done.unsupported else None) or (
            f"{file} needs the network after its installs are prepared: {done.network!r}" if done.network else None)
        plan.python_requirements += [r for r in done.python_requirements  # run as written: its plugins too
                                     if _project(r) != "pytest" and not sandbox_python_satisfies(r)]
        plan.system_packages += missing_debian_packages(done.system_packages)
        if done.junit:
            plan.system_packages += missing_debian_packages(list(installers.JUNIT_PACKAGES))
        plan.npm_project = plan.npm_project or done.npm_project
        plan.cargo_registry = plan.cargo_registry or done.cargo_registry
        plan.junit = plan.junit or done.junit
        plan.substitutions += [s for s in done.substitutions if s not in plan.substitutions]
        if file == name:
            plan.script = done.text
        else:
            plan.tests[file] = TaskFile(done.text.encode(), tests[file].mode)
    reason = reason or _workdir_scripts_offline(plan.script or script, files)
    for package, note in installers.headers_needed({**files, **{k: f.data for k, f in tests.items()}}):
        if package not in plan.system_packages and missing_debian_packages([package]):
            plan.system_packages.append(package)
            plan.substitutions.append(note)
    return TestSpec(kind=fallback, script=script_file, env=env), reason, plan


def _workdir_scripts_offline(script: str, files: dict[str, bytes]) -> str | None:
    """Why a script of the workdir that the test script runs cannot run offline, or None. Such a
    script is the task's (the agent may change it): it runs as it is, so what it installs at test
    time cannot be prepared."""
    for rel, data in files.items():
        if not rel.endswith(".sh") or not re.search(rf"(^|[\s;(&|/]){re.escape(rel)}\b", script, re.M):
            continue
        done = installers.rewrite_test_script(data.decode(errors="replace"), files)
        if done.text != data.decode(errors="replace") or done.network or done.unsupported:
            what = done.network or done.unsupported or next(
                (a for a, b in zip(data.decode(errors="replace").splitlines(), done.text.splitlines()) if a != b), "")
            return (f"the test script runs the workdir's {rel}, which installs or downloads at test time "
                    f"({what.strip()[:160]!r}): a script the agent can change cannot be prepared ahead")
    return None


NPM_FILES = ("package.json", "package-lock.json", "npm-shrinkwrap.json", ".npmrc")


def node_project(plan: ScriptPlan, workspace: dict[str, TaskFile]) -> dict[str, TaskFile]:
    """The workdir's package.json (and lock files) when the test script installs it."""
    if not plan.npm_project:
        return {}
    return {name: workspace[name] for name in NPM_FILES if name in workspace}


def task_files(plan: ScriptPlan) -> dict[str, TaskFile]:
    """The files the test script's stand-ins need in the task's system layer."""
    files = {}
    if plan.junit:
        files[installers.JUNIT] = TaskFile(installers.JUNIT_SCRIPT.encode(), 0o755)
    if plan.cargo_registry:
        files[f"{installers.CARGO_HOME_DIR}/config.toml"] = TaskFile(installers.CARGO_CONFIG.encode(), 0o644)
    return files


_NET_LIBRARY = re.compile(r"^\s*(import\s+[\w., ]*?\b|from\s+)(requests|httpx|aiohttp|urllib\.request|urllib3|http\.client)\b",
                          re.M)
_REMOTE_URL = re.compile(r"""["'](https?://(?!localhost|127\.|0\.0\.0\.0|\[::1\])[^\s"'/]+)""")


def tests_reach_network(tests: dict[str, TaskFile]) -> str | None:
    """Why a task's hidden tests need a remote service (an HTTP client and a remote address in
    one test file: a judge server), or None. Such a task cannot run in a sandbox without a
    network, nor under Docker without that service."""
    for name, f in sorted(tests.items()):
        if not name.endswith(".py"):
            continue
        text = f.data.decode(errors="replace")
        url = _REMOTE_URL.search(text)
        if url and _NET_LIBRARY.search(text):
            return f"tests/{name} calls a remote service ({url.group(1)}): the tests need the network"
    return None
