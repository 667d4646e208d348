"""py-function: implement one Python function from a seeded, parameterized specification.

Per seed: the template (18 kinds: k-th distinct value, Caesar shift, digit sums in base b,
chunking, word counting, run-length encoding, rotation, pair counting, window sums, base
conversion, masking, de-duplication, runs, linear recurrences, interleaving, divisibility
counts, bracket balancing, top words), its parameters (k, shift, base, size, threshold,
direction, tail/format variants...), the function and module names, and the examples.

Hidden tests call the function in a separate Python process (so the agent's code cannot
touch the test process) on many unseen inputs, random and edge cases, and compare a
type-exact canonical form (``type(x) is int``, lists vs tuples, bool vs int...) of each result
with the reference value computed at generation time.

Levels: 1 checks ordinary inputs only (no hidden edge-case test; the instruction says so);
2 is the family as it always was (ordinary and edge-case inputs, a stub to fill in); 3 gives
no stub (the module is the agent's to create) and adds a distractor: ``MODULE_v1.py`` holds
an earlier version of the function with different parameters, which must be left unchanged
(a hidden test checks its bytes) and must not be what the new module does.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import ClassVar

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone, md_code
from .base import Family, files


@dataclass(frozen=True)
class FunctionTemplate:
    """One drawn specification of a function to implement: what every template returns."""

    fname: str
    """The function's name."""
    params: str
    """Its parameters as written in the signature, e.g. ``values: list[int]``."""
    ret: str
    """Its return annotation, e.g. ``int | None``."""
    desc: str
    """What it must do, in Markdown: the instruction's specification (and the stub's docstring)."""
    body: str
    """The reference body, indented 4 spaces: computes every expected value at generation time."""
    core: list[list]
    """Argument lists of ordinary inputs; the first three are shown as examples, the rest are hidden."""
    edge: list[list]
    """Argument lists of edge cases (empty, single, boundary values), all hidden."""
    imports: str = ""
    """Import lines the reference body needs (they go into the stub too)."""

CANON_SRC = '''
def canon(x):
    t = type(x)
    if x is None or t is bool or t is int or t is str or t is float:
        return repr(x)
    if t is list:
        return "[" + ", ".join(canon(e) for e in x) + "]"
    if t is tuple:
        return "(" + ", ".join(canon(e) for e in x) + ("," if len(x) == 1 else "") + ")"
    if t is dict:
        return "{" + ", ".join(canon(k) + ": " + canon(v) for k, v in x.items()) + "}"
    return "<object of type " + t.__module__ + "." + t.__qualname__ + ">"
'''
_ns: dict = {}
exec(CANON_SRC, _ns)
canon = _ns["canon"]

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "a", "an", "data",
         "pipeline", "is", "to", "be", "or", "not", "Zebra", "apple", "Apple", "kiwi",
         "extraordinary", "I", "it's", "well-known", "café", "naïve", "x", "hello", "world",
         "python", "RL", "agent", "terminal", "ok", "Mississippi"]


