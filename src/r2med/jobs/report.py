"""``r2med report`` / ``compare``: run folders read as systems, the task texts and the expansions the HTML
page shows, and the per-query values grouped by a query metadata key (``--by``).

The tables and the page themselves are :mod:`r2med.report`'s; this module only finds their inputs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..data import Collection, locate
from ..data.resolve import RecordedSource, require, task_filter
from ..errors import R2MedError, did_you_mean
from ..evaluation.facets import NONE, SCENARIO, facet_keys, facet_label, facet_table
from ..expansion.precomputed import read_expansion_file
from ..expansion.traces import strip_for
from ..expansion_name import ExpansionName
from ..infra.json_types import JsonObject, JsonValue
from ..results.folders import System, TaskFolder, find_systems, split_columns, task_order

if TYPE_CHECKING:
    from ..evaluation.facets import Facets
    from ..measures import Measure

log = logging.getLogger(__name__)


def load_report(
    runs: Iterable[str | os.PathLike[str]], published: Mapping[str, str] | None = None, tasks: str | None = None
) -> list[System]:
    """The systems of a report (:func:`r2med.results.folders.find_systems`), keeping the tasks ``tasks`` names
    (``--tasks``: ``all`` or comma-separated names, case aside; :func:`select_tasks`), each split of a task a
    column of its own (:func:`r2med.results.folders.split_columns`)."""
    return split_columns(select_tasks(find_systems(runs, published=published), tasks))


def select_tasks(systems: list[System], tasks: str | None) -> list[System]:
    """``systems`` with only the tasks ``tasks`` names; a name no system has is a one-line error (with a
    suggestion), and systems left with none of the tasks are dropped."""

    wanted = task_filter(tasks)
    if wanted is None:
        return systems
    have = task_order(systems)
    unknown = sorted(wanted - {t.lower() for t in have})
    if unknown:
        raise R2MedError(
            f"--tasks {unknown[0]}: no system has this task{did_you_mean(unknown[0], have)}; "
            f"the results hold: {', '.join(have)}"
        )
    kept = []
    for system in systems:
        system.tasks = {t: folder for t, folder in system.tasks.items() if t.lower() in wanted}
        if system.tasks:
            kept.append(system)
        else:
            log.warning("%s: none of the tasks asked for (--tasks); left out of the report", system.name)
    return kept


def recorded_task(systems: Sequence[System], column: str) -> tuple[str, RecordedSource]:
    """The task name a report's column was filed under (a column can be ``nfcorpus (dev)``:
    :func:`r2med.results.folders.split_columns`) and where the data of its first run came from (its recorded
    source, revision and split), what :func:`r2med.data.locate` reads."""
    folder = next((s.tasks[column] for s in systems if column in s.tasks), None)
    if folder is None:
        return column, RecordedSource()
    return folder.task, folder.record.recorded_source()


def task_texts(
    tasks: Sequence[str],
    data_dir: str | os.PathLike[str] | None = None,
    hub: bool = False,
    revision: str | None = None,
    strict: bool = False,
    systems: Sequence[System] = (),
) -> dict[str, Collection]:
    """The collections of ``tasks`` (a report's columns) that can be found (``--data-dir``, the built-in demo,
    or with ``hub`` the hub; :func:`r2med.data.locate`), at the split the runs of ``systems`` recorded.
    Texts are optional: a task that cannot be loaded is named in a warning and the page shows its ids only."""
    found: dict[str, Collection] = {}
    for task in tasks:
        try:
            name, recorded = recorded_task(systems, task)
            split = RecordedSource(split=recorded.split)
            ref = locate(name, data_dir, revision, recorded=split, hub=hub, alone=len(tasks) == 1, strict=strict)
            if ref is not None:
                found[task] = ref.load()
        except Exception as exc:  # texts are optional: the page degrades to ids
            log.warning("%s: texts unavailable (%s); the report shows ids only", task, exc)
    return found


def _expansion_texts(coll: Collection, folder: TaskFolder) -> dict[str, str]:
    """The expansion texts a task's queries were built with (its ``config["expansion"]``): the file it
    recorded, else the collection's file of that method and LLM."""
    expansion = folder.config.expansion if folder.config is not None else None
    if expansion is None:
        return {}
    method, llm = str(expansion.method), str(expansion.llm)
    path = Path(expansion.file) if expansion.file else None
    if path is None or not path.is_file():
        path = coll.expansion_files.get(ExpansionName(method, llm))
    if path is None:
        return {}

    try:
        texts = read_expansion_file(path, method, llm).texts
    except R2MedError as exc:  # the page still works without the expansion texts
        log.warning("expansions not shown: %s", exc)
        return {}
    return {qid: _strip(llm, text, expansion.trace) for qid, text in texts.items()}


def _strip(llm: str, text: str, trace: str | None = None) -> str:
    """The expansion as the retriever saw it (its reasoning trace removed)."""
    try:
        return strip_for(llm, text, None if trace in (None, "auto") else trace)
    except R2MedError:  # an unknown trace format: show the raw text
        return text


