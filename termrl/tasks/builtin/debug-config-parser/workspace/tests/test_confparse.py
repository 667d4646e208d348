import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import confparse


def test_sections_and_types():
    cfg = confparse.loads("""
[server]
host = example.org   # the host
port = 8080
ratio = 0.75
tags = [web, 3, none]
""")
    assert cfg == {"server": {"host": "example.org", "port": 8080, "ratio": 0.75,
                              "tags": ["web", 3, None]}}


def test_quoted_and_interpolation():
    cfg = confparse.loads('[paths]\nroot = /srv\nlogs = "${root}/logs"\n[app]\nlog = ${paths.logs}/app.log\n')
    assert cfg["app"]["log"] == "/srv/logs/app.log"


def test_syntax_error_line():
    with pytest.raises(confparse.ConfigError) as info:
        confparse.loads("[a]\nx = 1\nthis is not valid\n")
    assert info.value.line == 3
