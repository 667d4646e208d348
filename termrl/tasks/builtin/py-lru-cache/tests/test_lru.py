import importlib
import json
import os
import random
import subprocess
import sys
import textwrap
from collections import OrderedDict

import pytest

sys.path.insert(0, os.getcwd())


# --- in the agent's own interpreter -------------------------------------------
# What a proxy cannot show the test (time per operation inside the agent's process, objects
# the agent's code keeps) is measured by a short script in a fresh interpreter (cwd = workdir)
# that prints plain JSON; the test judges it here.
MARK = "@@TERMRL-RESULT@@"
CHILD_PRELUDE = r'''
import json as _json, os, sys
_out, _dumps, _type, _len, _list = sys.stdout, _json.dumps, type, len, list
DATA = _json.loads(sys.stdin.read())
_RESULTS = []
emit = _RESULTS.append
sys.path.insert(0, os.getcwd())
'''


def run_child(code, data=None, timeout=30):
    """Run CHILD_PRELUDE + code in a fresh interpreter in the workdir; return the emitted list."""
    src = CHILD_PRELUDE + textwrap.dedent(code) + "\n_out.write('\\n%s' + _dumps(_RESULTS) + '\\n')\n" % MARK
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    r = subprocess.run([sys.executable, "-I", "-c", src], input=json.dumps(data), capture_output=True,
                       text=True, cwd=os.getcwd(), timeout=timeout, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(MARK)]
    assert r.returncode == 0 and len(lines) == 1, (
        f"child failed (rc={r.returncode})\nstdout:\n{r.stdout[-1500:]}\nstderr:\n{r.stderr[-3000:]}")
    return json.loads(lines[0][len(MARK):])


