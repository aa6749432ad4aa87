"""The table a job prints when it finishes: tasks x (measures, published figure, delta, time), x100."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from ..data.tasks import TASK_NAMES
from ..measures import HEADLINE, Measure
from ..results.folders import Summary, TaskResult
from ..results.published import PublishedKey
from .board import beyond, graded_tolerance
from .format import FLAG
from .judgments import task_label
from .layout import compact_table


def summary_table(
    results: Sequence[TaskResult],
    summary: Summary,
    measures: Sequence[Measure] | None = None,
    title: str | None = None,
    compact: bool = False,
) -> Table:
    """A rich table with an average row: one column per measure (``measures``, default nDCG@10), and beside
    each measure the published row has figures of (R2MED's: nDCG@10; BRIGHT's: nDCG@10, and Recall@1 on the long
    documents) the published figures and deltas when ``summary.published`` is set (the average's delta only
    over the tasks of the published average: R2MED's 8, BRIGHT's 12 or its 8 long settings); a delta beyond its
    tolerance ends in ``!``, as ``r2med report`` marks it.  ``compact``: no
    vertical rules, short headers (for a narrow terminal)."""

    measures = list(measures or (HEADLINE,))
    key = summary.published
    shown_figures: dict[Measure, dict[str, float]] = {}  # measure -> task -> published figure (R2MED: nDCG@10 only)
    for m in measures:
        figures = key.figures(m) if key is not None else {}
        figures = {task: value for task, value in figures.items() if task not in summary.ungraded}
        # a family whose rows publish only an Average (BRIGHT's leaderboard) shows it beside a run of all its tasks
        average_only = key is not None and key.average_alone and figures.get("Average") is not None
        if any(r.task in figures for r in results) or (
            average_only and not summary.ungraded and _whole(results, key, m)
        ):
            shown_figures[m] = figures  # other collections: no published column at all
    labels = ", ".join(m.label for m in measures)
    heading = escape(title or f"{summary.name}: {labels} (x100)")
    table = compact_table(title=heading) if compact else Table(title=heading)
    table.add_column("task", no_wrap=compact)
    table.add_column("n" if compact else "queries", justify="right")
    for m in measures:
        table.add_column(escape(m.label), justify="right")
        if m in shown_figures:
            table.add_column("pub." if compact else "published", justify="right")
            table.add_column("Δ" if compact else "delta", justify="right")
    table.add_column("s" if compact else "time (s)", justify="right")
    values: dict[Measure, list[float]] = {m: [] for m in measures}
    tolerance = graded_tolerance(key, summary.precision is not None) if key is not None else None
    flagged: list[float] = []

    for r in results:
        row = [escape(task_label(r, results)), str(len(r.metrics.per_query))]
        for m in measures:
            value = 100 * r.metrics.aggregate[m.trec]
            values[m].append(value)
            row.append(f"{value:.2f}")
            if m in shown_figures:
                pub = shown_figures[m].get(r.task)
                row += [f"{pub:.2f}" if pub is not None else "-", _delta(value, pub, tolerance, flagged)]
        row.append("reused" if r.reused else f"{r.timing.get('total_s', 0):.1f}")
        table.add_row(*row)
    if len(results) > 1:
        row = ["[bold]Average", ""]
        for m in measures:
            avg = sum(values[m]) / len(values[m])
            row.append(f"[bold]{avg:.2f}")
            if m in shown_figures:
                pub = shown_figures[m].get("Average")
                full = _whole(results, key, m) and pub is not None and not summary.ungraded
                shown = full and pub is not None  # full already requires a published average
                row += [f"{pub:.2f}" if shown else "-", _delta(avg, pub if shown else None, tolerance, flagged)]
        row.append("")
        table.add_row(*row)
    if flagged:  # the mark `report` puts on the same delta, explained as it explains it
        table.caption = f"{FLAG} delta beyond tolerance (±{tolerance:g})"
    return table


def _delta(value: float, published: float | None, tolerance: float | None, flagged: list[float]) -> str:
    """A delta cell: ``-`` without a published figure; :data:`~r2med.report.format.FLAG` after a delta beyond
    ``tolerance`` (:func:`~r2med.report.board.beyond`, the rule ``report`` marks by), noted in ``flagged``."""
    if published is None:
        return "-"
    delta = value - published
    if beyond(delta, tolerance):
        flagged.append(delta)
        return f"{delta:+.2f} {FLAG}"
    return f"{delta:+.2f}"


def _whole(results: Sequence[TaskResult], key: PublishedKey | None, measure: Measure) -> bool:
    """Whether ``results`` are exactly the tasks the published Average of ``key`` is over (R2MED's 8; BRIGHT's 12,
    or its 8 long-document settings for Recall@1)."""
    scope = key.average_tasks(measure) if key is not None else TASK_NAMES
    return sorted(r.task for r in results) == sorted(scope)


def precision_note(summary: Summary) -> str | None:
    """A warning line when a run used another precision than the paper's code (its published row stays)."""
    if summary.precision is None:
        return None
    used, paper = summary.precision
    return (
        f"{summary.retriever} ran in {used}, the paper's code in {paper}: expect larger deltas "
        "(reports widen the tolerance)"
    )


def ungraded_notes(summary: Summary) -> list[str]:
    """Why no published figure is shown: the line naming the fields of the spec that differ from the published
    row's (:func:`r2med.results.grading.grade_system`), or one line per task whose data is not the hub task's; and
    the line saying a grade rests on the user's claim of which checkpoint its model folder holds."""
    if summary.published is None:
        return [f"no published figure for {summary.name}: {summary.reason}"] if summary.reason else []
    claim = (
        [f"{summary.name}: graded on your claim ({summary.claim}, model_claim; r2med did not verify the weights)"]
        if summary.claim
        else []
    )
    return claim + [f"no published {summary.published.label} figure: {r}" for r in summary.ungraded.values()]