def ordinal(k: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def ints(rng, n, lo, hi):
    return [rng.randint(lo, hi) for _ in range(n)]


def sentence(rng, n):
    seps = [" ", " ", " ", "  ", ", ", ". ", "! ", "\t", "\n", " - ", "; "]
    out = ""
    for i in range(n):
        out += rng.choice(WORDS) + (rng.choice(seps) if i < n - 1 else "")
    return out


def rand_str(rng, alphabet, lo, hi):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


# --------------------------------------------------------------------------- templates
# Each template draws its parameters from ``rng`` and returns a ``FunctionTemplate``.


def t_kth_distinct(rng):
    k = rng.randint(1, 4)
    largest = rng.random() < 0.5
    missing = rng.choice([None, -1])
    which = "largest" if largest else "smallest"
    desc = (f"Return the {ordinal(k)} {which} *distinct* value in `values` (a list of ints; "
            f"equal values count once). If `values` has fewer than {k} distinct values, return "
            f"`{missing!r}`.")
    body = (f"    d = sorted(set(values), reverse={largest!r})\n"
            f"    return d[{k - 1}] if len(d) >= {k} else {missing!r}\n")
    core = [[ints(rng, rng.randint(4, 16), -20, 20)] for _ in range(25)]
    base = rng.sample(range(-50, 50), k)
    edge = [[[]], [[7]], [[5] * 6], [base * 2], [base[:-1] * 3 if k > 1 else []],
            [[10 ** 18, -10 ** 18, 10 ** 18, 3, 3]], [sorted(base + base)],
            [list(range(k + 3))], [[-1, -1, -2, -2]]]
    return FunctionTemplate(fname=rng.choice(["kth_distinct", "nth_unique", "pick_distinct"]),
                params="values: list[int]", ret="int | None" if missing is None else "int",
                desc=desc, body=body, core=core, edge=edge)


def t_caesar(rng):
    n = rng.randint(1, 25)
    forward = rng.random() < 0.5
    d = rng.choice([0, 0, rng.randint(1, 9)])
    s = n if forward else -n
    ex_from = "a"
    ex_to = chr((0 + s) % 26 + 97)
    desc = (f"Shift every ASCII letter in `text` {n} places {'forward' if forward else 'backward'} "
            f"in the alphabet, wrapping around (so `{ex_from}` becomes `{ex_to}`, and `A` becomes "
            f"`{ex_to.upper()}`); letters keep their case.")
    if d:
        desc += (f" Every ASCII digit is shifted {d} places forward, wrapping around from `9` "
                 f"to `0` (so `9` becomes `{(9 + d) % 10}`).")
        desc += " All other characters (including non-ASCII letters) stay unchanged."
    else:
        desc += " All other characters (digits, punctuation, non-ASCII letters...) stay unchanged."
    body = ("    out = []\n"
            "    for ch in text:\n"
            "        if 'a' <= ch <= 'z':\n"
            f"            out.append(chr((ord(ch) - 97 + {s}) % 26 + 97))\n"
            "        elif 'A' <= ch <= 'Z':\n"
            f"            out.append(chr((ord(ch) - 65 + {s}) % 26 + 65))\n"
            f"        elif {bool(d)!r} and '0' <= ch <= '9':\n"
            f"            out.append(chr((ord(ch) - 48 + {d}) % 10 + 48))\n"
            "        else:\n"
            "            out.append(ch)\n"
            "    return ''.join(out)\n")
    alpha = string.ascii_letters + string.digits + " .,!?-"
    core = [[rand_str(rng, alpha, 1, 30)] for _ in range(15)] + [[sentence(rng, 6)] for _ in range(8)]
    edge = [[""], ["z"], ["Z"], ["aA zZ"], [string.ascii_lowercase], [string.ascii_uppercase],
            ["0123456789"], ["éÉßΩ ü 9 ✓"], ["\n\t"], ["Hello, World! 2024"]]
    return FunctionTemplate(fname=rng.choice(["caesar", "shift_letters", "rotate_text"]),
                params="text: str", ret="str", desc=desc, body=body, core=core, edge=edge)


def t_digit_sum(rng):
    b = rng.choice([2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16])
    p = rng.choice([1, 1, 2])
    what = "the sum of the digits" if p == 1 else "the sum of the squares of the digits"
    desc = (f"Return {what} of `n` written in base {b} (for example, in base {b} the number "
            f"{b * b + 2 * b + 1 if b > 2 else 7} has digits "
            f"{'1, 2, 1' if b > 2 else '1, 1, 1'}). For a negative `n` use its absolute value; "
            f"for 0 the result is 0.")
    body = ("    n = abs(n)\n"
            "    s = 0\n"
            "    while n:\n"
            f"        s += (n % {b}) ** {p}\n"
            f"        n //= {b}\n"
            "    return s\n")
    core = [[rng.randint(0, 10 ** rng.randint(1, 9))] for _ in range(25)]
    edge = [[0], [1], [b - 1], [b], [b ** 5], [b ** 5 - 1], [-(b ** 3) - 5], [10 ** 30 + 7],
            [-1]]
    return FunctionTemplate(fname=rng.choice(["digit_sum", "base_digit_sum", "sum_digits"]),
                params="n: int", ret="int", desc=desc, body=body, core=core, edge=edge)


def t_chunk(rng):
    n = rng.randint(2, 6)
    mode = rng.choice(["keep", "drop", "pad"])
    fill = rng.choice([None, 0, ""])
    desc = (f"Split `items` into consecutive chunks of {n} elements, in order, and return them as "
            f"a list of lists (new lists; do not modify `items`). ")
    if mode == "keep":
        desc += f"The last chunk may be shorter than {n} (it holds whatever remains)."
    elif mode == "drop":
        desc += f"If the last chunk would be shorter than {n}, leave it out."
    else:
        desc += (f"If the last chunk is shorter than {n}, pad it at the end with `{fill!r}` "
                 f"until it has {n} elements.")
    desc += " An empty `items` gives `[]`."
    tail = {"keep": "",
            "drop": f"    if out and len(out[-1]) < {n}:\n        out.pop()\n",
            "pad": f"    if out and len(out[-1]) < {n}:\n"
                   f"        out[-1] += [{fill!r}] * ({n} - len(out[-1]))\n"}[mode]
    body = (f"    out = [list(items[i:i + {n}]) for i in range(0, len(items), {n})]\n" + tail
            + "    return out\n")
    core = [[ints(rng, rng.randint(1, 20), -9, 99)] for _ in range(15)]
    core += [[[rng.choice(WORDS) for _ in range(rng.randint(1, 12))]] for _ in range(6)]
    edge = [[[]], [list(range(n))], [list(range(n - 1))], [list(range(n + 1))],
            [list(range(2 * n))], [[None] * (n + 1)], [["x"]]]
    return FunctionTemplate(fname=rng.choice(["chunk", "chunked", "split_into_chunks", "batch"]),
                params="items: list", ret="list[list]", desc=desc, body=body, core=core,
                edge=edge)


def t_count_words(rng):
    m = rng.randint(3, 8)
    cmp = rng.choice([">=", "<=", "=="])
    letters = rng.random() < 0.5
    cmp_text = {">=": f"at least {m}", "<=": f"at most {m}", "==": f"exactly {m}"}[cmp]
    if letters:
        wdef = ("a *word* is a maximal run of ASCII letters `A-Z`/`a-z` (any other character, "
                "including digits, apostrophes, hyphens and non-ASCII letters, separates words)")
        split = "re.findall(r'[A-Za-z]+', text)"
    else:
        wdef = ("a *word* is a maximal run of non-whitespace characters (like `str.split()` "
                "with no argument; punctuation attached to a word is part of it)")
        split = "text.split()"
    desc = f"Return how many words of `text` have {cmp_text} characters, where {wdef}."
    body = f"    return sum(1 for w in {split} if len(w) {cmp} {m})\n"
    core = [[sentence(rng, rng.randint(3, 14))] for _ in range(25)]
    edge = [[""], ["   \t\n "], ["a" * m], ["a" * (m - 1)], ["a" * (m + 1)],
            [("b" * m + ",") * 3], ["it's well-known " + "c" * m], ["café naïve " + "d" * m],
            ["x1" * m + " " + "y" * m]]
    names = {">=": ["count_long_words", "count_words", "long_word_count"],
             "<=": ["count_short_words", "count_words", "short_word_count"],
             "==": ["count_words_of_length", "count_words", "word_count"]}[cmp]
    return FunctionTemplate(fname=rng.choice(names),
                params="text: str", ret="int", desc=desc, body=body, core=core, edge=edge,
                imports="import re\n")


def t_rle(rng):
    count_first = rng.random() < 0.5
    omit_one = rng.random() < 0.5
    ex = "aaabccdddd"
    if count_first:
        ex_out = ("3a" + ("b" if omit_one else "1b") + "2c4d")
        piece = "the run length followed by the character"
    else:
        ex_out = ("a3" + ("b" if omit_one else "b1") + "c2d4")
        piece = "the character followed by the run length"
    desc = (f"Run-length encode `text`: replace each maximal run of equal consecutive characters "
            f"by {piece} (in decimal)"
            + ("; a run of length 1 is written as the character alone" if omit_one else
               "; runs of length 1 are written with the count 1 too")
            + f". For example `\"{ex}\"` becomes `\"{ex_out}\"`. An empty string gives `\"\"`. "
            f"The input never contains digits.")
    if count_first:
        piece_src = "str(n) + text[i]" if not omit_one else "(str(n) if n > 1 else '') + text[i]"
    else:
        piece_src = "text[i] + str(n)" if not omit_one else "text[i] + (str(n) if n > 1 else '')"
    body = ("    out = []\n"
            "    i = 0\n"
            "    while i < len(text):\n"
            "        j = i\n"
            "        while j < len(text) and text[j] == text[i]:\n"
            "            j += 1\n"
            "        n = j - i\n"
            f"        out.append({piece_src})\n"
            "        i = j\n"
            "    return ''.join(out)\n")
    core = [[rand_str(rng, "aab bcc", 1, 25)] for _ in range(15)]
    core += [["".join(rng.choice("xyZ!") * rng.randint(1, 5) for _ in range(5))] for _ in range(8)]
    edge = [[""], ["a"], ["q" * 12], ["ab"], ["  "], ["aAaA"], ["é" * 3 + "e"], ["z" * 100]]
    return FunctionTemplate(fname=rng.choice(["rle", "run_length_encode", "compress_runs"]),
                params="text: str", ret="str", desc=desc, body=body, core=core, edge=edge)


def t_rotate(rng):
    k = rng.randint(1, 9)
    left = rng.random() < 0.5
    ex = [1, 2, 3, 4, 5]
    kk = k % 5
    ex_out = ex[kk:] + ex[:kk] if left else ex[len(ex) - kk:] + ex[:len(ex) - kk]
    desc = (f"Return a new list with the elements of `items` rotated {k} positions to the "
            f"{'left' if left else 'right'} (so `{ex}` becomes `{ex_out}`). Rotating by a multiple "
            f"of the length gives the same order; an empty list gives `[]`. Do not modify `items`.")
    if left:
        body = (f"    if not items:\n        return []\n    k = {k} % len(items)\n"
                "    return list(items[k:]) + list(items[:k])\n")
    else:
        body = (f"    if not items:\n        return []\n    k = {k} % len(items)\n"
                "    return list(items[len(items) - k:]) + list(items[:len(items) - k])\n")
    core = [[ints(rng, rng.randint(1, 15), 0, 50)] for _ in range(20)]
    edge = [[[]], [[1]], [list(range(k))], [list(range(k + 1))], [list(range(2 * k))],
            [["a", "b"]], [[None, 0, ""]]]
    return FunctionTemplate(fname=rng.choice(["rotate", "rotate_list", "shift_items"]),
                params="items: list", ret="list", desc=desc, body=body, core=core, edge=edge)


def t_pair_count(rng):
    diff = rng.random() < 0.5
    t = rng.randint(0, 6) if diff else rng.randint(-10, 30)
    if diff:
        desc = (f"Return the number of index pairs `(i, j)` with `i < j` such that "
                f"`abs(values[i] - values[j]) == {t}`.")
        cond = f"abs(values[i] - values[j]) == {t}"
    else:
        desc = (f"Return the number of index pairs `(i, j)` with `i < j` such that "
                f"`values[i] + values[j] == {t}`.")
        cond = f"values[i] + values[j] == {t}"
    desc += " Equal values at different indices form distinct pairs; fewer than 2 values give 0."
    body = ("    n = 0\n"
            "    for i in range(len(values)):\n"
            "        for j in range(i + 1, len(values)):\n"
            f"            if {cond}:\n"
            "                n += 1\n"
            "    return n\n")
    core = [[ints(rng, rng.randint(2, 25), -10, 25)] for _ in range(25)]
    half = t // 2
    edge = [[[]], [[t]], [[half, t - half]], [[half] * 5], [[0] * 4], [[t, 0, t, 0]],
            [[-t, t, 2 * t, 0]]]
    return FunctionTemplate(fname=rng.choice(["count_pairs", "pair_count", "matching_pairs"]),
                params="values: list[int]", ret="int", desc=desc, body=body, core=core,
                edge=edge)


def t_window_sum(rng):
    w = rng.randint(2, 5)
    best = rng.choice(["max", "min"])
    desc = (f"Return the {'largest' if best == 'max' else 'smallest'} sum of {w} consecutive "
            f"elements of `values`. If `values` has fewer than {w} elements, return `None`.")
    body = (f"    if len(values) < {w}:\n        return None\n"
            f"    return {best}(sum(values[i:i + {w}]) for i in range(len(values) - {w} + 1))\n")
    core = [[ints(rng, rng.randint(w, 20), -30, 30)] for _ in range(25)]
    edge = [[[]], [list(range(w - 1))], [list(range(w))], [[-5] * (w + 2)],
            [[10 ** 15] * w + [-1]], [[0] * w]]
    return FunctionTemplate(fname=rng.choice(["window_sum", "best_window", "extreme_window_sum"]),
                params="values: list[int]", ret="int | None", desc=desc, body=body, core=core,
                edge=edge)


def t_to_base(rng):
    b = rng.choice([2, 3, 5, 7, 8, 9, 12, 16, 20, 36])
    upper = rng.random() < 0.5
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:b]
    if upper:
        digits = digits.upper()
    desc = (f"Return `n` written in base {b} using the digit characters `{digits}` (no prefix, "
            f"no leading zeros). 0 gives `\"0\"`; a negative number gets a leading `-` "
            f"(e.g. -{b} gives `\"-10\"`).")
    body = (f"    DIG = {digits!r}\n"
            "    if n == 0:\n        return '0'\n"
            "    sign = '-' if n < 0 else ''\n"
            "    n = abs(n)\n"
            "    out = []\n"
            "    while n:\n"
            f"        out.append(DIG[n % {b}])\n"
            f"        n //= {b}\n"
            "    return sign + ''.join(reversed(out))\n")
    core = [[rng.randint(1, 10 ** rng.randint(1, 12))] for _ in range(20)]
    core += [[-rng.randint(1, 10 ** 6)] for _ in range(4)]
    edge = [[0], [1], [-1], [b - 1], [b], [b ** 7], [b ** 7 - 1], [10 ** 40], [-(b ** 2)]]
    return FunctionTemplate(fname=rng.choice(["to_base", "int_to_base", "format_base"]),
                params="n: int", ret="str", desc=desc, body=body, core=core, edge=edge)


