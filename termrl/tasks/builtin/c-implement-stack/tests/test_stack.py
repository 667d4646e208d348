import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

WS = Path.cwd()
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")

HEADER = r"""
#ifndef STACK_H
#define STACK_H
#include <stddef.h>
typedef struct Stack Stack;
Stack *stack_new(void);
void stack_free(Stack *s);
int stack_push(Stack *s, long value);
int stack_pop(Stack *s, long *out);
int stack_peek(const Stack *s, long *out);
size_t stack_size(const Stack *s);
int stack_min(const Stack *s, long *out);
void stack_clear(Stack *s);
Stack *stack_clone(const Stack *s);
#endif
"""

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stack.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static long live;
static int failing;

void *__wrap_malloc(size_t n) {
    void *p;
    if (failing) return NULL;
    p = __real_malloc(n);
    if (p) live++;
    return p;
}
void *__wrap_calloc(size_t n, size_t m) {
    void *p;
    if (failing) return NULL;
    p = __real_calloc(n, m);
    if (p) live++;
    return p;
}
void *__wrap_realloc(void *p, size_t n) {
    void *q;
    if (p == NULL) return __wrap_malloc(n);
    if (n == 0) { __real_free(p); live--; return NULL; }
    if (failing) return NULL;
    q = __real_realloc(p, n);
    return q;
}
void __wrap_free(void *p) {
    if (p) { live--; __real_free(p); }
}

#define MAXS 64
static Stack *st[MAXS];
static int nst;

static int add(Stack *s) { if (!s) return -1; st[nst] = s; return nst++; }

