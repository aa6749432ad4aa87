"""``r2med show``: one query of a report's systems in the terminal (the work: :mod:`r2med.jobs.show`; the view:
:mod:`r2med.report.show`)."""

from __future__ import annotations

from pathlib import Path

import typer

from . import app, strict_data
from ._ui import check_json_format, fit_console, print_json
from .options import AT_LEAST_1, FormatJson, Measure, Revision, Runs, Wide


@app.command("show")
def show_command(
    ctx: typer.Context,
    runs: Runs,
    query: str = typer.Option(..., "--query", help="The query id."),
    task: str | None = typer.Option(None, "--task", help="The task (default: the one task the systems have)."),
    k: int = typer.Option(5, "-k", "--top-k", callback=AT_LEAST_1, help="Documents of each system's ranking shown."),
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        "-d",
        help="Local data for texts and judgments (default: the source the runs recorded; --hub: the hub).",
    ),
    hub: bool = typer.Option(False, "--hub", help="Load texts and judgments from the Hugging Face hub."),
    revision: Revision = None,
    measure: Measure = "nDCG@10",
    fmt: FormatJson = "table",
    wide: Wide = False,
) -> None:
    """One query in the terminal: its text, its judged documents with their rank in each system, and each
    system's top k with texts (what the HTML report's inspector shows)."""
    from ..jobs.show import show_query
    from ..report.show import view_renderables

    fmt = check_json_format(fmt, False)
    view = show_query(
        runs, query, task, k, data_dir=data_dir, hub=hub, revision=revision, measure=measure, strict=strict_data(ctx)
    )
    if fmt == "json":
        print_json(view.to_dict())
        return
    target = fit_console(wide)
    for part in view_renderables(view):
        target.print(part)
