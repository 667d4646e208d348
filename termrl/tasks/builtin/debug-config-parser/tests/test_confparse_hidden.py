import random

import pytest

# --- harness -----------------------------------------------------------------
# The agent's code runs in a separate, isolated interpreter (cwd = workdir); only
# plain JSON comes back, and every comparison happens here, on values built here.
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

WORKDIR = Path.cwd()
MARK = "@@TERMRL-RESULT@@"

PRELUDE = r'''
import sys, os
_out = sys.stdout
import json as _json
import decimal as _decimal
import datetime as _dt
_dumps, _loads = _json.dumps, _json.loads
_Decimal, _date, _datetime = _decimal.Decimal, _dt.date, _dt.datetime
_type, _issubclass, _repr, _str, _len = type, issubclass, repr, str, len
_tuple, _float, _list = tuple, float, list
_EXC = tuple((c.__name__, c) for c in (
    ValueError, TypeError, KeyError, IndexError, LookupError, ZeroDivisionError,
    ArithmeticError, RecursionError, RuntimeError, NotImplementedError, NameError,
    ImportError, AttributeError, OverflowError))
DATA = _loads(sys.stdin.read())
_RESULTS = []

def _enc(x):
    t = _type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return {"float": _repr(x)}
    if t is list:
        return [_enc(v) for v in x]
    if t is tuple:
        return {"tuple": [_enc(v) for v in x]}
    if t is dict:
        return {"dict": [[_enc(k), _enc(v)] for k, v in x.items()]}
    if t is _Decimal:
        return {"decimal": _str(x)}
    if t is _date:
        return {"date": x.isoformat()}
    if t is _datetime:
        return {"datetime": x.isoformat()}
    return {"other": _str(t.__name__)}

def _dec(x):
    t = _type(x)
    if t is list:
        return [_dec(v) for v in x]
    if t is dict:
        if "tuple" in x:
            return _tuple(_dec(v) for v in x["tuple"])
        if "float" in x:
            return _float(x["float"])
        if "dict" in x:
            return {_dec(k): _dec(v) for k, v in x["dict"]}
        if "decimal" in x:
            return _Decimal(x["decimal"])
        if "date" in x:
            return _date.fromisoformat(x["date"])
        if "datetime" in x:
            return _datetime.fromisoformat(x["datetime"])
    return x

def _call(fn, *a, **k):
    try:
        return {"ok": _enc(fn(*a, **k))}
    except Exception as e:
        return {"exc": _str(_type(e).__name__), "is": [n for n, c in _EXC if _issubclass(_type(e), c)]}

def emit(x):
    _RESULTS.append(x)

def _finish():
    _out.write("\n@@TERMRL-RESULT@@" + _dumps(_RESULTS) + "\n")
    _out.flush()

sys.path.insert(0, os.getcwd())
'''


def enc(x):
    """Encode a value built by the test the same way the child encodes results."""
    t = type(x)
    if x is None or t in (bool, int, str):
        return x
    if t is float:
        return {"float": repr(x)}
    if t is list:
        return [enc(v) for v in x]
    if t is tuple:
        return {"tuple": [enc(v) for v in x]}
    if t is dict:
        return {"dict": [[enc(k), enc(v)] for k, v in x.items()]}
    name = t.__name__
    if name == "Decimal":
        return {"decimal": str(x)}
    if name in ("date", "datetime"):
        return {name: x.isoformat()}
    raise TypeError(t)


def canon(x):
    return json.dumps(x, sort_keys=True)


def run_child(code, data=None, timeout=30, setup=""):
    """Run PRELUDE + setup + code in a fresh interpreter in the workdir; return the emitted list."""
    src = PRELUDE + "\n" + textwrap.dedent(setup) + "\n" + textwrap.dedent(code) + "\n_finish()\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    r = subprocess.run([sys.executable, "-I", "-c", src], input=json.dumps(data),
                       capture_output=True, text=True, cwd=WORKDIR, timeout=timeout, env=env)
    lines = [l for l in r.stdout.splitlines() if l.startswith(MARK)]
    assert r.returncode == 0 and len(lines) == 1, (
        f"child failed (rc={r.returncode})\nstdout:\n{r.stdout[-1500:]}\nstderr:\n{r.stderr[-3000:]}")
    return json.loads(lines[0][len(MARK):])


def pairs(a, b):
    a, b = list(a), list(b)
    assert len(a) == len(b), f"expected {len(a)} results, got {len(b)}"
    return zip(a, b)


def ok(value):
    return {"ok": enc(value)}