int main(void) {
    char cmd[32];
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    while (scanf("%31s", cmd) == 1) {
        int i = 0; long v = 0;
        if (!strcmp(cmd, "new") || !strcmp(cmd, "fnew")) {
            failing = cmd[0] == 'f';
            int k = add(stack_new());
            failing = 0;
            if (k < 0) puts("null"); else printf("s%d\n", k);
            continue;
        }
        if (!strcmp(cmd, "live")) { printf("live %ld\n", live); continue; }
        if (scanf("%d", &i) != 1 || i < 0 || i >= nst) { puts("bad"); return 3; }
        if (!strcmp(cmd, "push") || !strcmp(cmd, "fpush")) {
            if (scanf("%ld", &v) != 1) return 3;
            failing = cmd[0] == 'f';
            int rc = stack_push(st[i], v);
            failing = 0;
            printf("%d\n", rc);
        } else if (!strcmp(cmd, "pop")) {
            if (stack_pop(st[i], &v) == 0) printf("%ld\n", v); else puts("empty");
        } else if (!strcmp(cmd, "popnull")) {
            printf("%d\n", stack_pop(st[i], NULL));
        } else if (!strcmp(cmd, "peek")) {
            v = 12345;
            if (stack_peek(st[i], &v) == 0) printf("%ld\n", v); else printf("empty %ld\n", v);
        } else if (!strcmp(cmd, "min")) {
            v = 54321;
            if (stack_min(st[i], &v) == 0) printf("%ld\n", v); else printf("empty %ld\n", v);
        } else if (!strcmp(cmd, "size")) {
            printf("%zu\n", stack_size(st[i]));
        } else if (!strcmp(cmd, "clear")) {
            stack_clear(st[i]);
        } else if (!strcmp(cmd, "clone") || !strcmp(cmd, "fclone")) {
            failing = cmd[0] == 'f';
            int k = add(stack_clone(st[i]));
            failing = 0;
            if (k < 0) puts("null"); else printf("s%d\n", k);
        } else if (!strcmp(cmd, "free")) {
            stack_free(st[i]); st[i] = NULL;
        } else { puts("bad"); return 3; }
    }
    stack_free(NULL);
    printf("end %ld\n", live);
    return 0;
}
"""


def build(d, sanitize):
    shutil.copy(WS / "stack.c", d / "stack.c")
    (d / "stack.h").write_text(HEADER)
    (d / "driver.c").write_text(DRIVER)
    san = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-O1", "-g"] if sanitize else ["-O2"]
    wrap = ["-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free"]
    r = subprocess.run(["gcc", "-std=c11", "-Wall", *san, "-c", "stack.c", "-o", "stack.o"], cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["gcc", "-std=c11", *san, "driver.c", "stack.o", *wrap, "-o", "driver"], cwd=d,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return d / "driver"


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    nm = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-O2", "-c", str(WS / "stack.c"), "-o",
                         str(tmp_path_factory.mktemp("obj") / "s.o")], capture_output=True, text=True, timeout=60)
    assert nm.returncode == 0, nm.stderr
    bins = [build(tmp_path_factory.mktemp("plain"), False)]
    d = tmp_path_factory.mktemp("probe")
    (d / "p.c").write_text("int main(void){return 0;}\n")
    if subprocess.run(["gcc", "-fsanitize=address,undefined", "p.c", "-o", "p"], cwd=d,
                      capture_output=True, timeout=60).returncode == 0 and \
            subprocess.run([str(d / "p")], capture_output=True, env=ENV, timeout=10).returncode == 0:
        bins.append(build(tmp_path_factory.mktemp("asan"), True))
    return bins


def simulate(out, cmds):
    """Check driver output OUT for CMDS; pushes under allocation failure may succeed or fail."""
    stacks = []
    it = iter(out)
    for c in cmds:
        p = c.split()
        op = p[0]
        if op in ("new", "fnew", "clone", "fclone"):
            got = next(it)
            if op in ("new", "clone"):
                assert got == f"s{len(stacks)}", (c, got)
            if got == "null":
                continue
            assert got == f"s{len(stacks)}", (c, got)
            stacks.append([] if op.endswith("new") else list(stacks[int(p[1])]))
            continue
        if op == "live":
            next(it)
            continue
        s = stacks[int(p[1])]
        if op == "push":
            assert next(it) == "0", c
            s.append(int(p[2]))
        elif op == "fpush":
            got = next(it)
            assert got in ("0", "-1"), (c, got)
            if got == "0":
                s.append(int(p[2]))
        elif op == "pop":
            assert next(it) == (str(s.pop()) if s else "empty"), c
        elif op == "popnull":
            assert next(it) == ("0" if s else "-1"), c
            if s:
                s.pop()
        elif op == "peek":
            assert next(it) == (str(s[-1]) if s else "empty 12345"), c
        elif op == "min":
            assert next(it) == (str(min(s)) if s else "empty 54321"), c
        elif op == "size":
            assert next(it) == str(len(s)), c
        elif op == "clear":
            s.clear()
        elif op == "free":
            stacks[int(p[1])] = None
    rest = list(it)
    assert len(rest) == 1 and rest[0].startswith("end "), rest
    return int(rest[0].split()[1])


def check(drivers, cmds, expect_live=None):
    for b in drivers:
        r = subprocess.run([str(b)], input="\n".join(cmds) + "\n", capture_output=True, text=True,
                           timeout=20, env=ENV)
        assert r.returncode == 0, (b.parent.name, r.stderr[-2000:])
        live = simulate(r.stdout.splitlines(), cmds)
        if expect_live is not None:
            assert live == expect_live, f"{b.parent.name}: {live} blocks still allocated at the end"


def rand_ops(rng, n, idx):
    ops = []
    for _ in range(n):
        x = rng.random()
        if x < 0.45:
            ops.append(f"push {idx} {rng.randint(-10**12, 10**12)}")
        elif x < 0.65:
            ops.append(f"pop {idx}")
        elif x < 0.75:
            ops.append(f"min {idx}")
        elif x < 0.85:
            ops.append(f"peek {idx}")
        elif x < 0.95:
            ops.append(f"size {idx}")
        elif x < 0.97:
            ops.append(f"popnull {idx}")
        else:
            ops.append(f"clear {idx}")
    return ops


@pytest.mark.core
def test_random_operations_and_no_leaks(drivers):
    rng = random.Random(8080)
    cmds = ["new", "new"]
    for _ in range(20):
        cmds += rand_ops(rng, 300, rng.randint(0, 1))
    cmds += [f"push 0 {rng.randint(-99, 99)}" for _ in range(5000)]
    cmds += ["min 0", "size 0", "peek 0"] + [f"pop 0" for _ in range(5100)]
    cmds += ["free 0", "free 1"]
    check(drivers, cmds, expect_live=0)


@pytest.mark.core
def test_clone_is_independent(drivers):
    rng = random.Random(77)
    cmds = ["new"] + [f"push 0 {rng.randint(-1000, 1000)}" for _ in range(1000)]
    cmds += ["clone 0"] + rand_ops(rng, 2000, 1) + rand_ops(rng, 2000, 0)
    cmds += ["clone 1", "clear 1", "size 2", "min 2", "peek 2"] + [f"pop 2" for _ in range(50)]
    cmds += ["new", "clone 3", "size 4", "push 4 5", "size 3", "min 4"]
    cmds += [f"free {i}" for i in range(5)]
    check(drivers, cmds, expect_live=0)


@pytest.mark.core
def test_min_is_constant_time(drivers):
    rng = random.Random(5)
    n = 200000
    vals = [rng.randint(-10**15, 10**15) for _ in range(n)]
    cmds = ["new"] + [f"push 0 {v}" for v in vals]
    for _ in range(n):
        cmds += ["min 0", "pop 0"]
    cmds += ["free 0"]
    pref = []
    for v in vals:
        pref.append(v if not pref or v < pref[-1] else pref[-1])
    exp = ["s0"] + ["0"] * n
    for v, m in zip(reversed(vals), reversed(pref)):
        exp += [str(m), str(v)]
    exp.append("end 0")
    b = drivers[0]
    r = subprocess.run([str(b)], input="\n".join(cmds) + "\n", capture_output=True, text=True, timeout=5)
    assert r.returncode == 0
    assert r.stdout.splitlines() == exp


@pytest.mark.boundary
def test_empty_stack_behaviour(drivers):
    cmds = ["new", "pop 0", "peek 0", "min 0", "popnull 0", "size 0", "clear 0", "size 0",
            "push 0 -9223372036854775808", "push 0 9223372036854775807", "min 0", "peek 0",
            "popnull 0", "min 0", "pop 0", "pop 0", "clone 0", "size 1", "free 1", "free 0"]
    check(drivers, cmds, expect_live=0)


@pytest.mark.boundary
def test_allocation_failures(drivers):
    rng = random.Random(3)
    cmds = ["fnew", "new"] + [f"fpush 0 {rng.randint(-50, 50)}" for _ in range(5000)]
    cmds += ["size 0", "peek 0", "min 0"] + [f"push 0 {rng.randint(-50, 50)}" for _ in range(3000)]
    cmds += [f"fpush 0 {rng.randint(-50, 50)}" for _ in range(5000)]
    cmds += ["fclone 0", "size 0", "min 0"] + [f"pop 0" for _ in range(100)]
    cmds += ["clone 0"] + ["min 1", "size 1"] + [f"fpush 1 {rng.randint(-50, 50)}" for _ in range(500)]
    cmds += [f"pop 1" for _ in range(200)]
    cmds += ["free 0", "free 1"]
    check(drivers, cmds, expect_live=0)
    # a stack with no room left must report failure instead of pretending to push
    for b in drivers:
        r = subprocess.run([str(b)], input="new\n" + "fpush 0 1\n" * 200000, capture_output=True,
                           text=True, timeout=20, env=ENV)
        assert r.returncode == 0
        assert "-1" in r.stdout.splitlines(), "pushes never fail although no memory can be allocated"