def t_mask(rng):
    k = rng.randint(2, 6)
    j = rng.choice([0, 0, 1, 2])
    ch = rng.choice(["*", "#", "X", "x", "•"])
    sep = rng.random() < 0.4
    desc = (f"Return `text` with every character replaced by `{ch}`, except "
            + (f"the first {j} and " if j else "")
            + f"the last {k} characters"
            + (", and except spaces and hyphens (`-`), which are always kept as they are" if sep
               else "")
            + f". If `text` has at most {j + k} characters it is returned unchanged.")
    keep = f"i < {j} or i >= n - {k}" + (" or c in ' -'" if sep else "")
    body = ("    n = len(text)\n"
            f"    if n <= {j + k}:\n        return text\n"
            f"    return ''.join(c if {keep} else {ch!r} for i, c in enumerate(text))\n")
    alpha = string.digits * 3 + string.ascii_letters + " -"
    core = [[rand_str(rng, alpha, 1, 24)] for _ in range(22)]
    edge = [[""], ["a" * (j + k)], ["b" * (j + k + 1)], ["1234-5678 9012-3456"], ["- -- -"],
            ["ñandú café 42"]]
    return FunctionTemplate(fname=rng.choice(["mask", "mask_text", "redact"]),
                params="text: str", ret="str", desc=desc, body=body, core=core, edge=edge)


