"""``r2med cache ls|rm``: the artifacts under the r2med home (the work: :mod:`r2med.jobs.cache_entries`)."""

from __future__ import annotations

import time

import typer
from rich.markup import escape
from rich.table import Table

from . import R2MedGroup, app
from ._ui import check_json_format, console, print_fitted, print_json
from .options import FormatJson, JsonAlias, Wide

cache_app = typer.Typer(
    cls=R2MedGroup,
    help="List or remove cached artifacts under the r2med home ($R2MED_HOME).",
    no_args_is_help=True,
)
app.add_typer(cache_app, name="cache")

# -- cache ---------------------------------------------------------------------------------------


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


@cache_app.command("ls")
def cache_ls(
    kind: str | None = typer.Argument(None, help="Only this kind (bm25, embeddings, llm...)."),
    fmt: FormatJson = "table",
    as_json: JsonAlias = False,
    wide: Wide = False,
) -> None:
    """List cached artifacts with their size."""
    from ..infra.home import home
    from ..jobs.cache_entries import cache_entries
    from ..report.layout import compact_table, fitted

    entries = cache_entries(kind)
    if check_json_format(fmt, as_json) == "json":
        print_json([e.to_dict() for e in entries])
        return

    def layout(compact: bool) -> Table:
        title = escape(f"r2med cache: {home()}")
        table = compact_table(title=title) if compact else Table(title=title)
        for col in ("kind", "name", "size", *(() if compact else ("modified",)), "collection", "what"):
            table.add_column(
                col,
                justify="right" if col == "size" else "left",
                no_wrap=col in ("kind", "name", "size", "modified"),
                overflow="fold",
            )
        for e in entries:  # names and details come from the file system and cached files: printed as text
            modified = () if compact else (time.strftime("%Y-%m-%d %H:%M", time.localtime(e.modified)),)
            table.add_row(
                escape(e.kind), escape(e.name), _size(e.bytes), *modified, escape(e.collection or "-"), escape(e.detail)
            )
        return table

    print_fitted(fitted(lambda: layout(False), lambda: layout(True)), wide=wide)
    console.print(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, {_size(sum(e.bytes for e in entries))}")


@cache_app.command("rm")
def cache_rm(
    kind: str = typer.Argument(..., help="Kind of artifact (bm25, embeddings, llm...)."),
    names: list[str] | None = typer.Argument(None, help="Entries to remove (see `r2med cache ls`)."),
    all_: bool = typer.Option(False, "--all", help="Remove every entry of this kind."),
    partial: bool = typer.Option(
        False, "--partial", help="Remove unfinished embedding encodings and temps left by interrupted writes."
    ),
) -> None:
    """Remove cached artifacts (safe: anything removed is rebuilt on demand)."""
    from ..jobs.cache_entries import remove_entries

    count, freed = remove_entries(kind, names, everything=all_, partial=partial)
    console.print(f"removed {count} {escape(kind)} entr{'y' if count == 1 else 'ies'}, freed {_size(freed)}")
