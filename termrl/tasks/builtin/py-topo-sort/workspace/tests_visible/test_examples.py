import os
import sys

import pytest

sys.path.insert(0, os.getcwd())
from toposort import CycleError, layers, topo_sort, transitive_deps

G = {"app": ["lib", "log"], "lib": ["log"], "test": ["app"]}


def test_topo_sort():
    assert topo_sort(G) == ["log", "lib", "app", "test"]
    assert topo_sort({"b": [], "a": [], "c": ["a"]}) == ["a", "b", "c"]


def test_layers():
    assert layers({"app": ["lib", "log"], "lib": ["log"], "cli": []}) == [["cli", "log"], ["lib"], ["app"]]


def test_transitive():
    assert transitive_deps(G, "test") == ["app", "lib", "log"]
    assert transitive_deps(G, "log") == []
    with pytest.raises(KeyError):
        transitive_deps(G, "nope")


def test_cycle():
    with pytest.raises(CycleError) as info:
        topo_sort({"a": ["b"], "b": ["a"]})
    assert info.value.cycle in (["a", "b", "a"], ["b", "a", "b"])
