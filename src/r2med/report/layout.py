"""Tables that fit: the first of several layouts of a table (full, compact, vertical) that fits a width.

Terminal tables are rich tables; a wide one wraps its cells into many lines on an 80-column
terminal.  A renderer offers its layouts from the widest to the most compact
(:func:`fitted`); the command line prints the first that fits the console (80 columns when stdout
is not a terminal), the full one with ``--wide``.  Short task names (:func:`short_task`) keep
R2MED's 8 task columns narrow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from rich import box
from rich.console import Console, JustifyMethod, RenderableType
from rich.table import Table

#: R2MED's task names as narrow column headers (the legend says which is which).
SHORT_TASKS = {
    "Biology": "Bio",
    "Bioinformatics": "Bioinf",
    "Medical-Sciences": "MedSci",
    "MedXpertQA-Exam": "MedXQA",
    "MedQA-Diag": "MedQA",
    "PMC-Treatment": "PMC-T",
    "PMC-Clinical": "PMC-C",
    "IIYi-Clinical": "IIYi",
}  # the Average is "Average" in every table and figure (issue 39: never "Avg")


def short_task(name: str) -> str:
    """A task's narrow header: R2MED's own short names, other names as they are."""
    return SHORT_TASKS.get(name, name)


def short_legend(names: Sequence[str]) -> str:
    """``Bio = Biology, ...`` for the shortened names among ``names`` (empty when none is shortened)."""
    pairs = [f"{SHORT_TASKS[n]} = {n}" for n in names if n in SHORT_TASKS and n != "Average"]
    return ("columns: " + ", ".join(pairs) + ".") if pairs else ""


def table_width(table: RenderableType) -> int:
    """The width a rich renderable wants when nothing limits it."""
    return Console(width=10_000, emoji=False).measure(table).maximum


_Layout = TypeVar("_Layout", bound=RenderableType)


def fitted(first: Callable[[], _Layout], *layouts: Callable[[], _Layout]) -> Callable[[int], _Layout]:
    """A function of the console width returning the first layout (built lazily, widest first) that fits,
    else the last (the most compact: rich wraps its cells)."""

    def choose(width: int) -> _Layout:
        table = first()
        for make in layouts:
            if table_width(table) <= width:
                return table
            table = make()
        return table

    return choose


def compact_table(
    title: str | None = None, caption: str | None = None, caption_justify: JustifyMethod = "center"
) -> Table:
    """A rich table without outer edges or vertical rules, one space of padding between columns."""

    return Table(
        title=title,
        caption=caption,
        caption_justify=caption_justify,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
    )
