"""c-fix-bug: find and fix the single injected bug in a small generated C program.

Per seed: the program, its identifiers, constants and output labels, the file name, and the
bug: its kind (off-by-one loop bound, wrong operator, missing semicolon, undeclared
identifier, missing return) and where it is injected.

The programs are templates. Train (and ``heldout-v1``) seeds draw from 7 (``TEMPLATES``): sum/max,
range count, polynomial hash, prime count, reverse + vowels, base-B digit sums, histogram.
``heldout`` seeds draw only from 6 others (``HELDOUT_TEMPLATES``) that no train seed ever sees:
gcd and lcm of pairs, run-length encoding with a run cap, insertion sort + median, matrix row
and column sums, capped Collatz step counts with the longest chain, and a per-line bracket
balance / nesting-depth check. Each has every bug kind among its sites, and the edge cases of
its hidden tests catch every one of its wrong-result sites. A level-3 sibling program comes
from the same pool as the task's program.

Hidden tests compile the agent's file with ``gcc -std=c11 -Wall -Werror -O2`` and run it
on unseen inputs (random and edge cases), comparing stdout with values computed in Python
at generation time.

Levels: 1 names the line and the function of the bug, and adds ``check.sh`` with the edge
cases in ``cases/`` (inputs and expected outputs), so the hidden edge cases are no longer
hidden; fewer unseen ordinary inputs are checked. 2 is the family as it always was. 3 injects
a second bug (one stops compilation, the other breaks the results, so a clean compile is not
the end), puts a working sibling program that must stay byte-identical next to it, and adds
a step: build the program and save its output for ``batch_input.txt`` in ``batch_output.txt``.
"""

from __future__ import annotations

import math
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from string import Template
from typing import ClassVar

from ._common import LEFT_ALONE_TEST, heredoc, hidden_test_source, left_alone, md_code
from .base import Family, files, template_pool

BUG_KINDS = ["off_by_one", "wrong_operator", "missing_semicolon", "undeclared_identifier",
             "missing_return"]
COMPILE_KINDS = {"missing_semicolon", "undeclared_identifier", "missing_return"}
"""The bug kinds that stop compilation; the others compile and compute wrong results."""
C_WORDS = {"int", "for", "if", "do", "while", "char", "long", "return", "static", "const",
           "void", "size_t", "putchar", "printf", "scanf", "fgets", "strlen", "main", "stdin",
           "unsigned", "sizeof", "else", "case", "cout"}


def typo(name: str) -> str:
    t = name[:-2] + name[-1] if len(name) >= 3 else name + name[-1]
    return t if t not in C_WORDS else t + "_x"


# --------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class CProgramTemplate:
    """A C program with bug sites: one is broken per seed, the agent must find and fix it."""

    key: str
    """The template's name (a task tag)."""
    files: list[str]
    """Names the program's source file may have (without ``.c``)."""
    names: dict[str, list[str]]
    """Placeholder -> the identifiers it may become (``${a}`` in ``source``)."""
    consts: Callable[[random.Random], dict]
    """Draws the constants of one variant (labels, limits) from the seed's ``rng``."""
    source: str
    """The program, with ``${...}`` placeholders and ``@k@`` bug sites."""
    sites: list[tuple[str, str, str]]
    """Bug site ``k``: (kind of bug, the correct code, the buggy code)."""
    describe: Callable[[dict], tuple[str, str, str]]
    """``consts`` -> (what the program does, its input, its output): the instruction's words."""
    gen: Callable[[random.Random, dict], tuple[list[str], list[str]]]
    """``(rng, consts)`` -> (core inputs, edge inputs) of the hidden tests."""
    run: Callable[[dict, str], str]
    """``(consts, input)`` -> the expected output: the reference, in Python."""


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split()]


T_SUMMAX = CProgramTemplate(
    key="sum_max",
    files=["stats", "summary", "numstat", "aggregate"],
    names={"a": ["values", "nums", "data", "items", "xs"], "n": ["n", "count", "num", "size"],
           "total": ["total", "sum", "acc", "running"], "best": ["best", "top", "hi", "peak"],
           "fmax": ["max_of", "largest", "find_max", "array_max"],
           "CAP": ["MAXN", "CAP", "LIMIT", "MAX_ITEMS"]},
    consts=lambda rng: {"L1": rng.choice(["sum", "total", "acc"]),
                        "L2": rng.choice(["max", "largest", "peak"])},
    source="""\
#include <stdio.h>

#define ${CAP} 1000

static int ${fmax}(const int *${a}, int ${n}) {
    int ${best} = ${a}[0];
    for (int i = 1; @0@; i++) {
        if (${a}[i] @1@ ${best}) {
            ${best} = ${a}[i]@2@
        }
    }
@3@}

int main(void) {
    static int ${a}[${CAP}];
    int ${n};
    long long ${total} = 0;
    if (scanf("%d", &${n}) != 1 || ${n} < 1 || ${n} > ${CAP}) {
        return 1;
    }
    for (int i = 0; @4@; i++) {
        if (scanf("%d", &${a}[i]) != 1) {
            return 1;
        }
        @5@ @6@ ${a}[i];
    }
    printf("${L1}=%lld ${L2}=%d\\n", ${total}, ${fmax}(${a}, ${n}))@7@
    return 0;
}
""",
    sites=[("off_by_one", "i < ${n}", "i < ${n} - 1"), ("wrong_operator", ">", "<"),
           ("missing_semicolon", ";", ""), ("missing_return", "    return ${best};\n", ""),
           ("off_by_one", "i < ${n}", "i < ${n} - 1"),
           ("undeclared_identifier", "${total}", "${total_typo}"),
           ("wrong_operator", "+=", "-="), ("missing_semicolon", ";", "")],
    describe=lambda c: (
        "reads a list of integers and prints their sum and their maximum",
        "the first integer is N (1 <= N <= 1000), followed by N integers (each fits in an `int`), "
        "separated by whitespace",
        f"one line `{c['L1']}=S {c['L2']}=M` where S is the sum of the N integers and M the "
        f"largest of them"),
    gen=lambda rng, c: (
        [_seq_input(rng.randint(2, 30), lambda: rng.randint(-1000, 1000)) for _ in range(6)],
        [_seq_input(1, lambda: -7), "5\n1 2 3 4 5\n", "4\n-9 -8 -7 -1\n", "3\n9 5 -2\n",
         _seq_input(1000, lambda: rng.randint(2_000_000, 2_100_000)), "4\n0 0 0 0\n"]),
    run=lambda c, inp: (lambda v: f"{c['L1']}={sum(v[1:])} {c['L2']}={max(v[1:])}\n")(_ints(inp)),
)


def _seq_input(n: int, f) -> str:
    return f"{n}\n" + " ".join(str(f()) for _ in range(n)) + "\n"


def _range_input(rng) -> str:
    lo = rng.randint(-50, 50)
    hi = lo + rng.randint(0, 60)
    n = rng.randint(3, 25)
    vals = [rng.choice([lo, hi, rng.randint(lo - 20, hi + 20)]) for _ in range(n)]
    return f"{lo} {hi} {n}\n" + " ".join(map(str, vals)) + "\n"


def _range_run(c, inp):
    v = _ints(inp)
    lo, hi, n = v[:3]
    return f"{sum(1 for x in v[3:3 + n] if lo <= x <= hi)}\n"


