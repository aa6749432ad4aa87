"""What the reports say of figures made with a judgments file of the user's (``--qrels FILE``) in place of the task's
own: a mark beside every such figure and a line naming the file and its sha256.

Each result made so records the file in its configuration (``config["judgments"]``: ``{"file", "sha256"}``, from
:class:`r2med.data.collection.JudgmentsFile`); such a result is never graded against published figures (made with
the task's own judgments: :func:`r2med.results.grading.grade`).  Each distinct file (by its sha256) gets
its own mark: :data:`MARK`, numbered when a table holds figures of more than one (``§1``, ``§2``).  The leaderboard
marks cells through its mark hook (:attr:`r2med.report.board.BoardCell.marks`), the Average too when a task behind
it carries one; a job's summary table marks the task and prints the line under it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..runs.record import JudgmentsRecord, RecordedConfig

if TYPE_CHECKING:
    from ..results.folders import System, TaskResult
    from .mark_hooks import BoardView

#: The mark of a figure made with a judgments file in place of the task's own.
MARK = "§"


def judgments_file(config: RecordedConfig | None) -> JudgmentsRecord | None:
    """The judgments file a recorded configuration was scored on (its file and sha256), or None: the task's own."""
    return config.judgments if config is not None else None


def marks_for(configs: Iterable[RecordedConfig | None]) -> dict[str, tuple[str, JudgmentsRecord]]:
    """sha256 -> (its mark, the record) for every judgments file among ``configs`` (in order of appearance)."""
    found: dict[str, JudgmentsRecord] = {}
    for config in configs:
        record = judgments_file(config)
        if record is not None:
            found.setdefault(record.sha256, record)
    if len(found) == 1:
        return {sha: (MARK, record) for sha, record in found.items()}
    return {sha: (f"{MARK}{i}", record) for i, (sha, record) in enumerate(found.items(), start=1)}


def legend_line(mark: str, record: JudgmentsRecord) -> str:
    """The line explaining ``mark``: the file, its sha256, and that such figures are never graded."""
    return (
        f"{mark} judged with {record.file} (sha256 {record.sha256[:16]}...) in place of the "
        "task's own judgments; never graded against published figures."
    )


def mark_judgments(board: BoardView, systems: Sequence[System]) -> None:
    """Mark each leaderboard cell whose figure a judgments file made (and the Average of a row with such a task),
    through the board's mark hook, with one legend line per file."""
    marks = marks_for(t.config for s in systems for t in s.tasks.values())
    if not marks:
        return
    for row, system in zip(board.rows, systems):  # the system rows come first, in order
        used: dict[str, str] = {}  # task -> its mark
        for task in board.tasks:
            result = system.tasks.get(task)
            record = judgments_file(result.config) if result is not None else None
            cell = row.cells[task]
            if record is not None and cell.value is not None:
                mark = marks[record.sha256][0]
                cell.marks.append(mark)
                used[task] = mark
        for col in board.columns[len(board.tasks) :]:  # an average over a marked task
            over = [used[t] for t in board.average_tasks(col) if t in used]
            if over and row.cells[col].value is not None:
                row.cells[col].marks += [m for m in dict.fromkeys(over) if m not in row.cells[col].marks]
    for mark, record in marks.values():
        board.marks[mark] = legend_line(mark, record)


def judgment_lines(results: Sequence[TaskResult]) -> list[str]:
    """The lines under a job's summary table: one per judgments file its figures were made with."""
    return [legend_line(mark, record) for mark, record in marks_for(r.config for r in results).values()]


def task_label(result: TaskResult, results: Sequence[TaskResult]) -> str:
    """A summary table's task cell: the task, with the mark of the judgments file its figures were made with."""
    record = judgments_file(result.config)
    if record is None:
        return result.task
    return f"{result.task} {marks_for(r.config for r in results)[record.sha256][0]}"