def load(name):
    """The agent's module, imported afresh: every test starts from a clean module state."""
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def same(a, b):
    """Equal in type and value, recursively: True is not 1, 1.0 is not 1, a tuple is not a list."""
    if type(a) is not type(b):
        return False
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(same(ka, kb) and same(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if type(a) is float:
        return repr(a) == repr(b)
    return a == b


def replay(c, op):
    """Apply one operation to the agent's cache; the results the model's ``apply`` predicts."""
    name, args = op[0], op[1:]
    if name == "len":
        return [c.__len__(), len(c)]
    if name == "in":
        return [args[0] in c]
    if name == "stats":
        return [[c.hits, c.misses]]
    return [getattr(c, name)(*args)]


class Model:
    def __init__(self, cap):
        self.cap, self.d, self.hits, self.misses = cap, OrderedDict(), 0, 0

    def apply(self, op):
        name, args = op[0], op[1:]
        d = self.d
        if name == "get":
            key = args[0]
            default = args[1] if len(args) > 1 else None
            if key in d:
                self.hits += 1
                d.move_to_end(key)
                return [d[key]]
            self.misses += 1
            return [default]
        if name == "put":
            key, value = args
            if self.cap == 0:
                return [None]
            if key in d:
                d[key] = value
                d.move_to_end(key)
                return [None]
            d[key] = value
            return [d.popitem(last=False) if len(d) > self.cap else None]
        if name == "peek":
            return [d.get(args[0], args[1] if len(args) > 1 else None)]
        if name == "delete":
            present = args[0] in d
            d.pop(args[0], None)
            return [present]
        if name == "keys":
            return [list(d)]
        if name == "len":
            return [len(d), len(d)]
        if name == "in":
            return [args[0] in d]
        if name == "stats":
            return [[self.hits, self.misses]]
        if name == "resize":
            self.cap = args[0]
            ev = []
            while len(d) > self.cap:
                ev.append(d.popitem(last=False))
            return [ev]
        raise AssertionError(name)


def random_ops(rng, n, nkeys):
    ops = []
    for _ in range(n):
        k = rng.choice([f"k{rng.randrange(nkeys)}", rng.randrange(nkeys)])
        r = rng.random()
        if r < 0.35:
            ops.append(["put", k, rng.randint(1, 10 ** 6)])
        elif r < 0.6:
            ops.append(["get", k] + ([rng.choice(["dflt", -1, None])] if rng.random() < 0.4 else []))
        elif r < 0.67:
            ops.append(["peek", k] + (["pk"] if rng.random() < 0.5 else []))
        elif r < 0.74:
            ops.append(["delete", k])
        elif r < 0.8:
            ops.append(["in", k])
        elif r < 0.86:
            ops.append(["keys"])
        elif r < 0.9:
            ops.append(["len"])
        elif r < 0.95:
            ops.append(["stats"])
        else:
            ops.append(["resize", rng.randint(0, 8)])
    return ops


def run_scenarios(scenarios):
    lru = load("lru")
    for cap, ops in scenarios:
        c = lru.LRUCache(cap)
        m = Model(cap)
        for i, op in enumerate(ops):
            got, exp = replay(c, op), m.apply(op)
            assert len(got) == len(exp)
            for a, b in zip(got, exp):
                if not same(a, b):
                    pytest.fail(f"capacity {cap}: after ops {ops[:i + 1][-6:]} expected {b!r}, got {a!r}")


@pytest.mark.core
def test_random_workloads_match_model():
    rng = random.Random(1234)
    scenarios = [(rng.randint(1, 7), random_ops(rng, 250, rng.randint(3, 14))) for _ in range(40)]
    run_scenarios(scenarios)


@pytest.mark.core
def test_update_existing_key_never_evicts():
    ops = [["put", "p", 1], ["put", "q", 2], ["put", "r", 3], ["put", "p", 11], ["keys"],
           ["put", "s", 4], ["keys"], ["get", "q"], ["get", "r"], ["stats"], ["len"]]
    run_scenarios([(3, ops)])


@pytest.mark.boundary
def test_zero_capacity_and_resize_to_zero():
    ops0 = [["put", "a", 1], ["get", "a"], ["len"], ["in", "a"], ["keys"], ["stats"],
            ["resize", 2], ["put", "a", 1], ["put", "b", 2], ["put", "c", 3], ["keys"]]
    ops1 = [["put", 1, "x"], ["put", 2, "y"], ["put", 3, "z"], ["get", 1], ["resize", 0],
            ["len"], ["put", 4, "w"], ["keys"], ["resize", 1], ["put", 5, "v"], ["keys"]]
    run_scenarios([(0, ops0), (3, ops1)])


@pytest.mark.boundary
def test_falsy_values_and_defaults():
    ops = [["put", "z", 0], ["put", "n", None], ["put", "e", ""], ["get", "z", "D"],
           ["get", "n", "D"], ["peek", "e", "D"], ["delete", "n"], ["delete", "n"],
           ["get", "n", "D"], ["in", "e"], ["in", "n"], ["stats"], ["keys"]]
    run_scenarios([(5, ops)])


@pytest.mark.boundary
def test_negative_capacity_errors():
    lru = load("lru")
    with pytest.raises(ValueError):
        lru.LRUCache(-3)
    c = lru.LRUCache(2)
    c.put("a", 1)
    with pytest.raises(ValueError):
        c.resize(-1)
    assert same(c.keys(), ["a"])


@pytest.mark.core
def test_operations_are_constant_time():
    code = '''
    import time
    from lru import LRUCache
    n, cap = DATA
    c = LRUCache(cap)
    t0 = time.perf_counter()
    evicted = 0
    for i in range(n):
        if i % 3 == 2:
            c.get(i - cap // 2)
        elif c.put(i, i) is not None:
            evicted += 1
    emit([evicted, _len(c), c.hits, c.misses, time.perf_counter() - t0])
    '''
    n, cap = 300_000, 100_000
    try:
        got = run_child(code, [n, cap], timeout=12)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{n} operations did not finish in 12s; operations must be O(1)")
    evicted, size, hits, misses, elapsed = got[0]
    puts = n - n // 3
    assert size == cap and evicted == puts - cap
    assert hits + misses == n // 3 and hits > 0
    assert elapsed < 5.0, f"{n} operations took {elapsed:.2f}s; operations must be O(1)"
