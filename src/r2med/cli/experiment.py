"""``r2med run EXPERIMENT.toml``: a declared grid of steps run as one job (the work: :mod:`r2med.jobs.experiment`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import typer
from rich.markup import escape

from . import app, strict_data
from ._ui import console, print_fitted, print_notes, table_console
from .options import Overwrite, Wide


@app.command("run")
def run_command(
    ctx: typer.Context,
    experiment: Path = typer.Argument(
        ...,
        help="The experiment file (TOML: out, [data], [[retrievers]], "
        "[[rerank]], [[fusion]], [report]; docs/experiments.md).",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Only print the steps, in the order they run."),
    overwrite: Overwrite = False,
    wide: Wide = False,
) -> None:
    """Run an experiment file: every step in dependency order into one results root, then its report
    (finished folders are reused; a killed run resumes)."""
    from rich.table import Table

    from ..jobs import experiment as jobs

    exp = jobs.load_experiment(experiment)
    if dry_run:
        table = Table(title=escape(f"{experiment}: {len(exp.steps)} step(s) into {exp.out}"))
        for column in ("#", "job", "runs", "system", "reads", "settings"):
            table.add_column(column, overflow="fold")
        for row in jobs.plan_rows(exp):
            table.add_row(*(escape(cell) for cell in row))
        table_console().print(table)
        return

    def done(outcome: jobs.StepOutcome) -> None:
        reused = f", {outcome.reused} reused" if outcome.reused else ""
        console.print(
            escape(f"{outcome.step.kind} {outcome.step.label}: {outcome.tasks} task(s){reused}"), highlight=False
        )

    jobs.run_experiment(exp, overwrite=overwrite, on_step=done, strict=strict_data(ctx))
    written, boards = jobs.write_reports(exp)
    from ..report.leaderboard import to_rich

    for board in boards:
        print_fitted(partial(to_rich, board), wide=wide)
    print_notes([line for board in boards for line in board.left_out()])
    for path in written:
        console.print(f"written: {escape(str(path))}", highlight=False)
    console.print(escape(f"results: {exp.out}"), highlight=False)
