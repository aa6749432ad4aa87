"""``r2med export``: results in the formats the field uses -- MTEB's results layout (the work:
:mod:`r2med.jobs.export`, :mod:`r2med.export.mteb`)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from . import app, strict_data
from ._ui import console, print_fitted
from .options import Runs, Wide


@app.command("export")
def export_command(
    ctx: typer.Context,
    runs: Runs,
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="Folder to write the results in (MTEB: its results layout, OUT/results/<org>__<model>/<revision>/).",
    ),
    fmt: str = typer.Option("mteb", "--format", "-f", help="mteb: MTEB's results files (extra 'mteb')."),
    model: str | None = typer.Option(
        None, "--model", help="Model name, org/name (default: the system's name, as r2med/<system>)."
    ),
    model_revision: str | None = typer.Option(
        None, "--model-revision", help="The model's commit (default: MTEB's registry, else no_revision_available)."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Export results made on another data revision than MTEB's pin (or on local data), saying so in a warning.",
    ),
    mteb_task: str | None = typer.Option(
        None,
        "--mteb-task",
        help="The MTEB task a local collection is (SciFact, NFCorpus...): "
        "accepted only when its docs, queries and judgments count as "
        "the task's do in the installed mteb.",
    ),
    wide: Wide = False,
) -> None:
    """Export systems' results: MTEB's results files, which load with mteb's own loader."""
    from ..export.mteb import summarize_keys
    from ..jobs.export import export_runs
    from ..steps import ExportStep, flat
    from ..typed.parse import Origin

    step: ExportStep = flat(
        {
            "runs": tuple(runs),
            "out": out,
            "format": fmt,
            "model": model,
            "model_revision": model_revision,
            "force": force,
            "mteb_task": mteb_task,
            "strict": strict_data(ctx),
        },
        ExportStep,
        Origin.cli(),
    )
    for report in export_runs(step):
        table = Table(title=escape(f"{report.model_name} ({report.model_revision}): MTEB results"))
        for col in ("task", "MTEB task", "dataset revision", "nDCG@10", "scores"):
            table.add_column(col, justify="right" if col in ("nDCG@10", "scores") else "left", no_wrap=col != "task")
        for t in report.tasks:
            table.add_row(
                escape(t.task),
                escape(t.mteb_task),
                escape(t.dataset_revision[:12]),
                f"{100 * t.scores.values['main_score']:.2f}",
                str(len(t.scores.values)),
            )
        print_fitted(table, wide=wide)
        for task, why in report.skipped.items():
            console.print(escape(f"skipped {task}: {why}"), highlight=False, soft_wrap=True)
        absent = sorted({key for t in report.tasks for key in t.scores.absent})
        console.print(
            escape(f"not exported (r2med did not compute them): {summarize_keys(absent)}"),
            highlight=False,
            soft_wrap=True,
        )
        console.print(escape(f"written: {report.folder}"), highlight=False, soft_wrap=True)
