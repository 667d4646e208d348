import heapq
import importlib
import os
import random
import sys
import time

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


def as_given(graph):
    """The graph as the functions get it: dependencies as a list, a tuple or a set, in turn."""
    return {k: tuple(v) if i % 3 == 1 else (set(v) if i % 3 == 2 else list(v))
            for i, (k, v) in enumerate((k, sorted(v)) for k, v in graph.items())}


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


def check_cycle(m, graph, res):
    """res: a ``run`` result that must be a CycleError (a ValueError subclass) with a real cycle."""
    e = res.get("exc")
    assert e is not None and isinstance(e, m.CycleError) and issubclass(m.CycleError, ValueError) \
        and isinstance(e, ValueError), f"expected CycleError (a ValueError subclass), got {res!r}"
    cyc = getattr(e, "cycle", None)
    assert type(cyc) is list and len(cyc) >= 2 and all(type(x) is str for x in cyc), \
        f"cycle must be a list of nodes, got {cyc!r}"
    assert cyc[0] == cyc[-1], f"cycle must start and end with the same node: {cyc!r}"
    for a, b in zip(cyc, cyc[1:]):
        assert b in deps_of(graph, a), f"{cyc!r}: {b!r} is not a dependency of {a!r}"
    return cyc


def run(m, cases):
    """Call each case's function on its graph; per case {"ok": value} or {"exc": exception}."""
    got = []
    for name, g, args in cases:
        graph = as_given(g)
        before = {k: sorted(v) for k, v in graph.items()}
        try:
            res = {"ok": getattr(m, name)(graph, *args)}
        except Exception as e:
            res = {"exc": e}
        assert {k: sorted(v) for k, v in graph.items()} == before, f"{name} modified its input graph"
        got.append(res)
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
    got = run(load("toposort"), cases)
    for (_, g, _), r in zip(cases, got):
        assert "ok" in r and same(r["ok"], ref_topo(g)), f"graph {g!r}: got {r!r}"


@pytest.mark.core
def test_layers_random_dags():
    rng = random.Random(78)
    cases = [("layers", rand_dag(rng, rng.randint(1, 25), rng.choice([0.05, 0.2])), [])
             for _ in range(80)]
    got = run(load("toposort"), cases)
    for (_, g, _), r in zip(cases, got):
        assert "ok" in r and same(r["ok"], ref_layers(g)), f"graph {g!r}: got {r!r}"


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
    got = run(load("toposort"), cases)
    for (_, g, (node,)), r in zip(cases, got):
        assert "ok" in r and same(r["ok"], sorted(ref_reach(g, node))), f"{g!r} {node!r}: {r!r}"


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
    m = load("toposort")
    got = run(m, cases)
    cycles = [check_cycle(m, g, r) for (_, g, _), r in zip(cases, got)]
    assert cycles[-2] == ["solo", "solo"]


@pytest.mark.boundary
def test_transitive_deps_errors_and_unreachable_cycles():
    g = {"top": ["mid"], "mid": ["leaf"], "c1": ["c2"], "c2": ["c1", "leaf"], "loop": ["top", "c1"]}
    cases = [("transitive_deps", g, ["top"]), ("transitive_deps", g, ["leaf"]),
             ("transitive_deps", g, ["loop"]), ("transitive_deps", g, ["ghost"]),
             ("transitive_deps", {}, ["x"])]
    m = load("toposort")
    got = run(m, cases)
    assert "ok" in got[0] and same(got[0]["ok"], ["leaf", "mid"]), got[0]
    assert "ok" in got[1] and same(got[1]["ok"], []), got[1]
    assert check_cycle(m, g, got[2])[0] in ("c1", "c2")
    assert all(isinstance(r.get("exc"), KeyError) for r in got[3:]), got[3:]


@pytest.mark.boundary
def test_empty_graph_and_dependency_only_nodes():
    cases = [("topo_sort", {}, []), ("layers", {}, []),
             ("topo_sort", {"zeta": ["beta", "alpha", "beta"]}, []),
             ("layers", {"zeta": ["beta", "alpha"], "mu": []}, []),
             ("topo_sort", {"b": ["a"], "c": ["a"], "a": []}, [])]
    got = run(load("toposort"), cases)
    exp = [[], [], ["alpha", "beta", "zeta"], [["alpha", "beta", "mu"], ["zeta"]], ["a", "b", "c"]]
    for (n, g, _), r, e in zip(cases, got, exp):
        assert "ok" in r and same(r["ok"], e), f"{n}({g!r}): {r!r}"


@pytest.mark.boundary
def test_deep_chains_no_recursion_limit():
    m = load("toposort")
    n = 20_000
    t0 = time.perf_counter()
    chain = {f"v{i:06d}": [f"v{i + 1:06d}"] for i in range(n)}
    order = m.topo_sort(chain)
    lay = m.layers(chain)
    td = m.transitive_deps(chain, "v000000")
    got = [[len(order), order[0], order[-1]], [len(lay), lay[0], lay[-1]], [len(td), td[0], td[-1]]]
    chain[f"v{n:06d}"] = ["v000000"]
    for fn, args in ((m.topo_sort, ()), (m.transitive_deps, ("v000500",))):
        try:
            fn(chain, *args)
            got.append("no error")
        except m.CycleError as e:
            got.append(len(e.cycle))
    elapsed = time.perf_counter() - t0
    first, last = f"v{n:06d}", "v000000"
    assert got[0] == [n + 1, first, last]
    assert got[1] == [n + 1, [first], [last]]
    assert got[2] == [n, "v000001", first]
    assert got[3] == n + 2 and got[4] == n + 2, got[3:]
    assert elapsed < 25, f"chains of {n} nodes took {elapsed:.1f}s"
