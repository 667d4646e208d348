"""Hostile input: task directories, reward specs, train configs and model replies that are broken,
mistyped, huge or malicious. Each gets a typed error that names what to fix (for files: the file,
the field), or, for a model's reply, a parse result or a format error; never an unexpected
exception, a hang or a host file read into a task.

Property-based (Hypothesis): the inputs are mutations of real, valid ones, so they reach deep
into the loaders instead of failing at the first line.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from termrl.actions import FormatError, parse
from termrl.reward.errors import SpecError
from termrl.reward.spec import PRESETS_DIR, load_spec, spec_from_dict
from termrl.tasks.formats import load_task
from termrl.tasks.formats.common import MAX_FILE_MB, TaskFormatError
from termrl.training.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ROOT / "termrl" / "tasks" / "builtin"
FIXTURES = ROOT / "tests" / "fixtures"
TASK_DIRS = [BUILTIN / "shell-word-freq", FIXTURES / "harbor" / "dedupe-contacts",
             FIXTURES / "terminal_bench" / "log-status-summary"]
EXAMPLES = int(os.environ.get("TERMRL_HYPOTHESIS_EXAMPLES", "60"))
"""Examples per property (more for a deeper search: TERMRL_HYPOTHESIS_EXAMPLES=2000)."""
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])

leaves = (st.none() | st.booleans() | st.integers(min_value=-(10 ** 15), max_value=10 ** 15)
          | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


def mutate(draw, doc: dict) -> dict:
    """``doc`` with 1-3 random edits somewhere in its tree: a value replaced by one of any type,
    a key deleted, or an unknown key added."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        node = doc
        while True:
            keys = list(node)
            if not keys:
                node[draw(st.text(min_size=1, max_size=10))] = draw(values)
                break
            key = draw(st.sampled_from(keys))
            if isinstance(node[key], dict) and node[key] and draw(st.booleans()):
                node = node[key]
                continue
            op = draw(st.sampled_from(["set", "delete", "add"]))
            if op == "set":
                node[key] = draw(values)
            elif op == "delete":
                del node[key]
            else:
                node[draw(st.text(min_size=1, max_size=10))] = draw(values)
            break
    return doc


# ---- reward specs -------------------------------------------------------------------------------

PRESETS = sorted(PRESETS_DIR.glob("*.toml"))


@SETTINGS
@given(data=st.data(), preset=st.sampled_from(PRESETS))
def test_a_mutated_reward_spec_loads_or_names_its_field(data, preset):
    doc = mutate(data.draw, tomllib.loads(preset.read_text()))
    try:
        spec = spec_from_dict(doc, "spec.toml")
    except SpecError as e:
        assert e.file == "spec.toml" and str(e).startswith("spec.toml")
        return
    for component in spec.components:  # what loads is usable: a finite weight all through training
        for progress in (0.0, 0.5, 1.0):
            w = component.weight(progress)
            assert isinstance(w, (int, float)) and w == w and abs(w) != float("inf"), component


@SETTINGS
@given(text=st.text(max_size=300) | st.binary(max_size=300))
def test_a_reward_spec_file_of_any_bytes_is_a_spec_error(tmp_path, text):
    path = tmp_path / "spec.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert str(path) in str(e.value)


# ---- train configs ------------------------------------------------------------------------------

CONFIG = tomllib.loads((ROOT / "configs" / "real-cpu.toml").read_text())


@SETTINGS
@given(data=st.data())
def test_a_mutated_train_config_loads_or_names_its_field(data):
    doc = mutate(data.draw, CONFIG)
    doc["model"] = {**doc.get("model", {}), "tiny": True} if isinstance(doc.get("model"), dict) else doc.get("model")
    try:
        load_config(data=doc)
    except ConfigError as e:
        assert str(e)


@SETTINGS
@given(override=st.text(max_size=40))
def test_any_override_string_loads_or_is_a_config_error(tmp_path, override):
    path = tmp_path / "c.toml"
    path.write_text('algorithm = "rft"\n[model]\ntiny = true\n[tasks]\ntrain = "logs-count:0-1"\n')
    try:
        load_config(path, [override])
    except ConfigError as e:
        assert str(e)


# ---- task directories ---------------------------------------------------------------------------

def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _spec_file(task: Path) -> Path:
    for name in ("task.toml", "task.yaml"):
        if (task / name).exists():
            return task / name
    raise AssertionError(task)


edits = st.lists(st.tuples(st.sampled_from(["delete", "replace", "garbage", "duplicate"]), st.integers(0, 200),
                           st.text(max_size=20) | st.binary(max_size=20)), min_size=1, max_size=4)