def t_dedupe(rng):
    last = rng.random() < 0.5
    if last:
        desc = ("Return a new list with the duplicates of `items` removed, keeping only the LAST "
                "occurrence of each value, in the order those kept occurrences appear in `items` "
                "(e.g. `[1, 2, 1, 3, 2]` gives `[1, 3, 2]`).")
        body = ("    seen = set()\n    out = []\n"
                "    for x in reversed(items):\n"
                "        if x not in seen:\n            seen.add(x)\n            out.append(x)\n"
                "    out.reverse()\n    return out\n")
    else:
        desc = ("Return a new list with the duplicates of `items` removed, keeping only the FIRST "
                "occurrence of each value, in their original order "
                "(e.g. `[1, 2, 1, 3, 2]` gives `[1, 2, 3]`).")
        body = ("    seen = set()\n    out = []\n"
                "    for x in items:\n"
                "        if x not in seen:\n            seen.add(x)\n            out.append(x)\n"
                "    return out\n")
    desc += " Items are ints or strings; `1` and `\"1\"` are different values."
    core = [[ints(rng, rng.randint(1, 20), 0, 8)] for _ in range(15)]
    core += [[[rng.choice(["a", "b", "A", "c", 1, 2, "1"]) for _ in range(rng.randint(1, 12))]]
             for _ in range(8)]
    edge = [[[]], [[5]], [[5] * 5], [[1, "1", 1, "1"]], [list(range(10))], [["", "", " "]]]
    return FunctionTemplate(fname=rng.choice(["dedupe", "unique_in_order", "remove_duplicates"]),
                params="items: list", ret="list", desc=desc, body=body, core=core, edge=edge)