T_RANGE = CProgramTemplate(
    key="count_in_range",
    files=["inrange", "window_count", "bounds", "filter_count"],
    names={"inr": ["in_range", "within", "is_inside", "between"], "v": ["v", "val", "x0", "item"],
           "lo": ["lo", "low", "lower", "min_v"], "hi": ["hi", "high", "upper", "max_v"],
           "n": ["n", "total_n", "num", "count_in"], "cnt": ["cnt", "hits", "matched", "found"]},
    consts=lambda rng: {},
    source="""\
#include <stdio.h>

static int ${inr}(int ${v}, int ${lo}, int ${hi}) {
    if (${v} @0@ ${lo} || ${v} @1@ ${hi}) {
        return 0;
    }
@2@}

int main(void) {
    int ${lo}, ${hi}, ${n};
    if (scanf("%d %d %d", &${lo}, &${hi}, &${n}) != 3 || ${n} < 0) {
        return 1;
    }
    int ${cnt} = 0;
    for (int i = 0; @3@; i++) {
        int x;
        if (scanf("%d", &x) != 1) {
            return 1;
        }
        @4@ += ${inr}(x, ${lo}, ${hi})@5@
    }
    printf("%d\\n", ${cnt});
    return 0;
}
""",
    sites=[("wrong_operator", "<", "<="), ("wrong_operator", ">", ">="),
           ("missing_return", "    return 1;\n", ""), ("off_by_one", "i < ${n}", "i < ${n} - 1"),
           ("undeclared_identifier", "${cnt}", "${cnt_typo}"), ("missing_semicolon", ";", "")],
    describe=lambda c: (
        "counts how many numbers of a list lie inside a closed interval",
        "three integers LO HI N, then N integers, separated by whitespace (N >= 0)",
        "one line with the number of the N integers x with LO <= x <= HI (both bounds "
        "included)"),
    gen=lambda rng, c: (
        [_range_input(rng) for _ in range(6)],
        ["0 10 0\n\n", "5 5 3\n5 4 6\n", "-3 3 4\n-3 3 -4 4\n", "1 9 3\n0 10 9\n",
         "10 1 3\n1 5 10\n", "-100 100 5\n7 8 9 10 100\n"]),
    run=_range_run,
)


def _hash_run(c, inp):
    v = _ints(inp)
    h = 0
    for x in v[1:1 + v[0]]:
        h = (h * c["B"] + x) % c["M"]
    return f"{h}\n"


T_HASH = CProgramTemplate(
    key="poly_hash",
    files=["checksum", "hasher", "digest", "polyhash"],
    names={"step": ["mix", "step", "combine", "fold"], "h": ["h", "state", "prev", "cur"],
           "x": ["x", "value", "inp", "word"], "r": ["r", "res", "out", "next_h"],
           "n": ["n", "count", "len", "num"], "acc": ["acc", "hash", "digest", "chk"],
           "v": ["v", "item", "elem", "token"], "BASE": ["BASE", "MULT", "RADIX", "FACTOR"],
           "MOD": ["MOD", "MODULUS", "PRIME", "WRAP"]},
    consts=lambda rng: {"B": rng.choice([31, 37, 41, 131, 257, 10007 % 300]),
                        "M": rng.choice([997, 1009, 7919, 65521, 1000003, 999983])},
    source="""\
#include <stdio.h>

#define ${BASE} ${B}ULL
#define ${MOD} ${M}ULL

static unsigned long long ${step}(unsigned long long ${h}, unsigned long long ${x}) {
    unsigned long long ${r} = (${h} @0@ ${BASE} + ${x}) @1@ ${MOD};
@2@}

int main(void) {
    int ${n};
    if (scanf("%d", &${n}) != 1 || ${n} < 0) {
        return 1;
    }
    unsigned long long ${acc} = 0;
    for (int i = 0; @3@; i++) {
        unsigned long long ${v};
        if (scanf("%llu", &${v}) != 1) {
            return 1;
        }
        ${acc} = ${step}(@4@, ${v})@5@
    }
    printf("%llu\\n", ${acc});
    return 0;
}
""",
    sites=[("wrong_operator", "*", "+"), ("wrong_operator", "%", "/"),
           ("missing_return", "    return ${r};\n", ""),
           ("off_by_one", "i < ${n}", "i < ${n} - 1"),
           ("undeclared_identifier", "${acc}", "${acc_typo}"), ("missing_semicolon", ";", "")],
    describe=lambda c: (
        "computes a polynomial rolling hash of a list of numbers",
        "the first integer is N (N >= 0), followed by N non-negative integers below 1000000",
        f"one line with H, where H starts at 0 and for every number x, in order, becomes "
        f"(H * {c['B']} + x) mod {c['M']}"),
    gen=lambda rng, c: (
        [_seq_input(rng.randint(2, 30), lambda: rng.randint(0, 999_999)) for _ in range(6)],
        ["0\n", "1\n0\n", "1\n999999\n", "3\n1 2 3\n", _seq_input(200, lambda: 999_999),
         "2\n5 0\n"]),
    run=_hash_run,
)


def _primes_run(c, inp):
    lo, hi = _ints(inp)[:2]
    ps = [k for k in range(max(lo, 2), hi + 1) if all(k % d for d in range(2, int(k ** 0.5) + 1))]
    return f"{len(ps)} {ps[-1] if ps else -1}\n"


def _primes_input(rng):
    lo = rng.randint(0, 3000)
    return f"{lo} {lo + rng.randint(0, 400)}\n"


T_PRIMES = CProgramTemplate(
    key="prime_count",
    files=["primes", "prime_range", "sieve_lite", "count_primes"],
    names={"isp": ["is_prime", "prime_p", "check_prime", "isprime"],
           "k": ["k", "cand", "num", "m"], "d": ["d", "div", "f", "t"],
           "lo": ["lo", "start", "from", "a"], "hi": ["hi", "stop", "until", "b"],
           "cnt": ["cnt", "primes", "how_many", "tally"], "last": ["last", "biggest", "latest", "top"]},
    consts=lambda rng: {},
    source="""\
#include <stdio.h>

static int ${isp}(int ${k}) {
    if (${k} @0@ 2) {
        return 0;
    }
    for (int ${d} = 2; @1@; ${d}++) {
        if (${k} % ${d} @2@ 0) {
            return 0;
        }
    }
@3@}

int main(void) {
    int ${lo}, ${hi};
    if (scanf("%d %d", &${lo}, &${hi}) != 2) {
        return 1;
    }
    int ${cnt} = 0, ${last} = -1;
    for (int x = ${lo}; @4@; x++) {
        if (${isp}(x)) {
            ${cnt}++;
            @5@ = x@6@
        }
    }
    printf("%d %d\\n", ${cnt}, ${last});
    return 0;
}
""",
    sites=[("wrong_operator", "<", "<="), ("off_by_one", "${d} * ${d} <= ${k}", "${d} * ${d} < ${k}"),
           ("wrong_operator", "==", "!="), ("missing_return", "    return 1;\n", ""),
           ("off_by_one", "x <= ${hi}", "x < ${hi}"),
           ("undeclared_identifier", "${last}", "${last_typo}"), ("missing_semicolon", ";", "")],
    describe=lambda c: (
        "counts the prime numbers in a closed interval and reports the largest one",
        "two integers LO and HI (0 <= LO, HI <= 100000), separated by whitespace",
        "one line `C P`: C is the number of primes p with LO <= p <= HI (both included) and P "
        "the largest such prime, or -1 if there is none"),
    gen=lambda rng, c: (
        [_primes_input(rng) for _ in range(6)],
        ["0 1\n", "2 2\n", "0 10\n", "24 26\n", "14 17\n", "48 50\n", "90000 90100\n", "9 7\n"]),
    run=_primes_run,
)


