"""Whose settings a retriever runs on a task: its own family's, or the family of the task where that family defines
its own for the model (BRIGHT's ``configs/<model>/<task>.json`` and ``retrievers.py``).

A preset's settings belong to one family, its *home*: the R2MED paper's presets and the later models are R2MED's,
the presets defined from BRIGHT's records (``sbert``, ``qwen``, ``voyage-large-2-instruct``) BRIGHT's.  On a task of
a benchmark family, :func:`settings_for` asks that family for its own settings of the retriever
(:meth:`r2med.data.benchmarks.Benchmark.model_settings`, a lookup in the family's records, never a test of names):

* the family has settings for it: they run (the preset's encoder settings replaced by them, options the user set
  applied on top), and ``metrics.json``'s ``config["settings"]`` records whose they are;
* the task is of the preset's home family, or no family's (a local folder): the preset's own settings, nothing
  recorded (a record without ``settings`` ran its preset's own);
* another family without settings for it: a preset whose instructions are per task of its home family is
  **refused** in one line (it has no instruction for this task; ``--set query_instruction=...`` runs it with
  yours), any other **warned** (one line per task) and run with its own, task-independent settings, recorded as
  its home's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..data.benchmarks import benchmark, benchmark_of
from ..errors import OptionError, R2MedError
from ..infra.json_types import JsonObject

if TYPE_CHECKING:
    from ..data.benchmarks import Benchmark, ModelSettings

log = logging.getLogger(__name__)


def family_of_task(task: str | None) -> Benchmark | None:
    """The benchmark family of ``task`` (None: no task, a local collection, or a name no family takes)."""
    if not task:
        return None

    try:
        return benchmark_of(task)
    except OptionError:
        return None


def settings_for(
    retriever: str,
    task: str | None,
    home: str = "r2med",
    per_task: bool = False,
    given: Mapping[str, object] | None = None,
    warn: bool = True,
) -> tuple[ModelSettings | None, JsonObject | None]:
    """(the family settings to run, or None: the preset's own; the ``config["settings"]`` record, or None: nothing
    to record) for ``retriever`` on ``task``.

    ``home``: the family the retriever's own settings belong to; ``per_task``: its own instructions are per task of
    that family; ``given``: the options the user set (a ``query_instruction`` lets a per-task preset run on a task
    its home has no instruction for); ``warn``: say so when another family has no settings for it (a lexical
    retriever without BRIGHT's settings, ``bm25-standard``, is Lucene's BM25 on purpose: no line)."""
    family = family_of_task(task)
    if family is None or task is None:
        return None, None
    own = family.model_settings(retriever, task)
    if own is not None:
        return own, own.record()
    if family.name == home:
        return None, None

    home_title = benchmark(home).title
    if per_task and not (given or {}).get("query_instruction"):
        raise R2MedError(
            f"{retriever} has no {family.title} settings (none of {family.title}'s records runs it) and its "
            f"{home_title} instructions are per {home_title} task, so it has none for {task}; pass "
            "--set query_instruction=... (and doc_instruction=...) to run it with yours"
        )
    if warn:
        log.warning(
            "%s has no %s settings (none of %s's records runs it): it runs on %s with its %s settings",
            retriever,
            family.title,
            family.title,
            task,
            home_title,
        )
    return None, {"family": home, "task": task, "note": f"{family.title} has no settings for {retriever}"}
