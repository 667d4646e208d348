import random
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path.cwd() / "setconf.sh"


def run(path, key, value):
    return subprocess.run([str(SCRIPT), str(path), key, value], capture_output=True, timeout=20)


def reference(text, key, value):
    lines = text.split(b"\n") if text else []
    if lines and lines[-1] == b"":
        lines.pop()
    out, done = [], False
    k, v = key.encode(), value.encode()
    for line in lines:
        s = line.lstrip(b" \t")
        if s.startswith(k) and s[len(k):].lstrip(b" \t").startswith(b"="):
            if not done:
                out.append(k + b"=" + v)
                done = True
            continue
        out.append(line)
    if not done:
        out.append(k + b"=" + v)
    return b"\n".join(out) + b"\n"


# app.env as the task ships it, and the edits the instruction asks for.
ORIGINAL_APP_ENV = (
    "# Application settings\n"
    "APP_NAME=demo\n"
    "PORT = 3000\n"
    "#PORT=9999\n"
    "DATABASE_URL=sqlite:///tmp/dev.db\n"
    "  LOG_LEVEL=debug\n"
    "FEATURE.flags=none\n"
    "FEATUREXflags=keep-me\n"
    "PORT=3001\n"
    "MY_PORT=1234\n"
    "\n"
    "# end\n"
)
APP_ENV_EDITS = [
    ("PORT", "8080"),
    ("DATABASE_URL", "postgres://app:s3cr&t@db.internal:5432/app?sslmode=require"),
    ("LOG_LEVEL", "info"),
    ("FEATURE.flags", "a|b\\c"),
    ("GREETING", "Hello, $USER \\o/"),
]
EXPECTED_APP_ENV = (
    "# Application settings\n"
    "APP_NAME=demo\n"
    "PORT=8080\n"
    "#PORT=9999\n"
    "DATABASE_URL=postgres://app:s3cr&t@db.internal:5432/app?sslmode=require\n"
    "LOG_LEVEL=info\n"
    "FEATURE.flags=a|b\\c\n"
    "FEATUREXflags=keep-me\n"
    "MY_PORT=1234\n"
    "\n"
    "# end\n"
    "GREETING=Hello, $USER \\o/\n"
)


@pytest.mark.core
def test_workspace_app_env(tmp_path):
    got = (Path.cwd() / "app.env").read_text()
    assert got == EXPECTED_APP_ENV
    # app.env must be what the script makes of the original file, not a copy edited by hand:
    # replay the instruction's edits with ./setconf.sh on a fresh copy of the original.
    f = tmp_path / "app.env"
    f.write_bytes(ORIGINAL_APP_ENV.encode())
    for key, value in APP_ENV_EDITS:
        r = run(f, key, value)
        assert r.returncode == 0, r.stderr
    assert f.read_bytes() == (Path.cwd() / "app.env").read_bytes(), "app.env differs from ./setconf.sh's edits"
    assert f.read_bytes() == EXPECTED_APP_ENV.encode()


BASE = (
    "# generated\n"
    "HOST=localhost\n"
    "\tTIMEOUT =  30  \n"
    "# TIMEOUT=99\n"
    "HOSTNAME=box\n"
    "api.v1-url=http://a\n"
    "apiXv1-url=http://b\n"
    "   \n"
    "NAME=caf\u00e9 \u2615\n"
    "TIMEOUT=31\n"
    "MY_HOST=h\n"
    "HOST = second\n"
    "trailing space line   \n"
).encode()

SPECIAL_VALUES = ["x&y", "a/b/c", "\\1\\n", "$HOME", "100%s %d", "a|b", "q'\"q", ".*[x]^",
                  "", "  padded  ", "k=v=w", "# not a comment", "\u00fcml\u00e4ut"]


@pytest.mark.core
@pytest.mark.parametrize("key", ["HOST", "TIMEOUT", "api.v1-url", "NEWKEY", "HOSTNAME", "NAME"])
def test_unseen_file(tmp_path, key):
    rng = random.Random(key)
    value = rng.choice(SPECIAL_VALUES) + rng.choice(SPECIAL_VALUES)
    f = tmp_path / "conf.env"
    f.write_bytes(BASE)
    r = run(f, key, value)
    assert r.returncode == 0, r.stderr
    assert f.read_bytes() == reference(BASE, key, value)


@pytest.mark.core
def test_sequence_of_edits(tmp_path):
    f = tmp_path / "s.env"
    f.write_bytes(BASE)
    expect = BASE
    for key, value in [("HOST", "a&b\\c/d"), ("TIMEOUT", ""), ("NEW.ONE", "$x %s"),
                       ("HOST", "again"), ("NEW.ONE", "z"), ("MY_HOST", "|||")]:
        assert run(f, key, value).returncode == 0
        expect = reference(expect, key, value)
        assert f.read_bytes() == expect


@pytest.mark.boundary
def test_missing_file_created(tmp_path):
    f = tmp_path / "new.env"
    r = run(f, "A", "1 2 3")
    assert r.returncode == 0
    assert f.read_bytes() == b"A=1 2 3\n"


@pytest.mark.boundary
def test_no_trailing_newline(tmp_path):
    f = tmp_path / "c.env"
    f.write_bytes(b"X=1\nY=2")
    assert run(f, "Z", "3").returncode == 0
    assert f.read_bytes() == b"X=1\nY=2\nZ=3\n"
    f.write_bytes(b"X=1\nY=2")
    assert run(f, "Y", "9").returncode == 0
    assert f.read_bytes() == b"X=1\nY=9\n"


@pytest.mark.boundary
def test_regex_metachar_key_is_literal(tmp_path):
    f = tmp_path / "d.env"
    f.write_bytes(b"aXb=1\na.b.c=2\na.b=3\n")
    assert run(f, "a.b", "new").returncode == 0
    assert f.read_bytes() == b"aXb=1\na.b.c=2\na.b=new\n"