def t_longest_run(rng):
    kind = rng.choice(["equal", "increasing", "nondecreasing", "decreasing"])
    what = {"equal": "equal elements",
            "increasing": "strictly increasing elements (each greater than the one before)",
            "nondecreasing": "non-decreasing elements (each greater than or equal to the one "
                             "before)",
            "decreasing": "strictly decreasing elements (each smaller than the one before)"}[kind]
    op = {"equal": "==", "increasing": ">", "nondecreasing": ">=", "decreasing": "<"}[kind]
    desc = (f"Return the length of the longest run of consecutive {what} in `values`. A single "
            f"element is a run of length 1; an empty list gives 0.")
    body = ("    best = cur = 0\n"
            "    for i, v in enumerate(values):\n"
            f"        cur = cur + 1 if i and v {op} values[i - 1] else 1\n"
            "        best = max(best, cur)\n"
            "    return best\n")
    core = [[ints(rng, rng.randint(1, 25), 0, 6)] for _ in range(22)]
    edge = [[[]], [[4]], [[3, 3, 3]], [[1, 2, 3, 4]], [[4, 3, 2, 1]], [[1, 1, 2, 2, 3]],
            [[-1, -1, -2, 5, 5, 5, 5]]]
    return FunctionTemplate(fname=rng.choice(["longest_run", "max_run_length", "longest_streak"]),
                params="values: list[int]", ret="int", desc=desc, body=body, core=core,
                edge=edge)


def t_recurrence(rng):
    a, b = rng.randint(-3, 5), rng.randint(-3, 5)
    p, q = rng.randint(1, 3), rng.randint(1, 3)
    mod = rng.choice([None, None, rng.randint(1000, 100000)])
    rec = f"f(n) = {'' if p == 1 else str(p) + ' * '}f(n - 1) + {'' if q == 1 else str(q) + ' * '}f(n - 2)"
    desc = (f"Return f(n) for n >= 0, where f(0) = {a}, f(1) = {b} and {rec} for n >= 2"
            + (f", with the result taken modulo {mod} (a value in 0..{mod - 1}, as Python's "
               f"`%` gives; apply it to f(0) and f(1) too)" if mod else
               " (exact integer arithmetic, the numbers get big)")
            + ". n can be up to a few thousand, so do not use plain recursion.")
    m = f" % {mod}" if mod else ""
    body = (f"    x, y = {a}{m}, {b}{m}\n"
            "    for _ in range(n):\n"
            f"        x, y = y, ({q} * x + {p} * y){m}\n"
            "    return x\n")
    core = [[rng.randint(2, 60)] for _ in range(20)] + [[rng.randint(100, 3000)] for _ in range(3)]
    edge = [[0], [1], [2], [3], [3000]]
    return FunctionTemplate(fname=rng.choice(["recurrence", "seq_term", "nth_term"]),
                params="n: int", ret="int", desc=desc, body=body, core=core, edge=edge)


