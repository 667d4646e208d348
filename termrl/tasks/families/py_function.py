"""py-function: implement one Python function from a seeded, parameterized specification.

Per seed: the template, its parameters (k, shift, base, size, threshold, direction,
tail/format variants...), the function and module names, and the examples. Train seeds (and
``heldout-v1`` seeds, generated as they always were) draw from 18 *train templates*: k-th
distinct value, Caesar shift, digit sums in base b, chunking, word counting, run-length
encoding, rotation, pair counting, window sums, base conversion, masking, de-duplication,
runs, linear recurrences, interleaving, divisibility counts, bracket balancing, top words.
``heldout`` seeds draw only from 19 *held-out templates* that no train seed uses, each a
different specification: longest common prefix/suffix, merging intervals, local peaks or
valleys, parsing ``key=value`` lists, integers to Roman numerals and back (with a canonical
check), snake_case to camelCase and camelCase to snake/kebab case, flattening nested lists to
a depth, histogram buckets, repeated neighbour differences/sums, running records, spiral order
of a matrix, anagram classes, Luhn and ISBN-10 checks, Collatz-like step counts with a cap,
words with no repeated letter, gcd/lcm of a list, and summarizing ints as ranges.

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
from .base import Family, files, template_pool


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


# --------------------------------------------------------------------------- held-out templates
# Drawn only by ``heldout`` seeds (2,000,000+): specifications no train seed ever asks for.


def t_common_affix(rng):
    suffix = rng.random() < 0.4
    fold = rng.random() < 0.5
    empty = rng.choice(["", None])
    end = "suffix" if suffix else "prefix"
    desc = (f"Return the longest common {end} of all the strings in `words` (a list of str)"
            + (", comparing characters case-insensitively (`a` matches `A`: compare "
               "`ch.lower()`); the result is the matching part of the FIRST string, with its "
               "own case" if fold else "; characters must match exactly (case matters)")
            + f". A list of one string gives that string; an empty list gives `{empty!r}`.")
    pos, posf = ("len(w) - 1 - n", "len(first) - 1 - n") if suffix else ("n", "n")
    same = f"w[{pos}].lower() == first[{posf}].lower()" if fold else f"w[{pos}] == first[{posf}]"
    body = (f"    if not words:\n        return {empty!r}\n"
            "    first = words[0]\n"
            "    n = 0\n"
            f"    while n < len(first) and all(n < len(w) and {same} for w in words):\n"
            "        n += 1\n"
            + ("    return first[len(first) - n:]\n" if suffix else "    return first[:n]\n"))

    def flip(s):
        return "".join(c.swapcase() if rng.random() < (0.3 if fold else 0.05) else c for c in s)

    core = []
    for _ in range(22):
        shared = rand_str(rng, "abcdeAB", 0 if rng.random() < 0.15 else 1, 6)
        ws = []
        for _ in range(rng.randint(2, 6)):
            rest = rand_str(rng, "abcxyz", 0, 5)
            ws.append(rest + flip(shared) if suffix else flip(shared) + rest)
        core.append([ws])
    edge = [[[]], [[""]], [["solo"]], [["abc", ""]], [["same", "same", "same"]], [["Ab", "aB"]],
            [["prefix", "pre", "prefixes"]], [["post", "most", "ghost"]], [["x" * 50, "x" * 49]],
            [["é", "É"]], [["", "abc"]]]
    names = (["common_suffix", "longest_common_suffix", "shared_ending"] if suffix else
             ["common_prefix", "longest_common_prefix", "shared_start"])
    return FunctionTemplate(fname=rng.choice(names), params="words: list[str]",
                            ret="str" if empty == "" else "str | None", desc=desc, body=body,
                            core=core, edge=edge)


def t_merge_intervals(rng):
    rule = rng.choice(["<", "<=", "<= 1 +"])
    out = rng.choice(["list", "count", "total"])
    when = {"<": "its start is strictly less than the group's end (intervals that only touch, "
                 "like `[1, 3]` and `[3, 5]`, stay apart)",
            "<=": "its start is less than or equal to the group's end (touching intervals like "
                  "`[1, 3]` and `[3, 5]` merge)",
            "<= 1 +": "its start is at most the group's end plus 1 (so `[1, 3]` and `[4, 6]` "
                      "merge, while `[1, 3]` and `[5, 6]` stay apart)"}[rule]
    give = {"list": "the merged intervals as a list of `[start, end]` lists, in that order",
            "count": "the number of merged intervals",
            "total": "the largest `end - start` among the merged intervals"}[out]
    desc = ("`intervals` is a list of `[start, end]` pairs of ints with `start <= end`, in any "
            "order. Sort them by `(start, end)` and merge them from left to right: an interval "
            f"joins the current group when {when}, and the group's end becomes the larger of "
            f"the two ends; otherwise it starts a new group. Return {give}. No intervals give "
            + ("`[]`." if out == "list" else "`0`.") + " Do not modify `intervals`.")
    cond = {"<": "s < out[-1][1]", "<=": "s <= out[-1][1]", "<= 1 +": "s <= out[-1][1] + 1"}[rule]
    ret = {"list": "    return out\n", "count": "    return len(out)\n",
           "total": "    return max((e - s for s, e in out), default=0)\n"}[out]
    body = ("    out = []\n"
            "    for s, e in sorted(intervals):\n"
            f"        if out and {cond}:\n"
            "            out[-1][1] = max(out[-1][1], e)\n"
            "        else:\n"
            "            out.append([s, e])\n" + ret)
    core = []
    for _ in range(24):
        iv = []
        for _ in range(rng.randint(1, 8)):
            a = rng.randint(-10, 30)
            iv.append([a, a + rng.randint(0, 6)])
        core.append([iv])
    edge = [[[]], [[[5, 5]]], [[[1, 3], [3, 5]]], [[[1, 3], [4, 6]]], [[[1, 3], [5, 6]]],
            [[[1, 10], [2, 3], [4, 5]]], [[[5, 6], [1, 2], [3, 4]]], [[[-5, -1], [-1, 0]]],
            [[[0, 10 ** 12], [10 ** 12, 10 ** 12 + 1]]], [[[1, 2], [1, 2], [1, 2]]],
            [[[2, 2], [2, 2], [3, 3]]]]
    names = {"list": ["merge_intervals", "merge_ranges", "union_intervals"],
             "count": ["count_merged", "merged_count", "interval_groups"],
             "total": ["longest_merged", "widest_merged", "longest_span"]}[out]
    return FunctionTemplate(fname=rng.choice(names), params="intervals: list[list[int]]",
                            ret="list[list[int]]" if out == "list" else "int", desc=desc,
                            body=body, core=core, edge=edge)


def t_peaks(rng):
    valley = rng.random() < 0.4
    strict = rng.random() < 0.5
    ends = rng.random() < 0.5
    kind = "valley" if valley else "peak"
    rel = ("smaller" if valley else "greater") if strict else (
        "smaller than or equal to" if valley else "greater than or equal to")
    desc = (f"Return the indices (ascending) of the local {kind}s of `values` (a list of ints): "
            f"index `i` is a {kind} when `values[i]` is {rel}{' than' if strict else ''} each of "
            f"its neighbours `values[i - 1]` and `values[i + 1]`. "
            + ("The first and last positions have one neighbour only and are judged by it; "
               if ends else "The first and last positions are never "
               f"{kind}s; ")
            + f"a list with fewer than 2 elements has no {kind}s.")
    op = ("<" if valley else ">") + ("" if strict else "=")
    body = ("    n = len(values)\n"
            "    out = []\n"
            "    for i in range(n):\n"
            "        nb = [values[j] for j in (i - 1, i + 1) if 0 <= j < n]\n"
            f"        if len(nb) >= {1 if ends else 2} and all(values[i] {op} x for x in nb):\n"
            "            out.append(i)\n"
            "    return out\n")
    core = [[ints(rng, rng.randint(3, 16), 0, rng.choice([3, 9]))] for _ in range(24)]
    edge = [[[]], [[7]], [[1, 2]], [[2, 1]], [[3, 3]], [[4, 4, 4, 4]], [[1, 3, 3, 1]],
            [[5, 1, 5, 1, 5]], [[1, 2, 3, 4, 5]], [[-10 ** 15, 10 ** 15, -10 ** 15]]]
    names = ([f"{kind}_indices", f"local_{kind}s", f"find_{kind}s"])
    return FunctionTemplate(fname=rng.choice(names), params="values: list[int]",
                            ret="list[int]", desc=desc, body=body, core=core, edge=edge)


def t_parse_pairs(rng):
    ps = rng.choice([";", ",", "&", "|"])
    kv = rng.choice(["=", ":"])
    dup = rng.choice(["first", "last", "all"])
    bare = rng.choice(["skip", "empty"])
    desc = (f"Parse `text`, a list of `key{kv}value` entries separated by `{ps}`, into a dict. "
            f"Strip surrounding whitespace from each entry, key and value; skip entries that "
            f"are empty after stripping. An entry is split at its FIRST `{kv}` (the value may "
            f"contain more); an entry with no `{kv}` "
            + ("is skipped. " if bare == "skip" else "is a key with the value `\"\"`. ")
            + "Keys (possibly empty strings) appear in the order of their first appearance. "
            + {"first": "When a key repeats, the FIRST value wins.",
               "last": "When a key repeats, the LAST value wins (the key keeps its first "
                       "position).",
               "all": "Every value is a list of all of that key's values, in order (a key seen "
                      "once maps to a one-element list)."}[dup]
            + " Values stay strings.")
    missing = ("            continue\n" if bare == "skip" else
               "            k, v = piece, ''\n")
    store = {"first": "        if k not in out:\n            out[k] = v\n",
             "last": "        out[k] = v\n",
             "all": "        out.setdefault(k, []).append(v)\n"}[dup]
    body = ("    out = {}\n"
            f"    for piece in text.split({ps!r}):\n"
            "        piece = piece.strip()\n"
            "        if not piece:\n"
            "            continue\n"
            f"        if {kv!r} not in piece:\n" + missing
            + "        else:\n"
            f"            k, v = piece.split({kv!r}, 1)\n"
            "        k, v = k.strip(), v.strip()\n" + store + "    return out\n")
    keys = ["a", "b", "host", "port", "x", "user", "mode"]
    other = [s for s in ";,&|=:" if s not in (ps, kv)]

    def entry():
        roll = rng.random()
        if roll < 0.1:
            return rng.choice(["", " "])
        if roll < 0.2:
            return rng.choice(keys)
        val = rand_str(rng, "abc019 " + "".join(other), 0, 6)
        if rng.random() < 0.15:
            val += kv + rand_str(rng, "xyz", 1, 3)
        pad = rng.choice(["", " ", "  "])
        return pad + rng.choice(keys) + rng.choice(["", " "]) + kv + rng.choice(["", " "]) + val + pad

    core = [[ps.join(entry() for _ in range(rng.randint(1, 7)))] for _ in range(24)]
    edge = [[""], ["   "], [ps * 3], ["k"], ["k" + kv], [kv + "v"], [f"a{kv}1{ps}a{kv}2{ps}a{kv}3"],
            [f" a {kv} 1 {ps} b {kv} 2 "], [f"url{kv}x{kv}y{kv}z"], [f"b{kv}1{ps}a{kv}2{ps}b{kv}3{ps}"]]
    return FunctionTemplate(fname=rng.choice(["parse_pairs", "parse_kv", "parse_settings"]),
                            params="text: str",
                            ret="dict[str, list[str]]" if dup == "all" else "dict[str, str]",
                            desc=desc, body=body, core=core, edge=edge)


ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
         (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def t_to_roman(rng):
    subtractive = rng.random() < 0.6
    lower = rng.random() < 0.3
    zero = rng.choice(["", "N", None])
    table = ROMAN if subtractive else [(v, s) for v, s in ROMAN if len(s) == 1]
    if lower:
        table = [(v, s.lower()) for v, s in table]
    ex = _greedy(1994, table)
    desc = (f"Return `n` (0 <= n <= 3999) as a Roman numeral in {'lower' if lower else 'upper'}"
            f"case letters, written greedily from the largest value down with the symbols "
            + ", ".join(f"{s}={v}" for v, s in table)
            + (" (the subtractive pairs included, so 4 is `iv`/`IV`)" if subtractive else
               " only (no subtractive pairs: 4 is written with four ones, 9 as five plus four ones)")
            + f"; for example 1994 gives `{ex!r}`. 0 gives `{zero!r}`.")
    body = (f"    TABLE = {table!r}\n"
            f"    if n == 0:\n        return {zero!r}\n"
            "    out = []\n"
            "    for value, sym in TABLE:\n"
            "        while n >= value:\n"
            "            out.append(sym)\n"
            "            n -= value\n"
            "    return ''.join(out)\n")
    core = [[rng.randint(1, 3999)] for _ in range(16)] + [[rng.randint(1, 50)] for _ in range(8)]
    edge = [[0], [1], [4], [9], [14], [40], [90], [400], [944], [999], [3999], [3888]]
    return FunctionTemplate(fname=rng.choice(["to_roman", "int_to_roman", "roman_numeral"]),
                            params="n: int", ret="str" if zero is not None else "str | None",
                            desc=desc, body=body, core=core, edge=edge)


def _greedy(n, table):
    out = ""
    for value, sym in table:
        while n >= value:
            out, n = out + sym, n - value
    return out


def t_from_roman(rng):
    check = rng.random() < 0.5
    fold = rng.random() < 0.5
    desc = ("Return the value of the Roman numeral `text`, whose symbols are I=1, V=5, X=10, "
            "L=50, C=100, D=500 and M=1000"
            + (", in upper or lower case" if fold else ", upper case only (a lower-case letter "
               "is not a symbol)")
            + ": add the value of each symbol, except that a symbol followed by a symbol of "
            "larger value is subtracted (so `XIV` is 14 and `IIV` is 3). ")
    if check:
        desc += ("Return `None` unless `text` is a *canonical* numeral for a value 1..3999, i.e. "
                 "exactly what the standard greedy writing (with the subtractive pairs CM, CD, "
                 "XC, XL, IX, IV) produces for its value"
                 + (" (ignoring case)" if fold else "")
                 + ": so `IIII`, `IC`, `VV`, `\"\"` and anything with a character that is not a "
                   "symbol give `None`.")
    else:
        desc += ("Every character that is not a symbol is skipped (so `X V` is 15); the numeral "
                 "need not be canonical (`IIII` is 4, `IC` is 99), and no symbols give 0.")
    up = "text.upper()" if fold else "text"
    body = ("    VAL = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}\n"
            f"    s = {up}\n")
    if check:
        body += ("    if not s or any(ch not in VAL for ch in s):\n        return None\n")
    else:
        body += "    s = [ch for ch in s if ch in VAL]\n"
    body += ("    total = 0\n"
             "    for i, ch in enumerate(s):\n"
             "        if i + 1 < len(s) and VAL[s[i + 1]] > VAL[ch]:\n"
             "            total -= VAL[ch]\n"
             "        else:\n"
             "            total += VAL[ch]\n")
    if check:
        body += (f"    TABLE = {ROMAN!r}\n"
                 "    n, canon_form = total, ''\n"
                 "    for value, sym in TABLE:\n"
                 "        while n >= value:\n"
                 "            canon_form += sym\n"
                 "            n -= value\n"
                 "    return total if 1 <= total <= 3999 and canon_form == s else None\n")
    else:
        body += "    return total\n"

    def case(s):
        return "".join(c.lower() if fold and rng.random() < 0.3 else c for c in s)

    core = [[case(_greedy(rng.randint(1, 3999), ROMAN))] for _ in range(14)]
    core += [[case(rand_str(rng, "IVXLC", 1, 6))] for _ in range(10)]
    edge = [[""], ["I"], ["IV"], ["IIII"], ["IC"], ["MMMCMXCIX"], ["MMMM"], ["VV"], ["XLIX"],
            ["MCMXCIV"], ["iv"], ["mcmxciv"], ["mCmXcIv"], ["XIV "], ["X1V"], ["IIV"], ["ↀ"],
            ["CMM"], ["M-M"]]
    return FunctionTemplate(fname=rng.choice(["from_roman", "roman_to_int", "parse_roman"]),
                            params="text: str", ret="int | None" if check else "int",
                            desc=desc, body=body, core=core, edge=edge)


def t_snake_to_camel(rng):
    pascal = rng.random() < 0.4
    seps = rng.choice(["_", "_-", "_- "])
    keep = rng.random() < 0.5
    shown = ", ".join(f"`{c}`" if c != " " else "space" for c in seps)
    first = "upper" if pascal else "lower"
    ex = "http_Server_2go"
    parts = ex.split("_")
    tail = (lambda p: p[1:]) if keep else (lambda p: p[1:].lower())
    ex_out = "".join((p[:1].upper() if i or pascal else p[:1].lower()) + tail(p)
                     for i, p in enumerate(parts))
    desc = (f"Convert the identifier `name` to {'PascalCase' if pascal else 'camelCase'}: split "
            f"it into words at every separator character ({shown}; runs of separators and "
            f"separators at either end produce no empty words), then join the words with no "
            f"separator, where the first character of the first word is made {first} case and "
            f"the first character of every later word upper case"
            + ("; all other characters keep their case" if keep else
               "; all other characters are made lower case")
            + f". For example `\"{ex}\"` gives `\"{ex_out}\"`. A name with no words gives `\"\"`.")
    head0 = "p[:1].upper()" if pascal else "p[:1].lower()"
    rest = "p[1:]" if keep else "p[1:].lower()"
    cls = "".join("\\" + c if c == "-" else c for c in seps)
    body = (f"    words = [p for p in re.split(r'[{cls}]+', name) if p]\n"
            f"    return ''.join(({head0} if i == 0 else p[:1].upper()) + {rest}\n"
            "                   for i, p in enumerate(words))\n")
    parts_pool = ["user", "id", "HTTP", "server", "x", "2fa", "Max", "value", "io", "json", "A"]

    def ident():
        out = rng.choice(["", "", "_"])
        for i in range(rng.randint(1, 4)):
            out += (rng.choice(seps) * rng.choice([1, 1, 2]) if i else "") + rng.choice(parts_pool)
        return out + rng.choice(["", "", rng.choice(seps)])

    core = [[ident()] for _ in range(24)]
    edge = [[""], ["_"], ["___"], ["x"], ["X"], ["already_camelCase"], ["__init__"],
            ["a-b c_d"], ["ABC_DEF"], ["élan_vital"], ["snake_case_9_lives"]]
    return FunctionTemplate(fname=rng.choice(["to_camel", "snake_to_camel", "camelize"]),
                            params="name: str", ret="str", desc=desc, body=body, core=core,
                            edge=edge, imports="import re\n")


def t_camel_to_snake(rng):
    acronyms = rng.random() < 0.5
    style = rng.choice(["snake", "kebab", "screaming"])
    sep = "-" if style == "kebab" else "_"
    case = "upper" if style == "screaming" else "lower"
    ex = "parseHTTPResponse2Fast"
    words = _camel_words(ex, acronyms)
    ex_out = sep.join(w.upper() if case == "upper" else w.lower() for w in words)
    rule = ("A new word starts at an uppercase letter that follows a lowercase letter or a "
            "digit, and at an uppercase letter that follows another uppercase letter and is "
            "itself followed by a lowercase letter (so a run of capitals is one word, an "
            "acronym, except for its last capital when a lowercase letter comes next)"
            if acronyms else
            "A new word starts at every uppercase letter except the very first character")
    desc = (f"Split the identifier `name` (ASCII letters and digits only, in camelCase or "
            f"PascalCase) into words and return them joined by `{sep}`, all in {case} case. "
            f"{rule}; digits belong to the word they follow. For example `\"{ex}\"` gives "
            f"`\"{ex_out}\"`. An empty name gives `\"\"`.")
    starts = ("ch.isupper() and (prev.islower() or prev.isdigit() or "
              "(prev.isupper() and nxt.islower()))" if acronyms else "ch.isupper()")
    body = ("    words = []\n"
            "    for i, ch in enumerate(name):\n"
            "        prev = name[i - 1] if i else ''\n"
            "        nxt = name[i + 1] if i + 1 < len(name) else ''\n"
            f"        if i == 0 or {starts}:\n"
            "            words.append(ch)\n"
            "        else:\n"
            "            words[-1] += ch\n"
            f"    return {sep!r}.join(w.{case}() for w in words)\n")
    pool = ["parse", "HTTP", "Response", "id", "User", "ID", "x", "Json", "IO", "v2", "Max", "a"]

    def ident():
        w = [rng.choice(pool) for _ in range(rng.randint(1, 4))]
        s = "".join(w)
        return s[0].lower() + s[1:] if rng.random() < 0.5 else s

    core = [[ident()] for _ in range(24)]
    edge = [[""], ["a"], ["A"], ["ABC"], ["abc"], ["getURLForID"], ["x1Y2z3"], ["HTTPServer"],
            ["ioError"], ["already"], ["AbCdEf"]]
    return FunctionTemplate(fname=rng.choice(["to_snake", "camel_to_snake", "split_identifier"]
                                             if style != "kebab" else
                                             ["to_kebab", "camel_to_kebab", "split_identifier"]),
                            params="name: str", ret="str", desc=desc, body=body, core=core,
                            edge=edge)


def _camel_words(name, acronyms):
    words = []
    for i, ch in enumerate(name):
        prev = name[i - 1] if i else ""
        nxt = name[i + 1] if i + 1 < len(name) else ""
        acr = prev.islower() or prev.isdigit() or (prev.isupper() and nxt.islower())
        if i == 0 or (ch.isupper() and (acr or not acronyms)):
            words.append(ch)
        else:
            words[-1] += ch
    return words


def t_flatten(rng):
    depth = rng.choice([1, 2, 3, None])
    drop = rng.random() < 0.4
    how = (f"expand nested lists up to {depth} level{'s' if depth > 1 else ''} deep: a list "
           f"element of `items` is replaced by its elements"
           + (f", and so on for lists inside those, {depth} times in all; lists nested "
              f"deeper stay lists" if depth > 1 else "; lists inside it stay lists")
           if depth else "expand nested lists completely, at any depth")
    ex = [1, [2, [3, [4]]], [], "ab"]
    desc = (f"Return a new flat list from `items` (a list whose elements are ints, strings, "
            f"`None` or lists of the same): {how}. Strings are not split. The order of the "
            f"elements is kept"
            + ("; `None` elements that end up at the top level are left out" if drop else "")
            + ". Do not modify `items`.")
    cond = f"type(x) is list and d < {depth}" if depth else "type(x) is list"
    keep = "        elif x is not None:\n" if drop else "        else:\n"
    body = ("    def go(xs, d):\n"
            "        out = []\n"
            "        for x in xs:\n"
            f"            if {cond}:\n"
            "                out.extend(go(x, d + 1))\n"
            + keep.replace("        ", "            ", 1)
            + "                out.append(x)\n"
            "        return out\n"
            "    return go(items, 0)\n")

    def nested(level):
        out = []
        for _ in range(rng.randint(0 if level else 1, 4)):
            roll = rng.random()
            if roll < 0.35 and level < 4:
                out.append(nested(level + 1))
            elif roll < 0.45:
                out.append(None)
            elif roll < 0.6:
                out.append(rng.choice(["a", "bc", ""]))
            else:
                out.append(rng.randint(0, 9))
        return out

    core = [[ex]] + [[nested(0)] for _ in range(23)]
    edge = [[[]], [[[]]], [[[[[]]]]], [[None]], [[[None], None]], [["abc", ["de"]]],
            [[[[[[1]]]], 2]], [[1, 2, 3]], [[[1], [2], [3]]], [[[[1, [2, [3, [4, [5]]]]]]]]]
    return FunctionTemplate(fname=rng.choice(["flatten", "flatten_list", "unnest"]),
                            params="items: list", ret="list", desc=desc, body=body, core=core,
                            edge=edge)


def t_histogram(rng):
    w = rng.choice([2, 3, 4, 5, 10])
    o = rng.randint(0, w - 1)
    dense = rng.random() < 0.5
    desc = (f"Count the ints of `values` per bucket of width {w}: the buckets are the ranges "
            f"`[{o} + {w}*k, {o} + {w}*(k + 1))` for every integer k (negative k too), so the "
            f"bucket of `v` starts at `(v - {o}) // {w} * {w} + {o}`. ")
    if dense:
        desc += ("Return a list of counts, one per bucket, from the lowest non-empty bucket to "
                 "the highest one, with 0 for the empty buckets in between; no values give "
                 "`[]`.")
    else:
        desc += ("Return a dict mapping each non-empty bucket's start to its count, with the "
                 "keys in increasing order; no values give `{}`.")
    body = ("    counts = {}\n"
            "    for v in values:\n"
            f"        b = (v - {o}) // {w} * {w} + {o}\n"
            "        counts[b] = counts.get(b, 0) + 1\n")
    if dense:
        body += ("    if not counts:\n        return []\n"
                 f"    return [counts.get(b, 0) for b in range(min(counts), max(counts) + 1, {w})]\n")
    else:
        body += "    return {b: counts[b] for b in sorted(counts)}\n"
    core = [[ints(rng, rng.randint(1, 15), -15, 40)] for _ in range(24)]
    edge = [[[]], [[o]], [[o - 1]], [[o + w - 1, o + w]], [[-1, 0, 1]], [[5] * 7],
            [[-10 ** 6, 10 ** 6 % 97]], [[o + 3 * w, o]], [[-w, -1]]]
    return FunctionTemplate(fname=rng.choice(["histogram", "bucket_counts", "bin_values"]),
                            params="values: list[int]",
                            ret="list[int]" if dense else "dict[int, int]", desc=desc, body=body,
                            core=core, edge=edge)


def t_differences(rng):
    k = rng.randint(1, 3)
    op = rng.choice(["diff", "absdiff", "sum"])
    pair = {"diff": "`b - a`", "absdiff": "`abs(b - a)`", "sum": "`a + b`"}[op]
    expr = {"diff": "b - a", "absdiff": "abs(b - a)", "sum": "a + b"}[op]
    desc = (f"One *pass* over a list turns each pair of neighbours `a, b` (`a` first) into "
            f"{pair}, giving a list one element shorter. Return the result of applying "
            + ("one pass to `values`" if k == 1 else f"{k} passes to `values`, one after another")
            + f". If `values` has at most {k} element{'s' if k > 1 else ''} the result is `[]`. "
            f"Do not modify `values`.")
    body = ("    out = list(values)\n"
            f"    for _ in range({k}):\n"
            f"        out = [{expr} for a, b in zip(out, out[1:])]\n"
            "    return out\n")
    core = [[ints(rng, rng.randint(k + 1, 12), -20, 20)] for _ in range(24)]
    edge = [[[]], [[4]], [list(range(k))], [list(range(k + 1))], [[i * i for i in range(8)]],
            [[3] * 6], [[10 ** 18, -10 ** 18, 10 ** 18, -10 ** 18, 0]], [[1, -1] * 4]]
    names = {"diff": ["differences", "nth_differences", "diff_passes"],
             "absdiff": ["abs_differences", "gaps", "diff_passes"],
             "sum": ["pair_sums", "neighbour_sums", "sum_passes"]}[op]
    return FunctionTemplate(fname=rng.choice(names), params="values: list[int]",
                            ret="list[int]", desc=desc, body=body, core=core, edge=edge)


def t_records(rng):
    high = rng.random() < 0.5
    ties = rng.random() < 0.5
    give = rng.choice(["indices", "values"])
    best = "maximum" if high else "minimum"
    beat = ("greater than" if high else "smaller than") + (" or equal to" if ties else "")
    desc = (f"Scan `values` (a list of ints) from left to right and return the "
            f"{'indices' if give == 'indices' else 'values'} of its *records*, in order: the "
            f"first element is a record, and every later element that is {beat} the running "
            f"{best} of all the elements before it is a record too. An empty list gives `[]`.")
    op = (">" if high else "<") + ("=" if ties else "")
    pick = "i" if give == "indices" else "v"
    body = ("    out = []\n"
            "    best = None\n"
            "    for i, v in enumerate(values):\n"
            f"        if best is None or v {op} best:\n"
            f"            out.append({pick})\n"
            f"        best = v if best is None else {'max' if high else 'min'}(best, v)\n"
            "    return out\n")
    core = [[ints(rng, rng.randint(2, 15), -9, rng.choice([5, 30]))] for _ in range(24)]
    edge = [[[]], [[0]], [[2, 2, 2]], [list(range(6))], [list(range(6, 0, -1))],
            [[-5, -5, -4, -6, -6]], [[3, 1, 3, 1, 4]], [[10 ** 15, -10 ** 15]]]
    return FunctionTemplate(fname=rng.choice(["records", "running_records", "record_breakers"]),
                            params="values: list[int]", ret="list[int]", desc=desc, body=body,
                            core=core, edge=edge)


def t_spiral(rng):
    corner = rng.choice(["top-left", "top-right", "bottom-right", "bottom-left"])
    clockwise = rng.random() < 0.5
    turn = {"top-left": "", "top-right": "    m = [list(r) for r in zip(*m)][::-1]\n",
            "bottom-right": "    m = [r[::-1] for r in m[::-1]]\n",
            "bottom-left": "    m = [list(r) for r in zip(*m[::-1])]\n"}[corner]
    ex = [[1, 2, 3], [4, 5, 6]]
    desc = (f"`matrix` is a rectangular list of rows (all rows have the same length; there may "
            f"be no rows, or empty rows). Return its elements in spiral order as one flat list: "
            f"start at the {corner} corner and walk along the border "
            f"{'clockwise' if clockwise else 'counterclockwise'}, then continue inwards the "
            f"same way, ring by ring, until every element has been taken exactly once. "
            f"Do not modify `matrix`.")
    body = ("    m = [list(r) for r in matrix if r]\n" + turn
            + ("" if clockwise else "    m = [list(r) for r in zip(*m)]\n")
            + "    out = []\n"
            "    while m:\n"
            "        out.extend(m.pop(0))\n"
            "        m = [list(r) for r in zip(*m)][::-1]\n"
            "    return out\n")
    core = [[ex]]
    for _ in range(23):
        r, c = rng.randint(1, 5), rng.randint(1, 5)
        core.append([[ints(rng, c, 0, 99) for _ in range(r)]])
    edge = [[[]], [[[]]], [[[], []]], [[[7]]], [[[1, 2, 3, 4]]], [[[1], [2], [3], [4]]],
            [[[1, 2], [3, 4]]], [[[i * 6 + j for j in range(6)] for i in range(6)]],
            [[["a", "b"], ["c", "d"], ["e", "f"]]]]
    return FunctionTemplate(fname=rng.choice(["spiral", "spiral_order", "walk_spiral"]),
                            params="matrix: list[list]", ret="list", desc=desc, body=body,
                            core=core, edge=edge)


def t_anagram_groups(rng):
    fold = rng.random() < 0.5
    m = rng.randint(1, 3)
    count = rng.random() < 0.4
    desc = ("Group the strings of `words` into anagram classes: two strings are in the same "
            "class when one is a rearrangement of the other's characters"
            + (" ignoring case (compare `w.lower()`)" if fold else " (case matters: `a` and `A` "
               "differ)")
            + ". Every element belongs to its class, repeated strings included. ")
    if count:
        desc += f"Return the number of classes with at least {m} element{'s' if m > 1 else ''}."
    else:
        desc += (f"Return the classes with at least {m} element{'s' if m > 1 else ''} as a list "
                 f"of lists: each class lists its strings in their order in `words`, and the "
                 f"classes are ordered by where their first string appears.")
    key = "''.join(sorted(w.lower()))" if fold else "''.join(sorted(w))"
    body = ("    groups = {}\n"
            "    for w in words:\n"
            f"        groups.setdefault({key}, []).append(w)\n"
            + (f"    return sum(1 for g in groups.values() if len(g) >= {m})\n" if count else
               f"    return [g for g in groups.values() if len(g) >= {m}]\n"))
    classes = [["listen", "silent", "enlist", "Tinsel", "inlets"], ["google", "elgoog"],
               ["cat", "act", "tac", "Act", "CAT"], ["dog", "god", "odg"], ["bird", "drib"],
               ["x", "X"], [""], ["tab", "bat", "abt", "Bat"]]

    def draw():
        picked = rng.sample(classes, rng.randint(1, 4))
        return [rng.choice(rng.choice(picked)) for _ in range(rng.randint(2, 10))]

    core = [[draw()] for _ in range(24)]
    edge = [[[]], [[""]], [["", ""]], [["a"]], [["ab", "ba", "ab"]], [["Ab", "bA", "BA", "ab"]],
            [["abc", "abd"]], [["aab", "abb"]], [["é", "É"]], [["a b", "ba ", " ab"]]]
    names = (["count_anagram_groups", "anagram_class_count", "count_anagram_sets"] if count else
             ["anagram_groups", "group_anagrams", "anagram_classes"])
    return FunctionTemplate(fname=rng.choice(names), params="words: list[str]",
                            ret="int" if count else "list[list[str]]", desc=desc, body=body,
                            core=core, edge=edge)


def t_checksum(rng):
    scheme = rng.choice(["luhn", "isbn10"])
    seps = rng.choice(["", " -", "-"])
    shown = " and ".join({" ": "spaces", "-": "hyphens (`-`)"}[c] for c in seps)
    ignore = (f"{shown[0].upper() + shown[1:]} are ignored; any other character that is not "
              f"allowed makes it invalid." if seps else
              "Any character that is not allowed (spaces and hyphens included) makes it invalid.")
    if scheme == "luhn":
        desc = ("Return `True` if `code` passes the Luhn check, else `False`: it must consist "
                "of at least 2 ASCII digits; going from the rightmost digit leftwards, double "
                "every second digit (the second from the right, the fourth, ...), subtracting "
                "9 from any doubled value above 9, and add everything up: the code is valid "
                f"when the total is a multiple of 10. {ignore} The result must be a `bool`.")
        body = (f"    s = [c for c in code if c not in {seps!r}]\n"
                "    if len(s) < 2 or any(c not in '0123456789' for c in s):\n"
                "        return False\n"
                "    total = 0\n"
                "    for i, c in enumerate(reversed(s)):\n"
                "        d = int(c)\n"
                "        if i % 2:\n"
                "            d = d * 2 - 9 if d * 2 > 9 else d * 2\n"
                "        total += d\n"
                "    return total % 10 == 0\n")
    else:
        desc = ("Return `True` if `code` is a valid ISBN-10, else `False`: it must consist of "
                "exactly 10 characters d1..d10, where d1..d9 are ASCII digits and d10 is a digit "
                "or `X` (standing for 10; upper case only), and `10*d1 + 9*d2 + ... + 2*d9 + "
                f"1*d10` must be a multiple of 11. {ignore} The result must be a `bool`.")
        body = (f"    s = [c for c in code if c not in {seps!r}]\n"
                "    if len(s) != 10:\n"
                "        return False\n"
                "    total = 0\n"
                "    for i, c in enumerate(s):\n"
                "        if c in '0123456789':\n"
                "            d = int(c)\n"
                "        elif c == 'X' and i == 9:\n"
                "            d = 10\n"
                "        else:\n"
                "            return False\n"
                "        total += (10 - i) * d\n"
                "    return total % 11 == 0\n")

    def valid():
        if scheme == "luhn":
            digits = [rng.randint(0, 9) for _ in range(rng.randint(1, 15))]
            for check in range(10):
                cand = digits + [check]
                tot = sum((d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d
                          for i, d in enumerate(reversed(cand)))
                if tot % 10 == 0:
                    return "".join(map(str, cand))
        digits = [rng.randint(0, 9) for _ in range(9)]
        check = -sum((10 - i) * d for i, d in enumerate(digits)) % 11
        return "".join(map(str, digits)) + ("X" if check == 10 else str(check))

    def noisy(code):
        roll = rng.random()
        if roll < 0.35:
            pos = rng.randint(0, len(code) - 1)
            return code[:pos] + rng.choice("0123456789") + code[pos + 1:]
        if roll < 0.45:
            pos = rng.randint(1, len(code) - 1)
            return code[:pos] + rng.choice(" -") + code[pos:]
        return code

    core = [[noisy(valid())] for _ in range(24)]
    if scheme == "luhn":
        edge = [[""], ["0"], ["00"], ["18"], ["79927398713"], ["79927398710"], ["4539 1488 0343 6467"],
                ["4539-1488-0343-6467"], ["１８"], [" 0 0 "], ["059a"], ["--"]]
    else:
        edge = [[""], ["0306406152"], ["0306406153"], ["0-306-40615-2"], ["0 306 40615 2"],
                ["080442957X"], ["080442957x"], ["X804429570"], ["03064061520"], ["０306406152"],
                ["---"], ["0000000000"]]
    names = (["luhn_valid", "passes_luhn", "check_luhn"] if scheme == "luhn" else
             ["isbn10_valid", "is_isbn10", "check_isbn"])
    return FunctionTemplate(fname=rng.choice(names), params="code: str", ret="bool", desc=desc,
                            body=body, core=core, edge=edge)


def t_collatz(rng):
    a, b = rng.choice([(3, 1), (3, -1), (5, 1), (3, 5)])
    short = rng.random() < 0.4
    cap = rng.choice([50, 100, 200, 500])
    missing = rng.choice([None, -1])
    odd = f"({a} * n + {b}) // 2" if short else f"{a} * n + {b}"
    rule = f"`{odd.replace('n', 'v')}`" + (" (in one step)" if short else "")
    desc = (f"Starting from `n` (an int >= 1), repeat a step: an even value v becomes `v // 2`, "
            f"an odd value v becomes {rule}. Return the number of steps until "
            f"the value first equals 1 (0 when `n` is 1). If 1 has not been reached after "
            f"{cap} steps, return `{missing!r}`.")
    body = ("    steps = 0\n"
            "    while n != 1:\n"
            f"        if steps == {cap}:\n"
            f"            return {missing!r}\n"
            f"        n = n // 2 if n % 2 == 0 else {odd}\n"
            "        steps += 1\n"
            "    return steps\n")
    core = [[_collatz_back(rng, a, b, short, rng.randint(1, cap + 3))] for _ in range(12)]
    core += [[rng.randint(1, 60)] for _ in range(6)] + [[rng.randint(61, 5000)] for _ in range(6)]
    edge = [[1], [2], [3], [7], [27], [2 ** 40], [2 ** cap], [2 ** (cap + 1)], [97], [10 ** 12 + 1]]
    return FunctionTemplate(fname=rng.choice(["collatz_steps", "steps_to_one", "hailstone_steps"]),
                            params="n: int", ret="int | None" if missing is None else "int",
                            desc=desc, body=body, core=core, edge=edge)


def _collatz_back(rng, a, b, short, steps):
    """A start that reaches 1 in exactly ``steps`` steps: the rule walked backwards from 1,
    taking the odd predecessor (when there is one) or the even one at random."""
    v = 1
    for _ in range(steps):
        n, r = divmod(2 * v - b if short else v - b, a)
        odd = r == 0 and n > 1 and n % 2 == 1
        v = n if odd and rng.random() < 0.5 else 2 * v
    return v


def t_unique_letters(rng):
    fold = rng.random() < 0.5
    m = rng.randint(1, 5)
    out = rng.choice(["list", "distinct", "count"])
    desc = ("Find the words of `text` whose letters are all different"
            + (" ignoring case (`Aa` repeats a letter)" if fold else " (case matters: `Aa` has "
               "two different letters)")
            + f" and that have at least {m} letter{'s' if m > 1 else ''}. Words are the maximal "
            "sequences of the ASCII letters a-z and A-Z; everything else separates them. "
            + {"list": "Return those words as a list in the order they appear in `text`, "
                       "repeats included.",
               "distinct": "Return those words as a list, each only once (at its first "
                           "appearance; words that differ in case are different words), in "
                           "the order they appear in `text`.",
               "count": "Return how many such words `text` has, repeats included."}[out])
    w = "w.lower()" if fold else "w"
    body = ("    out = []\n"
            "    for w in re.findall(r'[A-Za-z]+', text):\n"
            f"        if len(w) >= {m} and len(set({w})) == len(w)"
            + (" and w not in out" if out == "distinct" else "") + ":\n"
            "            out.append(w)\n"
            + ("    return len(out)\n" if out == "count" else "    return out\n"))
    core = [[sentence(rng, rng.randint(3, 14))] for _ in range(24)]
    edge = [[""], ["!!! 42"], ["Aa aA"], ["abcdefghijklmnopqrstuvwxyz"], ["a" * 6],
            ["Abcdefa" + " Zyxwvuz" * 2], ["AbcdefA abcdefa"],
            ["dog dog Dog"], ["naïve café"], ["x1y2z3 xyz"], ["Subdermatoglyphic"], ["it's"]]
    names = {"list": ["unique_letter_words", "isogram_words", "words_without_repeats"],
             "distinct": ["unique_letter_words", "isogram_words", "distinct_isograms"],
             "count": ["count_isograms", "count_unique_letter_words", "isogram_count"]}[out]
    return FunctionTemplate(fname=rng.choice(names), params="text: str",
                            ret="int" if out == "count" else "list[str]", desc=desc, body=body,
                            core=core, edge=edge, imports="import re\n")


def t_gcd_lcm(rng):
    lcm = rng.random() < 0.5
    mod = rng.choice([None, 10 ** 9 + 7, 1000, 97]) if lcm else None
    only = rng.choice(["all", "even", "nonneg"])
    which = {"all": "all the ints in `values`",
             "even": "the ints at the even positions of `values` (indices 0, 2, 4, ...; the "
                     "others are left out)",
             "nonneg": "the ints of `values` that are >= 0 (negative ones are left out)"}[only]
    desc = ("Return the " + ("least common multiple" if lcm else "greatest common divisor")
            + f" of {which}"
            + (". " if only == "nonneg" else ", taking negative values by their absolute value. ")
            + ("A 0 among them makes the result 0; no values give 1"
               + (f". Return the result modulo {mod} (compute the exact value first; the "
                  f"numbers can get big)" if mod else " (the result can be a big number)")
               if lcm else "Zeros do not change the result (the gcd of 0 and x is x); no "
               "values, or only zeros, give 0")
            + ".")
    pick = {"all": "values", "even": "values[::2]",
            "nonneg": "[v for v in values if v >= 0]"}[only]
    if lcm:
        body = ("    r = 1\n"
                f"    for v in {pick}:\n"
                "        r = r * abs(v) // gcd(r, abs(v)) if v else 0\n"
                "        if r == 0:\n"
                "            break\n"
                + (f"    return r % {mod}\n" if mod else "    return r\n"))
    else:
        body = ("    r = 0\n"
                f"    for v in {pick}:\n"
                "        r = gcd(r, v)\n"
                "    return r\n")

    def multiples():
        base = rng.choice([1, 2, 3, 6, 7, 12])
        return [base * rng.randint(-12, 12) for _ in range(rng.randint(1, 7))]

    core = [[multiples()] for _ in range(24)]
    edge = [[[]], [[0]], [[0, 0]], [[-12]], [[1]], [[0, 6]], [[6, 0, 4]], [[-4, 6]],
            [list(range(1, 41))], [[2 ** 61 - 1, 2 ** 31 - 1]], [[10 ** 18, 10 ** 12]]]
    names = (["lcm_all", "list_lcm", "common_multiple"] if lcm else
             ["gcd_all", "list_gcd", "common_divisor"])
    return FunctionTemplate(fname=rng.choice(names), params="values: list[int]", ret="int",
                            desc=desc, body=body, core=core, edge=edge,
                            imports="from math import gcd\n")


def t_ranges(rng):
    dash = rng.choice(["..", "~", ":"])
    join = rng.choice([",", ", ", ";", " "])
    least = rng.choice([2, 3])
    ex = [5, 1, 2, 3, 9, 10, 7, 3]
    desc = (f"Summarize `values` (ints, in any order, possibly repeated) as a string: take the "
            f"distinct values in increasing order, cut them into maximal runs of consecutive "
            f"integers, and write a run of at least {least} values as `first{dash}last` and the "
            f"values of a shorter run one by one; join all the pieces with `{join!r}`. ")
    body = ("    xs = sorted(set(values))\n"
            "    pieces = []\n"
            "    i = 0\n"
            "    while i < len(xs):\n"
            "        j = i\n"
            "        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:\n"
            "            j += 1\n"
            f"        if j - i + 1 >= {least}:\n"
            f"            pieces.append(f'{{xs[i]}}{dash}{{xs[j]}}')\n"
            "        else:\n"
            "            pieces.extend(str(x) for x in xs[i:j + 1])\n"
            "        i = j + 1\n"
            f"    return {join!r}.join(pieces)\n")
    desc += f"For example `{ex}` gives `{join.join(_range_pieces(ex, dash, least))!r}`; no values give `''`."
    core = [[ex]] + [[ints(rng, rng.randint(1, 14), -5, 25)] for _ in range(23)]
    edge = [[[]], [[4]], [[4, 5]], [[4, 5, 6]], [[6, 5, 4, 4]], [[-3, -2, -1, 0, 1]],
            [[10 ** 15, 10 ** 15 + 1, 10 ** 15 + 2]], [[1, 3, 5, 7]], [[0, 0, 0]]]
    return FunctionTemplate(fname=rng.choice(["summarize_ranges", "compress_ranges", "range_list"]),
                            params="values: list[int]", ret="str", desc=desc, body=body,
                            core=core, edge=edge)


def _range_pieces(values, dash, least):
    xs, pieces, i = sorted(set(values)), [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        pieces += [f"{xs[i]}{dash}{xs[j]}"] if j - i + 1 >= least else [str(x) for x in xs[i:j + 1]]
        i = j + 1
    return pieces


HELDOUT_TEMPLATES = [t_common_affix, t_merge_intervals, t_peaks, t_parse_pairs, t_to_roman,
                     t_from_roman, t_snake_to_camel, t_camel_to_snake, t_flatten, t_histogram,
                     t_differences, t_records, t_spiral, t_anagram_groups, t_checksum, t_collatz,
                     t_unique_letters, t_gcd_lcm, t_ranges]

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
    train_templates: ClassVar[tuple[str, ...]] = tuple(t.__name__[2:] for t in TEMPLATES)
    heldout_templates: ClassVar[tuple[str, ...]] = tuple(t.__name__[2:] for t in HELDOUT_TEMPLATES)

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        tmpl = rng.choice(template_pool(seed, TEMPLATES, HELDOUT_TEMPLATES))
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
            "template": tmpl.__name__[2:],
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
