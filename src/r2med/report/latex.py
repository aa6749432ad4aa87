"""The leaderboard as a paper's LaTeX table (booktabs): tasks as columns plus Average, the best value of
each column in bold and the second underlined.

The table is one labelled block: its first header row names the measure (``nDCG@10 (x100)``), so the
tables of a report with several measures (``-m nDCG@10 -m R@100``) each say what they hold.  Ranks are
taken over the report's systems (not the published or ``paper:`` rows shown beside them), on the values
as printed (two decimals, x100), so equal printed values share their mark; a cell without a value
(``n/a``: a system without every task has no Average) is never ranked.  A system that matches a published
configuration is followed by its published row and delta row (small type); a delta beyond tolerance keeps
its ``(!)`` mark.  What every mark means is the note under the table.
Every row goes through :func:`~r2med.report.format.tex_row`, so a name starting with ``[``
or ``*`` cannot be read as an argument of the line break before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..measures import Measure
from .board import Leaderboard
from .format import tex, tex_note, tex_row
from .judgments import MARK

#: Decimals printed (and ranked on).
DECIMALS = 2


def column_ranks(values: Sequence[float | None]) -> list[int | None]:
    """1 for the best printed value of a column, 2 for the second best, None otherwise (ties share)."""
    printed = sorted({round(v, DECIMALS) for v in values if v is not None}, reverse=True)
    top = printed[:2]
    return [None if v is None or round(v, DECIMALS) not in top else top.index(round(v, DECIMALS)) + 1 for v in values]


def _own_judgments(marks: Sequence[str]) -> bool:
    """Whether a cell's figure was made on a judgments file of the user's (``--qrels``: marked §)."""
    return any(m.startswith(MARK) for m in marks)


def _marked(text: str, rank: int | None) -> str:
    if rank == 1:
        return r"\textbf{" + text + "}"
    if rank == 2:
        return r"\underline{" + text + "}"
    return text


def measure_header(measure: Measure, columns: int) -> str:
    """The header row naming the table's measure, across all its ``columns``."""
    return r"\multicolumn{" + str(columns) + r"}{l}{" + tex(f"{measure.label} (x100)") + r"} \\"


def leaderboard_latex(board: Leaderboard) -> str:
    """The ``tabular`` (booktabs rules), then its legend (what each mark means, the published rows' sources) as a
    table note in small type (:func:`~r2med.report.format.tex_note`)."""
    _, lines = board.grid(flag="(!)")
    columns = board.columns
    systems = board.systems
    # a figure made on a judgments file of the user's (§) is of another data state: never ranked beside the others
    ranks = {
        col: dict(
            zip(
                (id(r) for r in systems),
                column_ranks([None if _own_judgments(r.cells[col].marks) else r.cells[col].value for r in systems]),
            )
        )
        for col in columns
    }
    out = [
        r"\begin{tabular}{l" + "r" * len(columns) + "}",
        r"\toprule",
        measure_header(board.measure, len(columns) + 1),
        r"\midrule",
        tex_row(["System", *(tex(c) for c in columns)]),
        r"\midrule",
    ]
    grid_rows = iter(lines)
    for row in board.rows:
        _, cells = next(grid_rows)
        if row.reference:
            out.append(tex_row([r"\textit{" + tex(c) + "}" for c in cells]))
            continue
        values = [_marked(tex(c), ranks[col][id(row)]) for col, c in zip(columns, cells[1:])]
        out.append(tex_row([tex(cells[0]), *values]))
        shown = row.published is not None and any(row.cells[c].published is not None for c in columns)
        for _ in range((2 if shown else 0) + (1 if row.mteb else 0)):  # its published, delta and mteb lines
            _, extra = next(grid_rows)
            out.append(
                tex_row(
                    [
                        r"{\small " + (r"\quad " + tex(c.strip()) if i == 0 else tex(c)) + "}"
                        for i, c in enumerate(extra)
                    ]
                )
            )
    out += [r"\bottomrule", r"\end{tabular}"]
    marks = (
        f"{board.measure.label}: bold = best per column, underlined = second "
        "(among this report's systems, on the printed values)."
    )
    legend = [*board.legend(), marks]
    return "\n".join(out) + "\n" + tex_note(legend)
