import copy
import importlib
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.getcwd())


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


def ref_cw(m):
    m = [list(r) for r in m]
    out = []
    while m and m[0]:
        out += m.pop(0)
        m = [list(r) for r in zip(*m)][::-1]  # rotate remaining block counter-clockwise
    return out


def ref_order(m, clockwise=True):
    if clockwise:
        return ref_cw(m)
    return ref_cw([list(r) for r in zip(*m)]) if m and m[0] else []


def ref_fill(rows, cols, start=1, clockwise=True):
    idx = [[(r, c) for c in range(cols)] for r in range(rows)]
    grid = [[None] * cols for _ in range(rows)]
    for i, (r, c) in enumerate(ref_order(idx, clockwise)):
        grid[r][c] = start + i
    return grid


def check_all(cases, expected):
    """Call spiral.<name>(*args, **kwargs) for each case; expected: a value or
    ("raises", ExceptionClass)."""
    spiral = load("spiral")
    fns = {name: getattr(spiral, name) for name in {name for name, _, _ in cases}}
    assert len(cases) == len(expected)
    for case, e in zip(cases, expected):
        name, args, kwargs = copy.deepcopy(case)  # a copy per call: each case gets its own arguments
        if isinstance(e, tuple) and e and e[0] == "raises":
            with pytest.raises(e[1]):
                got = fns[name](*args, **kwargs)
                pytest.fail(f"input {case!r}: expected {e[1].__name__}, got {got!r}")
        else:
            got = fns[name](*args, **kwargs)
            assert same(got, e), f"input {case!r}: expected {e!r}, got {got!r}"


def rand_matrix(rng, r, c):
    return [[rng.randint(-99, 999) for _ in range(c)] for _ in range(r)]


@pytest.mark.core
def test_spiral_order_random_shapes():
    rng = random.Random(8)
    cases, expected = [], []
    for r in range(1, 10):
        for c in range(1, 10):
            m = rand_matrix(rng, r, c)
            for cw in (True, False):
                cases.append(("spiral_order", [m], {"clockwise": cw}))
                expected.append(ref_order(m, cw))
    check_all(cases, expected)


@pytest.mark.core
def test_spiral_fill_shapes_and_start():
    rng = random.Random(81)
    cases, expected = [], []
    for r in range(0, 8):
        for c in range(0, 8):
            start = rng.randint(-50, 50)
            for cw in (True, False):
                cases.append(("spiral_fill", [r, c], {"start": start, "clockwise": cw}))
                expected.append(ref_fill(r, c, start, cw))
    cases.append(("spiral_fill", [5, 6], {}))
    expected.append(ref_fill(5, 6))
    check_all(cases, expected)


@pytest.mark.boundary
def test_degenerate_matrices():
    cases = [
        ("spiral_order", [[]], {}),
        ("spiral_order", [[[], [], []]], {}),
        ("spiral_order", [[[], []]], {"clockwise": False}),
        ("spiral_order", [[["x"]]], {}),
        ("spiral_order", [[[1, 2, 3, 4, 5]]], {"clockwise": False}),
        ("spiral_order", [[[1], [2], [3], [4]]], {}),
        ("spiral_order", [[[1], [2], [3], [4]]], {"clockwise": False}),
        ("spiral_order", [[["a", None, 2.5], [True, "b", (1, 2)]]], {}),
        ("spiral_fill", [0, 5], {}),
        ("spiral_fill", [3, 0], {}),
        ("spiral_fill", [1, 1], {"start": 41}),
    ]
    expected = [[], [], [], ["x"], [1, 2, 3, 4, 5], [1, 2, 3, 4],
                [1, 2, 3, 4], ["a", None, 2.5, (1, 2), "b", True], [],
                [[], [], []], [[41]]]
    check_all(cases, expected)


@pytest.mark.boundary
def test_errors():
    cases = [
        ("spiral_order", [[[1, 2], [3, 4], [5]]], {}),
        ("spiral_order", [[[1], [2, 3]]], {"clockwise": False}),
        ("spiral_order", [[[], [1]]], {}),
        ("spiral_fill", [-1, 3], {}),
        ("spiral_fill", [2, -4], {}),
    ]
    check_all(cases, [("raises", ValueError)] * len(cases))


@pytest.mark.boundary
def test_input_not_modified_and_new_list():
    spiral = load("spiral")
    m = [[1, 2, 3], [4, 5, 6]]
    r1 = spiral.spiral_order(m)
    r2 = spiral.spiral_order(m, clockwise=False)
    # new lists, not ones the module keeps or shares: only the agent's own interpreter shows it
    code = '''
    import spiral
    m = [[1, 2, 3], [4, 5, 6]]
    r1 = spiral.spiral_order(m)
    r2 = spiral.spiral_order(m, clockwise=False)
    emit(r1 is not m and r1 is not m[0])
    r1.append(99)
    r3 = spiral.spiral_order(m)
    emit([_type(r3).__name__, r3])
    g = spiral.spiral_fill(3, 3)
    g[0][0] = 100
    emit([_type(g[1]).__name__, g[1]])
    '''
    new_list, again, row = run_child(code)
    got = [r1, r2, m, new_list, again, row]
    exp = [[1, 2, 3, 6, 5, 4], [1, 4, 5, 6, 3, 2], [[1, 2, 3], [4, 5, 6]], True,
           ["list", [1, 2, 3, 6, 5, 4]], ["list", [8, 9, 4]]]
    assert same(got, exp), got
