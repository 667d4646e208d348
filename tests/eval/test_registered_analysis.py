"""bench/registered_test.py: the registered goals from stores, each met, not met or not yet decided."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from termrl.rollout.store import TrajectoryStore

from . import failing, harness_error, passing

BENCH = Path(__file__).parents[2] / "bench" / "registered_test.py"


def store(where: Path, outcomes: str) -> None:
    """One episode per character: p passed, f failed, e a harness failure."""
    make = {"p": passing, "f": failing, "e": harness_error}
    TrajectoryStore(where).write([make[c](f"t-{i}", 0) for i, c in enumerate(outcomes)])


def run(results: Path) -> dict:
    out = subprocess.run([sys.executable, str(BENCH), str(results), "--json"], capture_output=True, text=True,
                         check=True)
    assert json.loads((results / "results.json").read_text()) == json.loads(out.stdout)
    return json.loads(out.stdout)


def test_goals_are_decided_by_the_registered_statistics(tmp_path):
    store(tmp_path / "base-0.5b" / "T", "ffffffffff" + "pp")
    store(tmp_path / "sft-0.5b" / "T", "ppffffffff" + "pp")
    store(tmp_path / "rl-0.5b" / "T", "pppppppfff" + "pe")   # 7 gained on base, 0 lost, one harness failure
    store(tmp_path / "base-1.5b" / "T", "pppppppppf" + "pp")
    store(tmp_path / "base-0.5b" / "X1", "pfpf")
    store(tmp_path / "rl-0.5b" / "X1", "ppff")
    goals = run(tmp_path)["goals"]
    g1, g2, g3, g4 = goals
    assert (g1["gained"], g1["lost"], g1["episodes"]) == (7, 0, 11)  # the harness failure leaves its pair out
    assert g1["p_one_sided"] == 0.5 ** 7 and g1["met"] is True
    assert (g2["gained"], g2["lost"]) == (5, 0) and g2["p_one_sided"] == 0.5 ** 5 and g2["met"] is True
    assert (g3["passed_a"], g3["passed_b"]) == (8, 10) and g3["met"] is False
    assert (g4["passed_a"], g4["passed_b"], g4["gained"], g4["lost"]) == (2, 2, 1, 1) and g4["met"] is True


def test_a_model_not_played_yet_leaves_its_goals_undecided(tmp_path):
    store(tmp_path / "base-0.5b" / "T", "pf")
    result = run(tmp_path)
    assert result["counts"] == {"base-0.5b/T": {"episodes": 2, "scored": 2, "passed": 1, "harness_failures": 0}}
    assert all(g["met"] is None and "rl-0.5b/" in g["why"] for g in result["goals"])