def raised(result, exc_name):
    return isinstance(result, dict) and "exc" in result and exc_name in result["is"]


def check_all(cases, got, expected):
    """got: child results; expected: list of ok(...) / ("raises", Name) per case."""
    assert isinstance(got, list) and len(got) == len(expected), "wrong number of results"
    for case, g, e in zip(cases, got, expected):
        if isinstance(e, tuple) and e and e[0] == "raises":
            assert raised(g, e[1]), f"input {case!r}: expected {e[1]}, got {g!r}"
        else:
            assert canon(g) == canon(e), f"input {case!r}: expected {e!r}, got {g!r}"
# --- end harness -------------------------------------------------------------

CHILD = '''
import confparse
def attempt(fn, arg):
    try:
        return {"ok": _enc(fn(arg))}
    except Exception as e:
        t = _type(e)
        return {"exc": _str(t.__name__), "is": [n for n, c in _EXC if _issubclass(t, c)],
                "config_error": _issubclass(t, confparse.ConfigError),
                "line": _enc(getattr(e, "line", "missing"))}
for kind, arg in DATA:
    emit(attempt(confparse.loads if kind == "text" else confparse.load, arg))
'''


def run_texts(texts):
    return run_child(CHILD, [["text", t] for t in texts])


WORDS = ["alpha", "beta", "gamma", "delta", "web", "db", "cache", "edge", "main", "log"]


def word(rng):
    return rng.choice(WORDS) + rng.choice(["", str(rng.randint(0, 99)), "_x", "-y"])


def case_mix(rng, w):
    return "".join(c.upper() if rng.random() < 0.5 else c for c in w)


def quoted(rng, allow_specials=True):
    """Return (source text, decoded value) for a double-quoted string."""
    pieces = [("#", "#"), (";", ";"), ("=", "="), (" ", " "), ("\\\"", '"'), ("\\\\", "\\"),
              ("\\n", "\n"), ("\\t", "\t"), ("[", "["), ("]", "]"), (",", ","), ("\u00e9", "\u00e9")]
    if not allow_specials:
        pieces = [(" ", " "), ("#", "#"), (";", ";"), ("-", "-")]
    src, val = "", ""
    for _ in range(rng.randint(0, 6)):
        if rng.random() < 0.5:
            w = word(rng)
            src, val = src + w, val + w
        else:
            s, v = rng.choice(pieces)
            src, val = src + s, val + v
    return '"' + src + '"', val


def scalar(rng, in_list=False):
    kind = rng.choice(["int", "float", "true", "false", "none", "str", "quoted"] + ([] if in_list else ["empty"]))
    if kind == "int":
        n = rng.randint(-10 ** 6, 10 ** 12)
        return str(n), n
    if kind == "float":
        text = f"{rng.choice(['', '-'])}{rng.randint(0, 9999)}.{rng.randint(0, 999):03d}"
        return text, float(text)
    if kind == "true":
        return case_mix(rng, rng.choice(["true", "yes", "on"])), True
    if kind == "false":
        return case_mix(rng, rng.choice(["false", "no", "off"])), False
    if kind == "none":
        return case_mix(rng, rng.choice(["none", "null"])), None
    if kind == "str":
        w = rng.choice([word(rng), word(rng) + "." + word(rng), "/srv/" + word(rng), "12ab", "1.2.3",
                        "-", "+5", word(rng) + " " + word(rng)])
        return w, w
    if kind == "quoted":
        return quoted(rng, allow_specials=not in_list)
    return "", ""


def value(rng):
    if rng.random() < 0.15:
        items = [scalar(rng, in_list=True) for _ in range(rng.randint(0, 4))]
        sep = rng.choice([",", ", ", " , "])
        return "[" + sep.join(t for t, _ in items) + "]", [v for _, v in items]
    return scalar(rng)


def comment(rng):
    return rng.choice(["", "", "", "  # note", " ;comment", "\t# a \"quoted\" remark", "#x=1", " ; [x]"])


