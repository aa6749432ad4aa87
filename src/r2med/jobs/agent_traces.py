"""``r2med score --trace`` and ``r2med import --trace``: an agent's trace from ``r2med serve``, scored or filed.

* :func:`score_trace_file` -- the trace read (:func:`r2med.serve.traces.read_trace`: torn lines counted), its task's
  judgments and exclusions loaded (queries and judgments only: no documents), scored per query and averaged
  (:func:`r2med.serve.trace_score.score_trace`);
* :func:`task_collection`, :func:`check_task` -- the task a trace is scored or imported against
  (``r2med import --trace``: :func:`r2med.jobs.imports.import_trace`).

A trace whose start records name another task than the one given is refused in one line.
"""

from __future__ import annotations

import os

from ..data import Collection, check_hub, resolve
from ..errors import R2MedError
from ..serve.trace_score import TraceScore, score_trace
from ..serve.traces import Trace, read_trace


def task_collection(
    task: str, data_dir: str | os.PathLike[str] | None, revision: str | None = None, strict: bool = False
) -> Collection:
    """The one task's queries, judgments and exclusions (no documents read)."""
    refs = resolve(task, data_dir, revision, strict=strict)
    if len(refs) != 1:
        raise R2MedError(f"a trace is scored against one task; {task!r} names {len(refs)}")
    [ref] = check_hub(refs, corpus=False)
    return ref.load(corpus=False)


def check_task(trace: Trace, collection: Collection) -> None:
    """Refuse a trace whose server served another task."""
    served = {str(record.get("task")) for s in trace.starts if isinstance(record := s.get("served"), dict)}
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
