"""Several measures in one report (``r2med report -m nDCG@10 -m R@100``): one table per measure, in the
order asked, in every format.

Terminal, Markdown and LaTeX: the tables one after another (Markdown and LaTeX under a heading or
comment naming the measure); CSV: the long-form records of all of them under one header (each record
names its measure); JSON: one measure as before (the table's object), several as
``{"measures": [...], "tables": [...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..evaluation.metrics import measure_label
from .format import check_format, records_text


class Board(Protocol):
    measure: str

    def render(self, fmt: str) -> str: ...

    def records(self) -> list[dict[str, Any]]: ...

    def to_dict(self) -> dict[str, Any]: ...

    def to_rich(self, width: int | None = None) -> Any: ...


@dataclass
class Boards:
    """The tables of a report, one per measure."""

    boards: Sequence[Board]

    def render(self, fmt: str) -> str:
        fmt = check_format(fmt)
        if len(self.boards) == 1:
            return self.boards[0].render(fmt)
        if fmt == "csv":
            records = [r for board in self.boards for r in board.records()]
            return records_text(records, "csv", None if records else ["system"], blank_none=True)
        if fmt == "json":
            return (
                json.dumps(
                    {"measures": [b.measure for b in self.boards], "tables": [b.to_dict() for b in self.boards]},
                    indent=1,
                    ensure_ascii=False,
                )
                + "\n"
            )
        if fmt == "latex":
            return "\n".join(b.render(fmt) for b in self.boards)
        return "\n".join(f"### {measure_label(b.measure)}\n\n{b.render(fmt)}" for b in self.boards)