def t_interleave(rng):
    c = rng.randint(1, 3)
    b_first = rng.random() < 0.3
    first, second = ("b", "a") if b_first else ("a", "b")
    ex_a, ex_b = "abcdef", "XY"
    x, y = (ex_b, ex_a) if b_first else (ex_a, ex_b)
    out, i = [], 0
    while i < max(len(x), len(y)):
        out.append(x[i:i + c] + y[i:i + c])
        i += c
    ex_out = "".join(out)
    desc = (f"Interleave the strings `a` and `b`: take {c} character{'s' if c > 1 else ''} from "
            f"`{first}`, then {c} from `{second}`, and so on, in order; when one string runs out, "
            f"append the rest of the other. For example `a=\"{ex_a}\"`, "
            f"`b=\"{ex_b}\"` gives `\"{ex_out}\"`.")
    body = (f"    x, y = ({first}, {second})\n"
            "    out = []\n"
            "    i = 0\n"
            "    while i < max(len(x), len(y)):\n"
            f"        out.append(x[i:i + {c}] + y[i:i + {c}])\n"
            f"        i += {c}\n"
            "    return ''.join(out)\n")
    alpha = string.ascii_lowercase + "XYZ01 "
    core = [[rand_str(rng, alpha, 0, 12), rand_str(rng, alpha, 0, 12)] for _ in range(22)]
    edge = [["", ""], ["abc", ""], ["", "xyz"], ["a", "b"], ["é✓", "ñ"], ["a" * 7, "b" * 2]]
    return FunctionTemplate(fname=rng.choice(["interleave", "weave", "merge_alternating"]),
                params="a: str, b: str", ret="str", desc=desc, body=body, core=core, edge=edge)


def t_count_divisible(rng):
    d = rng.randint(2, 9)
    e = rng.choice([x for x in range(2, 16) if x != d and d % x != 0])
    desc = (f"Return how many integers x with `lo <= x <= hi` are divisible by {d} but NOT "
            f"divisible by {e}. Bounds can be negative or huge (up to 10**15 apart), so compute "
            f"the count without looping over the range. If `lo > hi` return 0.")
    body = ("    from math import gcd\n"
            "    if lo > hi:\n        return 0\n"
            f"    def upto(k, m):\n        return k // m\n"
            f"    l = {d} * {e} // gcd({d}, {e})\n"
            f"    a = upto(hi, {d}) - upto(lo - 1, {d})\n"
            "    b = upto(hi, l) - upto(lo - 1, l)\n"
            "    return a - b\n")
    core = []
    for _ in range(20):
        lo = rng.randint(-200, 200)
        core.append([lo, lo + rng.randint(0, 300)])
    edge = [[0, 0], [d, d], [e * d, e * d], [5, 4], [-d, -d], [-10 ** 15, 10 ** 15],
            [1, 10 ** 15], [-(d * e), d * e]]
    return FunctionTemplate(fname=rng.choice(["count_divisible", "count_multiples", "divisible_count"]),
                params="lo: int, hi: int", ret="int", desc=desc, body=body, core=core, edge=edge)


