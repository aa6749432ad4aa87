"""mteb's results beside the paper's figures: a second published source, shown, named, graded only where both the
data and the model are the run's.

The figures are embeddings-benchmark/results' (``protocol/mteb_results.json``: R2MED's 8 tasks, BRIGHT v1 on
``xlangai/BRIGHT@a75a0eb`` and v1.1 on mteb's copy ``mteb/BRIGHT@c26703e``, short and long documents), each with
the dataset revision and the model revision it was made at.  A row's model is the checkpoint its run recorded
(``metrics.json``'s ``encoder.model``, a hub id; never the system's name); a task's mteb figure is the one made on
the run's data (an R2MED task: the same commit; a BRIGHT task: the same upload of its documents and examples,
:mod:`r2med.protocol.data_states`).  The board shows them as an ``mteb`` line under the row's published line, and
the legend names each: model and commit, dataset and commit, the results commit.  A figure is graded -- its delta
named -- only when the run recorded the same model commit (``encoder.model_revision``); else it is shown with why not.
Where mteb's figure and the paper's differ for the same model and data by more than their rounding, both are
named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..measures import HEADLINE, Family, Measure
from ..protocol import data_states
from ..protocol.data_states import MtebFigure
from ..results.data_states import run_state  # a dataset whose contents the record follows (BRIGHT's)
from ..results.grading import claimed_checkpoint
from ..runs.record import RecordedConfig, RunData

if TYPE_CHECKING:
    from ..results.folders import System
    from .mark_hooks import BoardView

#: how far mteb's figure and the paper's may differ and still be the same figure (the paper's rounding: 0.1 x100)
SAME = 0.051
#: the measure names of mteb_results.json per r2med measure
#: the measures mteb's figures hold (nDCG@10; R@1 on BRIGHT's long documents)
_MEASURES = frozenset({HEADLINE, Measure(Family.RECALL, 1)})


@dataclass(frozen=True)
class MtebLine:
    """mteb's figures shown under one row: task -> figure, and the legend lines that name them."""

    figures: Mapping[str, MtebFigure]
    lines: tuple[str, ...]


def run_model(config: RecordedConfig | None) -> tuple[str | None, str | None]:
    """(the hub model a run's encoder recorded, its recorded revision); (None, None) for a local folder or none."""
    encoder = config.encoder if config is not None else None
    if encoder is None or encoder.model is None:
        return None, None
    model = encoder.model
    claim = claimed_checkpoint(config)
    if claim is not None:  # a local folder the user claimed to hold a checkpoint: that one (on the claim)
        repo, _, commit = claim.partition("@")
        return repo, commit or None
    if model.count("/") != 1 or Path(model).expanduser().exists():
        return None, None
    return model, encoder.model_revision


def _same_data(figure: MtebFigure, task: str, run: RunData) -> bool:
    """Whether mteb's ``figure`` was made on the data the run read (``run``: what its ``metrics.json`` records of
    it)."""
    revision = run.revision
    if revision is None:
        return False
    if figure.dataset_revision == revision:  # the same commit: the same data
        return True
    corpus = "long_documents" if task.endswith(":long") else "documents"
    theirs = (
        data_states.content(figure.dataset, figure.dataset_revision, corpus),
        data_states.content(figure.dataset, figure.dataset_revision, "examples"),
    )
    if None in theirs:  # the hub's record says nothing of that commit's contents: not shown to be the same
        return False

    state = run_state(task, run)
    return theirs == (state.documents, state.examples)


def task_figure(model: str, task: str, measure: Measure, run: RunData) -> MtebFigure | None:
    """mteb's own figure (``evaluated``: run by mteb, not imported) of hub model ``model`` on ``task`` of ``measure``,
    made on the data ``run`` (its ``revision`` and ``source``) names; None: mteb has none there."""
    if measure not in _MEASURES:
        return None
    found = [f for f in data_states.mteb_figures_of(model, task, measure) if f.evaluated and _same_data(f, task, run)]
    return found[0] if found else None


def graded_by_commit(figure: MtebFigure, revision: str | None) -> bool:
    """Whether mteb's ``figure`` grades a run that recorded model commit ``revision`` (the same commit)."""
    return bool(revision) and figure.model_revision.startswith(revision or "-")


def mteb_line(system: System, tasks: Sequence[str], measure: Measure, published: Mapping[str, float]) -> MtebLine:
    """mteb's figures for ``system``'s model on ``tasks`` made on its runs' data, with their legend lines."""
    wanted = measure if measure in _MEASURES else None
    figures: dict[str, MtebFigure] = {}
    models: dict[str, str | None] = {}
    for task in tasks:
        result = system.tasks.get(task)
        if result is None or wanted is None:
            continue
        model, revision = run_model(result.config)
        found = task_figure(model, task, wanted, result.record.run_data()) if model is not None else None
        if found is not None:
            figures[task] = found
            models[task] = revision
    if not figures:
        return MtebLine({}, ())
    lines = []
    first = next(iter(figures.values()))
    where = sorted({f"{f.dataset}@{f.dataset_revision[:7]}" for f in figures.values()})
    graded = [t for t, f in figures.items() if graded_by_commit(f, models[t])]
    status = (
        "graded (the run recorded the same model commit)"
        if len(graded) == len(figures)
        else "shown, not graded: the run recorded no model commit equal to mteb's"
    )
    if any(claimed_checkpoint(system.tasks[t].config) for t in figures):
        status += " -- on your claim of the model folder's checkpoint (model_claim; r2med did not verify the weights)"
    lines.append(
        f"mteb {first.model}: figures of embeddings-benchmark/results@{data_states.mteb_results_commit()[:7]} "
        f"(model {first.model}@{first.model_revision[:7]}, data {', '.join(where)}, the runs' data); {status}."
    )
    for task in graded:
        result = system.tasks[task]
        value = result.aggregate.get(measure.trec)
        if value is not None:
            lines.append(f"mteb {first.model} {task}: run - mteb = {100 * value - figures[task].value:+.2f}.")
    apart = [
        f"{t} (mteb {f.value:.2f}, paper {published[t]:.2f})"
        for t, f in figures.items()
        if t in published and abs(f.value - published[t]) > SAME
    ]
    if apart:
        lines.append(
            f"mteb and the paper disagree for {first.model} on the same data: {'; '.join(apart)}; both shown, named."
        )
    return MtebLine(figures, tuple(lines))


def mark_mteb(board: BoardView, systems: Sequence[System]) -> None:
    """Put mteb's figures under each system row that has some (:attr:`r2med.report.board.Row.mteb`) and name them in
    the legend."""
    for row, system in zip(board.rows, systems):  # the system rows come first, in order
        published = {t: c.published for t, c in row.cells.items() if c.published is not None}
        if row.published is not None:  # a figure shown as not graded is still the paper's for this comparison
            published = {**{t: v for t, v in row.published.figures(board.measure).items()}, **published}
        line = mteb_line(system, board.tasks, board.measure, published)
        if line.figures:
            row.mteb = {t: f.value for t, f in line.figures.items()}
            row.mteb_label = next(iter(line.figures.values())).model
            board.notes += list(line.lines)
