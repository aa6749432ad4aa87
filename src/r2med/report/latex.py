"""The leaderboard as a paper's LaTeX table (booktabs): tasks as columns plus Average, the best value of
each column in bold and the second underlined.

Ranks are taken over the report's systems (not the published or ``paper:`` rows shown beside them), on
the values as printed (two decimals, x100), so equal printed values share their mark.  A system that
matches a published configuration is followed by its published row and delta row (small type); a
delta beyond tolerance keeps its ``(!)`` mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..evaluation.metrics import measure_label
from .format import tex

if TYPE_CHECKING:
    from .leaderboard import Leaderboard

#: Decimals printed (and ranked on).
DECIMALS = 2


def column_ranks(values: Sequence[float | None]) -> list[int | None]:
    """1 for the best printed value of a column, 2 for the second best, None otherwise (ties share)."""
    printed = sorted({round(v, DECIMALS) for v in values if v is not None}, reverse=True)
    top = printed[:2]
    return [None if v is None or round(v, DECIMALS) not in top else top.index(round(v, DECIMALS)) + 1 for v in values]


def _marked(text: str, rank: int | None) -> str:
    if rank == 1:
        return r"\textbf{" + text + "}"
    if rank == 2:
        return r"\underline{" + text + "}"
    return text


def leaderboard_latex(board: Leaderboard) -> str:
    """The ``tabular`` (booktabs rules), legend lines as LaTeX comments after it."""
    _, lines = board.grid(flag="(!)")
    columns = board.columns
    systems = [row for row in board.rows if not row.reference]
    ranks = {
        col: dict(zip((id(r) for r in systems), column_ranks([r.cells[col].value for r in systems]))) for col in columns
    }
    out = [
        r"\begin{tabular}{l" + "r" * len(columns) + "}",
        r"\toprule",
        " & ".join(["System", *(tex(c) for c in columns)]) + r" \\",
        r"\midrule",
    ]
    grid_rows = iter(lines)
    for row in board.rows:
        _, cells = next(grid_rows)
        if row.reference:
            out.append(" & ".join(r"\textit{" + tex(c) + "}" for c in cells) + r" \\")
            continue
        values = [_marked(tex(c), ranks[col][id(row)]) for col, c in zip(columns, cells[1:])]
        out.append(" & ".join([tex(cells[0]), *values]) + r" \\")
        if row.published is not None and any(row.cells[c].published is not None for c in columns):
            for _ in range(2):  # its published and delta lines
                _, extra = next(grid_rows)
                out.append(
                    " & ".join(
                        r"{\small " + (r"\quad " + tex(c.strip()) if i == 0 else tex(c)) + "}"
                        for i, c in enumerate(extra)
                    )
                    + r" \\"
                )
    out += [r"\bottomrule", r"\end{tabular}"]
    marks = (
        f"{measure_label(board.measure)}: bold = best per column, underlined = second "
        "(among this report's systems, on the printed values)."
    )
    legend = [*board.legend(), marks]
    return "\n".join(out) + "\n" + "\n".join("% " + line for line in legend) + "\n"