def t_balanced(rng):
    pairs = rng.sample(["()", "[]", "{}", "<>"], rng.randint(2, 3))
    shown = ", ".join(f"`{p}`" for p in pairs)
    desc = (f"Return `True` if the brackets {shown} in `text` are balanced and properly nested, "
            f"otherwise `False`. Every other character (including other kinds of brackets) is "
            f"ignored. An empty string is balanced. The result must be a `bool`.")
    opens = "".join(p[0] for p in pairs)
    closes = "".join(p[1] for p in pairs)
    body = (f"    OPEN, CLOSE = {opens!r}, {closes!r}\n"
            "    stack = []\n"
            "    for ch in text:\n"
            "        if ch in OPEN:\n            stack.append(ch)\n"
            "        elif ch in CLOSE:\n"
            "            if not stack or OPEN.index(stack.pop()) != CLOSE.index(ch):\n"
            "                return False\n"
            "    return not stack\n")
    all_br = "()[]{}<>"

    def rand_balanced(depth=0):
        out = ""
        for _ in range(rng.randint(0, 3)):
            p = rng.choice(pairs)
            inner = rand_balanced(depth + 1) if depth < 3 else ""
            out += p[0] + rng.choice(["", "x", " 1 "]) + inner + p[1]
        return out

    core = []
    for i in range(24):
        s = rand_balanced()
        if i % 2:
            pos = rng.randint(0, len(s))
            s = s[:pos] + rng.choice(all_br) + s[pos:]
        core.append([s])
    p0, p1 = pairs[0], pairs[1]
    other = [p for p in ["()", "[]", "{}", "<>"] if p not in pairs][0]
    edge = [[""], ["plain text"], [p0[1] + p0[0]], [p0[0] + p1[0] + p0[1] + p1[1]],
            [p0[0] + p1[0] + p1[1] + p0[1]], [p0[0] * 3], [other[0] + p0[0] + p0[1]],
            [p0[0] + other[1] + p0[1]], [p0 * 500]]
    return FunctionTemplate(fname=rng.choice(["balanced", "is_balanced", "brackets_ok"]),
                params="text: str", ret="bool", desc=desc, body=body, core=core, edge=edge)


def t_top_words(rng):
    k = rng.randint(2, 4)
    m = rng.randint(1, 4)
    desc = (f"Return the {k} most frequent words of `text` as a list, most frequent first; words "
            f"with equal counts are ordered alphabetically. A *word* is a maximal run of ASCII "
            f"letters `A-Z`/`a-z`, compared case-insensitively and returned in lowercase; words "
            f"shorter than {m} letter{'s' if m > 1 else ''} are ignored. If there are fewer than "
            f"{k} different words, return all of them.")
    body = ("    counts = {}\n"
            "    for w in re.findall(r'[A-Za-z]+', text):\n"
            f"        if len(w) >= {m}:\n"
            "            w = w.lower()\n"
            "            counts[w] = counts.get(w, 0) + 1\n"
            "    order = sorted(counts, key=lambda w: (-counts[w], w))\n"
            f"    return order[:{k}]\n")
    core = [[sentence(rng, rng.randint(4, 30))] for _ in range(22)]
    edge = [[""], ["a b c"], ["Apple apple APPLE pear"], ["zz yy xx ww vv"], ["it's it's it"],
            ["café cafe CAFE"]]
    return FunctionTemplate(fname=rng.choice(["top_words", "most_common_words", "frequent_words"]),
                params="text: str", ret="list[str]", desc=desc, body=body, core=core, edge=edge,
                imports="import re\n")


TEMPLATES = [t_kth_distinct, t_caesar, t_digit_sum, t_chunk, t_count_words, t_rle, t_rotate,
             t_pair_count, t_window_sum, t_to_base, t_mask, t_dedupe, t_longest_run,
             t_recurrence, t_interleave, t_count_divisible, t_balanced, t_top_words]

HARNESS = CANON_SRC + r'''
import copy
import importlib
import json
import sys

workdir, mod_name, fname, cases_path, out_path = sys.argv[1:6]
sys.path.insert(0, workdir)
cases = json.load(open(cases_path, encoding="utf-8"))
try:
    func = getattr(importlib.import_module(mod_name), fname)
    results = []
    for args in cases:
        try:
            results.append(canon(func(*copy.deepcopy(args))))
        except BaseException as e:  # noqa: BLE001
            results.append("<exception " + type(e).__name__ + ">")
except BaseException as e:  # noqa: BLE001
    results = "<cannot load the function: " + type(e).__name__ + ": " + str(e)[:300] + ">"
with open(out_path, "w", encoding="utf-8") as fh:
    json.dump(results, fh)
'''

TEST_BODY = r'''
import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKDIR = Path.cwd()


def run_cases(tmp_path, cases):
    (tmp_path / "harness.py").write_text(CONFIG["harness"], encoding="utf-8")
    (tmp_path / "cases.json").write_text(json.dumps([c[0] for c in cases]), encoding="utf-8")
    out = tmp_path / "results.json"
    r = subprocess.run([sys.executable, "-B", str(tmp_path / "harness.py"), str(WORKDIR),
                        CONFIG["module"], CONFIG["function"], str(tmp_path / "cases.json"),
                        str(out)], cwd=tmp_path, capture_output=True, timeout=20)
    assert out.is_file(), "harness crashed: " + r.stderr.decode("utf-8", "replace")[-2000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert type(results) is list, results
    assert len(results) == len(cases)
    bad = [(args, got, want) for (args, want), got in zip(cases, results) if got != want]
    shown = "; ".join(f"{CONFIG['function']}(*{a!r}) -> {g} (expected {w})" for a, g, w in bad[:3])
    assert not bad, f"{len(bad)}/{len(cases)} wrong: {shown}"


@pytest.mark.core
def test_unseen_inputs(tmp_path):
    run_cases(tmp_path, CONFIG["core"])
'''

