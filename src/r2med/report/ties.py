"""What the reports say about ties that decide a measure (:mod:`r2med.evaluation.ties` computes them): the line
under a job's summary table, the leaderboard's cell mark (through the board's mark hook,
:attr:`r2med.report.board.BoardCell.marks`) and legend, the HTML cell's tooltip, and the note ``compare``
adds when a difference lies within the two systems' tie ranges.

Each renderer calls one function here; the figures come from each task's ``metrics.json`` ``ties`` block (a
record written before r2med recorded ties has none, and is shown as it always was).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..evaluation.tie_data import TOLERANCE, block_query_ranges, block_ranges
from ..evaluation.ties import TIED_MARK, tie_line
from ..measures import HEADLINE, Measure

if TYPE_CHECKING:
    from ..results.folders import System, TaskResult
    from .mark_hooks import BoardView, CellView

#: The legend line of a leaderboard with a marked cell.
LEGEND: str = (
    f"{TIED_MARK} ties decide this value: another order of tied (equal-scored) documents changes it. Shown: "
    "trec_eval's tie-break (by document id); ranges: every tied group's relevant documents last–first."
)


def tie_lines(results: Sequence[TaskResult], measures: Sequence[Measure] | None = None) -> list[str]:
    """The lines under a job's summary table: one per task whose shown ``measures`` (default nDCG@10) ties
    decide, values x100 as the table shows them."""
    lines = []
    for r in results:
        line = tie_line(r.metrics.ties, measures or (HEADLINE,), task=r.task, scale=100)
        if line is not None:
            lines.append(line)
    return lines


def mark_ties(board: BoardView, systems: Sequence[System]) -> None:
    """Mark each leaderboard cell whose value the order of tied documents decides (the board's measure in its
    task's ``ties`` block), through the board's mark hook: :data:`TIED_MARK` among the cell's marks
    (:attr:`~r2med.report.board.BoardCell.marks`, explained by :data:`LEGEND` in
    :attr:`~r2med.report.board.Leaderboard.marks`) and its range x100 (``BoardCell.ties``); then one legend note
    per marked system with its ranges.  The ``Average`` cell's range is the mean of its tasks' ranges (a task
    without ties counts its value at both ends).  A cell without a value (``n/a``: a task the system lacks, or
    the Average of a system without every task) is never marked."""
    lines = []
    for row, system in zip(board.rows, systems):  # the system rows come first, in order
        for task in board.tasks:
            cell = row.cells[task]
            result = system.tasks.get(task)
            found = block_ranges(result.record.ties, board.measure) if result is not None else None
            if found is not None and cell.value is not None:
                best, worst, _ = found
                _mark(cell, (100 * worst, 100 * best))
        for col in board.columns[len(board.tasks) :]:  # each average: over every one of its tasks, or n/a
            tasks = [row.cells[t] for t in board.average_tasks(col)]
            if row.cells[col].value is None or not any(c.ties for c in tasks):
                continue
            if all(c.value is not None for c in tasks):
                ends = [c.ties or (c.value, c.value) for c in tasks if c.value is not None]
                worst = sum(w for w, _ in ends) / len(ends)
                best = sum(b for _, b in ends) / len(ends)
                _mark(row.cells[col], (worst, best))
        ranges = [
            f"{col} {c.ties[0]:.2f}–{c.ties[1]:.2f}{published_place_text(c)}"
            for col in board.columns
            for c in [row.cells[col]]
            if c.ties
        ]
        if ranges:
            lines.append(f"{TIED_MARK} {row.system}: {', '.join(ranges)}.")
    if lines:
        board.marks[TIED_MARK] = LEGEND
        board.notes += lines


def published_place(cell: CellView) -> float | None:
    """Where the cell's published figure lies in its tie range: 0 at the worst order's value, 1 at the best's (below
    0 or above 1: outside the range, so no order of the tied documents gives it); None without both."""
    if cell.ties is None or cell.published is None:
        return None
    worst, best = cell.ties
    if best - worst <= TOLERANCE:
        return 0.0 if abs(cell.published - worst) <= TOLERANCE else (-1.0 if cell.published < worst else 2.0)
    return (cell.published - worst) / (best - worst)


def published_place_text(cell: CellView) -> str:
    """`` (published 39.20: 58% of the way from worst to best)``, or that it lies outside the range; empty without
    a published figure."""
    place = published_place(cell)
    if place is None or cell.published is None:
        return ""
    if 0.0 - TOLERANCE <= place <= 1.0 + TOLERANCE:
        return f" (published {cell.published:.2f}: {100 * place:.0f}% of the way from worst to best)"
    side = "below" if place < 0 else "above"
    return f" (published {cell.published:.2f}: {side} it, no order of the tied documents gives it)"


def _mark(cell: CellView, ties: tuple[float, float]) -> None:
    cell.ties = ties
    if TIED_MARK not in cell.marks:
        cell.marks.append(TIED_MARK)


def tie_mark_html(cell: CellView) -> str:
    """The HTML page's tie mark of a cell, its range (and the published figure's place in it) in the title."""
    if cell.ties is None:
        return f'<span class="tied">{TIED_MARK}</span>'
    worst, best = cell.ties
    title = f"ties decide this value: {worst:.2f}–{best:.2f} over the orders of tied documents"
    title += published_place_text(cell)
    return f'<span class="tied" title="{html.escape(title)}">{TIED_MARK}</span>'


def _range(
    values: Mapping[str, float], ranges: Mapping[str, tuple[float, float]], queries: Sequence[str]
) -> tuple[float, float]:
    """(worst, best) of the mean of ``values`` over ``queries``, each query free to take any of its range."""
    n = len(queries)
    worst = sum(ranges[q][1] if q in ranges else values[q] for q in queries) / n
    best = sum(ranges[q][0] if q in ranges else values[q] for q in queries) / n
    return worst, best


def tie_notes(a: System, b: System, tasks: Sequence[str], measure: Measure, pooled: str) -> list[str]:
    """``compare``'s notes: for each task (and, with several, all queries ``pooled``) where ties decide either
    system's ``measure`` and the difference B - A lies within the two systems' tie ranges (some order of tied
    documents gives B - A the other sign, or 0), the ranges and the differences they allow, x100."""
    label = measure.label
    notes = []
    pooled_a: dict[str, float] = {}
    pooled_b: dict[str, float] = {}
    pooled_ra: dict[str, tuple[float, float]] = {}
    pooled_rb: dict[str, tuple[float, float]] = {}
    for t in tasks:
        ta, tb = a.tasks[t], b.tasks[t]
        sa, sb = ta.scores(measure), tb.scores(measure)
        ra, rb = block_query_ranges(ta.record.ties, measure), block_query_ranges(tb.record.ties, measure)
        pooled_a.update({f"{t}/{q}": v for q, v in sa.items()})
        pooled_b.update({f"{t}/{q}": v for q, v in sb.items()})
        pooled_ra.update({f"{t}/{q}": v for q, v in ra.items()})
        pooled_rb.update({f"{t}/{q}": v for q, v in rb.items()})
        note = _note(t, sa, sb, ra, rb, a.name, b.name, label)
        if note:
            notes.append(note)
    if len(tasks) > 1:
        note = _note(pooled, pooled_a, pooled_b, pooled_ra, pooled_rb, a.name, b.name, label)
        if note:
            notes.append(note)
    return notes


def _note(
    where: str,
    sa: Mapping[str, float],
    sb: Mapping[str, float],
    ra: Mapping[str, tuple[float, float]],
    rb: Mapping[str, tuple[float, float]],
    name_a: str,
    name_b: str,
    label: str,
) -> str | None:
    common = sorted(set(sa) & set(sb))
    if not common or not any(q in ra or q in rb for q in common):
        return None
    worst_a, best_a = _range(sa, ra, common)
    worst_b, best_b = _range(sb, rb, common)
    low, high = worst_b - best_a, best_b - worst_a
    if low > TOLERANCE or high < -TOLERANCE:  # no order of the ties reverses (or erases) the difference
        return None
    diff = sum(sb[q] - sa[q] for q in common) / len(common)
    return (
        f"{where}: {label} B-A {100 * diff:+.2f} lies within the two systems' tie ranges ({name_a} "
        f"{_shown_range(worst_a, best_a)}, {name_b} {_shown_range(worst_b, best_b)}): another order of tied "
        f"documents gives B-A anywhere from {100 * low:+.2f} to {100 * high:+.2f}"
    )


def _shown_range(worst: float, best: float) -> str:
    if best - worst <= TOLERANCE:
        return f"{100 * worst:.2f}, no ties deciding it"
    return f"{100 * worst:.2f}–{100 * best:.2f}"
