"""numpy and pandas values cross the isolation as data (termrl.verify.harness.isolate), through a decoder
that only builds their classes. Runs on the host's Python (the sandbox's may lack numpy/pandas):
a child interpreter installs the import hook over a folder of agent modules, as the report plugin
does in the sandbox."""

from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from termrl.verify.harness import isolate

AGENT = '''
import numpy as np
import pandas as pd

class Thing:
    pass

class Anything(np.ndarray):
    def __eq__(self, other):
        return np.ones(np.shape(other), bool)

def count():
    return np.int64(5)

def doubled():
    return np.arange(4) * 2

def frame():
    return pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}, index=pd.Index([3, 4], name="i"))

def things():
    return pd.Series([Thing(), Thing()])

def anything():
    return np.zeros(3).view(Anything)
'''

DRIVER = '''
import json, os, sys
sys.path.insert(0, {harness!r})
import isolate
isolate.install()
sys.path.insert(0, os.getcwd())
import numpy as np, pandas as pd
import agent

out = {{}}
out["int64"] = [type(agent.count()).__name__, bool(agent.count() == 5)]
out["array"] = [type(agent.doubled()).__name__, bool((agent.doubled() == np.array([0, 2, 4, 6])).all())]
f = agent.frame()
expected = pd.DataFrame({{"a": [1, 2], "b": ["x", "y"]}}, index=pd.Index([3, 4], name="i"))
out["frame"] = [isinstance(f, pd.DataFrame), bool(f.equals(expected))]
out["things"] = isinstance(agent.things(), pd.Series)
a = agent.anything()
out["anything"] = [isinstance(a, np.ndarray), bool(np.all(a == np.array([1.0, 2.0, 3.0])))]
print(json.dumps(out))
'''


def run_driver(tmp_path: Path) -> dict:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "driver.py").write_text(DRIVER.format(harness=str(Path(isolate.__file__).parent)))
    res = subprocess.run([sys.executable, "driver.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_numpy_and_pandas_results_arrive_as_real_values_and_agent_classes_do_not(tmp_path):
    out = run_driver(tmp_path)
    assert out["int64"] == ["int64", True]
    assert out["array"] == ["ndarray", True]
    assert out["frame"] == [True, True]
    # a Series of the agent's objects, and the agent's ndarray subclass, stay handles in the worker
    assert out["things"] is False
    assert out["anything"] == [False, False]


class _Reads:
    def __reduce__(self):
        return (pd.read_pickle, ("/tmp/anything.pkl",))


class _Runs:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.mark.parametrize("crafted", [_Reads(), _Runs(), textwrap.dedent, np.load],
                         ids=["read_pickle", "os_system", "stdlib_function", "numpy_load"])
def test_the_data_decoder_builds_nothing_but_data_classes(crafted):
    blob = base64.b64encode(pickle.dumps(crafted)).decode()
    assert isolate._load_data(blob) is isolate._REFUSED
    frame = pd.DataFrame({"a": [1.5]})
    assert isolate._load_data(base64.b64encode(pickle.dumps(frame)).decode()).equals(frame)