def _rev_run(c, inp):
    line = inp.split("\n")[0]
    return line[::-1] + "\n" + str(sum(ch in "aeiouAEIOU" for ch in line)) + "\n"


def _rev_input(rng):
    alpha = string.ascii_letters + string.digits + "  .,!?-aeiou"
    return "".join(rng.choice(alpha) for _ in range(rng.randint(5, 60))) + "\n"


T_REVERSE = CProgramTemplate(
    key="reverse_vowels",
    files=["reverse", "mirror", "backwards", "rev_line"],
    names={"isv": ["is_vowel", "vowel_p", "check_vowel", "isvowel"], "c": ["c", "ch", "chr0", "sym"],
           "set": ["vowels", "table", "letters", "pool"], "buf": ["buf", "line", "text", "input"],
           "len": ["len", "length", "size", "n"], "vow": ["vow", "nvowels", "hits", "score"]},
    consts=lambda rng: {},
    source="""\
#include <stdio.h>
#include <string.h>

static int ${isv}(char ${c}) {
    const char *${set} = "aeiouAEIOU";
    for (int i = 0; ${set}[i] != '\\0'; i++) {
        if (${set}[i] @0@ ${c}) {
            return 1;
        }
    }
@1@}

int main(void) {
    char ${buf}[1024];
    if (fgets(${buf}, sizeof ${buf}, stdin) == NULL) {
        ${buf}[0] = '\\0';
    }
    size_t ${len} = strlen(${buf});
    if (${len} > 0 && ${buf}[${len} - 1] == '\\n') {
        ${buf}[--${len}] = '\\0';
    }
    int ${vow} = 0;
    for (int i = (int)${len} - 1; @2@; i--) {
        putchar(${buf}[i]);
        @3@ += ${isv}(${buf}[i])@4@
    }
    putchar('\\n');
    printf("%d\\n", ${vow});
    return 0;
}
""",
    sites=[("wrong_operator", "==", "!="), ("missing_return", "    return 0;\n", ""),
           ("off_by_one", "i >= 0", "i > 0"), ("undeclared_identifier", "${vow}", "${vow_typo}"),
           ("missing_semicolon", ";", "")],
    describe=lambda c: (
        "prints a line of text reversed and counts its vowels",
        "one line of printable ASCII text (at most 1000 characters, possibly empty)",
        "two lines: first the input line reversed (character by character, without its "
        "newline), then the number of vowels (`aeiou`, lower or upper case) in it"),
    gen=lambda rng, c: (
        [_rev_input(rng) for _ in range(6)],
        ["\n", "a\n", "xyz\n", "AEIOU aeiou\n", "  lead and trail  \n", "Q" * 900 + "e\n"]),
    run=_rev_run,
)


def _digits_run(c, inp):
    v = _ints(inp)
    out = []
    for x in v[1:1 + v[0]]:
        s, nd = 0, 0
        while True:
            s += x % c["BV"]
            x //= c["BV"]
            nd += 1
            if x == 0:
                break
        out.append(f"{s} {nd}")
    return "".join(line + "\n" for line in out)


T_DIGITS = CProgramTemplate(
    key="base_digits",
    files=["digits", "basesum", "radix", "digit_stats"],
    names={"dsum": ["digit_sum", "sum_digits", "dsum", "radix_sum"], "v": ["v", "val", "rest", "q"],
           "ndig": ["ndig", "width", "digits_out", "places"], "s": ["s", "acc", "total", "tot"],
           "n": ["n", "count", "lines", "num"], "x": ["x", "value", "number", "item"],
           "nd": ["nd", "w", "len_out", "ndigits"], "sum": ["sum", "ds", "result", "res"],
           "B": ["BASE", "RADIX", "B_BASE", "DIGIT_BASE"]},
    consts=lambda rng: {"BV": rng.choice([3, 4, 5, 6, 7, 8, 9, 11, 12])},
    source="""\
#include <stdio.h>

#define ${B} ${BV}u

static int ${dsum}(unsigned int ${v}, int *${ndig}) {
    int ${s} = 0;
    *${ndig} = 0;
    do {
        ${s} @0@ ${v} @1@ ${B};
        ${v} /= ${B};
        (*${ndig})++;
    } while (${v} > 0);
@2@}

int main(void) {
    int ${n};
    if (scanf("%d", &${n}) != 1) {
        return 1;
    }
    for (int i = 0; @3@; i++) {
        unsigned int ${x};
        if (scanf("%u", &${x}) != 1) {
            return 1;
        }
        int ${nd};
        int ${sum} = ${dsum}(${x}, &${nd})@4@
        printf("%d %d\\n", @5@, ${nd});
    }
    return 0;
}
""",
    sites=[("wrong_operator", "+=", "="), ("wrong_operator", "%", "/"),
           ("missing_return", "    return ${s};\n", ""), ("off_by_one", "i < ${n}", "i < ${n} - 1"),
           ("missing_semicolon", ";", ""), ("undeclared_identifier", "${sum}", "${sum_typo}")],
    describe=lambda c: (
        f"prints the digit sum and the number of digits of numbers written in base {c['BV']}",
        "the first integer is N (N >= 0), followed by N non-negative integers below 10^9",
        f"one line `S D` per input number, in order: S is the sum of its digits in base "
        f"{c['BV']} and D the number of those digits (0 has one digit, 0)"),
    gen=lambda rng, c: (
        [_seq_input(rng.randint(2, 12), lambda: rng.randint(0, 10 ** rng.randint(1, 9) - 1))
         for _ in range(6)],
        ["0\n", "1\n0\n", f"2\n{c['BV'] - 1} {c['BV']}\n", f"1\n{c['BV'] ** 5}\n",
         "1\n999999999\n", f"3\n{c['BV'] ** 3 - 1} 1 {c['BV'] ** 2}\n"]),
    run=_digits_run,
)


def _hist_run(c, inp):
    v = _ints(inp)
    w, k = c["W"], c["K"]
    counts = [0] * k
    for x in v[1:1 + v[0]]:
        b = x // w if x >= 0 else 0
        counts[min(b, k - 1)] += 1
    return "".join(f"{j * w}-{j * w + w - 1}: {counts[j]}\n" for j in range(k))


