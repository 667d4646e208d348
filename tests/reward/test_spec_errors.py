"""Malformed specs fail at load time with a message naming the file, the field and the fix."""

from __future__ import annotations

import pytest

from termrl.reward import SpecError, load_spec

from .conftest import assert_names, write_spec

HEAD = "version = 1\n"


@pytest.mark.parametrize("body, field, words", [
    ('[components.o]\ntype = "outcom"\nweight = 1\n', "components.o.type", "did you mean 'outcome'"),
    ('[components.o]\nweight = 1\n', "components.o.type", "missing"),
    ('[components.o]\ntype = "outcome"\nweight = 1\nmod = "graded"\n', "components.o.mod", "unknown key"),
    ('[components.o]\ntype = "outcome"\nweight = "high"\n', "components.o.weight", "must be a number"),
    ('[components.o]\ntype = "outcome"\n', "components.o.weight", "missing"),
    ('[components.o]\ntype = "outcome"\nweight = {kind = "piecewise", points = [[0.0, 1], [1.5, 0]]}\n',
     "components.o.weight.points[1]", "outside [0, 1]"),
    ('[components.o]\ntype = "outcome"\nweight = {kind = "piecewise", points = [[0.6, 1], [0.2, 0]]}\n',
     "components.o.weight.points[1]", "sort the points"),
    ('[components.o]\ntype = "outcome"\nweight = {kind = "exp", start = 1}\n', "components.o.weight.kind",
     "unknown schedule kind"),
    ('[components.o]\ntype = "outcome"\nweight = 1\nmode = "graded"\ncoefficients = {"link.undefined_ref" = -1}\n',
     "components.o.coefficients.link.undefined_ref", "unknown error class"),
    ('[components.o]\ntype = "outcome"\nweight = 1\nmode = "graded"\ncoefficients = {compile = "-1"}\n',
     "components.o.coefficients.compile", "must be a number"),
    ('[components.o]\ntype = "outcome"\nweight = 1\npartial_credit = true\n', "components.o.partial_credit",
     'mode = "graded"'),
    ('[components.o]\ntype = "outcome"\nweight = 1\nmode = "ternary"\n', "components.o.mode", "binary"),
    ('[components.o]\ntype = "outcome"\nweight = 1\nmode = "graded"\npartial_credit = "yes"\n',
     "components.o.partial_credit", "true or false"),
    ('[components.l]\ntype = "overlong"\nweight = 1\ncache = 100\n', "components.l.max_length", "missing"),
    ('[components.l]\ntype = "overlong"\nweight = 1\nmax_length = 100\ncache = 200\n', "components.l.cache",
     "(0, max_length = 100]"),
    ('[components.p]\ntype = "command_success"\nweight = 1\ndiscount = 1.5\n', "components.p.discount", "(0, 1]"),
    ('[components.h]\ntype = "hack"\nweight = 1\nmode = "nuke"\n', "components.h.mode", "zero, penalty, log"),
    ('[components.h]\ntype = "hack"\nweight = 1\nmode = "penalty"\npenalties = {critical = 2}\n',
     "components.h.penalties.critical", "low, medium or high"),
    ('[components.o]\ntype = "outcome"\nweight = 1\n[extra]\nx = 1\n', "extra", "unknown key"),
    ('name = "x"\n', "components", "add at least one"),
])
def test_bad_spec_names_file_and_field(tmp_path, body, field, words):
    path = write_spec(tmp_path, HEAD + body)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_names(info.value, path, field)
    assert words in str(info.value)


def test_wrong_version(tmp_path):
    path = write_spec(tmp_path, 'version = 2\n[components.o]\ntype = "outcome"\nweight = 1\n')
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_names(info.value, path, "version")
    assert "version = 1" in str(info.value)


def test_invalid_toml_names_the_file(tmp_path):
    path = write_spec(tmp_path, "[components.o\n", "broken.toml")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_names(info.value, path, None)
    assert "not valid TOML" in str(info.value)


def test_unknown_preset_lists_the_presets():
    with pytest.raises(SpecError, match="presets are: .*staged"):
        load_spec("stagged")


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.toml")


def test_valid_spec_file_loads(tmp_path):
    path = write_spec(tmp_path, HEAD + 'name = "mine"\n[components.o]\ntype = "outcome"\nweight = 2\n'
                      'mode = "graded"\ncoefficients = {link.undefined_reference = -0.9}\n')
    spec = load_spec(str(path))
    assert spec.name == "mine" and spec.path == str(path)
    assert spec.components[0].params["coefficients"]["link.undefined_reference"] == -0.9
    assert spec.components[0].params["coefficients"]["compile"] == -1.0


def test_non_string_type(tmp_path):
    path = write_spec(tmp_path, HEAD + '[components.o]\ntype = ["outcome"]\nweight = 1\n')
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert_names(info.value, path, "components.o.type")