@SETTINGS
@given(task=st.sampled_from(TASK_DIRS), changes=edits)
def test_a_mangled_task_file_loads_or_names_the_file(tmp_path_factory, task, changes):
    root = _copy(task, tmp_path_factory.mktemp("task"))
    spec = _spec_file(root)
    lines = spec.read_bytes().split(b"\n")
    for op, at, payload in changes:
        i = at % max(len(lines), 1)
        raw = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
        if op == "delete" and lines:
            del lines[i]
        elif op == "replace" and lines:
            key = lines[i].split(b"=")[0].split(b":")[0]
            sep = b" = " if spec.suffix == ".toml" else b": "
            lines[i] = key + sep + raw if key.strip() else raw
        elif op == "garbage":
            lines.insert(i, raw)
        else:
            lines.insert(i, lines[i] if lines else raw)
    spec.write_bytes(b"\n".join(lines))
    try:
        load_task(root)
    except TaskFormatError as e:
        assert e.file.startswith(str(root)), e


def _native(tmp_path: Path) -> Path:
    return _copy(BUILTIN / "shell-word-freq", tmp_path)


def test_a_link_out_of_the_task_directory_is_refused_not_read(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("RTSECRET-host-file")
    for target in (secret, Path("/etc/passwd"), Path("/dev/zero")):
        task = _native(tmp_path / f"t-{target.name}")
        link = task / "workspace" / "notes.txt"
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(target)
        with pytest.raises(TaskFormatError) as e:
            load_task(task)
        assert e.value.file == str(link) and "outside" in str(e.value)


def test_a_link_inside_its_folder_is_read_as_its_file(tmp_path):
    task = _native(tmp_path)
    (task / "workspace" / "data").mkdir(parents=True, exist_ok=True)
    (task / "workspace" / "data" / "real.txt").write_text("the data\n")
    (task / "workspace" / "copy.txt").symlink_to(task / "workspace" / "data" / "real.txt")
    loaded = load_task(task)
    assert loaded.workspace["copy.txt"].data == b"the data\n"


def test_a_linked_tests_folder_is_refused(tmp_path):
    task = _native(tmp_path / "a")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(task / "tests", elsewhere)
    (task / "tests").symlink_to(elsewhere)
    with pytest.raises(TaskFormatError) as e:
        load_task(task)
    assert e.value.file == str(task / "tests") and "symbolic link" in str(e.value)


def test_a_pipe_in_a_task_directory_is_refused_without_blocking(tmp_path):
    task = _native(tmp_path)
    os.mkfifo(task / "tests" / "data.fifo")
    with pytest.raises(TaskFormatError) as e:
        load_task(task)  # reading the pipe would block forever
    assert e.value.file.endswith("data.fifo") and "regular file" in str(e.value)


def test_a_huge_task_file_is_refused_before_it_is_read(tmp_path):
    task = _native(tmp_path)
    (task / "workspace").mkdir(exist_ok=True)
    with open(task / "workspace" / "huge.bin", "wb") as f:
        f.truncate((MAX_FILE_MB + 1) << 20)  # sparse: costs no disk
    with pytest.raises(TaskFormatError) as e:
        load_task(task)
    assert e.value.file.endswith("huge.bin") and f"{MAX_FILE_MB} MB" in str(e.value)


@pytest.mark.parametrize("limits", ["agent_timeout_sec = -5", "max_steps = 0", "memory_mb = 1e30",
                                    "pids = \"many\"", "disk_mb = -1", "verifier_timeout_sec = nan"])
def test_absurd_limits_are_named(tmp_path, limits):
    task = _native(tmp_path)
    text = (task / "task.toml").read_text()
    assert "[limits]" in text
    key = limits.split(" = ")[0]
    lines = [line for line in text.splitlines() if not line.startswith(key + " ")]
    out = []
    for line in lines:
        out.append(line)
        if line.strip() == "[limits]":
            out.append(limits)
    (task / "task.toml").write_text("\n".join(out) + "\n")
    with pytest.raises(TaskFormatError) as e:
        load_task(task)
    assert e.value.field == f"limits.{key}", e.value


# ---- model replies ------------------------------------------------------------------------------

TOOL = "<tool_call>\n{}\n</tool_call>"
hostile_replies = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x1f) | st.sampled_from("\x7f\x9b\x1b\0"),
            max_size=200),
    st.builds(lambda body: TOOL.format(body), st.text(max_size=200)),
    st.builds(lambda body: TOOL.format(json.dumps(body)), values),
    st.builds(lambda name, args: TOOL.format(json.dumps({"name": name, "arguments": args})),
              st.sampled_from(["bash", "write_file", "submit", "nope", ""]), values),
    st.builds(lambda inner: TOOL.format(TOOL.format(inner)), st.text(max_size=50)),  # nested calls
    st.builds(lambda body, fence: f"```{fence}\n{body}", st.text(max_size=200),
              st.sampled_from(["bash", "json", "python", "sh", ""])),  # unclosed fences
    st.builds(lambda n, c: c * n, st.integers(1, 3), st.sampled_from(["<tool_call>", "</tool_call>", "```"])),
)