T_HIST = CProgramTemplate(
    key="histogram",
    files=["histogram", "buckets", "binning", "hist"],
    names={"bucket": ["bucket_of", "bin_index", "slot", "which_bin"], "v": ["v", "val", "sample", "obs"],
           "b": ["b", "idx", "bin", "pos"], "counts": ["counts", "bins", "hist", "tally"],
           "n": ["n", "count", "samples", "num"], "x": ["x", "value", "reading", "point"],
           "j": ["j", "k", "row", "bi"], "WIDTH": ["WIDTH", "BIN_W", "STEP", "SPAN"],
           "NB": ["NBINS", "NB", "BUCKETS", "SLOTS"]},
    consts=lambda rng: {"W": rng.randint(2, 10), "K": rng.randint(3, 8)},
    source="""\
#include <stdio.h>

#define ${WIDTH} ${W}
#define ${NB} ${K}

static int ${bucket}(int ${v}) {
    int ${b} = ${v} @0@ ${WIDTH};
    if (${b} >= ${NB}) {
        ${b} = ${NB} - 1;
    }
    if (${v} < 0) {
        ${b} = 0;
    }
@1@}

int main(void) {
    int ${counts}[${NB}] = {0};
    int ${n};
    if (scanf("%d", &${n}) != 1) {
        return 1;
    }
    for (int i = 0; @2@; i++) {
        int ${x};
        if (scanf("%d", &${x}) != 1) {
            return 1;
        }
        ${counts}[${bucket}(${x})]++@3@
    }
    for (int ${j} = 0; @4@; ${j}++) {
        printf("%d-%d: %d\\n", ${j} * ${WIDTH}, ${j} * ${WIDTH} @5@ ${WIDTH} - 1, @6@[${j}]);
    }
    return 0;
}
""",
    sites=[("wrong_operator", "/", "%"), ("missing_return", "    return ${b};\n", ""),
           ("off_by_one", "i < ${n}", "i < ${n} - 1"), ("missing_semicolon", ";", ""),
           ("off_by_one", "${j} < ${NB}", "${j} < ${NB} - 1"), ("wrong_operator", "+", "-"),
           ("undeclared_identifier", "${counts}", "${counts_typo}")],
    describe=lambda c: (
        f"builds a histogram with {c['K']} buckets of width {c['W']}",
        "the first integer is N (N >= 0), followed by N integers",
        f"{c['K']} lines, one per bucket j = 0..{c['K'] - 1}, each `LO-HI: COUNT` with "
        f"LO = j*{c['W']} and HI = LO+{c['W'] - 1}; a value x goes to bucket x / {c['W']} "
        f"(integer division), except that negative values go to bucket 0 and values past the "
        f"last bucket go to the last bucket"),
    gen=lambda rng, c: (
        [_seq_input(rng.randint(3, 30), lambda: rng.randint(-c["W"], c["W"] * (c["K"] + 1)))
         for _ in range(6)],
        ["0\n", "1\n0\n", f"2\n{c['W'] - 1} {c['W']}\n", f"3\n-1 -100 {c['W'] * c['K']}\n",
         f"1\n{c['W'] * c['K'] - 1}\n", f"2\n{10 ** 6} {c['W'] * (c['K'] - 1)}\n"]),
    run=_hist_run,
)

TEMPLATES = [T_SUMMAX, T_RANGE, T_HASH, T_PRIMES, T_REVERSE, T_DIGITS, T_HIST]


# ----------------------------------------------------------------- held-out templates
# Drawn only by ``heldout`` seeds: programs no train seed ever sees (see the module docstring).


def _gcd_input(rng) -> str:
    pairs = []
    for _ in range(rng.randint(2, 8)):
        g = rng.choice([1, rng.randint(2, 30), rng.randint(2, 1000)])
        pairs.append((g * rng.randint(1, 999), g * rng.randint(1, 999)))
    return f"{len(pairs)}\n" + "".join(f"{a} {b}\n" for a, b in pairs)


def _gcd_run(c, inp):
    v = _ints(inp)
    out = []
    for k in range(v[0]):
        a, b = v[1 + 2 * k], v[2 + 2 * k]
        g = math.gcd(a, b)
        out.append(f"{g}{c['SEP']}{a // g * b}\n")
    return "".join(out)


T_GCD = CProgramTemplate(
    key="gcd_lcm",
    files=["gcdlcm", "euclid", "pair_divisors", "common_factors"],
    names={"gcd": ["gcd", "euclid", "common_div", "hcf"], "a": ["a", "p", "u", "m0"],
           "b": ["b", "q", "w", "m1"], "t": ["t", "rem", "r", "tmp"],
           "n": ["n", "pairs", "count", "num"], "x": ["x", "first", "lhs", "left"],
           "y": ["y", "second", "rhs", "right"], "g": ["g", "d", "shared", "gd"]},
    consts=lambda rng: {"SEP": rng.choice([" ", ",", ";", " | "])},
    source="""\
#include <stdio.h>

static long long ${gcd}(long long ${a}, long long ${b}) {
    while (${b} @0@ 0) {
        long long ${t} = ${a} % ${b};
        ${a} = ${b};
        ${b} = ${t}@1@
    }
@2@}

int main(void) {
    int ${n};
    if (scanf("%d", &${n}) != 1 || ${n} < 0) {
        return 1;
    }
    for (int i = 0; @3@; i++) {
        long long ${x}, ${y};
        if (scanf("%lld %lld", &${x}, &${y}) != 2 || ${x} < 1 || ${y} < 1) {
            return 1;
        }
        long long ${g} = ${gcd}(${x}, ${y});
        printf("%lld${SEP}%lld\\n", @4@, ${x} @5@ ${g} * ${y});
    }
    return 0;
}
""",
    sites=[("wrong_operator", "!=", "=="), ("missing_semicolon", ";", ""),
           ("missing_return", "    return ${a};\n", ""), ("off_by_one", "i < ${n}", "i < ${n} - 1"),
           ("undeclared_identifier", "${g}", "${g_typo}"), ("wrong_operator", "/", "*")],
    describe=lambda c: (
        "prints the greatest common divisor and the least common multiple of pairs of numbers",
        "the first integer is N (N >= 0), followed by N pairs of integers A B "
        "(1 <= A, B <= 1000000), separated by whitespace",
        f"one line per pair, in order: `G{c['SEP']}L`, where G is the greatest common divisor "
        f"of A and B and L their least common multiple"),
    gen=lambda rng, c: (
        [_gcd_input(rng) for _ in range(6)],
        ["1\n1 1\n", "2\n12 18\n18 12\n", "1\n1000000 999999\n", "3\n7 7\n17 51\n51 17\n",
         "2\n1 1000000\n640000 360000\n", "1\n35 6\n"]),
    run=_gcd_run,
)


def _rle_run(c, inp):
    line = inp.split("\n")[0][:1000]
    tokens, i = [], 0
    while i < len(line):
        k = i + 1
        while k < len(line) and line[k] == line[i] and k - i < c["R"]:
            k += 1
        tokens.append(f"{line[i]}{k - i}")
        i = k
    return "".join(tokens) + f"\n{c['L']}={len(tokens)}\n"


def _rle_input(rng, c) -> str:
    alpha = rng.sample(string.ascii_letters + " .-#*!", 4)
    runs = [rng.choice(alpha) * rng.choice([1, 1, 2, 3, rng.randint(1, c["R"] + 5)])
            for _ in range(rng.randint(2, 14))]
    return "".join(runs)[:1000] + "\n"


