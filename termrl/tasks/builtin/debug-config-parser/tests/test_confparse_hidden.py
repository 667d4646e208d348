import os
import random
import sys

import pytest

sys.path.insert(0, os.getcwd())  # pytest runs with -P from the workdir, where the agent's confparse/ is


@pytest.fixture(autouse=True)
def fresh_confparse():
    """Every test imports the agent's modules anew (each test used to run them in a new interpreter)."""
    for name in [n for n in sys.modules if n == "confparse" or n.startswith("confparse.")]:
        del sys.modules[name]


def same(got, expected):
    """Equal in type and value, recursively: True is not 1, 1.0 is not 1, a tuple is not a list,
    and a dict's items in order."""
    t = type(expected)
    if type(got) is not t:
        return False
    if t is list or t is tuple:
        return len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    if t is dict:
        return len(got) == len(expected) and all(same(gk, ek) and same(gv, ev) for (gk, gv), (ek, ev)
                                                 in zip(got.items(), expected.items()))
    if t is float:
        return repr(got) == repr(expected)
    if t in (type(None), bool, int, str):
        return got == expected
    raise TypeError(f"no comparison for {t.__name__}")


def loads_all(texts):
    import confparse

    return [confparse.loads(t) for t in texts]


def attempt_all(texts):
    """What each loads(text) gave: {"ok": value}, or how it failed: the exception's class name,
    whether it is a confparse.ConfigError (or a subclass) and its ``line`` attribute."""
    import confparse

    out = []
    for t in texts:
        try:
            out.append({"ok": confparse.loads(t)})
        except Exception as e:
            out.append({"exc": type(e).__name__, "config_error": isinstance(e, confparse.ConfigError),
                        "line": getattr(e, "line", "missing")})
    return out


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
    got = loads_all([t for t, _ in cfgs])
    for (text, exp), g in zip(cfgs, got):
        assert same(g, exp), f"config:\n{text}\n---\nexpected {exp!r}\ngot {g!r}"


@pytest.mark.core
def test_keys_before_first_section_and_reopened_sections():
    text = "\n".join(["top = 1", "mode = fast", "[zeta]", "a = 1", "[default]", "extra = yes",
                      "[zeta]", "b = 2", "a = 3", "[empty]"])
    exp = {"default": {"top": 1, "mode": "fast", "extra": True}, "zeta": {"a": 3, "b": 2}, "empty": {}}
    got = loads_all([text, "", "# only comments\n\n; here\n", "x=\n"])
    assert same(got, [exp, {}, {}, {"default": {"x": ""}}]), got


@pytest.mark.core
def test_booleans_all_spellings():
    words = ["true", "True", "TRUE", "yes", "YES", "On", "false", "False", "FALSE", "no", "No", "OFF", "off"]
    text = "[b]\n" + "\n".join(f"k{i} = {w}" for i, w in enumerate(words)) + "\nlist = [no, Yes, off]\n"
    exp = {"b": {f"k{i}": w.lower() in ("true", "yes", "on") for i, w in enumerate(words)}}
    exp["b"]["list"] = [False, True, False]
    got = loads_all([text])
    assert same(got, [exp]), got


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
    got = loads_all([t for t, _ in cfgs])
    for (text, exp), g in zip(cfgs, got):
        assert same(g, exp), f"config:\n{text}\n---\nexpected {exp!r}\ngot {g!r}"


@pytest.mark.core
def test_forward_references_and_lists():
    text = ("[a]\nfull = ${b.dir}/${name}.txt\nname = report\nitems = [${name}, 5, \"${b.n}\"]\n"
            "[b]\ndir = /data/${flag}\nflag = ON\nn = 0.50\n")
    exp = {"a": {"full": "/data/true/report.txt", "name": "report", "items": ["report", 5, "0.5"]},
           "b": {"dir": "/data/true", "flag": True, "n": 0.5}}
    got = loads_all([text])
    assert same(got, [exp]), got


def is_config_error(r, line="any"):
    return ("exc" in r and r["config_error"] is True and r["exc"] != "RecursionError"
            and (line == "any" or same(r["line"], line)))


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
    got = attempt_all(texts)
    for t, g in zip(texts, got):
        assert is_config_error(g) and g["line"] is None, f"config:\n{t}\n---\ngot {g!r}"


@pytest.mark.boundary
def test_bad_references():
    texts = ["[a]\nx = ${nope}\n", "[a]\nx = ${b.y}\n", "[a]\nl = [1, 2]\nx = ${l}\n",
             "[a]\ny = 1\n[b]\nx = ${y}\n"]
    got = attempt_all(texts)
    for t, g in zip(texts, got):
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
    got = attempt_all(texts)
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
    import confparse

    got = [confparse.loads(text), confparse.load(str(f))]
    assert same(got, [exp, exp]), got
