"""``r2med report`` / ``compare``: run folders read as systems, the task texts and the expansions the HTML
page shows.

The tables and the page themselves are :mod:`r2med.report`'s; this module only finds their inputs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ..data import Collection, locate
from ..errors import R2MedError
from .folders import System, TaskFolder, find_systems

log = logging.getLogger(__name__)


def load_report(runs: Iterable[str | os.PathLike[str]], published: Mapping[str, str] | None = None) -> list[System]:
    """The systems of a report (:func:`r2med.jobs.folders.find_systems`)."""
    return find_systems(runs, published=published)


def task_texts(tasks: Sequence[str], data_dir: str | os.PathLike[str] | None = None, hub: bool = False,
               revision: str | None = None) -> dict[str, Collection]:
    """The collections of ``tasks`` that can be found (``--data-dir``, the built-in demo, or with ``hub`` the
    hub; :func:`r2med.data.locate`).  Texts are optional: a task that cannot be loaded is named in a warning
    and the page shows its ids only."""
    found: dict[str, Collection] = {}
    for task in tasks:
        try:
            ref = locate(task, data_dir, revision, hub=hub, alone=len(tasks) == 1)
            if ref is not None:
                found[task] = ref.load()
        except Exception as exc:  # texts are optional: the page degrades to ids
            log.warning("%s: texts unavailable (%s); the report shows ids only", task, exc)
    return found


def _expansion_texts(coll: Collection, folder: TaskFolder) -> dict[str, str]:
    """The expansion texts a task's queries were built with (its ``config["expansion"]``): the file it
    recorded, else the collection's file of that method and LLM."""
    expansion = folder.expansion
    if not expansion:
        return {}
    method, llm = str(expansion.get("method")), str(expansion.get("llm"))
    path = Path(str(expansion["file"])) if expansion.get("file") else None
    if path is None or not path.is_file():
        path = coll.expansion_files.get(f"{method}:{llm}")
    if path is None:
        return {}
    from ..expansion.precomputed import read_expansion_file

    try:
        texts = read_expansion_file(path, method, llm).texts
    except R2MedError as exc:  # the page still works without the expansion texts
        log.warning("expansions not shown: %s", exc)
        return {}
    return {qid: _strip(llm, text, expansion.get("trace")) for qid, text in texts.items()}


def _strip(llm: str, text: str, trace: str | None = None) -> str:
    """The expansion as the retriever saw it (its reasoning trace removed)."""
    from ..expansion.traces import strip_for

    try:
        return strip_for(llm, text, None if trace in (None, "auto") else trace)
    except R2MedError:  # an unknown trace format: show the raw text
        return text


def expansion_texts(systems: Sequence[System], collections: Mapping[str, Collection]
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
