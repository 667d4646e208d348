"""The ``termrl`` command: one module per command group."""

from __future__ import annotations

import typer

from termrl.cli import audit, cache, eval, report, sandbox, tasks, train, verify

app = typer.Typer(help="termrl: RL for terminal and coding agents on execution-verified rewards.",
                  no_args_is_help=True, add_completion=False)
app.add_typer(tasks.app, name="tasks")
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(cache.app, name="cache")
app.command("verify")(verify.verify_cmd)
app.add_typer(verify.reward_app, name="reward")
app.command("audit")(audit.audit_cmd)
app.command("eval")(eval.eval_cmd)
app.command("train")(train.train_cmd)
app.command("quickstart")(train.quickstart_cmd)
app.command("report")(report.report_cmd)


def main() -> None:
    app()
