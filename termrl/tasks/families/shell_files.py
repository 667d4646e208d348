"""shell-files: organize, rename, delete or find files in a generated directory tree.

Per seed: the tree (directory names, nesting, file names with spaces, multiple dots, upper-case
extensions or no extension, contents, sizes, ages), the rule with its parameters, and the
script/root/output names. The rule's kind is the task's template. Train seeds (and the old
``heldout-v1`` range, generated as before) draw one of the train kinds: sort into per-extension
folders, add a prefix/suffix to some extensions, delete by size, delete by age, list files
containing a token, flatten, de-duplicate by content, normalize names to lowercase. Heldout seeds
draw only from held-out kinds no train seed ever gets, with their own reference scripts:
``archive_old`` (move files older than N days under an archive folder, keeping their relative
paths), ``prune_empty`` (delete empty or blank files except keep markers, then every directory
left without files; the hidden tests check directories too), ``keep_largest`` (keep only the K
largest or smallest files of each directory, by bytes, ties by name), ``size_manifest`` (write a
`size<TAB>path` inventory of the tree sorted by path or size) and ``retype`` (change one
extension, in any letter case, to another).

The agent writes a script that takes the root directory as its argument and runs it on the
workspace tree. Hidden tests compare the final workspace tree (relative path -> content) with
the tree the test expects from the original manifest, and re-run the script on fresh trees
(random; edge cases with awkward names, boundary sizes, a root path with a space; empty). The
expected results live only in the hidden tests.

Levels: level 1 gives smaller trees with plain names, a Python skeleton of the script that
already walks the tree (the agent fills in the rule), and hides only ordinary trees plus an empty
ROOT. Level 3 gives larger trees, adds hidden trees with quotes, brackets, `$`, leading dashes
and deep nesting, puts a look-alike copy of the tree next to ROOT that must stay untouched, and
adds a step: the script must reject a missing or non-directory ROOT with a non-zero exit.
"""

from __future__ import annotations

import random
import shlex
from typing import ClassVar

from ._common import heredoc, hidden_test_source
from .base import Family, files, template_pool

WORDS = ["report", "notes", "photo", "invoice", "draft", "backup", "todo", "budget", "slides",
         "song", "data", "readme", "summary", "letter", "plan", "scan", "log", "config", "index",
         "thumb", "minutes", "recipe", "ticket", "resume", "poster", "diagram", "export"]
EXTS = ["txt", "md", "csv", "log", "jpg", "png", "pdf", "json", "py", "sh"]
ODD_EXTS = ["tar.gz", "JPG", "TXT", "Md", "backup.txt", "PDF"]
NOEXT_NAMES = ["Makefile", "README", "LICENSE", "notes_final", "TODO list"]
DIRS = ["projects", "misc", "2023", "old stuff", "work", "personal", "tmp", "archive",
        "photos", "music", "client A", "drafts"]
FILLER = ["lorem", "ipsum", "alpha", "beta", "gamma", "delta", "meeting", "budget", "draft",
          "café", "naïve", "résumé", "id", "value", "42", "2024-01-05", "ok"]
TOKENS = ["TODO(alice)", "FIXME", "api_key", "XJ-4471", "#urgent", "CONFIDENTIAL", "v2.0-rc1",
          "ERR_TIMEOUT"]
AWKWARD = ["-{}", "{} [1]", "it's {}", "{}  copy", "$HOME {}", "{} (2)", "{} & co"]
"""Level 3's hidden edge names: a pattern applied to a file name's part before its first `.`."""
DEEP_DIR = "deep/er/still deeper/bottom"
SIZES = {1: ((6, 10), (5, 10)), 2: ((12, 22), (8, 20)), 3: ((30, 45), (20, 35))}
"""Per level: (workspace tree, hidden random trees) file counts, as randint bounds."""


# --------------------------------------------------------------------------- trees

def ext_of(name: str) -> str | None:
    return name.rsplit(".", 1)[1].lower() if "." in name else None


def make_name(rng: random.Random, odd: bool) -> str:
    base = rng.choice(WORDS)
    r = rng.random()
    if r < 0.25:
        base += f" {rng.randint(1, 99)}"
    elif r < 0.45:
        base += f"_{rng.choice(WORDS)}"
    elif r < 0.6:
        base = base.capitalize() + f"-{rng.randint(2019, 2024)}"
    if odd and rng.random() < 0.35:
        return rng.choice(NOEXT_NAMES) if rng.random() < 0.4 else f"{base}.{rng.choice(ODD_EXTS)}"
    if rng.random() < 0.08:
        return rng.choice(NOEXT_NAMES)
    return f"{base}.{rng.choice(EXTS)}"


def make_content(rng: random.Random, size: int | None = None) -> str:
    if size is None:
        size = rng.choice([0, rng.randint(1, 40), rng.randint(40, 400), rng.randint(400, 3000)])
    words: list[str] = []
    length = 0
    while length < size:
        words.append(rng.choice(FILLER))
        length += len(words[-1]) + 1
    text = "\n".join(" ".join(words[i:i + 8]) for i in range(0, len(words), 8))
    data = text.encode()[:size]
    while True:  # cut on a character boundary, pad with ASCII to the exact byte size
        try:
            text = data.decode()
            break
        except UnicodeDecodeError:
            data = data[:-1]
    return text + "x" * (size - len(text.encode()))


def make_tree(rng: random.Random, n: int, odd: bool = False) -> list[dict]:
    """A manifest: [{"path", "content", "age"}], unique base names (case-insensitively)."""
    dirs = [""]
    for _ in range(rng.randint(2, 5)):
        parent = rng.choice(dirs)
        if parent.count("/") >= 2:
            continue
        d = (parent + "/" if parent else "") + rng.choice(DIRS)
        if d not in dirs:
            dirs.append(d)
    used: set[str] = set()
    out = []
    while len(out) < n:
        name = make_name(rng, odd)
        if name.lower() in used:
            continue
        used.add(name.lower())
        d = rng.choice(dirs)
        out.append({"path": (d + "/" if d else "") + name, "content": make_content(rng),
                    "age": rng.randint(0, 400)})
    return out


# --------------------------------------------------------------------------- rules

TRAIN_KINDS = ("by_ext", "affix", "delete_size", "delete_age", "list_token", "flatten", "dedupe",
               "lowercase")
HELDOUT_KINDS = ("archive_old", "prune_empty", "keep_largest", "size_manifest", "retype")
"""The rule kinds, which are the family's templates: train seeds draw from the first, heldout
seeds only from the second (see the held-out rules below)."""


