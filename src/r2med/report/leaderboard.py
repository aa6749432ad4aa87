"""The leaderboard's text renderers: the terminal (rich), Markdown, CSV (long form) and JSON.

The table itself, and the rule that every average it shows is over one stated set, are the
:class:`~r2med.report.board.Leaderboard` type's (:mod:`.board`); LaTeX is :mod:`.latex`.  Each renderer
here takes a board and reads its cells through :meth:`~r2med.report.board.Leaderboard.grid`.
"""

from __future__ import annotations

import json

from rich.markup import escape
from rich.table import Table

from .board import AVERAGE, BoardCell, Leaderboard, Row, build_leaderboard
from .format import FLAG, check_format, md, records_text
from .latex import leaderboard_latex
from .layout import compact_table, fitted, short_legend

__all__ = [
    "AVERAGE",
    "BoardCell",
    "Leaderboard",
    "Row",
    "build_leaderboard",
    "render_board",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich",
]


def to_rich(board: Leaderboard, width: int | None = None) -> Table:
    """The terminal table; with ``width``, the first layout that fits it (:func:`~r2med.report.layout.fitted`):
    full, compact (short task names, no vertical rules), vertical (tasks as rows, systems as columns)."""
    if width is None:
        return _rich(board, compact=False)
    chosen: Table = fitted(
        lambda: _rich(board, compact=False), lambda: _rich(board, compact=True), lambda: _rich_vertical(board)
    )(width)
    return chosen


def _caption(board: Leaderboard, compact: bool) -> str:
    lines = board.legend()
    if compact:
        lines = [short_legend(board.columns), *lines] if short_legend(board.columns) else lines
    return "\n".join(lines)


def _rich(board: Leaderboard, compact: bool) -> Table:
    header, lines = board.grid(compact=compact)
    lines = [(kind, [escape(c) for c in cells]) for kind, cells in lines]
    title = escape(f"Leaderboard: {board_measure(board)} (x100)")
    caption = escape(_caption(board, compact))
    table = (
        compact_table(title=title, caption=caption, caption_justify="left")
        if compact
        else Table(title=title, caption=caption, caption_justify="left")
    )
    for i, h in enumerate(header):  # task names: text, not markup
        table.add_column(
            escape(h),
            justify="left" if i == 0 else "right",
            no_wrap=i > 0,
            overflow="fold" if i == 0 else "ellipsis",
        )
    for kind, cells in lines:
        table.add_row(*_styled(kind, cells))
    return table


def board_measure(board: Leaderboard) -> str:
    return board.measure.label


def _rich_vertical(board: Leaderboard) -> Table:
    """Tasks as rows, one column per system line (its published and delta lines as columns of their own)."""
    _header, lines = board.grid(compact=True)
    lines = [(kind, [escape(c) for c in cells]) for kind, cells in lines]
    table = compact_table(
        title=escape(f"Leaderboard: {board_measure(board)} (x100)"),
        caption=escape(_caption(board, False)),
        caption_justify="left",
    )
    table.add_column("task", no_wrap=True)
    for kind, cells in lines:
        style = "bold" if kind == "system" else "dim" if kind in ("published", "reference", "mteb") else None
        head = cells[0].strip().replace("+", "+\n")  # a long name breaks where its parts meet
        table.add_column(head, justify="right", style=style, overflow="fold")
    for i, col in enumerate(board.columns, start=1):
        cells = [_styled(kind, line)[i] if kind == "delta" else line[i] for kind, line in lines]
        table.add_row(escape(col), *cells)
    return table


def _styled(kind: str, cells: list[str]) -> list[str]:
    """A grid line's (escaped) cells for rich: systems bold, published and reference rows dim, deltas
    green/red."""
    if kind == "system":
        return [f"[bold]{c}[/]" for c in cells]
    if kind in ("published", "reference", "mteb"):
        return [f"[dim]{c}[/]" for c in cells]
    return [cells[0]] + [f"[red]{c}[/]" if c.endswith(FLAG) else f"[green]{c}[/]" if c != "-" else c for c in cells[1:]]


def to_markdown(board: Leaderboard) -> str:
    header, lines = board.grid()
    out = [
        "| " + " | ".join(_md(h) for h in header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for kind, cells in lines:
        name = _md(cells[0].strip()) if kind in ("published", "delta", "mteb") else _md(cells[0])
        first = f"**{name}**" if kind == "system" else f"_{name}_" if kind == "reference" else name
        out.append("| " + " | ".join([first, *(_md(c) for c in cells[1:])]) + " |")
    return "\n".join(out) + "\n\n" + "\n".join(f"_{_md(line)}_  " for line in board.legend()) + "\n"


def _md(text: str) -> str:
    """A table cell's text for Markdown (:func:`r2med.report.format.md`)."""
    return md(text)


def to_csv(board: Leaderboard) -> str:
    recs = board.records()
    return records_text(recs, "csv", None if recs else ["system"], blank_none=True)


def to_json(board: Leaderboard) -> str:
    return json.dumps(board.to_dict(), indent=1) + "\n"


def render_board(board: Leaderboard, fmt: str) -> str:
    """Markdown, CSV, LaTeX or JSON (``table`` is the rich table: :func:`to_rich`; here Markdown)."""
    fmt = check_format(fmt)
    if fmt in ("table", "markdown"):
        return to_markdown(board)
    if fmt == "csv":
        return to_csv(board)
    if fmt == "latex":
        return leaderboard_latex(board)
    return to_json(board)
