"""The report's headline: a readable table of each run's settings, no empty columns, and the
scale its rewards are on. Runs built in memory: no sandbox, no command."""

from __future__ import annotations

import re
from pathlib import Path

from termrl.protocols import Trajectory
from termrl.report import data, html
from termrl.report.runs import Run

STARTED = 1796595846.9  # 2026-12-06 22:24 UTC


def _episodes(n: int, passed: int) -> list[Trajectory]:
    return [Trajectory(f"t{i}#0#0", f"t{i}", "oracle", ending="submitted", passed=i < passed,
                       reward=2.05 if i < passed else -0.3, evidence={"verified": True}) for i in range(n)]


def _columns(table: str) -> tuple[list[str], list[list[str]]]:
    headers = re.findall(r"<th>(.*?)</th>", table)
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr><td>.*?</tr>", table)]
    return headers, rows


def test_the_headline_shows_settings_as_a_table_with_dates_and_no_empty_column():
    meta = {"policy": "oracle", "model": None, "suite": "builtin:0-3", "spec": "staged", "samples": 1,
            "stop_at_action": False, "k": 1, "started": STARTED, "stretches": [{"started": STARTED}]}
    runs = [Run(Path("ev"), "eval", "ev", meta, {"episodes": _episodes(4, 3)})]
    page = html._headline(runs, data.headline(runs))
    headline, settings = re.findall(r"<table.*?</table>", page)[:2]
    headers, rows = _columns(headline)
    assert headers == ["run", "kind", "episodes", "harness errors", "pass@1", "95% interval", "mean reward",
                       "reward range"]  # no "made by", no "episodes of", no pass@k without samples
    assert all(any(row[i] for row in rows) for i in range(len(headers)))
    assert rows[0][-1] == "spec staged: -1.4 .. 2.05"
    assert "{" not in page and str(int(STARTED)) not in page
    headers, rows = _columns(settings)
    assert headers == ["setting", "ev"]
    assert dict(rows) == {"policy": "oracle", "suite": "builtin:0-3", "spec": "staged", "samples": "1",
                          "stop_at_action": "no", "pass@k&#x27;s k": "1", "started": "2026-12-06 22:24 UTC"}


def test_a_training_run_says_which_episodes_it_is_scored_on_and_each_call_of_a_resumed_run():
    eval_meta = {"policy": "hf", "spec": "no-such-spec", "started": STARTED,
                 "stretches": [{"started": STARTED, "dtype": "bfloat16", "device": "cuda"},
                               {"started": STARTED + 3600}]}
    runs = [Run(Path("ev"), "eval", "ev", eval_meta, {"episodes": _episodes(2, 1)}),
            Run(Path("qs"), "train", "qs",
                {"algorithm": "grpo", "spec": "partial", "sft": "200 steps on one-command:0-255"},
                {"held-out before": _episodes(2, 1), "held-out after": _episodes(2, 2)})]
    page = html._headline(runs, data.headline(runs))
    headline, settings = re.findall(r"<table.*?</table>", page)[:2]
    headers, rows = _columns(headline)
    assert headers[2] == "evaluated on" and [row[2] for row in rows] == ["", "held-out after"]
    assert [row[-1] for row in rows] == ["", "spec partial: -1 .. 1.5"]  # an unknown spec: no range
    settings = {row[0]: row[1:] for row in _columns(settings)[1]}
    assert settings["calls"] == ["2026-12-06 22:24 UTC (bfloat16, cuda); 2026-12-06 23:24 UTC", ""]
    assert settings["algorithm"] == ["", "grpo"] and settings["sft"] == ["", "200 steps on one-command:0-255"]