@settings(max_examples=EXAMPLES * 5, deadline=None)
@given(reply=hostile_replies)
def test_any_reply_parses_to_an_action_or_a_format_error(reply):
    try:
        parsed = parse(reply, ["solution.py", "notes.md"])
    except FormatError as e:
        assert str(e)
        return
    assert parsed.action is not None


@pytest.mark.parametrize("reply", [
    "x" * (1 << 20),
    TOOL.format('{"name": "bash", "arguments": {"command": "' + "a" * (1 << 20) + '"}}'),
    "```bash\n" + "echo hi\n" * 100000 + "```",
    TOOL.format("{" * 10000 + "}" * 10000),
    TOOL.format("[" * 100000),
    "\0" * 1000 + TOOL.format('{"name": "submit", "arguments": {}}'),
    "\udcff\ud800 invalid surrogates " + TOOL.format('{"name": "bash", "arguments": {"command": "ls"}}'),
], ids=["1MB-text", "1MB-command", "100k-line-block", "deep-json", "unclosed-deep-json", "nul-bytes",
        "lone-surrogates"])
def test_megabyte_deep_and_binary_replies_parse_or_fail_cleanly(reply):
    try:
        parse(reply)
    except FormatError as e:
        assert str(e)


@pytest.mark.sandbox
def test_hostile_replies_in_an_episode_are_format_error_steps_and_the_episode_goes_on():
    from termrl.env import EnvConfig, TerminalEnv
    from termrl.protocols import Task, TaskFile

    task = Task(id="t", instruction="Write hello into greeting.txt.",
                tests={"test_g.py": TaskFile(b"def test_g():\n    assert open('greeting.txt').read() == 'hello\\n'\n")})
    replies = [TOOL.format("{" * 5000), "```bash\necho unterminated", TOOL.format(TOOL.format("x")),
               "\0\x1b[2J" + TOOL.format('{"name": "bash", "arguments": {"command": "echo hello > greeting.txt"}}'),
               TOOL.format('{"name": "submit", "arguments": {}}')]
    with TerminalEnv(EnvConfig(max_steps=10, max_format_errors=5)) as env:
        env.reset(task)
        for reply in replies:
            *_, term, trunc, info = env.step(reply)
            if term or trunc:
                break
    errors = [s.format_error for s in env.steps]
    assert sum(e is not None for e in errors[:3]) == 3, errors
    assert info["ending"].value == "submitted" and info["evidence"].passed


@pytest.mark.sandbox
def test_lone_surrogates_in_a_reply_or_its_json_run_and_are_stored(tmp_path):
    """A reply (or a tool call's JSON escapes, as an endpoint's JSON can carry) holding lone
    surrogates: the command runs, the file is written, the episode is stored and read back."""
    from termrl.rollout.accounting import Accountant
    from termrl.rollout.runner import RolloutConfig, run_episode
    from termrl.rollout.store import TrajectoryStore
    from termrl.protocols import Reply, Task, TaskFile

    task = Task(id="t", instruction="Write hello into greeting.txt.",
                tests={"test_g.py": TaskFile(b"def test_g():\n    assert open('greeting.txt').read() == 'hello\\n'\n")})
    replies = [TOOL.format('{"name": "bash", "arguments": {"command": "echo \\udcff\\ud800 > odd.txt"}}'),
               TOOL.format('{"name": "write_file", "arguments": {"path": "b\\udcff.txt", "content": "\\ud800"}}'),
               "\udcff" + TOOL.format('{"name": "bash", "arguments": {"command": "echo hello > greeting.txt"}}'),
               TOOL.format('{"name": "submit", "arguments": {}}')]
    traj = run_episode(task, 0, "scripted", lambda turn: Reply(replies[turn.step]), RolloutConfig(), None,
                       Accountant())
    assert traj.error is None and traj.passed, traj.error
    assert traj.steps[0].observation.startswith("exit code 0") and "wrote" in traj.steps[1].observation
    store = TrajectoryStore(tmp_path / "store")
    store.write([traj])
    (back,) = store.read()
    assert back.steps[2].reply.startswith("\ufffd") and back.passed


@pytest.mark.parametrize("task, missing", [
    (BUILTIN / "shell-word-freq", "instruction.md"), (BUILTIN / "shell-word-freq", "tests"),
    (FIXTURES / "harbor" / "dedupe-contacts", "instruction.md"), (FIXTURES / "harbor" / "dedupe-contacts", "tests"),
    (FIXTURES / "terminal_bench" / "log-status-summary", "task.yaml"),
    (FIXTURES / "terminal_bench" / "log-status-summary", "run-tests.sh"),
], ids=lambda x: x if isinstance(x, str) else x.name)
def test_a_task_directory_missing_a_file_it_needs_names_it(tmp_path, task, missing):
    root = _copy(task, tmp_path)
    target = root / missing
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    with pytest.raises(TaskFormatError) as e:
        load_task(root)
    assert e.value.file.startswith(str(root)) and "missing" in str(e.value), e.value
