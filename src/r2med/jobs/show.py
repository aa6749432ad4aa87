"""``r2med show`` / :func:`show_query`: one query of a report's systems, found in their run folders.

The systems are read as ``report`` reads them (:func:`r2med.jobs.report.load_report`); the query's text,
its judgments and the documents' texts come from its collection (``--data-dir``, the demo, the source the
runs recorded, or with ``hub`` the hub: :func:`r2med.data.locate`).  Without a collection
the view shows ids and scores only, and says so.  The view itself is :class:`r2med.report.show.QueryView`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..data import locate
from ..errors import OptionError, did_you_mean, shown
from ..infra.containment import path_argument
from ..measures import HEADLINE, Measure
from ..measures import measure as as_measure
from ..report.judgments import judgments_file, legend_line, marks_for
from ..report.show import Hit, Judged, QueryView
from ..results.folders import task_order
from ..runs.run import ranked
from .report import load_report, recorded_task

if TYPE_CHECKING:
    from ..data import Collection
    from ..results.folders import System

#: Documents of each system's ranking shown (``-k``).
TOP = 5


def show_query(
    runs: Iterable[str | os.PathLike[str]],
    query: str,
    task: str | None = None,
    k: int = TOP,
    data_dir: str | os.PathLike[str] | None = None,
    hub: bool = False,
    revision: str | None = None,
    measure: Measure | str = HEADLINE,
    strict: bool = False,
) -> QueryView:
    """The view of ``query`` (an id) of ``task`` (a column of the report; may be left out when the systems have
    one) in every system of ``runs`` (results roots, system or task folders): print it, or show it in a
    notebook.  An unknown task or query id is a one-line error with a suggestion.  ``measure``: a
    :class:`~r2med.measures.Measure` or any spelling of one (``"nDCG@10"``), parsed at once."""

    if k < 1:
        raise OptionError(f"-k must be an integer of at least 1, got {k!r}")
    asked = as_measure(measure)

    if isinstance(runs, (str, os.PathLike)):  # one folder (a text is no list of its characters)
        runs = [runs]
    if not isinstance(runs, Iterable):
        raise OptionError(f"runs: expected run folders (a path or a list of them), got {shown(runs)}")
    if not isinstance(query, str) or not query:
        raise OptionError(f"query: expected a query id (text), got {shown(query)}")
    systems = load_report([path_argument(r, "runs") for r in runs])
    tasks = task_order(systems)
    column = _column(tasks, task)
    holding = [s for s in systems if column in s.tasks]
    name, recorded = recorded_task(holding, column)
    ref = locate(name, data_dir, revision, recorded=recorded, hub=hub, alone=True, strict=strict)
    return build_view(holding, column, query, ref.load() if ref is not None else None, k, asked)


def _column(tasks: Sequence[str], task: str | None) -> str:
    if task is None:
        if len(tasks) == 1:
            return tasks[0]
        raise OptionError(f"the systems have {len(tasks)} tasks ({', '.join(tasks)}): name one with --task")
    for name in tasks:
        if name.lower() == task.lower():
            return name
    raise OptionError(
        f"--task {task}: no system has this task{did_you_mean(task, tasks)}; they hold: {', '.join(tasks)}"
    )


def build_view(
    systems: Sequence[System], task: str, query: str, collection: Collection | None, k: int, measure: Measure
) -> QueryView:
    """The view of ``query`` of ``task`` (a key of each system's tasks) in ``systems``, with texts and
    judgments from ``collection`` when given."""

    # one column, one data state: a system scored on a judgments file of its own (--qrels) is marked wherever its
    # name stands (the judgments shown are the collection's), and the mark explained in a note
    judged_by = marks_for(s.tasks[task].config for s in systems)
    label: dict[str, str] = {}
    for s in systems:
        record = judgments_file(s.tasks[task].config)
        label[s.name] = f"{s.name} {judged_by[record.sha256][0]}" if record is not None else s.name

    known = {q for s in systems for q in (*s.tasks[task].run, *s.tasks[task].per_query)}
    if collection is not None:
        known |= set(collection.queries)
    if query not in known:
        raise OptionError(
            f"--query {query}: no such query in {task}{did_you_mean(query, sorted(known))} ({len(known)} queries)"
        )
    judgments = dict(collection.qrels.get(query, {})) if collection is not None else {}
    corpus = collection.corpus if collection is not None else {}
    orders = {label[s.name]: [d for d, _ in ranked(s.tasks[task].run.get(query, {}))] for s in systems}
    positions = {name: {d: i + 1 for i, d in enumerate(order)} for name, order in orders.items()}
    relevant = sorted(((d, g) for d, g in judgments.items() if g > 0), key=lambda dg: (-dg[1], dg[0]))
    judged = [Judged(d, g, corpus.get(d), {name: positions[name].get(d) for name in orders}) for d, g in relevant]
    top = {}
    for s in systems:
        scores = s.tasks[task].run.get(query, {})
        top[label[s.name]] = [
            Hit(i + 1, d, v, judgments.get(d) if collection is not None else None, corpus.get(d))
            for i, (d, v) in enumerate(ranked(scores)[:k])
        ]
    values = {label[s.name]: s.tasks[task].scores(measure).get(query) for s in systems}
    notes = []
    if collection is None:
        notes.append(f"{task}: no collection found (pass --data-dir, or --hub): ids and scores only, no judgments")
    notes += [f"{task}: {legend_line(mark, record)}" for mark, record in judged_by.values()]
    for s in systems:
        if query not in s.tasks[task].run:
            notes.append(f"{s.name}: its run has no ranking for {query}")
    return QueryView(
        task=task,
        query=query,
        text=collection.queries.get(query) if collection is not None else None,
        measure=measure,
        values=values,
        judged=judged,
        top=top,
        k=k,
        non_relevant=sum(1 for g in judgments.values() if g <= 0),
        notes=notes,
    )