def expansion_texts(
    systems: Sequence[System], collections: Mapping[str, Collection]
) -> dict[str, dict[str, dict[str, str]]]:
    """system -> task -> query -> the expansion its run used (trace stripped), for the tasks with texts."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for system in systems:
        for task, folder in system.tasks.items():
            if task in collections:
                texts = _expansion_texts(collections[task], folder)
                if texts:
                    out.setdefault(system.name, {})[task] = texts
    return out


# -- facets: per-query values grouped by query metadata (``report --by``) ---------------------------

#: The HTML page offers a query key as a facet when it has at most this many distinct values
#: (``answer`` and ``doc_id`` have one per query: no grouping), and at least two.
HTML_FACET_VALUES = 30


def facet_collections(
    systems: Sequence[System],
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    hub: bool = True,
    strict: bool = False,
) -> dict[str, Collection]:
    """The collection of every task of ``systems`` (their query metadata): ``--data-dir``, else the source
    each run recorded, else the hub at the recorded commit (:func:`r2med.data.locate`, as ``rerank``);
    a task whose collection cannot be found is an error naming it."""

    found: dict[str, Collection] = {}
    tasks = task_order(systems)
    for task in tasks:
        name, recorded = recorded_task(systems, task)
        ref = locate(name, data_dir, revision, recorded=recorded, hub=hub, alone=len(tasks) == 1, strict=strict)
        found[task] = require(ref, name, recorded, data_dir).load()
    return found


def per_query_values(systems: Sequence[System], measure: Measure) -> dict[str, dict[str, dict[str, float]]]:
    """system -> task -> query id -> value of ``measure`` (from each task's ``metrics.json``)."""
    return {s.name: {t: folder.scores(measure) for t, folder in s.tasks.items()} for s in systems}


def query_meta(collections: Mapping[str, Collection]) -> dict[str, dict[str, JsonObject]]:
    """task -> query id -> metadata (the query keys beyond id and text: the data's own, open JSON)."""
    return {task: dict(coll.query_meta) for task, coll in collections.items()}


def facet_report(
    systems: Sequence[System],
    measure: Measure,
    by: str,
    average: str = "pooled",
    collections: Mapping[str, Collection] | None = None,
) -> Facets:
    """The leaderboard per value of ``by`` (a query metadata key, or ``scenario``):
    :func:`r2med.evaluation.facets.facet_table` over every system's per-query values.  A key no query has is an
    error listing the keys there are."""
    meta = query_meta(collections or {})
    keys = facet_keys(meta)
    listed = ", ".join(
        [f"{k} ({n} quer{'y' if n == 1 else 'ies'})" for k, n in keys.items() if n and k != SCENARIO] + [SCENARIO]
    )
    if by != SCENARIO and not keys.get(by):
        raise R2MedError(f"--by {by}: no query has this key; available: {listed}")
    facets = _facets(systems, measure, by, average, meta)
    if facets.rows and all(row.value == NONE for row in facets.rows):  # one "(none)" group means nothing
        keys_line = (
            f"group by a query metadata key instead: --by KEY ({listed})"
            if listed != SCENARIO
            else ("their queries carry no metadata to group by")
        )
        raise R2MedError(
            f"--by {by}: no task of the report has a scenario ({', '.join(task_order(systems))} "
            f"{'is not' if len(task_order(systems)) == 1 else 'are not'} R2MED tasks); {keys_line}"
        )
    return facets


def _facets(
    systems: Sequence[System],
    measure: Measure,
    by: str,
    average: str,
    meta: Mapping[str, Mapping[str, Mapping[str, JsonValue]]],
) -> Facets:
    return facet_table(per_query_values(systems, measure), meta, by, average=average, systems=[s.name for s in systems])


def html_facets(
    systems: Sequence[System],
    measure: Measure,
    collections: Mapping[str, Collection],
    average: str = "pooled",
    by: str | None = None,
) -> dict[str, Facets]:
    """The facets the HTML page offers in its selector: ``scenario``, every query key with 2 to
    :data:`HTML_FACET_VALUES` distinct values that queries share (not one per query, as ``answer``),
    and ``by`` (asked for)."""
    meta = query_meta(collections)
    wanted = [SCENARIO]
    for key, count in facet_keys(meta).items():
        if key == SCENARIO or not count:
            continue
        values = {facet_label(row.get(key)) for rows in meta.values() for row in rows.values()} - {NONE}
        if 2 <= len(values) <= HTML_FACET_VALUES and len(values) < count:  # values shared by queries: groups
            wanted.append(key)
    if by is not None and by not in wanted:
        wanted.append(by)
    out = {}
    for key in wanted:
        facets = _facets(systems, measure, key, average, meta)
        if key == by or not all(row.value == NONE for row in facets.rows):  # a single "(none)" group: not offered
            out[key] = facet_report(systems, measure, key, average, collections) if key == by else facets
    return out