def random_config(rng):
    lines, expected = [], {}
    sections = rng.sample(["server", "db", "paths", "cache-2", "_misc", "feature_flags", "default"],
                          rng.randint(1, 4))
    current = "default"
    if rng.random() < 0.5:
        sections = [None] + sections  # keys before the first header
    for sec in sections + rng.sample(sections, min(len(sections), rng.randint(0, 2))):
        if sec is not None:
            lines.append(rng.choice(["", "  ", "\t"]) + f"[{sec}]" + comment(rng))
            current = sec
            expected.setdefault(sec, {})
        for _ in range(rng.randint(0, 5)):
            if rng.random() < 0.2:
                lines.append(rng.choice(["", "   ", "# just a comment", "; another = comment", "  #"]))
            key = rng.choice(["host", "port", "name", "ratio", "flags", "path", "user", "_x1", "k-2"])
            text, val = value(rng)
            eq = rng.choice(["=", " = ", "  =\t", "= "])
            lines.append(rng.choice(["", " ", "\t"]) + key + eq + text + comment(rng))
            expected.setdefault(current, {})[key] = val
    return "\n".join(lines) + rng.choice(["", "\n"]), expected


@pytest.mark.core
def test_random_configs():
    rng = random.Random(20240601)
    cfgs = [random_config(rng) for _ in range(150)]
    got = run_texts([t for t, _ in cfgs])
    for (text, exp), g in pairs(cfgs, got):
        assert canon(g) == canon(ok(exp)), f"config:\n{text}\n---\nexpected {exp!r}\ngot {g!r}"


@pytest.mark.core
def test_keys_before_first_section_and_reopened_sections():
    text = "\n".join(["top = 1", "mode = fast", "[zeta]", "a = 1", "[default]", "extra = yes",
                      "[zeta]", "b = 2", "a = 3", "[empty]"])
    exp = {"default": {"top": 1, "mode": "fast", "extra": True}, "zeta": {"a": 3, "b": 2}, "empty": {}}
    got = run_texts([text, "", "# only comments\n\n; here\n", "x=\n"])
    assert canon(got) == canon([ok(exp), ok({}), ok({}), ok({"default": {"x": ""}})]), got


@pytest.mark.core
def test_booleans_all_spellings():
    words = ["true", "True", "TRUE", "yes", "YES", "On", "false", "False", "FALSE", "no", "No", "OFF", "off"]
    text = "[b]\n" + "\n".join(f"k{i} = {w}" for i, w in enumerate(words)) + "\nlist = [no, Yes, off]\n"
    exp = {"b": {f"k{i}": w.lower() in ("true", "yes", "on") for i, w in enumerate(words)}}
    exp["b"]["list"] = [False, True, False]
    assert canon(run_texts([text])) == canon([ok(exp)])


def random_interp(rng):
    """Sections with literal values and chains of ${...} references."""
    lit = {"s1": {}, "s2": {}, "s3": {}}
    for sec in lit:
        for i in range(3):
            lit[sec][f"v{i}"] = rng.choice([word(rng), rng.randint(-50, 5000), True, False, None,
                                            float(f"{rng.randint(0, 99)}.{rng.randint(0, 9)}5")])

    def text_of(v):
        if v is True or v is False:
            return "true" if v else "false"
        return "none" if v is None else str(v)

    def src_of(v):
        return text_of(v) if not isinstance(v, str) else v

    lines = []
    exp = {}
    for sec, vals in lit.items():
        lines.append(f"[{sec}]")
        exp[sec] = {}
        for k, v in vals.items():
            lines.append(f"{k} = {src_of(v)}")
            exp[sec][k] = v
    # derived values referring to literals and to earlier or later derived values
    derived = []
    for j in range(rng.randint(2, 6)):
        sec = rng.choice(list(lit))
        parts_src, parts_val = [], []
        for _ in range(rng.randint(1, 3)):
            if derived and rng.random() < 0.4:
                dsec, dkey, dval = rng.choice(derived)
                ref = f"${{{dkey}}}" if dsec == sec else f"${{{dsec}.{dkey}}}"
                parts_src.append(ref)
                parts_val.append(dval)
            else:
                rsec, rkey = rng.choice(list(lit)), f"v{rng.randrange(3)}"
                ref = f"${{{rkey}}}" if rsec == sec else f"${{{rsec}.{rkey}}}"
                parts_src.append(ref)
                parts_val.append(text_of(lit[rsec][rkey]))
            sep = rng.choice(["/", "-", " ", ":"])
            parts_src.append(sep)
            parts_val.append(sep)
        key = f"d{j}"
        value_text = "".join(parts_val)
        derived.append((sec, key, value_text))
        src = "".join(parts_src)
        if rng.random() < 0.3 or src != src.strip():
            src = '"' + src + '"'
        lines.append(f"[{sec}]")
        lines.append(f"{key} = {src}")
        exp[sec][key] = value_text
    return "\n".join(lines) + "\n", exp


