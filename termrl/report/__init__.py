"""``termrl report RUN_DIR...``: one self-contained HTML file a person reads instead of JSON.

``runs`` reads any run directory termrl writes (eval, train and quickstart, audit); ``data``
computes what the report shows as plain data; ``html`` lays it out with plotly (inlined), sortable
and filterable tables and a trajectory viewer. No network at view time.
"""

from __future__ import annotations

from pathlib import Path

from termrl.report.html import render
from termrl.report.runs import Run, RunError, load_run


def write_report(run_dirs, out: str | Path, names=None, tokenizers=()) -> Path:
    """Read ``run_dirs`` (one, or several side by side; the first is the baseline of every
    comparison) and write the report to ``out``; returns its path. ``tokenizers``: more
    tokenizers for its Tokens section (``termrl.eval.tokenizers.load_tokenizer`` specs)."""
    dirs = [Path(d) for d in run_dirs]
    names = list(names) if names else _names(dirs)
    runs = [load_run(d, n) for d, n in zip(dirs, names)]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(runs, tokenizers), encoding="utf-8")
    return out


def _names(dirs: list[Path]) -> list[str]:
    """Each run's name: its folder's, or its parent's too when two folders share a name."""
    names = [d.resolve().name for d in dirs]
    if len(set(names)) < len(names):
        names = [f"{d.resolve().parent.name}/{d.resolve().name}" for d in dirs]
    return names


__all__ = ["Run", "RunError", "load_run", "write_report"]
