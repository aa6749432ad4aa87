"""``r2med score --trace`` and ``r2med import --trace``: an agent's trace from ``r2med serve``, scored or filed.

* :func:`score_trace_file` -- the trace read (:func:`r2med.serve.traces.read_trace`: torn lines counted), its task's
  judgments and exclusions loaded (queries and judgments only: no documents), scored per query and averaged
  (:func:`r2med.serve.trace_score.score_trace`);
* :func:`import_trace` -- each query's union (in order of first retrieval, exclusions removed) filed as a system
  through :func:`r2med.jobs.imports.import_run`, so ``report``, ``compare`` and ``show`` take it; the configuration
  records the trace file and its sha256.

A trace whose start records name another task than the one given is refused in one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..data import Collection
from ..errors import R2MedError
from ..infra.file_hash import file_hash
from ..measures import DEFAULT_MEASURES, Measure
from ..results.folders import TaskResult
from ..serve.trace_score import TraceScore, score_trace, union_run
from ..serve.traces import Trace, read_trace


def task_collection(
    task: str, data_dir: str | os.PathLike[str] | None, revision: str | None = None, strict: bool = False
) -> Collection:
    """The one task's queries, judgments and exclusions (no documents read)."""
    from ..data import check_hub, resolve

    refs = resolve(task, data_dir, revision, strict=strict)
    if len(refs) != 1:
        raise R2MedError(f"a trace is scored against one task; {task!r} names {len(refs)}")
    [ref] = check_hub(refs, corpus=False)
    return ref.load(corpus=False)


def check_task(trace: Trace, collection: Collection) -> None:
    """Refuse a trace whose server served another task."""
    served = {str(s.get("served", {}).get("task")) for s in trace.starts if isinstance(s.get("served"), dict)}
    if served and collection.name not in served:
        raise R2MedError(f"{trace.path}: the trace was served from {', '.join(sorted(served))}, not {collection.name}")


def score_trace_file(
    trace: str | os.PathLike[str],
    task: str,
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    strict: bool = False,
) -> TraceScore:
    """``r2med score --trace TRACE -t TASK`` (see the module)."""
    read = read_trace(trace)
    collection = task_collection(task, data_dir, revision, strict)
    check_task(read, collection)
    return score_trace(read, collection.qrels, collection.exclusions)


def import_trace(
    trace: str | os.PathLike[str],
    task: str,
    name: str,
    out: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    strict: bool = False,
    note: str | None = None,
    measures: Iterable[Measure] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
) -> TaskResult:
    """``r2med import --trace TRACE -t TASK --name NAME`` (see the module)."""
    from ..infra.containment import check_output_dir
    from .imports import import_run

    check_output_dir(Path(out))
    read = read_trace(trace)
    collection = task_collection(task, data_dir, revision, strict)
    check_task(read, collection)
    run = {q: docs for q, docs in union_run(read, collection.exclusions).items() if docs}
    if not run:
        raise R2MedError(f"{read.path}: no traced search names a query of {collection.name} (query_id)")
    source = {"file": os.path.abspath(trace), "sha256": file_hash(Path(trace), "sha256"), "tags": [], "trace": True}
    return import_run(run, collection, name, out, note, measures, count_missing, overwrite, source=source)
