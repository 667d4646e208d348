import heapq
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
import toposort as m
for name, graph, args in DATA:
    g = {k: _tuple(v) if i % 3 == 1 else (set(v) if i % 3 == 2 else _list(v))
         for i, (k, v) in enumerate(graph)}
    before = _enc({k: sorted(v) for k, v in g.items()})
    try:
        res = {"ok": _enc(getattr(m, name)(g, *args))}
    except Exception as e:
        t = _type(e)
        res = {"exc": _str(t.__name__), "is": [n for n, c in _EXC if _issubclass(t, c)],
               "cycle_error": _issubclass(t, m.CycleError) and _issubclass(m.CycleError, ValueError),
               "cycle": _enc(getattr(e, "cycle", None))}
    res["unchanged"] = _enc({k: sorted(v) for k, v in g.items()}) == before
    emit(res)
'''


def all_nodes(graph):
    s = set(graph)
    for v in graph.values():
        s.update(v)
    return s


def deps_of(graph, n):
    return set(graph.get(n, ()))


def ref_topo(graph):
    nodes = all_nodes(graph)
    rem = {n: len(deps_of(graph, n)) for n in nodes}
    users = {n: [] for n in nodes}
    for n in nodes:
        for d in deps_of(graph, n):
            users[d].append(n)
    heap = [n for n in nodes if rem[n] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        n = heapq.heappop(heap)
        out.append(n)
        for u in users[n]:
            rem[u] -= 1
            if rem[u] == 0:
                heapq.heappush(heap, u)
    return out if len(out) == len(nodes) else None


def ref_layers(graph):
    order = ref_topo(graph)
    if order is None:
        return None
    depth = {}
    for n in order:
        depth[n] = 1 + max((depth[d] for d in deps_of(graph, n)), default=-1)
    res = [[] for _ in range(max(depth.values()) + 1)] if depth else []
    for n, k in depth.items():
        res[k].append(n)
    return [sorted(x) for x in res]


def ref_reach(graph, node):
    seen, stack = set(), list(deps_of(graph, node))
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(deps_of(graph, n))
    return seen


def has_cycle_from(graph, node):
    return node in ref_reach(graph, node) or any(n in ref_reach(graph, n) for n in ref_reach(graph, node))


def check_cycle(graph, res):
    assert "exc" in res and res["cycle_error"] and "ValueError" in res["is"], \
        f"expected CycleError (a ValueError subclass), got {res!r}"
    cyc = res["cycle"]
    assert isinstance(cyc, list) and len(cyc) >= 2 and all(type(x) is str for x in cyc), \
        f"cycle must be a list of nodes, got {cyc!r}"
    assert cyc[0] == cyc[-1], f"cycle must start and end with the same node: {cyc!r}"
    for a, b in zip(cyc, cyc[1:]):
        assert b in deps_of(graph, a), f"{cyc!r}: {b!r} is not a dependency of {a!r}"
    return cyc


def run(cases):
    data = [[name, [[k, sorted(v)] for k, v in g.items()], args] for name, g, args in cases]
    got = run_child(CHILD, data)
    assert len(got) == len(cases)
    for (name, g, args), r in zip(cases, got):
        assert r["unchanged"] is True, f"{name} modified its input graph"
    return got


def rand_dag(rng, n, p):
    names = rng.sample([f"n{i:03d}" for i in range(1000)], n)
    rank = {x: i for i, x in enumerate(names)}  # random hidden topological order
    g = {}
    for x in names:
        if rng.random() < 0.8:
            g[x] = [y for y in names if rank[y] < rank[x] and rng.random() < p]
    return g


@pytest.mark.core
def test_topo_sort_random_dags():
    rng = random.Random(77)
    cases = [("topo_sort", rand_dag(rng, rng.randint(1, 25), rng.choice([0.05, 0.15, 0.4])), [])
             for _ in range(80)]
    got = run(cases)
    for (_, g, _), r in zip(cases, got):
        assert canon(r.get("ok")) == canon(enc(ref_topo(g))), f"graph {g!r}: got {r!r}"


@pytest.mark.core
def test_layers_random_dags():
    rng = random.Random(78)
    cases = [("layers", rand_dag(rng, rng.randint(1, 25), rng.choice([0.05, 0.2])), [])
             for _ in range(80)]
    got = run(cases)
    for (_, g, _), r in zip(cases, got):
        assert canon(r.get("ok")) == canon(enc(ref_layers(g))), f"graph {g!r}: got {r!r}"


@pytest.mark.core
def test_transitive_deps_random():
    rng = random.Random(79)
    cases = []
    while len(cases) < 60:
        g = rand_dag(rng, rng.randint(2, 20), 0.15)
        if not g:
            continue
        node = rng.choice(sorted(all_nodes(g)))
        cases.append(("transitive_deps", g, [node]))
    got = run(cases)
    for (_, g, (node,)), r in zip(cases, got):
        assert canon(r.get("ok")) == canon(enc(sorted(ref_reach(g, node)))), f"{g!r} {node!r}: {r!r}"


@pytest.mark.core
def test_cycles_are_reported_with_a_real_cycle():
    rng = random.Random(80)
    cases = []
    for i in range(40):
        g = rand_dag(rng, rng.randint(3, 20), 0.15)
        nodes = sorted(all_nodes(g))
        a, b = rng.sample(nodes, 2)
        # force a cycle a -> ... -> b -> a
        g.setdefault(a, []).append(b)
        g.setdefault(b, []).append(a)
        g[a], g[b] = sorted(set(g[a])), sorted(set(g[b]))
        cases.append(("topo_sort" if i % 2 else "layers", g, []))
    cases.append(("topo_sort", {"solo": ["solo"], "x": []}, []))
    cases.append(("layers", {"p": ["q"], "q": ["r"], "r": ["s"], "s": ["q"], "z": []}, []))
    got = run(cases)
    for (_, g, _), r in zip(cases, got):
        check_cycle(g, r)
    assert got[-2]["cycle"] == ["solo", "solo"]


@pytest.mark.boundary
def test_transitive_deps_errors_and_unreachable_cycles():
    g = {"top": ["mid"], "mid": ["leaf"], "c1": ["c2"], "c2": ["c1", "leaf"], "loop": ["top", "c1"]}
    cases = [("transitive_deps", g, ["top"]), ("transitive_deps", g, ["leaf"]),
             ("transitive_deps", g, ["loop"]), ("transitive_deps", g, ["ghost"]),
             ("transitive_deps", {}, ["x"])]
    got = run(cases)
    assert canon(got[0].get("ok")) == canon(["leaf", "mid"]), got[0]
    assert canon(got[1].get("ok")) == canon([]), got[1]
    assert check_cycle(g, got[2])[0] in ("c1", "c2")
    assert raised(got[3], "KeyError") and raised(got[4], "KeyError"), got[3:]


@pytest.mark.boundary
def test_empty_graph_and_dependency_only_nodes():
    cases = [("topo_sort", {}, []), ("layers", {}, []),
             ("topo_sort", {"zeta": ["beta", "alpha", "beta"]}, []),
             ("layers", {"zeta": ["beta", "alpha"], "mu": []}, []),
             ("topo_sort", {"b": ["a"], "c": ["a"], "a": []}, [])]
    got = run(cases)
    exp = [[], [], ["alpha", "beta", "zeta"], [["alpha", "beta", "mu"], ["zeta"]], ["a", "b", "c"]]
    for (n, g, _), r, e in zip(cases, got, exp):
        assert canon(r.get("ok")) == canon(enc(e)), f"{n}({g!r}): {r!r}"


@pytest.mark.boundary
def test_deep_chains_no_recursion_limit():
    code = '''
    import toposort as m
    n = DATA
    chain = {f"v{i:06d}": [f"v{i + 1:06d}"] for i in range(n)}
    order = m.topo_sort(chain)
    emit([_len(order), order[0], order[-1]])
    lay = m.layers(chain)
    emit([_len(lay), lay[0], lay[-1]])
    td = m.transitive_deps(chain, "v000000")
    emit([_len(td), td[0], td[-1]])
    chain[f"v{n:06d}"] = ["v000000"]
    try:
        m.topo_sort(chain)
        emit("no error")
    except m.CycleError as e:
        emit(_len(e.cycle))
    try:
        m.transitive_deps(chain, "v000500")
        emit("no error")
    except m.CycleError as e:
        emit(_len(e.cycle))
    '''
    n = 20_000
    got = run_child(code, n, timeout=25)
    first, last = f"v{n:06d}", "v000000"
    assert got[0] == [n + 1, first, last]
    assert got[1] == [n + 1, [first], [last]]
    assert got[2] == [n, "v000001", first]
    assert got[3] == n + 2 and got[4] == n + 2, got[3:]
