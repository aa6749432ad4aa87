"""What a leaderboard's mark hooks see of it: the shapes of :class:`r2med.report.board.Leaderboard`, its rows and
cells that :mod:`.contamination`, :mod:`.judgments`, :mod:`.mteb` and :mod:`.ties` read and mark.

The board calls those hooks when it builds a table, so they name its parts through these protocols rather than
importing :mod:`.board` back (an import circle, for the type checker too).  The board's own classes satisfy them as
they are (checked by mypy where the board passes itself to each hook).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..measures import Measure
    from ..results.published import PublishedKey


class CellView(Protocol):
    """One system x task (or average) cell, x100: its value, its published figure, and what marks it."""

    marks: list[str]
    ties: tuple[float, float] | None

    @property
    def value(self) -> float | None: ...

    @property
    def published(self) -> float | None: ...


class RowView(Protocol):
    """One system's row: its cells by column, the published configuration it is graded against, mteb's figures."""

    mteb: dict[str, float]
    mteb_label: str

    @property
    def system(self) -> str: ...

    @property
    def published(self) -> PublishedKey | None: ...

    @property
    def cells(self) -> Mapping[str, CellView]: ...


class BoardView(Protocol):
    """The table: its measure, task columns (then averages), rows, and the legend lines and notes hooks add."""

    notes: list[str]

    @property
    def measure(self) -> Measure: ...

    @property
    def tasks(self) -> Sequence[str]: ...

    @property
    def columns(self) -> list[str]: ...

    @property
    def rows(self) -> Sequence[RowView]: ...

    @property
    def marks(self) -> dict[str, str]: ...

    def average_tasks(self, col: str) -> list[str]: ...