T_RLE = CProgramTemplate(
    key="run_length",
    files=["rle", "runlength", "squeeze", "pack_runs"],
    names={"runlen": ["run_length", "run_len", "span", "same_run"],
           "s": ["s", "text", "str0", "chars"], "start": ["start", "from", "begin", "at"],
           "len": ["len", "n", "size", "filled"], "k": ["k", "end", "stop", "q"],
           "buf": ["buf", "line", "row_text", "data"], "ch": ["ch", "c", "got", "next_c"],
           "runs": ["runs", "tokens", "pieces", "groups_n"], "r": ["r", "width", "w", "span_n"],
           "CAP": ["CAP", "MAXLEN", "LINE_CAP", "BUF_LEN"],
           "MAXR": ["MAXRUN", "RUN_CAP", "MAX_RUN", "CHUNK"]},
    consts=lambda rng: {"R": rng.choice([5, 7, 9, 12, 20]), "L": rng.choice(["runs", "tokens", "groups"])},
    source="""\
#include <stdio.h>

#define ${CAP} 1000
#define ${MAXR} ${R}

static int ${runlen}(const char *${s}, int ${start}, int ${len}) {
    int ${k} = ${start} + 1;
    while (${k} < ${len} && ${s}[${k}] @0@ ${s}[${start}] && @1@) {
        ${k}++;
    }
@2@}

int main(void) {
    static char ${buf}[${CAP}];
    int ${len} = 0, ${ch};
    while ((${ch} = getchar()) != EOF && ${ch} != '\\n' && ${len} < ${CAP}) {
        ${buf}[${len}++] = (char)${ch};
    }
    int ${runs} = 0, ${r};
    for (int i = 0; @3@; i += ${r}) {
        ${r} = ${runlen}(${buf}, i, ${len});
        printf("%c%d", ${buf}[i], ${r});
        @4@++;
    }
    printf("\\n${L}=%d\\n", ${runs})@5@
    return 0;
}
""",
    sites=[("wrong_operator", "==", "!="),
           ("off_by_one", "${k} - ${start} < ${MAXR}", "${k} - ${start} <= ${MAXR}"),
           ("missing_return", "    return ${k} - ${start};\n", ""),
           ("off_by_one", "i < ${len}", "i < ${len} - 1"),
           ("undeclared_identifier", "${runs}", "${runs_typo}"), ("missing_semicolon", ";", "")],
    describe=lambda c: (
        f"run-length encodes a line of text, splitting runs longer than {c['R']}",
        "one line of printable ASCII text (at most 1000 characters; it may be empty)",
        f"two lines. The first is the encoding: the line is cut into maximal runs of one repeated "
        f"character, a run longer than {c['R']} being cut into pieces of {c['R']} characters "
        f"(and a shorter last piece), and each piece is written as its character followed by its "
        f"length in decimal, with nothing in between (`aaab` gives `a3b1`). The second is "
        f"`{c['L']}=K`, K the number of pieces"),
    gen=lambda rng, c: (
        [_rle_input(rng, c) for _ in range(6)],
        ["\n", "q\n", "xyz\n", "aaabccdddd  !!\n", "z" * (2 * c["R"] + 3) + "y" * c["R"] + "\n",
         "".join(rng.choice("ab") * rng.randint(1, 30) for _ in range(80))[:1000] + "\n"]),
    run=_rle_run,
)