@pytest.mark.core
def test_interpolation_chains_and_text_forms():
    rng = random.Random(777)
    cfgs = [random_interp(rng) for _ in range(60)]
    got = run_texts([t for t, _ in cfgs])
    for (text, exp), g in pairs(cfgs, got):
        assert canon(g) == canon(ok(exp)), f"config:\n{text}\n---\nexpected {exp!r}\ngot {g!r}"


@pytest.mark.core
def test_forward_references_and_lists():
    text = ("[a]\nfull = ${b.dir}/${name}.txt\nname = report\nitems = [${name}, 5, \"${b.n}\"]\n"
            "[b]\ndir = /data/${flag}\nflag = ON\nn = 0.50\n")
    exp = {"a": {"full": "/data/true/report.txt", "name": "report", "items": ["report", 5, "0.5"]},
           "b": {"dir": "/data/true", "flag": True, "n": 0.5}}
    assert canon(run_texts([text])) == canon([ok(exp)])


def is_config_error(r, line="any"):
    return ("exc" in r and r["config_error"] is True and r["exc"] != "RecursionError"
            and (line == "any" or r["line"] == line))


@pytest.mark.boundary
def test_reference_cycles_raise_config_error():
    rng = random.Random(4242)
    texts = ["[s]\na = ${a}\n", "x = ${y}\ny = ${x}\n", "[p]\nq = \"${r.s}\"\n[r]\ns = [1, ${p.q}]\n"]
    for _ in range(12):
        n = rng.randint(1, 5)
        secs = [rng.choice(["m", "n", "o"]) for _ in range(n)]
        lines = []
        for i in range(n):
            j = (i + 1) % n
            lines.append(f"[{secs[i]}]")
            lines.append(f"c{i} = pre-${{{secs[j]}.c{j}}}-post")
        lines.append("[m]\nok = fine")
        texts.append("\n".join(lines))
    got = run_texts(texts)
    for t, g in pairs(texts, got):
        assert is_config_error(g) and g["line"] is None, f"config:\n{t}\n---\ngot {g!r}"


@pytest.mark.boundary
def test_bad_references():
    texts = ["[a]\nx = ${nope}\n", "[a]\nx = ${b.y}\n", "[a]\nl = [1, 2]\nx = ${l}\n",
             "[a]\ny = 1\n[b]\nx = ${y}\n"]
    got = run_texts(texts)
    for t, g in pairs(texts, got):
        assert is_config_error(g) and g["line"] is None, f"config:\n{t}\n---\ngot {g!r}"


@pytest.mark.boundary
def test_syntax_errors_report_line_numbers():
    rng = random.Random(99)
    bad_lines = ["just some words", "[unclosed", "key: value", "= value", "1key = x",
                 'k = "unterminated', 'k = "a" trailing', "[sec tion]", "[]", 'k = "bad \\q escape"',
                 "k = \"half # comment\" \"", "\"quoted\" = 3"]
    texts, lines_no = [], []
    for bad in bad_lines:
        good = [f"k{i} = {rng.randint(0, 9)}" for i in range(rng.randint(0, 5))]
        pos = rng.randint(0, len(good))
        lines = ["[s]"] + good[:pos] + [bad] + good[pos:]
        texts.append("\n".join(lines))
        lines_no.append(pos + 2)
    got = run_texts(texts)
    for t, n, g in zip(texts, lines_no, got):
        assert is_config_error(g, n), f"config:\n{t}\n---\nexpected ConfigError at line {n}, got {g!r}"
    assert len(got) == len(texts)


@pytest.mark.boundary
def test_quotes_escapes_and_comment_chars(tmp_path):
    text = ('[ui]\ncolor = "#ff8800"   # orange\nsep = ";"\nmsg = "say \\"hi\\" # not a comment" ; c\n'
            'path = "C:\\\\dir\\\\x"\nmulti = "a\\nb\\tc"\nhash = value # trailing\nsemi = a;b\n'
            'empty = ""\nspaced = "  padded  "\nuni = "gr\u00fc\u00df \u65e5\u672c"\n')
    exp = {"ui": {"color": "#ff8800", "sep": ";", "msg": 'say "hi" # not a comment', "path": "C:\\dir\\x",
                  "multi": "a\nb\tc", "hash": "value", "semi": "a", "empty": "", "spaced": "  padded  ",
                  "uni": "gr\u00fc\u00df \u65e5\u672c"}}
    f = tmp_path / "app.conf"
    f.write_bytes(text.encode("utf-8"))
    got = run_child(CHILD, [["text", text], ["path", str(f)]])
    assert canon(got) == canon([ok(exp), ok(exp)]), got
