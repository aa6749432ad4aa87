"""The table a job prints when it finishes: tasks x (measure, published figure, delta, time), x100."""

from __future__ import annotations

from collections.abc import Sequence

from ..jobs.evaluate import Summary
from ..jobs.folders import TaskResult
from ..metrics import HEADLINE
from ..tasks import TASK_NAMES


def summary_table(results: Sequence[TaskResult], summary: Summary, measure: str = HEADLINE, title: str | None = None):
    """A rich table with an average row; published nDCG@10 and deltas when ``summary.published`` is set
    (the average's delta only over R2MED's 8 tasks, the published average's scope)."""
    from rich.markup import escape
    from rich.table import Table

    published = summary.published.figures() if summary.published else {}
    table = Table(title=escape(title or f"{summary.name}: {measure} (x100)"))
    table.add_column("task")
    table.add_column("queries", justify="right")
    table.add_column(escape(measure), justify="right")
    if published:
        table.add_column("published", justify="right")
        table.add_column("delta", justify="right")
    table.add_column("time (s)", justify="right")
    values = []
    for r in results:
        value = 100 * r.metrics.aggregate[measure]
        values.append(value)
        row = [escape(r.task), str(len(r.metrics.per_query)), f"{value:.2f}"]
        if published:
            pub = published.get(r.task)
            row += [f"{pub:.2f}" if pub is not None else "-", f"{value - pub:+.2f}" if pub is not None else "-"]
        row.append("reused" if r.reused else f"{r.timing.get('total_s', 0):.1f}")
        table.add_row(*row)
    if len(results) > 1:
        avg = sum(values) / len(values)
        row = ["[bold]Average", "", f"[bold]{avg:.2f}"]
        if published:
            pub = published.get("Average")
            full = sorted(r.task for r in results) == sorted(TASK_NAMES) and pub is not None
            row += [f"{pub:.2f}" if pub is not None else "-", f"{avg - pub:+.2f}" if full else "-"]
        row.append("")
        table.add_row(*row)
    return table


def precision_note(summary: Summary) -> str | None:
    """A warning line when a run used another precision than the paper's code (its published row stays)."""
    if summary.precision is None:
        return None
    used, paper = summary.precision
    return (f"{summary.retriever} ran in {used}, the paper's code in {paper}: expect larger deltas "
            "(reports widen the tolerance)")
