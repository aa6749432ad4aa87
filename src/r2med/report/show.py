"""One query in a terminal or a notebook (``r2med show``): what the HTML page's inspector shows.

A :class:`QueryView` holds the query's text, each system's value of a measure on it, its judged relevant
documents with their rank in each system's run, and each system's top k with texts (the inspector's
"gold documents" and "top 10" panes).  It is built by :func:`r2med.jobs.show.show_query` and rendered
here: rich tables for the terminal (:func:`view_renderables`), plain text (``str(view)``), HTML for a
notebook (``_repr_html_``) and JSON (:meth:`QueryView.to_dict`).  Texts are shown as written (never read
as markup) and cut to :data:`SNIPPET` characters in the tables.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..infra.json_types import JsonObject
from ..measures import Measure
from .format import GAP, visible

if TYPE_CHECKING:
    from rich.console import RenderableType

#: Characters of a document's text shown in the tables (the JSON keeps :data:`JSON_SNIPPET`).
SNIPPET = 160
JSON_SNIPPET = 400


@dataclass
class Judged:
    """A judged relevant document of the query: its grade, its text, and its rank in each system's run
    (None: not in that run's ranking)."""

    doc: str
    grade: int
    text: str | None
    ranks: dict[str, int | None]


@dataclass
class Hit:
    """One of a system's top k: its rank, the document, its score, its grade (None: not judged)."""

    rank: int
    doc: str
    score: float
    grade: int | None
    text: str | None


@dataclass
class QueryView:
    task: str
    query: str
    text: str | None
    measure: Measure
    #: system -> the query's value of :attr:`measure` (None: the system did not score it)
    values: dict[str, float | None]
    judged: list[Judged]
    #: system -> its top k
    top: dict[str, list[Hit]]
    k: int
    #: judged documents with grade 0 (not listed)
    non_relevant: int = 0
    #: what the view could not show (no texts, no judgments), one line each
    notes: list[str] = field(default_factory=list)

    @property
    def systems(self) -> list[str]:
        return list(self.top)

    def to_dict(self) -> JsonObject:
        data = asdict(self)
        data["measure"] = self.measure.trec  # as metrics.json names it
        for entry in [*data["judged"], *(hit for hits in data["top"].values() for hit in hits)]:
            if entry["text"] is not None:
                entry["text"] = entry["text"][:JSON_SNIPPET]
        return data

    def __repr__(self) -> str:
        n, m = len(self.systems), len(self.judged)
        return (
            f"QueryView(task={self.task!r}, query={self.query!r}, {n} system{'' if n == 1 else 's'}, "
            f"{m} relevant document{'' if m == 1 else 's'}, top {self.k})"
        )

    def __str__(self) -> str:
        return render_text(self)

    def _repr_html_(self) -> str:
        """A notebook shows the rich tables as HTML."""
        console = _recording_console(width=140)
        for part in view_renderables(self):
            console.print(part)
        page: str = console.export_html(inline_styles=True)
        return page


def _recording_console(width: int) -> Console:
    return Console(width=width, record=True, file=io.StringIO(), emoji=False, highlight=False)


def render_text(view: QueryView, width: int = 100) -> str:
    """The view as plain text (``str(view)``), ``width`` columns wide."""
    console = _recording_console(width)
    for part in view_renderables(view):
        console.print(part)
    text: str = console.export_text()
    return text


def _snippet(text: str | None) -> str:
    if text is None:
        return GAP
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= SNIPPET else one_line[: SNIPPET - 1].rstrip() + "…"


def _value(value: float | None) -> str:
    return GAP if value is None else f"{100 * value:.2f}"


def view_renderables(view: QueryView) -> list[RenderableType]:
    """The rich renderables of a view, in order: the query, the judged documents, each system's top k."""

    label = view.measure.label
    parts: list[RenderableType] = [
        Text(visible(f"{view.task} / {view.query}"), style="bold"),
        Text(visible(view.text, keep="\n\t") if view.text is not None else "(no query text: pass --data-dir or --hub)"),
    ]
    parts.append(
        Text(f"{label} x100 on this query: " + " · ".join(f"{visible(s)} {_value(v)}" for s, v in view.values.items()))
    )
    judged = Table(
        title=Text(
            f"judged relevant documents ({len(view.judged)}; rank in each run, {GAP}: not ranked)"
            + (f"; {view.non_relevant} judged non-relevant not listed" if view.non_relevant else "")
        ),
        title_justify="left",
        show_edge=False,
    )
    judged.add_column("doc", overflow="fold")
    judged.add_column("grade", justify="right")
    for system in view.systems:
        judged.add_column(Text(visible(system)), justify="right", overflow="fold")
    judged.add_column("text", overflow="fold", ratio=1)
    for doc in view.judged:
        ranks = [GAP if doc.ranks.get(s) is None else str(doc.ranks[s]) for s in view.systems]
        judged.add_row(Text(visible(doc.doc)), str(doc.grade), *ranks, Text(visible(_snippet(doc.text))))
    parts.append(judged)
    for system, hits in view.top.items():
        table = Table(
            title=Text(f"{visible(system)}: top {view.k} (grade: {GAP} = not judged)"),
            title_justify="left",
            show_edge=False,
        )
        table.add_column("rank", justify="right")
        table.add_column("doc", overflow="fold")
        table.add_column("score", justify="right")
        table.add_column("grade", justify="right")
        table.add_column("text", overflow="fold", ratio=1)
        for hit in hits:
            grade = GAP if hit.grade is None else str(hit.grade)
            style = "bold green" if hit.grade else None
            table.add_row(
                str(hit.rank),
                Text(visible(hit.doc)),
                f"{hit.score:.4f}",
                grade,
                Text(visible(_snippet(hit.text))),
                style=style,
            )
        parts.append(table)
    parts += [Text(f"note: {visible(note)}", style="yellow") for note in view.notes]
    return parts
