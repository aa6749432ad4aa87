"""``r2med report`` / ``compare``: run folders read as systems, and the task texts the HTML page shows.

The tables and the page themselves are :mod:`r2med.report`'s; this module only finds their inputs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence

from ..data import Collection, locate
from .folders import System, find_systems

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