def make_rule(rng: random.Random, kinds: tuple[str, ...] = TRAIN_KINDS) -> dict:
    """The rule: a kind drawn from ``kinds`` and its parameters."""
    kind = rng.choice(list(kinds))
    if kind in HELDOUT_KINDS:
        return make_heldout_rule(rng, kind)
    rule: dict = {"kind": kind}
    if kind == "by_ext":
        rule["noext"] = rng.choice(["no_ext", "_noext", "other_files", "NOEXT", "unknown"])
    elif kind == "affix":
        rule["exts"] = sorted(rng.sample(["txt", "md", "csv", "log", "jpg", "pdf", "json", "gz"],
                                         rng.randint(1, 3)))
        rule["mode"] = rng.choice(["prefix", "suffix"])
        rule["text"] = rng.choice(["old_", "2024-", "bak_", "x-"] if rule["mode"] == "prefix"
                                  else ["_v2", "-archived", "_old", ".bak"])
    elif kind == "delete_size":
        rule["op"] = rng.choice([">", "<"])
        rule["n"] = rng.choice([50, 100, 256, 500, 1000, 1024, 1500, 2048])
    elif kind == "delete_age":
        rule["days"] = rng.choice([7, 14, 30, 60, 90, 180, 365])
    elif kind == "list_token":
        rule["token"] = rng.choice(TOKENS)
    elif kind == "flatten":
        rule["sep"] = rng.choice(["_", "__", "-", "+"])
    elif kind == "dedupe":
        rule["keep"] = rng.choice(["first", "last"])
    else:
        rule["sep"] = rng.choice(["_", "-"])
    return rule


def new_name(rule: dict, name: str) -> str:
    if rule["mode"] == "prefix":
        return rule["text"] + name
    stem, _, ext = name.rpartition(".")
    return f"{stem}{rule['text']}.{ext}"


def apply_rule(rule: dict, tree: list[dict]) -> dict:
    """Expected final state: {"files": {path: content}} or {"lines": [...]} for list_token."""
    k = rule["kind"]
    if k in HELDOUT_KINDS:
        return apply_heldout(rule, tree)
    if k == "list_token":
        return {"lines": sorted((f["path"] for f in tree if rule["token"] in f["content"]),
                                key=lambda p: p.encode())}
    out: dict[str, str] = {}
    if k == "dedupe":
        groups: dict[str, list[str]] = {}
        for f in tree:
            groups.setdefault(f["content"], []).append(f["path"])
        for content, paths in groups.items():
            paths.sort(key=lambda p: p.encode())
            out[paths[0] if rule["keep"] == "first" else paths[-1]] = content
        return {"files": out}
    for f in tree:
        path, content = f["path"], f["content"]
        d, _, name = path.rpartition("/")
        if k == "by_ext":
            e = ext_of(name)
            out[f"{e if e else rule['noext']}/{name}"] = content
        elif k == "affix":
            e = ext_of(name)
            out[(d + "/" if d else "") + (new_name(rule, name) if e in rule["exts"] else name)] = content
        elif k == "delete_size":
            size = len(content.encode())
            if not (size > rule["n"] if rule["op"] == ">" else size < rule["n"]):
                out[path] = content
        elif k == "delete_age":
            if not f["age"] > rule["days"]:
                out[path] = content
        elif k == "flatten":
            out[path.replace("/", rule["sep"])] = content
        else:
            out[(d + "/" if d else "") + name.lower().replace(" ", rule["sep"])] = content
    return {"files": out}


def valid(rule: dict, tree: list[dict], result: dict, need_change: bool) -> bool:
    """No collisions, and (for the workspace) the rule changes something non-trivially."""
    k = rule["kind"]
    if k in HELDOUT_KINDS:
        return valid_heldout(rule, tree, result, need_change)
    if ("files" in result and k not in ("dedupe", "delete_size", "delete_age")
            and len(result["files"]) != len(tree)):
        return False  # two files mapped to the same path
    if k == "by_ext":
        # an extension folder must not clash with an existing directory or top-level file
        tops = {f["path"].split("/")[0] for f in tree}
        if any(p.split("/")[0] in tops for p in result["files"]):
            return False
    if k == "flatten":
        if set(result["files"]) & {f["path"] for f in tree if "/" in f["path"]}:
            return False
        dirs = {f["path"].split("/")[0] for f in tree if "/" in f["path"]}
        if set(result["files"]) & dirs:
            return False
    if k == "lowercase" and len({p.lower() for p in result["files"]}) != len(result["files"]):
        return False
    if not need_change:
        return True
    before = {f["path"]: f["content"] for f in tree}
    if k == "list_token":
        return 2 <= len(result["lines"]) < len(tree)
    after = result["files"]
    if k in ("delete_size", "delete_age", "dedupe"):
        return 2 <= len(after) <= len(before) - 2
    changed = sum(1 for p in before if p not in after)
    return changed >= 2 and (k != "affix" or changed < len(before))