def _median_run(c, inp):
    v = _ints(inp)
    vals = sorted(v[1:1 + v[0]], reverse=c["DIR"] == "descending")
    lo, hi = vals[(len(vals) - 1) // 2], vals[len(vals) // 2]
    return " ".join(map(str, vals)) + f"\n{c['L']}={(lo + hi) // 2}\n"


def _median_consts(rng) -> dict:
    """The sort order, the insertion sort's comparison for it (and the reversed one: the bug),
    and the median's label."""
    order = rng.choice(["ascending", "descending"])
    cmp, reverse = (">", "<") if order == "ascending" else ("<", ">")
    return {"DIR": order, "CMP": cmp, "RCMP": reverse, "L": rng.choice(["median", "mid", "middle"])}


T_MEDIAN = CProgramTemplate(
    key="sorted_median",
    files=["median", "sortmid", "order_stats", "middle"],
    names={"isort": ["insertion_sort", "isort", "sort_ints", "arrange"],
           "a": ["a", "vals", "arr", "nums"], "n": ["n", "len", "count", "size"],
           "key": ["key", "cur", "pick", "hold"], "j": ["j", "k", "pos", "back"],
           "mid": ["median", "middle", "mid_value", "center"], "lo": ["lo", "left", "lower", "m1"],
           "hi": ["hi", "right", "upper", "m2"], "s": ["s", "pair_sum", "both", "twice"],
           "CAP": ["CAP", "MAXN", "LIMIT", "MAX_LEN"]},
    consts=_median_consts,
    source="""\
#include <stdio.h>

#define ${CAP} 1000

static void ${isort}(int *${a}, int ${n}) {
    for (int i = 1; @0@; i++) {
        int ${key} = ${a}[i];
        int ${j} = i - 1;
        while (${j} >= 0 && ${a}[${j}] @1@ ${key}) {
            ${a}[${j} + 1] = ${a}[${j}];
            ${j}--;
        }
        ${a}[${j} + 1] = ${key}@2@
    }
}

static int ${mid}(const int *${a}, int ${n}) {
    int ${lo} = ${a}[(${n} - 1) / 2], ${hi} = ${a}[${n} / 2];
    int ${s} = ${lo} @3@ ${hi};
@4@}

int main(void) {
    static int ${a}[${CAP}];
    int ${n};
    if (scanf("%d", &${n}) != 1 || ${n} < 1 || ${n} > ${CAP}) {
        return 1;
    }
    for (int i = 0; i < ${n}; i++) {
        if (scanf("%d", &${a}[i]) != 1) {
            return 1;
        }
    }
    ${isort}(${a}, ${n});
    for (int i = 0; @5@; i++) {
        printf(i ? " %d" : "%d", ${a}[i]);
    }
    printf("\\n${L}=%d\\n", ${mid}(@6@, ${n}));
    return 0;
}
""",
    sites=[("off_by_one", "i < ${n}", "i < ${n} - 1"), ("wrong_operator", "${CMP}", "${RCMP}"),
           ("missing_semicolon", ";", ""), ("wrong_operator", "+", "-"),
           ("missing_return", "    return ${s} / 2;\n", ""), ("off_by_one", "i < ${n}", "i < ${n} - 1"),
           ("undeclared_identifier", "${a}", "${a_typo}")],
    describe=lambda c: (
        f"sorts a list of numbers in {c['DIR']} order and prints it with its median",
        "the first integer is N (1 <= N <= 1000), followed by N integers between 0 and 1000000, "
        "separated by whitespace",
        f"two lines: the N integers sorted in {c['DIR']} order, separated by single spaces; then "
        f"`{c['L']}=M`, where M is the middle value of the sorted list when N is odd, and the "
        f"mean of the two middle values rounded down when N is even"),
    gen=lambda rng, c: (
        [_seq_input(rng.randint(2, 25), lambda: rng.randint(0, rng.choice([9, 100, 1_000_000])))
         for _ in range(6)],
        ["1\n42\n", "3\n3 2 1\n", "2\n1 4\n", "6\n5 5 0 5 1000000 5\n", "4\n9 1 8 2\n",
         _seq_input(1000, lambda: rng.randint(0, 1_000_000))]),
    run=_median_run,
)


def _matrix_run(c, inp):
    v = _ints(inp)
    rows, cols = v[:2]
    m = [v[2 + r * cols:2 + (r + 1) * cols] for r in range(rows)]
    row_sums = " ".join(str(sum(row)) for row in m)
    col_sums = " ".join(str(sum(row[j] for row in m)) for j in range(cols))
    return f"{c['P1']}: {row_sums}\n{c['P2']}: {col_sums}\n"


def _matrix_input(rng, rows, cols, lo=-99, hi=99) -> str:
    return f"{rows} {cols}\n" + "".join(
        " ".join(str(rng.randint(lo, hi)) for _ in range(cols)) + "\n" for _ in range(rows))


T_MATRIX = CProgramTemplate(
    key="matrix_sums",
    files=["matrix", "grid_sums", "table_totals", "margins"],
    names={"rowsum": ["row_sum", "sum_row", "row_total", "rsum"], "m": ["m", "grid", "mat", "cells"],
           "r": ["r", "row", "which", "ri"], "cols": ["cols", "width", "ncols", "nc"],
           "s": ["s", "acc", "total", "t"], "j": ["j", "col", "k", "cj"],
           "i": ["i", "y", "ii", "rix"], "rows": ["rows", "height", "nrows", "nr"],
           "csum": ["csum", "col_sums", "colsum", "ctot"], "MAXD": ["MAXD", "DIM", "MAX_DIM", "CAPD"]},
    consts=lambda rng: {"D": rng.choice([8, 10, 12, 16, 20]),
                        "P1": rng.choice(["rows", "row sums", "by row"]),
                        "P2": rng.choice(["cols", "column sums", "by column"])},
    source="""\
#include <stdio.h>

#define ${MAXD} ${D}

static long long ${rowsum}(int ${m}[][${MAXD}], int ${r}, int ${cols}) {
    long long ${s} = 0;
    for (int ${j} = 0; @0@; ${j}++) {
        ${s} @1@ ${m}[${r}][${j}];
    }
@2@}

int main(void) {
    static int ${m}[${MAXD}][${MAXD}];
    long long ${csum}[${MAXD}] = {0};
    int ${rows}, ${cols};
    if (scanf("%d %d", &${rows}, &${cols}) != 2 || ${rows} < 1 || ${cols} < 1
            || ${rows} > ${MAXD} || ${cols} > ${MAXD}) {
        return 1;
    }
    for (int ${i} = 0; ${i} < ${rows}; ${i}++) {
        for (int ${j} = 0; ${j} < ${cols}; ${j}++) {
            if (scanf("%d", &${m}[${i}][${j}]) != 1) {
                return 1;
            }
            ${csum}[${j}] @3@ ${m}[${i}][${j}]@4@
        }
    }
    printf("${P1}:");
    for (int ${i} = 0; @5@; ${i}++) {
        printf(" %lld", ${rowsum}(${m}, ${i}, ${cols}));
    }
    printf("\\n${P2}:");
    for (int ${j} = 0; ${j} < ${cols}; ${j}++) {
        printf(" %lld", @6@[${j}]);
    }
    printf("\\n");
    return 0;
}
""",
    sites=[("off_by_one", "${j} < ${cols}", "${j} < ${cols} - 1"), ("wrong_operator", "+=", "-="),
           ("missing_return", "    return ${s};\n", ""), ("wrong_operator", "+=", "="),
           ("missing_semicolon", ";", ""), ("off_by_one", "${i} < ${rows}", "${i} < ${rows} - 1"),
           ("undeclared_identifier", "${csum}", "${csum_typo}")],
    describe=lambda c: (
        "prints the row sums and the column sums of a matrix of integers",
        f"two integers R and C (1 <= R, C <= {c['D']}), then the R*C entries of the matrix row "
        f"by row (each fits in an `int`), separated by whitespace",
        f"two lines: `{c['P1']}:` followed by the R row sums (top to bottom), then `{c['P2']}:` "
        f"followed by the C column sums (left to right), each sum preceded by one space"),
    gen=lambda rng, c: (
        [_matrix_input(rng, rng.randint(2, c["D"]), rng.randint(2, c["D"])) for _ in range(6)],
        ["1 1\n7\n", "1 1\n-5\n", "2 3\n1 2 3\n4 5 6\n", "3 1\n-1\n-2\n-3\n",
         _matrix_input(rng, c["D"], c["D"], 2_000_000_000, 2_147_483_647),
         "2 2\n-5 5\n5 -5\n"]),
    run=_matrix_run,
)


def _collatz_steps(x: int, limit: int) -> int:
    steps = 0
    while x != 1 and steps < limit:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def _collatz_run(c, inp):
    v = _ints(inp)
    xs = v[1:1 + v[0]]
    steps = [_collatz_steps(x, c["LV"]) for x in xs]
    lines = [f"{x}{c['SEP']}{s}\n" for x, s in zip(xs, steps)]
    return "".join(lines) + f"{c['L']}={xs[steps.index(max(steps))]}\n"


def _past_limit(limit: int) -> int:
    """The smallest number whose Collatz chain is longer than ``limit`` steps."""
    return next(x for x in range(1, 10 ** 6) if _collatz_steps(x, limit + 1) > limit)


T_COLLATZ = CProgramTemplate(
    key="collatz_steps",
    files=["collatz", "hailstone", "three_n", "chains"],
    names={"steps": ["steps", "collatz_len", "chain_len", "stopping_time"],
           "v": ["v", "cur", "val", "z"], "cnt": ["cnt", "k", "hops", "moves"],
           "n": ["n", "count", "num", "qty"], "best": ["best", "argmax", "winner", "champ"],
           "bestv": ["best_steps", "most", "record", "top"], "x": ["x", "start", "seed_v", "input"],
           "s": ["s", "len", "took", "used"], "LIM": ["LIMIT", "CAP", "MAX_STEPS", "BOUND"]},
    consts=lambda rng: {"LV": rng.choice([60, 100, 150, 200]), "SEP": rng.choice([": ", " -> ", " "]),
                        "L": rng.choice(["longest", "max_chain", "slowest"])},
    source="""\
#include <stdio.h>

#define ${LIM} ${LV}

static int ${steps}(long long ${v}) {
    int ${cnt} = 0;
    while (${v} @0@ 1 && @1@) {
        if (${v} % 2 == 0) {
            ${v} /= 2;
        } else {
            ${v} = 3 * ${v} @2@ 1;
        }
        ${cnt}++;
    }
@3@}

int main(void) {
    int ${n};
    if (scanf("%d", &${n}) != 1 || ${n} < 1) {
        return 1;
    }
    long long ${best} = 0;
    int ${bestv} = -1;
    for (int i = 0; @4@; i++) {
        long long ${x};
        if (scanf("%lld", &${x}) != 1 || ${x} < 1) {
            return 1;
        }
        int ${s} = ${steps}(${x});
        printf("%lld${SEP}%d\\n", ${x}, ${s});
        if (${s} @5@ ${bestv}) {
            ${bestv} = ${s};
            ${best} = ${x}@6@
        }
    }
    printf("${L}=%lld\\n", @7@);
    return 0;
}
""",
    sites=[("wrong_operator", "!=", "=="), ("off_by_one", "${cnt} < ${LIM}", "${cnt} <= ${LIM}"),
           ("wrong_operator", "+", "-"), ("missing_return", "    return ${cnt};\n", ""),
           ("off_by_one", "i < ${n}", "i < ${n} - 1"), ("wrong_operator", ">", ">="),
           ("missing_semicolon", ";", ""), ("undeclared_identifier", "${best}", "${best_typo}")],
    describe=lambda c: (
        f"counts the Collatz steps of numbers, capped at {c['LV']}",
        "the first integer is N (N >= 1), followed by N integers between 1 and 1000000, "
        "separated by whitespace",
        f"one line `X{c['SEP']}S` per input number X, in order, then one line `{c['L']}=X` naming "
        f"the first input number with the largest S. S is the number of steps that take X to 1, "
        f"a step turning x into x/2 when x is even and into 3*x+1 when x is odd (1 itself takes "
        f"0 steps); when X needs more than {c['LV']} steps, S is {c['LV']}"),
    gen=lambda rng, c: (
        [_seq_input(rng.randint(2, 10), lambda: rng.randint(1, rng.choice([50, 5000, 1_000_000])))
         for _ in range(6)],
        ["1\n1\n", "3\n12 13 5\n", f"2\n{_past_limit(c['LV'])} 1\n", "4\n2 4 8 16\n",
         f"3\n1000000 {_past_limit(c['LV'] // 2)} 3\n", "2\n7 9\n"]),
    run=_collatz_run,
)


def _bracket_depth(line: str) -> int:
    stack, depth = [], 0
    for ch in line:
        if ch in "([{":
            stack.append(ch)
            depth = max(depth, len(stack))
        elif ch in ")]}" and (not stack or stack.pop() != "([{"[")]}".index(ch)]):
            return -1
    return -1 if stack else depth


def _brackets_run(c, inp):
    out = []
    for line in inp.split("\n")[:-1]:
        d = _bracket_depth(line)
        out.append(f"{c['YES']} {d}\n" if d >= 0 else f"{c['NO']}\n")
    return "".join(out)


def _balanced(rng, budget: int) -> str:
    """A random balanced bracket sequence (with a few other characters) of about ``budget`` characters."""
    out = ""
    while len(out) < budget and rng.random() < 0.8:
        o, cl = rng.choice(["()", "[]", "{}"])
        out += o + _balanced(rng, (budget - len(out)) // 2) + cl + rng.choice(["", "", "x", " y", "a1"])
    return out


def _brackets_input(rng) -> str:
    """A few non-empty lines of brackets, about half of them broken by one changed character."""
    lines = []
    for _ in range(rng.randint(3, 7)):
        s = _balanced(rng, rng.randint(4, 40))
        if s and rng.random() < 0.5:
            k = rng.randrange(len(s))
            s = s[:k] + rng.choice(["", ")", "(", "]", "{", "}"]) + s[k + 1:]
        lines.append(s[:200] or "z")
    return "".join(line + "\n" for line in lines)


T_BRACKETS = CProgramTemplate(
    key="bracket_balance",
    files=["brackets", "balance", "nesting_check", "parens"],
    names={"check": ["depth_of", "check_line", "nesting", "balance"],
           "s": ["s", "text", "str1", "src"], "len": ["len", "n", "size", "count"],
           "stack": ["stack", "pending", "opened", "st"], "top": ["top", "sp", "height", "used"],
           "depth": ["depth", "deepest", "max_d", "level"], "c": ["c", "ch", "sym", "tok"],
           "opener": ["opener", "open_of", "partner", "mate"], "line": ["line", "buf", "row", "input_l"],
           "d": ["d", "res", "result", "ans"], "CAP": ["CAP", "LINE_CAP", "MAXLINE", "WIDTH"]},
    consts=lambda rng: dict(zip(("YES", "NO"), rng.choice(
        [("OK", "BAD"), ("balanced", "unbalanced"), ("yes", "no"), ("good", "broken")]))),
    source="""\
#include <stdio.h>
#include <string.h>

#define ${CAP} 256

static char ${opener}(char ${c}) {
    if (${c} == ')') {
        return '(';
    }
    if (${c} == ']') {
        return '[';
    }
    return '{';
}

static int ${check}(const char *${s}, int ${len}) {
    char ${stack}[${CAP}];
    int ${top} = 0, ${depth} = 0;
    for (int i = 0; @0@; i++) {
        char ${c} = ${s}[i];
        if (${c} == '(' || ${c} == '[' || ${c} == '{') {
            @1@[${top}++] = ${c};
            if (${top} @2@ ${depth}) {
                ${depth} = ${top}@3@
            }
        } else if (${c} == ')' || ${c} == ']' || ${c} == '}') {
            if (${top} == 0 || ${stack}[--${top}] @4@ ${opener}(${c})) {
                return -1;
            }
        }
    }
@5@}

int main(void) {
    char ${line}[${CAP}];
    while (fgets(${line}, sizeof ${line}, stdin) != NULL) {
        int ${len} = (int)strcspn(${line}, "\\n");
        int ${d} = ${check}(${line}, ${len});
        if (${d} < 0) {
            printf("${NO}\\n");
        } else {
            printf("${YES} %d\\n", ${d});
        }
    }
    return 0;
}
""",
    sites=[("off_by_one", "i < ${len}", "i < ${len} - 1"),
           ("undeclared_identifier", "${stack}", "${stack_typo}"), ("wrong_operator", ">", "<"),
           ("missing_semicolon", ";", ""), ("wrong_operator", "!=", "=="),
           ("missing_return", "    return ${top} == 0 ? ${depth} : -1;\n", "")],
    describe=lambda c: (
        "checks, line by line, whether the brackets of a text are balanced",
        "lines of printable ASCII text (each at most 200 characters), up to the end of the input",
        f"one line per input line, in order: `{c['YES']} D` when the brackets `()`, `[]` and `{{}}` "
        f"in it are balanced (every closing bracket closes the most recent unclosed opening bracket "
        f"of the same kind, and none is left open; other characters are ignored), D being the "
        f"deepest nesting (0 for a line without brackets); otherwise `{c['NO']}`"),
    gen=lambda rng, c: (
        [_brackets_input(rng) for _ in range(6)],
        ["()\n", ")(\n(\n", "([)]\n[(])\n", "\nplain text\n",
         "(" * 120 + ")" * 80 + "\n" + "{" * 100 + "}" * 100 + "\n", "x{[()()]}y\n((]\na(b)c]\n"]),
    run=_brackets_run,
)

HELDOUT_TEMPLATES = [T_GCD, T_RLE, T_MEDIAN, T_MATRIX, T_COLLATZ, T_BRACKETS]


def render(tmpl: CProgramTemplate, names: dict, consts: dict, bugs: tuple[int, ...] = ()) -> str:
    """The program with the bug sites in ``bugs`` broken and every other site correct."""
    src = tmpl.source
    for i, (_kind, good, bad) in enumerate(tmpl.sites):
        src = src.replace(f"@{i}@", bad if i in bugs else good)
    assert "@" not in src
    return Template(src).substitute({**names, **{k: str(v) for k, v in consts.items()}})


TEST_BODY = r'''
import subprocess
from pathlib import Path

import pytest

WORKDIR = Path.cwd()


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    exe = tmp_path_factory.mktemp("build") / "prog"
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Werror", "-O2", "-o", str(exe),
                        str(WORKDIR / CONFIG["source"])], capture_output=True, timeout=120)
    assert r.returncode == 0, "compilation failed:\n" + r.stderr.decode("utf-8", "replace")[-3000:]
    return exe


def run(exe, stdin):
    r = subprocess.run([str(exe)], input=stdin.encode(), capture_output=True, timeout=5)
    assert r.returncode == 0, f"exit status {r.returncode} for input {stdin[:200]!r}"
    return r.stdout.decode("utf-8", "replace")


def _cases(mark):
    return [pytest.param(c["in"], c["out"], id=f"{mark}{i}")
            for i, c in enumerate(CONFIG["cases"]) if c["mark"] == mark]


@pytest.mark.core
def test_compiles_cleanly(binary):
    assert binary.is_file()


@pytest.mark.core
@pytest.mark.parametrize("stdin,expected", _cases("core"))
def test_unseen_inputs(binary, stdin, expected):
    assert run(binary, stdin).rstrip("\n") == expected.rstrip("\n")


@pytest.mark.boundary
@pytest.mark.parametrize("stdin,expected", _cases("boundary"))
def test_edge_cases(binary, stdin, expected):
    assert run(binary, stdin).rstrip("\n") == expected.rstrip("\n")
'''

LEVEL_3_TESTS = r'''

@pytest.mark.core
def test_batch_output_saved():
    saved = WORKDIR / CONFIG["batch_output"]
    assert saved.is_file(), CONFIG["batch_output"] + " was not created"
    assert saved.read_text(errors="replace").rstrip("\n") == CONFIG["batch_expected"].rstrip("\n")

'''

CHECK_SCRIPT = """\
#!/bin/bash
# Builds PROG from SRC and runs it on every cases/NAME.in, comparing what it prints with cases/NAME.out.
gcc -std=c11 -Wall -Werror -O2 -o PROG SRC || { echo "compilation failed"; exit 1; }
failed=0
for input in cases/*.in; do
    expected="${input%.in}.out"
    if ./PROG < "$input" | diff -q - "$expected" > /dev/null; then
        echo "PASS $input"
    else
        echo "FAIL $input: expected (<) vs printed (>):"
        ./PROG < "$input" | diff "$expected" - | head -n 8
        failed=1
    fi
done
exit $failed
"""


def bug_location(buggy: str, fixed: str) -> tuple[int, str]:
    """(line number, enclosing function) of the first line where ``buggy`` differs from ``fixed``."""
    bad, good = buggy.splitlines(), fixed.splitlines()
    at = next(i for i, (b, g) in enumerate(zip(bad, good)) if b != g)
    header = next(line for line in reversed(bad[:at + 1]) if re.match(r"\w.*\(.*\{$", line))
    return at + 1, re.search(r"(\w+)\(", header).group(1)


class CFixBug(Family):
    name = "c-fix-bug"
    category = "c"
    description = ("Fix the single injected bug (off-by-one, wrong operator, missing semicolon, "
                   "undeclared identifier, missing return) in a small generated C program.")
    difficulty = "medium"
    train_templates = tuple(t.key for t in TEMPLATES)
    heldout_templates = tuple(t.key for t in HELDOUT_TEMPLATES)
    levels: ClassVar[dict[int, str]] = {
        1: "the instruction names the bug's line and function, and check.sh runs the program on the "
           "edge cases given in cases/ (so none is hidden); fewer unseen ordinary inputs",
        2: "the family as it always was: one bug, found from the description, an example and gcc",
        3: "two bugs (one stops compilation, one breaks the results), a working sibling program that "
           "must stay unchanged, and an extra step: save the output for batch_input.txt",
    }

    def build(self, rng: random.Random, seed: int, level: int) -> dict:
        kind = rng.choice(BUG_KINDS)
        tmpl = rng.choice(template_pool(seed, TEMPLATES, HELDOUT_TEMPLATES))
        names = {ph: rng.choice(pool) for ph, pool in tmpl.names.items()}
        used = set(names.values())
        for ph, name in list(names.items()):
            t = typo(name)
            names[ph + "_typo"] = t + "_x" if t in used else t
        consts = tmpl.consts(rng)
        sites = [i for i, s in enumerate(tmpl.sites) if s[0] == kind]
        bug_site = rng.choice(sites)
        fname = rng.choice(tmpl.files)
        src_path = f"{fname}.c"
        core, edge = tmpl.gen(rng, consts)
        # Every draw of level 2 is done; the other levels draw from their own generator.
        extra = random.Random(f"{self.name}@{level}:{seed}")
        bugs = (bug_site,) if level < 3 else (bug_site, self._second_bug(extra, tmpl, kind))
        fixed = render(tmpl, names, consts)
        buggy = render(tmpl, names, consts, bugs)
        example = core[0]
        unseen = core[1:3] if level == 1 else core[1:]
        cases = ([{"mark": "core", "in": i, "out": tmpl.run(consts, i)} for i in unseen]
                 + [{"mark": "boundary", "in": i, "out": tmpl.run(consts, i)} for i in edge])
        purpose, inp, out = tmpl.describe(consts)
        ex_out = tmpl.run(consts, example)
        if level == 1:
            line, func = bug_location(buggy, fixed)
            bug_text = (f"The program contains exactly one bug, at line {line} (in the function "
                        f"`{func}`): it either fails to compile or computes wrong results.")
        elif level == 3:
            bug_text = ("The program contains exactly two bugs: one makes it fail to compile, the "
                        "other makes it compute wrong results.")
        else:
            bug_text = "The program contains exactly one bug: it either fails to compile or computes wrong results."
        instruction = f"""\
`{src_path}` is a small C program that {purpose}.

- Input (standard input): {inp}.
- Output (standard output): {out}.

For example, for the input

{md_code(example.rstrip(chr(10)) or '(an empty line)')}

it must print

{md_code(ex_out.rstrip(chr(10)))}

{bug_text}
Fix `{src_path}` in place so that it compiles without errors or warnings with

    gcc -std=c11 -Wall -Werror -O2 -o {fname} {src_path}

and behaves exactly as described above for every valid input (it will be run on other inputs).
Keep the program's input and output format unchanged.
"""
        solution = "#!/bin/bash\nset -e\n" + heredoc(src_path, fixed)
        config = {"source": src_path, "cases": cases}
        workspace = {src_path: buggy, "example_input.txt": example}
        body, executable = TEST_BODY, ()
        tags = ["c", "debugging", "gcc", kind, tmpl.key]
        if level == 1:
            workspace["check.sh"] = CHECK_SCRIPT.replace("PROG", fname).replace("SRC", src_path)
            executable = ("check.sh",)
            shown = [("example", example)] + [(f"edge_{k + 1}", i) for k, i in enumerate(edge)]
            for name, text in shown:
                workspace[f"cases/{name}.in"] = text
                workspace[f"cases/{name}.out"] = tmpl.run(consts, text)
            instruction += ("\n`bash check.sh` builds the program and runs it on every input in `cases/` "
                            "(`NAME.in`), comparing what it prints with the expected output (`NAME.out`). "
                            "The program will be checked on these cases and on a few other ordinary "
                            "inputs.\n")
        elif level == 3:
            keep, keep_text = self._sibling(extra, tmpl)
            batch = tmpl.gen(extra, consts)[0][0]
            workspace.update({keep: keep_text, "batch_input.txt": batch})
            config.update(batch_output="batch_output.txt", batch_expected=tmpl.run(consts, batch),
                          left_alone=left_alone({keep: keep_text}))
            body += LEVEL_3_TESTS + LEFT_ALONE_TEST
            solution += (f"gcc -std=c11 -Wall -Werror -O2 -o {fname} {src_path}\n"
                         f"./{fname} < batch_input.txt > batch_output.txt\n")
            tags.append(tmpl.sites[bugs[1]][0])
            instruction += (f"\nThen build it with that command, run it on the input in `batch_input.txt` "
                            f"and save what it prints in `batch_output.txt`.\n\n`{keep}` is another program "
                            f"of the same project; it works as intended: leave it unchanged.\n")
        return {
            "instruction": instruction,
            "workspace": files(workspace, executable),
            "tests": files({"test_program.py": hidden_test_source(config, body)}),
            "solution": solution,
            "tags": tags,
            "template": tmpl.key,
        }

    @staticmethod
    def _second_bug(extra: random.Random, tmpl: CProgramTemplate, kind: str) -> int:
        """A bug site of the other class than ``kind``: a compile error pairs with a wrong result."""
        other = [i for i, s in enumerate(tmpl.sites) if (s[0] in COMPILE_KINDS) != (kind in COMPILE_KINDS)]
        return extra.choice(other)

    @staticmethod
    def _sibling(extra: random.Random, tmpl: CProgramTemplate) -> tuple[str, str]:
        """A working program of another template of the same pool (train or held-out), with its
        own names: ``(path, source)``."""
        pool = HELDOUT_TEMPLATES if tmpl in HELDOUT_TEMPLATES else TEMPLATES
        sib = extra.choice([t for t in pool if t is not tmpl])
        names = {ph: extra.choice(pool) for ph, pool in sib.names.items()}
        return extra.choice(sib.files) + ".c", render(sib, names, sib.consts(extra))


FAMILY = CFixBug()