EDGE_TEST = r'''

@pytest.mark.boundary
def test_edge_cases(tmp_path):
    run_cases(tmp_path, CONFIG["edge"])
'''

class PyFunction(Family):
    name = "py-function"
    category = "python"
    description = ("Implement a Python function from a seeded, parameterized specification; hidden "
                   "tests check many unseen and edge-case inputs with exact types.")
    difficulty = "easy"
    levels: ClassVar[dict[int, str]] = {
        1: "ordinary inputs only: no hidden edge-case test, and the instruction says so",
        2: "the family as it always was: ordinary and edge-case inputs, a stub to fill in",
        3: "no stub, and an earlier version of the function with other parameters in MODULE_v1.py "
           "that must stay unchanged (a distractor); ordinary and edge-case inputs",
    }

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        tmpl = rng.choice(TEMPLATES)
        t = tmpl(rng)
        module = rng.choice(["solution", "funcs", "kata", "mylib", "helpers", "impl"])
        path = f"{module}.py"
        fname = t.fname
        imports = t.imports
        src = f"def {fname}({t.params}) -> {t.ret}:\n" + t.body
        ns: dict = {}
        exec(imports + src, ns)
        func = ns[fname]

        def expect(cases):
            out = []
            seen = set()
            for args in cases:
                key = repr(args)
                if key in seen:
                    continue
                seen.add(key)
                out.append([args, canon(func(*[_copy(a) for a in args]))])
            return out

        # the first three random cases are shown as examples; the hidden ones are the rest
        examples = t.core[:3]
        shown = {repr(a) for a in examples}
        core = [c for c in expect(t.core[3:]) if repr(c[0]) not in shown]
        edge = expect(t.edge)
        ex_lines = "\n".join(f">>> {fname}({', '.join(repr(a) for a in args)})\n"
                             f"{func(*[_copy(a) for a in args])!r}" for args in examples)
        stub = (f'{imports}\n\ndef {fname}({t.params}) -> {t.ret}:\n'
                f'    """{_doc_line(t.desc)}"""\n'
                f'    raise NotImplementedError\n')
        where = "(a stub is there)" if level < 3 else "(create the file)"
        checked = ("many other ordinary inputs" if level == 1 else
                   "many other inputs, including edge cases")
        instruction = f"""\
Implement the function `{fname}` in `{path}` {where}:

    def {fname}({t.params}) -> {t.ret}

{t.desc}

Examples:

{md_code(ex_lines)}

Return exactly the type described (e.g. a real `int`, `str`, `list` or `bool`, not a subclass
or a look-alike). Use only the Python 3.11 standard library. Your function will be checked on
{checked}.
"""
        solution = "#!/bin/bash\nset -e\n" + heredoc(path, (imports + "\n\n" if imports else "") + src)
        config = {"module": module, "function": fname, "core": core, "edge": edge,
                  "harness": HARNESS}
        workspace = {path: stub.lstrip("\n")}
        body = TEST_BODY + EDGE_TEST
        if level == 1:
            config["edge"], body = [], TEST_BODY
        elif level == 3:
            keep, text = self._earlier_version(tmpl, t, module, seed)
            del workspace[path]
            workspace[keep] = text
            config["left_alone"] = left_alone({keep: text})
            body += LEFT_ALONE_TEST
            instruction += (f"\n`{keep}` holds an earlier version of `{fname}` with a different "
                            f"specification; other code still imports it. Leave it unchanged: the new "
                            f"function goes in `{path}` and follows the specification above.\n")
        return {
            "instruction": instruction,
            "workspace": files(workspace),
            "tests": files({"test_function.py": hidden_test_source(config, body)}),
            "solution": solution,
            "tags": ["python", "function", tmpl.__name__[2:]],
        }

    def _earlier_version(self, tmpl, t: FunctionTemplate, module: str, seed: int) -> tuple[str, str]:
        """``MODULE_v1.py``: the same kind of function drawn again with other parameters (redrawn
        until its reference body differs), under the same name: a plausible thing to copy."""
        extra = random.Random(f"{self.name}@3:{seed}")
        for _ in range(50):
            old = tmpl(extra)
            if old.body != t.body:
                break
        text = (f'"""Version 1 of {t.fname}, kept for the callers that still import it."""\n'
                f"{old.imports}\n\n"
                f"def {t.fname}({old.params}) -> {old.ret}:\n"
                f'    """{_doc_line(old.desc)}"""\n' + old.body)
        return f"{module}_v1.py", text


def _copy(x):
    return [_copy(e) for e in x] if type(x) is list else x


def _doc_line(desc: str) -> str:
    return desc.replace("\\", "\\\\").replace('"""', "'''").replace("`", "")


FAMILY = PyFunction()
