"""Several measures in one report (``r2med report -m nDCG@10 -m R@100``): one table per measure, in the
order asked, in every format.

Terminal, Markdown and LaTeX: the tables one after another (Markdown under a heading naming the measure;
each LaTeX table a block whose header row names it); CSV: the long-form records of all of them under one
header (each record names its measure); JSON: one measure as before (the table's object), several as
``{"measures": [...], "tables": [...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rich.console import RenderableType

from ..infra.json_types import JsonObject
from ..measures import Measure
from .board import Leaderboard
from .format import check_format, records_text
from .leaderboard import render_board, to_rich


class Table(Protocol):
    """A table with its renderers (:class:`~r2med.report.facet_table.FacetBoard`)."""

    measure: Measure

    def render(self, fmt: str) -> str: ...

    def records(self) -> list[JsonObject]: ...

    def to_dict(self) -> JsonObject: ...

    def to_rich(self, width: int | None = None) -> RenderableType: ...


#: What a report shows per measure: a leaderboard (rendered by :mod:`.leaderboard`) or a table with renderers.
Board = Leaderboard | Table


def render_one(board: Board, fmt: str) -> str:
    """One table in ``fmt``."""
    if isinstance(board, Leaderboard):
        return render_board(board, fmt)
    return board.render(fmt)


def rich_of(board: Board) -> Callable[[int | None], RenderableType]:
    """The function of the width giving ``board``'s terminal table (for :func:`r2med.cli._ui.print_fitted`)."""
    if isinstance(board, Leaderboard):
        leaderboard = board

        def rich(width: int | None = None) -> RenderableType:
            return to_rich(leaderboard, width)

        return rich
    return board.to_rich


@dataclass
class Boards:
    """The tables of a report, one per measure."""

    boards: Sequence[Board]

    def render(self, fmt: str) -> str:
        fmt = check_format(fmt)
        if len(self.boards) == 1:
            return render_one(self.boards[0], fmt)
        if fmt == "csv":
            records = [r for board in self.boards for r in board.records()]
            return records_text(records, "csv", None if records else ["system"], blank_none=True)
        if fmt == "json":
            return (
                json.dumps(
                    {"measures": [b.measure.trec for b in self.boards], "tables": [b.to_dict() for b in self.boards]},
                    indent=1,
                    ensure_ascii=False,
                )
                + "\n"
            )
        if fmt == "latex":
            return "\n".join(render_one(b, fmt) for b in self.boards)
        return "\n".join(f"### {b.measure.label}\n\n{render_one(b, fmt)}" for b in self.boards)
