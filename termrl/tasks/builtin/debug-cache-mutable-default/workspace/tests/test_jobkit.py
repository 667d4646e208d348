import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from jobkit.memo import memoize
from jobkit.registry import Registry
from jobkit.runner import run_all
from jobkit.settings import Settings


def test_memoize_counts():
    calls = []

    @memoize()
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]
    assert square.__name__ == "square"


def test_registry_with_tags():
    reg = Registry()
    reg.register("build", lambda s: "built", ["ci"])
    assert reg.tags("build") == ["ci", "all"]
    assert reg.by_tag("ci") == ["build"]


def test_settings_attribute():
    s = Settings({"retries": 2}, name="x")
    assert s.retries == 2 and s.name == "x"


def test_run_all():
    reg = Registry()
    reg.register("a", lambda s: s.retries * 10, ["x"])
    assert run_all(reg, "x", Settings(retries=1)) == {"a": 10}
