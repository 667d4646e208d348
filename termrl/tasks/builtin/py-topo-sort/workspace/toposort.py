"""Topological ordering of dependency graphs.

A graph maps each node to an iterable of the nodes it depends on (its dependencies must
come first). Nodes appearing only as dependencies are nodes without dependencies.
"""


class CycleError(ValueError):
    """Raised when the graph has a cycle.

    ``cycle`` is a list [n0, n1, ..., nk] with n0 == nk where each n(i+1) is a dependency
    of n(i); [a, a] for a node that depends on itself.
    """

    def __init__(self, cycle):
        super().__init__("dependency cycle: " + " -> ".join(map(str, cycle)))
        self.cycle = cycle


def topo_sort(graph):
    """Return all nodes, dependencies first; ties broken by taking the smallest ready node.

    >>> topo_sort({"app": ["lib", "log"], "lib": ["log"], "test": ["app"]})
    ['log', 'lib', 'app', 'test']
    """
    raise NotImplementedError


def layers(graph):
    """Group nodes by the length of their longest dependency chain; each layer sorted.

    >>> layers({"app": ["lib", "log"], "lib": ["log"], "cli": []})
    [['cli', 'log'], ['lib'], ['app']]
    """
    raise NotImplementedError


def transitive_deps(graph, node):
    """Return the sorted list of all direct and indirect dependencies of node.

    KeyError if node is not in the graph; CycleError if a cycle is reachable from node.

    >>> transitive_deps({"app": ["lib"], "lib": ["log"], "x": []}, "app")
    ['lib', 'log']
    """
    raise NotImplementedError
