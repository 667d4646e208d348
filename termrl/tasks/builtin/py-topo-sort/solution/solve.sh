#!/bin/bash
cat > toposort.py <<'PY'
"""Topological ordering of dependency graphs (reference solution)."""
import heapq


class CycleError(ValueError):
    def __init__(self, cycle):
        super().__init__("dependency cycle: " + " -> ".join(map(str, cycle)))
        self.cycle = cycle


def _normalise(graph):
    deps = {}
    for node, ds in graph.items():
        deps.setdefault(node, set()).update(ds)
        for d in ds:
            deps.setdefault(d, set())
    return deps


def _find_cycle(deps, roots):
    """Iterative DFS; returns a cycle list or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {}
    for root in roots:
        if color.get(root, WHITE) != WHITE:
            continue
        path = [root]
        stack = [iter(sorted(deps[root]))]
        color[root] = GREY
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = BLACK
                stack.pop()
                continue
            c = color.get(nxt, WHITE)
            if c == GREY:
                i = path.index(nxt)
                return path[i:] + [nxt]
            if c == WHITE:
                color[nxt] = GREY
                path.append(nxt)
                stack.append(iter(sorted(deps[nxt])))
    return None


def _kahn(deps):
    remaining = {n: len(ds) for n, ds in deps.items()}
    users = {n: [] for n in deps}
    for n, ds in deps.items():
        for d in ds:
            users[d].append(n)
    return remaining, users


def topo_sort(graph):
    deps = _normalise(graph)
    remaining, users = _kahn(deps)
    heap = [n for n, k in remaining.items() if k == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        n = heapq.heappop(heap)
        order.append(n)
        for u in users[n]:
            remaining[u] -= 1
            if remaining[u] == 0:
                heapq.heappush(heap, u)
    if len(order) != len(deps):
        raise CycleError(_find_cycle(deps, sorted(n for n, k in remaining.items() if k > 0)))
    return order


def layers(graph):
    deps = _normalise(graph)
    remaining, users = _kahn(deps)
    current = [n for n, k in remaining.items() if k == 0]
    result, seen = [], 0
    while current:
        result.append(sorted(current))
        seen += len(current)
        nxt = []
        for n in current:
            for u in users[n]:
                remaining[u] -= 1
                if remaining[u] == 0:
                    nxt.append(u)
        current = nxt
    if seen != len(deps):
        raise CycleError(_find_cycle(deps, sorted(n for n, k in remaining.items() if k > 0)))
    return result


def transitive_deps(graph, node):
    deps = _normalise(graph)
    if node not in deps:
        raise KeyError(node)
    cycle = _find_cycle(deps, [node])
    if cycle is not None:
        raise CycleError(cycle)
    seen, stack = set(), list(deps[node])
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(deps[n])
    return sorted(seen)
PY