def tune_tree(rng: random.Random, rule: dict, tree: list[dict], edge: bool) -> None:
    """Adjust a manifest so the rule has interesting cases (boundary sizes, tokens, dups)."""
    k = rule["kind"]
    if k in HELDOUT_KINDS:
        return tune_heldout(rng, rule, tree, edge)
    if k == "delete_size":
        n = rule["n"]
        sizes = [n - 1, n, n + 1, 0, n * 2, n // 2] if edge else [n - 1, n, n + 1]
        for f, s in zip(rng.sample(tree, min(len(tree), len(sizes))), sizes):
            f["content"] = make_content(rng, s)
        if edge:
            # multi-byte characters: fewer characters than bytes
            f = rng.choice(tree)
            f["content"] = "é" * (n // 2 + 1)
    elif k == "delete_age":
        d = rule["days"]
        for f in tree:
            f["age"] = rng.choice([rng.randint(0, max(0, d - 2)), rng.randint(d + 2, d + 400)])
    elif k == "list_token":
        tok = rule["token"]
        for f in tree:
            r = rng.random()
            c = f["content"]
            pos = rng.randint(0, len(c))
            if r < 0.35:
                f["content"] = c[:pos] + tok + c[pos:]
            elif r < 0.5:
                f["content"] = c[:pos] + tok.lower() + c[pos:]
            elif r < 0.6:
                f["content"] = c[:pos] + tok[:-1] + " " + tok[-1] + c[pos:]
        if edge and tree:
            tree[0]["content"] = tok
            if len(tree) > 1:
                tree[1]["content"] = "no match here\n" + tok[:-1]
    elif k == "dedupe":
        for f in tree:
            if rng.random() < 0.45:
                f["content"] = rng.choice(tree)["content"]
        if edge and len(tree) >= 3:
            tree[1]["content"] = tree[0]["content"] = tree[2]["content"] + ""
            tree[2]["content"] = tree[0]["content"]


def build_case(rng: random.Random, rule: dict, n: int, edge: bool, need_change: bool,
               plain: bool = False):
    """A tree the rule works on and its expected result; ``plain``: no odd extensions, unless
    the rule needs them (adding an affix to `.gz` files only)."""
    plain = plain and not (rule["kind"] == "affix" and rule["exts"] == ["gz"])
    while True:
        odd = edge or rng.random() < 0.5
        tree = make_tree(rng, n, odd=odd and not plain)
        tune_tree(rng, rule, tree, edge)
        result = apply_rule(rule, tree)
        if valid(rule, tree, result, need_change):
            return tree, result


def build_awkward_case(rng: random.Random, rule: dict, n: int):
    """Level 3's hardest tree: names with quotes, brackets, `$`, `&`, a leading `-` or two
    spaces, some files four directories deep, plus the usual edge contents."""
    while True:
        tree = make_tree(rng, n, odd=True)
        picked = rng.sample(tree, 6)
        for f, pattern in zip(picked[:4], rng.sample(AWKWARD, 4)):
            d, _, name = f["path"].rpartition("/")
            stem, dot, rest = name.partition(".")
            f["path"] = (d + "/" if d else "") + pattern.format(stem) + dot + rest
        for f in picked[3:]:
            f["path"] = DEEP_DIR + "/" + f["path"].rpartition("/")[2]
        if len({f["path"].rpartition("/")[2].lower() for f in tree}) < n:
            continue
        tune_tree(rng, rule, tree, edge=True)
        result = apply_rule(rule, tree)
        if valid(rule, tree, result, need_change=False):
            return tree, result


def hidden_cases(rng: random.Random, rule: dict, level: int) -> list[dict]:
    """The fresh trees the hidden tests run the script on: random ones (marked core) and
    edge cases (boundary). Level 1 keeps only ordinary trees and the empty ROOT."""
    size = SIZES[level][1]
    cases = []
    for i in range(2):
        t, r = build_case(rng, rule, rng.randint(*size), edge=False, need_change=False,
                          plain=level == 1)
        cases.append({"id": f"random{i}", "mark": "core", "root": f"tree{i}", "manifest": t,
                      "expected": r})
    if level > 1:
        t, r = build_case(rng, rule, rng.randint(8, 14), edge=True, need_change=False)
        cases.append({"id": "awkward_names_and_root_with_space", "mark": "boundary",
                      "root": "my root dir", "manifest": t, "expected": r})
    cases.append({"id": "empty_root", "mark": "boundary", "root": "empty",
                  "manifest": [], "expected": apply_rule(rule, [])})
    if level == 3:
        t, r = build_case(rng, rule, rng.randint(*size), edge=False, need_change=False)
        cases.append({"id": "random2", "mark": "core", "root": "tree2", "manifest": t,
                      "expected": r})
        t, r = build_awkward_case(rng, rule, rng.randint(12, 18))
        cases.append({"id": "quotes_dashes_and_deep_dirs", "mark": "boundary",
                      "root": "it's a root [1]", "manifest": t, "expected": r})
    return cases


# --------------------------------------------------------------------------- text

def describe_rule(rule: dict, root: str) -> str:
    k = rule["kind"]
    if k in HELDOUT_KINDS:
        return describe_heldout(rule)
    if k == "by_ext":
        return (f"moves every file found anywhere under ROOT (at any depth) to `ROOT/EXT/NAME`, "
                f"where NAME is the file's name and EXT is its extension: the part of the name "
                f"after the last `.`, converted to lowercase (`x/Photo.JPG` goes to "
                f"`jpg/Photo.JPG`, `a.tar.gz` to `gz/a.tar.gz`). Files whose name contains no "
                f"`.` go to `ROOT/{rule['noext']}/`. Create the folders as needed. File names "
                f"are unique across the tree, and no extension folder clashes with an existing "
                f"name in ROOT.")
    if k == "affix":
        exts = ", ".join(f"`{e}`" for e in rule["exts"])
        if rule["mode"] == "prefix":
            how = (f"by adding the prefix `{rule['text']}` to its name (`a/b/notes.TXT` becomes "
                   f"`a/b/{rule['text']}notes.TXT`)")
        else:
            how = (f"by inserting `{rule['text']}` right before the last `.` of its name "
                   f"(`a/report.tar.gz` becomes `a/report.tar{rule['text']}.gz`)")
        return (f"renames every file (at any depth) whose extension, i.e. the part of the name "
                f"after the last `.` compared case-insensitively, is one of {exts}, {how}; it "
                f"stays in the same directory. Files without a `.` in their name and all other "
                f"files are left alone.")
    if k == "delete_size":
        word = "greater" if rule["op"] == ">" else "less"
        return (f"deletes every file (at any depth) whose size is strictly {word} than "
                f"{rule['n']} bytes (the size in bytes, as `stat`/`wc -c` report it, not in "
                f"characters). All other files stay untouched.")
    if k == "delete_age":
        return (f"deletes every file (at any depth) whose modification time is more than "
                f"{rule['days']} days ({rule['days']} x 24 hours) before the moment the script "
                f"runs. All other files stay untouched (no file is within a day of the limit).")
    if k == "list_token":
        return (f"prints the paths, relative to ROOT (e.g. `sub dir/file.txt`, without a leading "
                f"`./`), of all files (at any depth) whose content contains the exact string "
                f"`{rule['token']}` (case-sensitive), one per line, sorted in byte order (like "
                f"`LC_ALL=C sort`). It prints nothing when no file matches and changes nothing.")
    if k == "flatten":
        s = rule["sep"]
        return (f"moves every file that is inside a subdirectory of ROOT (at any depth) directly "
                f"into ROOT, naming it after its path relative to ROOT with every `/` replaced by "
                f"`{s}` (`a/b c/d.txt` becomes `a{s}b c{s}d.txt`). Files directly in ROOT keep "
                f"their names. No name collisions occur.")
    if k == "dedupe":
        which = "first" if rule["keep"] == "first" else "last"
        return (f"removes duplicate files: for every group of files (at any depth) with exactly "
                f"the same content (byte for byte), it keeps only the one whose path relative to "
                f"ROOT comes {which} in byte order (like `LC_ALL=C sort`) and deletes the others. "
                f"Files whose content is unique stay.")
    s = rule["sep"]
    return (f"renames every file (at any depth; not the directories) so that its name is all "
            f"lowercase, with every space replaced by `{s}` (`My Notes.TXT` becomes "
            f"`my{s}notes.txt`); it stays in the same directory. Names are ASCII and no "
            f"collisions occur.")


ALL_FILES = '''def all_files(root):
    out = []
    for d, dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                out.append(os.path.relpath(p, root))
    return sorted(out, key=lambda p: p.encode())
'''
"""The scripts' tree walk: paths of the regular files under root (any depth), relative to root,
in byte order."""


def solver_source(rule: dict, check_root: bool = False) -> str:
    """The reference script; ``check_root`` (level 3): reject a missing or bad ROOT first."""
    if rule["kind"] in HELDOUT_KINDS:
        return heldout_solver_source(rule, check_root)
    check = ('''    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit(f"usage: {sys.argv[0]} ROOT (ROOT must be an existing directory)")
''' if check_root else "")
    return f'''#!/usr/bin/env python3
import os
import sys
import time

RULE = {rule!r}


{ALL_FILES}

def ext(name):
    return name.rsplit(".", 1)[1].lower() if "." in name else None


def move(root, src, dst):
    if src == dst:
        return
    os.makedirs(os.path.join(root, os.path.dirname(dst)) or root, exist_ok=True)
    os.rename(os.path.join(root, src), os.path.join(root, dst))


def main():
{check}    root = sys.argv[1]
    k = RULE["kind"]
    files = all_files(root)
    if k == "list_token":
        tok = RULE["token"].encode()
        for p in files:
            with open(os.path.join(root, p), "rb") as fh:
                if tok in fh.read():
                    print(p)
        return
    if k == "dedupe":
        seen = {{}}
        order = files if RULE["keep"] == "first" else files[::-1]
        for p in order:
            with open(os.path.join(root, p), "rb") as fh:
                data = fh.read()
            if data in seen:
                os.remove(os.path.join(root, p))
            else:
                seen[data] = p
        return
    now = time.time()
    for p in files:
        d, name = os.path.split(p)
        full = os.path.join(root, p)
        if k == "by_ext":
            move(root, p, os.path.join(ext(name) or RULE["noext"], name))
        elif k == "affix":
            if ext(name) in RULE["exts"]:
                if RULE["mode"] == "prefix":
                    new = RULE["text"] + name
                else:
                    stem, _, e = name.rpartition(".")
                    new = stem + RULE["text"] + "." + e
                move(root, p, os.path.join(d, new))
        elif k == "delete_size":
            size = os.path.getsize(full)
            if (size > RULE["n"]) if RULE["op"] == ">" else (size < RULE["n"]):
                os.remove(full)
        elif k == "delete_age":
            if now - os.path.getmtime(full) > RULE["days"] * 86400:
                os.remove(full)
        elif k == "flatten":
            move(root, p, p.replace(os.sep, RULE["sep"]))
        else:
            move(root, p, os.path.join(d, name.lower().replace(" ", RULE["sep"])))


main()
'''


TEST_BODY = r'''
import os
import subprocess
import time
from pathlib import Path

import pytest

WORKDIR = Path.cwd()
SCRIPT = WORKDIR / CONFIG["script"]


def snapshot(root):
    out = {}
    for d, dirs, names in os.walk(root):
        for n in dirs + names:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "<symlink>"
            elif n in names:
                if os.path.isfile(p):
                    out[rel] = Path(p).read_bytes().decode("utf-8", "replace")
                else:
                    out[rel] = "<special>"
    return out


def check_tree(root, expected):
    got = snapshot(root)
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing files: {missing[:8]}, unexpected files: {extra[:8]}"
    changed = [p for p in expected if got[p] != expected[p]]
    assert not changed, f"content differs: {changed[:8]}"


def build(root, manifest):
    root.mkdir(parents=True)
    now = time.time()
    for f in manifest:
        p = root / f["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(f["content"].encode("utf-8"))
        t = now - f["age"] * 86400 - 3600
        os.utime(p, (t, t))


def run_script(root):
    r = subprocess.run([str(SCRIPT), str(root)], cwd=root.parent, capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")[-2000:]
    return r.stdout.decode("utf-8", "replace")


def check_case(tmp_path, case):
    root = tmp_path / case["root"]
    build(root, case["manifest"])
    out = run_script(root)
    if "lines" in case["expected"]:
        assert out.splitlines() == case["expected"]["lines"]
        check_tree(root, {f["path"]: f["content"] for f in case["manifest"]})
    else:
        check_tree(root, case["expected"]["files"])


@pytest.mark.core
def test_workspace_tree():
    exp = CONFIG["expected"]
    root = WORKDIR / CONFIG["root"]
    if "lines" in exp:
        p = WORKDIR / CONFIG["output"]
        assert p.is_file(), f"{CONFIG['output']} is missing"
        assert p.read_text(encoding="utf-8", errors="replace").splitlines() == exp["lines"]
        check_tree(root, CONFIG["original"])
    else:
        check_tree(root, exp["files"])


def _cases(mark):
    return [pytest.param(c, id=c["id"]) for c in CONFIG["cases"] if c["mark"] == mark]


@pytest.mark.core
@pytest.mark.parametrize("case", _cases("core"))
def test_script_on_fresh_tree(tmp_path, case):
    check_case(tmp_path, case)


@pytest.mark.boundary
@pytest.mark.parametrize("case", _cases("boundary"))
def test_script_on_edge_cases(tmp_path, case):
    check_case(tmp_path, case)
'''


LEVEL3_TEST_BODY = r'''

@pytest.mark.core
def test_lookalike_tree_left_alone():
    check_tree(WORKDIR / CONFIG["lookalike"], CONFIG["lookalike_files"])


@pytest.mark.boundary
@pytest.mark.parametrize("args", [[], ["no such dir"], ["a file.txt"]],
                         ids=["no_argument", "missing_root", "root_is_a_file"])
def test_script_rejects_a_bad_root(tmp_path, args):
    (tmp_path / "a file.txt").write_text("keep me\n")
    r = subprocess.run([str(SCRIPT), *args], cwd=tmp_path, capture_output=True, timeout=30)
    assert r.returncode != 0, "the script must exit with a non-zero status"
    assert r.stderr.strip(), "the script must print an error message to stderr"
    assert snapshot(tmp_path) == {"a file.txt": "keep me\n"}, "the script changed files"
'''
"""Level 3's extra hidden tests: the look-alike tree is untouched, a bad ROOT is rejected."""

SKELETON = '''#!/usr/bin/env python3
"""Usage: ./SCRIPT ROOT -- apply the rule to every file under the directory ROOT."""
import os
import sys


# all_files(root): paths of the regular files under root (at any depth), relative to root,
# in byte order.
''' + ALL_FILES + '''

def main():
    root = sys.argv[1]
    for rel in all_files(root):
        path = os.path.join(root, rel)     # e.g. ROOT/sub dir/Notes.TXT
        folder, name = os.path.split(rel)  # e.g. "sub dir", "Notes.TXT"
        # TODO: apply the rule to this file
        pass


main()
'''
"""Level 1's starting point for the script: it walks the tree and leaves the rule to fill in."""


# --------------------------------------------------------------------------- held-out rules
# The rule kinds only heldout seeds draw (HELDOUT_KINDS). Each is other work than any train
# kind: move old files into an archive keeping their paths, prune empty files and the
# directories they leave, thin every directory to its K largest or smallest files, write a
# size inventory, change one extension to another. Their reference scripts hold only their own
# kind's code.

ARCHIVES = ["attic", "_archive", "cold storage", "stale", "archived files"]
KEEP_MARKERS = [".keep", ".gitkeep", "KEEP"]
BLANKS = [" ", "\n", "\n\n", "\t\n", "  \r\n", " \t \n"]
INVENTORIES = ["MANIFEST.tsv", "_sizes.tsv", "inventory.txt", "SIZES"]
RETYPES = [("jpeg", "jpg"), ("yml", "yaml"), ("htm", "html"), ("text", "txt"),
           ("markdown", "md"), ("tiff", "tif")]


def make_heldout_rule(rng: random.Random, kind: str) -> dict:
    rule: dict = {"kind": kind}
    if kind == "archive_old":
        rule["days"] = rng.choice([5, 10, 21, 45, 100, 200, 300])
        rule["dest"] = rng.choice(ARCHIVES)
    elif kind == "prune_empty":
        rule["mode"] = rng.choice(["empty", "blank"])
        rule["keep"] = rng.choice(KEEP_MARKERS)
    elif kind == "keep_largest":
        rule["k"] = rng.randint(1, 3)
        rule["which"] = rng.choice(["largest", "smallest"])
    elif kind == "size_manifest":
        rule["name"] = rng.choice(INVENTORIES)
        rule["order"] = rng.choice(["path", "size_desc", "size_asc"])
    else:
        rule["src"], rule["dst"] = rng.choice(RETYPES)
    return rule


def size_of(f: dict) -> int:
    return len(f["content"].encode())


def parent_dirs(path: str) -> list[str]:
    """``a/b/c.txt`` -> ``["a", "a/b"]``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def removable(rule: dict, f: dict) -> bool:
    """prune_empty: whether the rule deletes the file (a keep marker never)."""
    if f["path"].rpartition("/")[2] == rule["keep"]:
        return False
    return (f["content"].strip(" \t\r\n") if rule["mode"] == "blank" else f["content"]) == ""


def ranked(rule: dict, files: list[dict]) -> list[dict]:
    """keep_largest: one directory's files, those the rule keeps first."""
    sign = -1 if rule["which"] == "largest" else 1
    return sorted(files, key=lambda f: (sign * size_of(f), f["path"].rpartition("/")[2].encode()))


def retyped(rule: dict, name: str) -> str:
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.{rule['dst']}" if dot and ext.lower() == rule["src"] else name


def apply_heldout(rule: dict, tree: list[dict]) -> dict:
    """Expected final state of a held-out rule: {"files": {path: content}}, plus, for
    prune_empty, "dirs": the directories under ROOT that remain (sorted)."""
    k = rule["kind"]
    if k == "archive_old":
        return {"files": {(f"{rule['dest']}/" if f["age"] > rule["days"] else "") + f["path"]:
                          f["content"] for f in tree}}
    if k == "prune_empty":
        out = {f["path"]: f["content"] for f in tree if not removable(rule, f)}
        return {"files": out, "dirs": sorted({d for p in out for d in parent_dirs(p)})}
    if k == "keep_largest":
        groups: dict[str, list[dict]] = {}
        for f in tree:
            groups.setdefault(f["path"].rpartition("/")[0], []).append(f)
        return {"files": {f["path"]: f["content"] for group in groups.values()
                          for f in ranked(rule, group)[:rule["k"]]}}
    if k == "size_manifest":
        rows = [(size_of(f), f["path"]) for f in tree if f["path"] != rule["name"]]
        order = {"path": lambda r: r[1].encode(), "size_desc": lambda r: (-r[0], r[1].encode()),
                 "size_asc": lambda r: (r[0], r[1].encode())}[rule["order"]]
        out = {f["path"]: f["content"] for f in tree}
        out[rule["name"]] = "".join(f"{size}\t{path}\n" for size, path in sorted(rows, key=order))
        return {"files": out}
    out = {}
    for f in tree:
        d, _, name = f["path"].rpartition("/")
        out[(d + "/" if d else "") + retyped(rule, name)] = f["content"]
    return {"files": out}


def valid_heldout(rule: dict, tree: list[dict], result: dict, need_change: bool) -> bool:
    """``valid`` for the held-out rules: no collisions, no clash with the names the rule
    creates, and for the workspace a change that exercises the rule's tricky part."""
    k, before, after = rule["kind"], {f["path"]: f for f in tree}, result["files"]
    tops = {f["path"].split("/")[0].lower() for f in tree}
    if k == "archive_old" and rule["dest"].lower() in tops:
        return False
    if k == "retype" and len({p.lower() for p in after}) != len(tree):
        return False
    if not need_change:
        return True
    if k == "archive_old":
        moved = sum(1 for p in after if p not in before)
        return 2 <= moved <= len(tree) - 2
    if k == "prune_empty":
        dirs = {d for p in before for d in parent_dirs(p)}
        markers = [p for p in after if p.rpartition("/")[2] == rule["keep"]]
        held = any(not any(q.startswith(m.rpartition("/")[0] + "/") for q in after if q not in markers)
                   for m in markers if "/" in m)
        return 2 <= len(after) <= len(tree) - 2 and len(result["dirs"]) < len(dirs) and held
    if k == "keep_largest":
        return 2 <= len(after) <= len(tree) - 2
    if k == "size_manifest":
        sizes = [size_of(f) for f in tree]
        return rule["name"].lower() not in tops and len(set(sizes)) < len(sizes)
    changed = sum(1 for p in before if p not in after)
    return 2 <= changed <= len(tree) - 2


def same_size_pair(rng: random.Random, tree: list[dict], same_dir: bool) -> None:
    """Give two files (in one directory when ``same_dir`` and one has two) equal sizes but
    different contents, so the tie-break of a size order matters."""
    groups: dict[str, list[dict]] = {}
    for f in tree:
        groups.setdefault(f["path"].rpartition("/")[0] if same_dir else "", []).append(f)
    pairs = [g for g in groups.values() if len(g) >= 2]
    if not pairs:
        return
    a, b = rng.sample(rng.choice(pairs), 2)
    size = rng.choice([0, rng.randint(1, 60), rng.randint(60, 900)])
    a["content"] = make_content(rng, size)
    b["content"] = "y" * size if size else ""


def tune_heldout(rng: random.Random, rule: dict, tree: list[dict], edge: bool) -> None:
    """``tune_tree`` for the held-out rules."""
    k = rule["kind"]
    if k == "archive_old":
        d = rule["days"]
        for f in tree:
            f["age"] = rng.choice([rng.randint(0, max(0, d - 2)), rng.randint(d + 2, d + 500)])
        for f, age in zip(rng.sample(tree, min(len(tree), 2)), [d + 2, max(0, d - 2)]):
            f["age"] = age  # just past and just short of the limit
    elif k == "prune_empty":
        tune_prune(rng, rule, tree, edge)
    elif k == "keep_largest":
        same_size_pair(rng, tree, same_dir=True)
        if edge and tree:
            same_size_pair(rng, tree, same_dir=True)
            bytes_not_characters(rng, rule, tree)
    elif k == "size_manifest":
        same_size_pair(rng, tree, same_dir=False)
        if edge and tree:
            rng.choice(tree)["content"] = "ü" * rng.randint(1, 80)
            sub = next((f["path"].rpartition("/")[0] for f in tree if "/" in f["path"]), "")
            if sub:  # the same name deeper down is an ordinary file to list
                tree.append({"path": f"{sub}/{rule['name']}", "content": "listed\n", "age": 3})
            tree.append({"path": rule["name"], "content": "stale\tinventory\n", "age": 3})
    else:
        tune_retype(rng, rule, tree, edge)


def bytes_not_characters(rng: random.Random, rule: dict, tree: list[dict]) -> None:
    """keep_largest: a new folder of k+1 files where ranking by characters instead of bytes
    keeps a different set (a file of `é`s against a longer ASCII one)."""
    folder = rng.choice(["by size", "unicode", "mixed"])
    if any(f["path"].startswith(folder + "/") for f in tree):
        return
    m = rng.randint(20, 200)
    big = rule["which"] == "largest"
    fill = [make_content(rng, 5000 + i if big else i + 1) for i in range(rule["k"] - 1)]
    for i, content in enumerate(fill + ["é" * m, "x" * (m + m // 2)]):
        tree.append({"path": f"{folder}/{WORDS[i]}.txt", "content": content, "age": 1})


def tune_prune(rng: random.Random, rule: dict, tree: list[dict], edge: bool) -> None:
    """Empty and blank files everywhere, one subtree left with nothing to keep, and a keep
    marker in another directory whose other files all go."""
    originals = list(tree)
    for f in tree:
        r = rng.random()
        if r < 0.3:
            f["content"] = ""
        elif r < 0.45:
            f["content"] = rng.choice(BLANKS)
    dirs = sorted({d for f in tree for d in parent_dirs(f["path"])})
    if not dirs:
        return
    gone, kept = rng.choice(dirs), rng.choice(dirs)
    for f in tree:
        if f["path"].startswith(gone + "/") or f["path"].rpartition("/")[0] == kept:
            f["content"] = rng.choice(["", *BLANKS]) if rule["mode"] == "blank" else ""
    tree.append({"path": f"{kept}/{rule['keep']}", "content": rng.choice(["", "\n"]),
                 "age": rng.randint(0, 400)})
    below = f"{gone}/{rng.choice(DIRS)}/{rng.choice(WORDS)}.tmp"  # a nested emptied folder
    if below not in {f["path"] for f in tree}:
        tree.append({"path": below, "content": "", "age": rng.randint(0, 400)})
    if edge:
        keep = rule["keep"]
        for lookalike in (keep.upper() if keep.islower() else keep.lower(),
                          rng.choice([keep + ".txt", "old" + keep])):
            tree.append({"path": f"{gone}/{lookalike}", "content": "", "age": 1})
        rng.choice(originals)["content"] = rng.choice([" x\n", "\t.\n", "0"])


def tune_retype(rng: random.Random, rule: dict, tree: list[dict], edge: bool) -> None:
    """Give some files the source extension in mixed case (never where the renamed file would
    collide), plus look-alikes the rule must leave alone."""
    src = rule["src"]
    used = {f["path"].rpartition("/")[2].lower() for f in tree}
    for f in tree:
        if rng.random() >= (0.5 if edge else 0.35):
            continue
        d, _, name = f["path"].rpartition("/")
        stem = name.rpartition(".")[0] or name
        new = f"{stem}.{rng.choice([src, src, src.upper(), src.capitalize()])}"
        if new.lower() in used or f"{stem}.{rule['dst']}".lower() in used:
            continue
        used.add(new.lower())
        f["path"] = (d + "/" if d else "") + new
    decoys = [f"{{}}.{src}s", f"{{}}.{src}.bak", src.upper()]
    if edge:
        decoys += [f"{{}}.{src}.old", f"{src} {{}}.png", f"{{}}.{src}x"]
    for f, decoy in zip(rng.sample(tree, min(len(tree), len(decoys))), decoys):
        d, _, name = f["path"].rpartition("/")
        new = decoy.format(name.partition(".")[0])
        if new.lower() not in used:
            used.add(new.lower())
            f["path"] = (d + "/" if d else "") + new


def describe_heldout(rule: dict) -> str:
    """``describe_rule`` for the held-out rules."""
    k = rule["kind"]
    if k == "archive_old":
        days, dest = rule["days"], rule["dest"]
        return (f"archives stale files: every file (at any depth) last modified over {days} full "
                f"days ago (its mtime is older than {days} x 86400 seconds when the script starts) "
                f"is moved under the archive folder `ROOT/{dest}/` at the same path it had "
                f"relative to ROOT (`a/b c/old.txt` ends up as `{dest}/a/b c/old.txt`), with "
                f"its bytes unchanged; create the folders it needs. Files modified more recently "
                f"stay where they are. No file's age is within a day of {days} days, and ROOT "
                f"holds nothing named `{dest}` beforehand.")
    if k == "prune_empty":
        if rule["mode"] == "empty":
            which = ("deletes every empty file (0 bytes; a file holding only spaces or newlines "
                     "is not empty and stays)")
        else:
            which = ("deletes every blank file: one that is 0 bytes or holds nothing but spaces, "
                     "tabs, carriage returns and newlines")
        return (f"{which}, at any depth, except files named exactly `{rule['keep']}` "
                f"(case-sensitive), which always stay whatever they hold. After that it removes "
                f"every directory under ROOT that no longer contains any file at any depth, so a "
                f"folder whose only contents were emptied folders goes as well; ROOT itself "
                f"always stays, and so does every directory that still holds a file somewhere "
                f"inside it. The hidden tests check the remaining directories too.")
    if k == "keep_largest":
        n, which = rule["k"], rule["which"]
        what = f"only its single {which} file" if n == 1 else f"only its {n} {which} files"
        return (f"thins out each directory separately (ROOT and every subdirectory): among the "
                f"regular files directly inside that directory (files in its subdirectories "
                f"count for those), it keeps {what} and deletes the rest. Size means bytes, as "
                f"`stat -c %s` reports it, not characters. When sizes are equal the file whose "
                f"name comes first in byte order (like `LC_ALL=C sort`) ranks as the "
                f"{which}. A directory with {n} or fewer files keeps them all.")
    if k == "size_manifest":
        order = {"path": "by path, in byte order (like `LC_ALL=C sort`)",
                 "size_desc": "by size, largest first; equal sizes by path in byte order",
                 "size_asc": "by size, smallest first; equal sizes by path in byte order"}
        name = rule["name"]
        return (f"writes an inventory `ROOT/{name}` and changes no other file. It holds one line "
                f"per regular file under ROOT at any depth: the file's size in bytes (not "
                f"characters), one tab character, then its path relative to ROOT (`sub dir/a.txt`, "
                f"no leading `./`), and a newline. Lines are sorted {order[rule['order']]}. "
                f"`ROOT/{name}` itself is never listed (if it already exists it is replaced), but "
                f"a file of that name in a subdirectory is listed like any other. With no files "
                f"the inventory is empty (0 bytes).")
    src, dst = rule["src"], rule["dst"]
    return (f"changes the extension of every file (at any depth) whose extension, the part of "
            f"its name after the last `.`, is `{src}` in any letter case, to `{dst}` in lower "
            f"case: `x/Scan 2.{src.upper()}` becomes `x/Scan 2.{dst}` and `a.b.{src}` becomes "
            f"`a.b.{dst}`. The rest of the name stays as it is, and the file stays in its "
            f"directory. Files with any other extension (such as `n.{src}.bak` or "
            f"`n.{src}s`) and files without a `.` (such as `{src.upper()}`) are left alone. "
            f"No two files end up with the same name.")


HELDOUT_SOLVERS = {
    "archive_old": '''def apply(root):
    cutoff = time.time() - RULE["days"] * 86400
    stale = [rel for rel in all_files(root)
             if os.path.getmtime(os.path.join(root, rel)) < cutoff]
    for rel in stale:
        target = os.path.join(root, RULE["dest"], rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.rename(os.path.join(root, rel), target)
''',
    "prune_empty": '''def doomed(path):
    if os.path.basename(path) == RULE["keep"]:
        return False
    with open(path, "rb") as fh:
        data = fh.read()
    if RULE["mode"] == "blank":
        data = data.strip(b" \\t\\r\\n")
    return data == b""


def apply(root):
    for rel in all_files(root):
        if doomed(os.path.join(root, rel)):
            os.unlink(os.path.join(root, rel))
    for folder, _, _ in os.walk(root, topdown=False):
        if os.path.realpath(folder) != os.path.realpath(root) and not os.listdir(folder):
            os.rmdir(folder)
''',
    "keep_largest": '''def apply(root):
    per_dir = {}
    for rel in all_files(root):
        per_dir.setdefault(os.path.dirname(rel), []).append(rel)
    sign = -1 if RULE["which"] == "largest" else 1
    for rels in per_dir.values():
        rels.sort(key=lambda r: (sign * os.path.getsize(os.path.join(root, r)),
                                 os.path.basename(r).encode()))
        for rel in rels[RULE["k"]:]:
            os.unlink(os.path.join(root, rel))
''',
    "size_manifest": '''def apply(root):
    rows = [(os.path.getsize(os.path.join(root, rel)), rel)
            for rel in all_files(root) if rel != RULE["name"]]
    if RULE["order"] == "path":
        rows.sort(key=lambda r: r[1].encode())
    else:
        sign = -1 if RULE["order"] == "size_desc" else 1
        rows.sort(key=lambda r: (sign * r[0], r[1].encode()))
    with open(os.path.join(root, RULE["name"]), "w", encoding="utf-8", newline="") as fh:
        for size, rel in rows:
            fh.write(f"{size}\\t{rel}\\n")
''',
    "retype": '''def apply(root):
    for rel in all_files(root):
        folder, name = os.path.split(rel)
        stem, dot, extension = name.rpartition(".")
        if dot and extension.lower() == RULE["src"]:
            os.rename(os.path.join(root, rel),
                      os.path.join(root, folder, stem + "." + RULE["dst"]))
''',
}
"""The held-out rules' reference code: an ``apply(root)`` each."""


def heldout_solver_source(rule: dict, check_root: bool = False) -> str:
    """The reference script of a held-out rule: the tree walk and that rule's ``apply``."""
    check = ('''    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit(f"usage: {sys.argv[0]} ROOT (ROOT must be an existing directory)")
''' if check_root else "")
    return f'''#!/usr/bin/env python3
import os
import sys
import time

RULE = {rule!r}


{ALL_FILES}

{HELDOUT_SOLVERS[rule["kind"]]}

def main():
{check}    apply(sys.argv[1])


main()
'''


DIRS_TEST_BODY = r'''

def directories(root):
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, dirs, _ in os.walk(root) for n in dirs)


@pytest.mark.core
def test_workspace_directories():
    root = WORKDIR / CONFIG["root"]
    assert root.is_dir(), "ROOT itself must stay"
    assert directories(root) == CONFIG["expected"]["dirs"]


@pytest.mark.boundary
@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CONFIG["cases"]])
def test_script_leaves_only_directories_that_hold_files(tmp_path, case):
    root = tmp_path / case["root"]
    build(root, case["manifest"])
    run_script(root)
    assert root.is_dir(), "ROOT itself must stay"
    assert directories(root) == case["expected"]["dirs"]
'''
"""prune_empty's extra hidden tests: the directories left are exactly those holding a file."""


def instruction_text(level: int, rule: dict, root: str, script: str, run_line: str, n: int,
                     examples: str, lookalike: str) -> str:
    """The task's instruction; at level 2 the family's original text, word for word."""
    listing = rule["kind"] == "list_token"
    leftover = ("" if listing or rule["kind"] in ("prune_empty", "size_manifest") else
                " Empty directories left behind may stay or be removed; only regular files are "
                "checked.")
    names = ("names may\ncontain spaces, quotes, brackets, `$` or `&`, or start with `-`"
             if level == 3 else "names may\ncontain spaces")
    general = f"It must work on any such tree, not only on `{root}/`."
    if level == 1:
        write = (f"`{script}` in the current directory is an executable Python skeleton that\n"
                 f"takes the path of a directory ROOT as its only argument and walks every file\n"
                 f"under it, doing nothing yet. Fill in its TODO (or replace it with your own\n"
                 f"script in any language) so that the script {describe_rule(rule, root)}")
        general = (f"It must work on any such tree, not only on `{root}/`, and on an empty ROOT it "
                   f"must\nsucceed and change nothing.")
        if rule["kind"] == "size_manifest":
            general = (f"It must work on any such tree, not only on `{root}/`, and on an empty ROOT "
                       f"it must\nsucceed and write an empty inventory.")
    else:
        write = f"""\
Write an executable script `{script}` in the current directory (any language; start it with a
shebang line) that takes the path of a directory ROOT as its only argument (relative or
absolute, possibly containing spaces) and {describe_rule(rule, root)}"""
    if level == 3:
        write += ("\n\nIf it is run without an argument, or ROOT does not exist or is not a "
                  "directory, it\nmust print an error message to stderr and exit with a non-zero "
                  "status, changing nothing.")
        leftover += (f" Next to `{root}/`, `{lookalike}/` holds older files: leave them exactly as\n"
                     "they are.")
    return f"""\
The directory `{root}/` holds a tree of {n} files in nested subdirectories ({names}), for example:

{examples}

{write}

{general}{leftover} Then apply it to the
workspace tree:

    {run_line}
"""


class ShellFiles(Family):
    name = "shell-files"
    category = "shell"
    description = ("Write a script that organizes, renames, deletes or finds files in a directory "
                   "tree according to a seeded rule, and run it on a generated tree.")
    difficulty = "medium"
    train_templates = TRAIN_KINDS
    heldout_templates = HELDOUT_KINDS
    levels: ClassVar[dict[int, str]] = {
        1: "smaller trees with plain names, a Python skeleton of the script that already walks "
           "the tree (fill in the rule), and hidden tests with only ordinary trees and an empty ROOT",
        2: "the family as it always was: write the whole script; hidden trees include awkward "
           "names, boundary sizes, a root path with a space and an empty ROOT",
        3: "larger trees, extra hidden trees with quotes, brackets, leading dashes and deep "
           "nesting, a look-alike copy of the tree that must stay untouched, and the script "
           "must also reject a missing or non-directory ROOT",
    }

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        rule = make_rule(rng, template_pool(seed, TRAIN_KINDS, HELDOUT_KINDS))
        root = rng.choice(["inbox", "files", "dump", "downloads", "incoming", "share"])
        script = rng.choice(["organize.sh", "tidy.sh", "sortfiles", "cleanup.sh", "process_tree",
                             "apply_rule.py"])
        output = rng.choice(["matches.txt", "found.txt", "hits.txt", "list.txt"])
        if level == 1 and script.endswith(".sh"):
            script = script.removesuffix(".sh") + ".py"  # the skeleton is Python
        tree, result = build_case(rng, rule, rng.randint(*SIZES[level][0]), edge=False,
                                  need_change=True, plain=level == 1)
        cases = hidden_cases(rng, rule, level)
        shown = sorted(rng.sample([f["path"] for f in tree], 4), key=lambda p: p.encode())
        lookalike, decoy = "", []
        if level == 3:
            lookalike = rng.choice([f"{root}.bak", f"{root}_old", f"old {root}", f"{root} (copy)"])
            decoy = build_case(rng, rule, rng.randint(6, 10), edge=False, need_change=True)[0]

        setup: tuple[str, ...] = ()
        if rule["kind"] in ("delete_age", "archive_old"):
            setup = tuple(f"touch -m -d '{f['age']} days ago 1 hour ago' "
                          + shlex.quote(f"{top}/{f['path']}")
                          for top, manifest in ((root, tree), (lookalike, decoy)) for f in manifest)
        examples = "\n".join(f"- `{root}/{p}`" for p in shown)
        listing = rule["kind"] == "list_token"
        run_line = (f"./{script} {root} > {output}" if listing else f"./{script} {root}")
        solver = solver_source(rule, check_root=level == 3)
        solution = ("#!/bin/bash\nset -e\n" + heredoc(script, solver, executable=True)
                    + (f"./'{script}' '{root}' > '{output}'\n" if listing
                       else f"./'{script}' '{root}'\n"))
        config = {"script": script, "root": root, "output": output, "expected": result,
                  "original": {f["path"]: f["content"] for f in tree}, "cases": cases}
        workspace = {f"{root}/{f['path']}": f["content"] for f in tree}
        if level == 1:
            workspace[script] = SKELETON.replace("SCRIPT", script, 1)
        if level == 3:
            config |= {"lookalike": lookalike,
                       "lookalike_files": {f["path"]: f["content"] for f in decoy}}
            workspace |= {f"{lookalike}/{f['path']}": f["content"] for f in decoy}
        body = (TEST_BODY + (LEVEL3_TEST_BODY if level == 3 else "")
                + (DIRS_TEST_BODY if rule["kind"] == "prune_empty" else ""))
        return {
            "instruction": instruction_text(level, rule, root, script, run_line, len(tree),
                                            examples, lookalike),
            "workspace": files(workspace, executable=(script,) if level == 1 else ()),
            "tests": files({"test_tree.py": hidden_test_source(config, body)}),
            "solution": solution,
            "setup": setup,
            "tags": ["files", "find", "shell", rule["kind"]],
            "template": rule["kind"],
        }


FAMILY = ShellFiles()
