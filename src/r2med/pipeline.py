"""Evaluate one retriever over tasks: load -> index -> search -> score -> write a run folder.

``evaluate_tasks`` is what ``r2med evaluate`` calls.  Each task's results land in
``OUT/<task>/`` atomically; a task whose folder already holds results for the same
configuration and data is reused, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .cache import fingerprint_texts
from .data import Collection, load_task
from .data.loaders import load_folder
from .errors import R2MedError
from .metrics import DEFAULT_MEASURES, HEADLINE, Metrics, evaluate
from .paths import task_folder
from .retrieval.base import QueryText
from .run import Run, read_metrics, read_trec, write_task_results

log = logging.getLogger(__name__)

QueryBuilder = Callable[[Collection, str], Mapping[str, QueryText]]
"""(collection, retriever family) -> the query texts to search with (expansion issue hooks here)."""


@dataclass
class TaskResult:
    task: str
    metrics: Metrics
    folder: Path | None
    timing: dict[str, float] = field(default_factory=dict)
    reused: bool = False
    run: Run | None = None

    @property
    def headline(self) -> float:
        """nDCG@10 when computed, else the first measure."""
        aggregate = self.metrics.aggregate
        return aggregate[HEADLINE] if HEADLINE in aggregate else aggregate[self.metrics.measures[0]]


def versions() -> dict[str, str]:
    import numpy
    import scipy

    out = {"r2med": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
           "scipy": scipy.__version__}
    try:
        from importlib.metadata import version

        out["pytrec_eval"] = version("pytrec-eval-terrier")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        pass
    return out


def resolve_collections(tasks: list[str], data_dir: str | Path | None, revision: str | None = None,
                        ) -> list[Callable[[], Collection]]:
    """Loaders for the requested tasks: from the hub, a folder of task folders, or one collection folder."""
    from .data.resolve import resolve

    return [ref.load for ref in resolve(tasks, data_dir, revision)]


def run_collection(collection: Collection, retriever_name: str, options: Mapping[str, Any] | None = None,
                   k: int = 100, out: str | Path | None = None, measures=DEFAULT_MEASURES,
                   count_missing: bool = False, query_builder: QueryBuilder | None = None,
                   label: str | None = None, overwrite: bool = False) -> TaskResult:
    """Retrieve, evaluate and (with ``out``) write ``out/<task>/`` for one collection."""
    from .retrieval import make_retriever  # imports numpy/scipy: not at CLI start-up

    options = dict(options or {})
    collection.warn_about_qrels()
    timing: dict[str, float] = {}
    retriever = make_retriever(retriever_name, task=collection.name, **options)
    queries = query_builder(collection, retriever.family) if query_builder else collection.queries
    config = {"retriever": retriever_name, "options": options, "k": k, **retriever.config(),
              "queries": getattr(query_builder, "describe", lambda: "plain")(),
              "queries_fingerprint": queries_fingerprint(queries)}
    folder = task_folder(out, collection.name) if out else None
    if folder is not None and not overwrite:
        reused = reuse_finished(folder, config, collection, measures, count_missing)
        if reused is not None:
            return reused

    t0 = time.perf_counter()
    retriever.index(collection.corpus, corpus_fingerprint=collection.fingerprint)
    timing["index_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    run = retriever.search(queries, k=k)
    timing["search_s"] = time.perf_counter() - t1
    metrics = evaluate(run, collection.qrels, measures=measures, count_missing=count_missing)
    timing["total_s"] = time.perf_counter() - t0
    if folder is not None:
        payload = metrics_payload(collection, label or retriever_name, config, metrics, timing, count_missing)
        write_task_results(folder, run, payload, tag=label or retriever_name, root=out)
    return TaskResult(collection.name, metrics, folder, timing, run=run)


def queries_fingerprint(queries: Mapping[str, QueryText]) -> str:
    """Content hash of the query texts searched with (expansion parts included), part of every result's key."""
    return fingerprint_texts((qid, q if isinstance(q, str) else "\x1f".join(q)) for qid, q in queries.items())


def metrics_payload(collection: Collection, retriever: str, config: Mapping[str, Any], metrics: Metrics,
                    timing: Mapping[str, float], count_missing: bool = False) -> dict[str, Any]:
    return {
        "task": collection.name,
        "retriever": retriever,
        "config": json.loads(json.dumps(dict(config), default=str)),
        "aggregate": metrics.aggregate,
        "per_query": metrics.per_query,
        "count_missing": count_missing,
        "timing": dict(timing),
        "versions": versions(),
        "dataset_fingerprint": collection.fingerprint,
        "source": collection.source,
        "revision": collection.revision,
    }


def reuse_finished(folder: Path, config: Mapping[str, Any], collection: Collection, measures,
                   count_missing: bool) -> TaskResult | None:
    """The finished results in ``folder`` if they were made with ``config`` on this collection, else None.

    Shared by every step that writes task folders (evaluate, rerank, fuse), so an interrupted
    job resumes without redoing finished tasks.  Unreadable or foreign results are ignored.
    """
    if not (folder / "metrics.json").exists():
        return None
    try:
        stored = read_metrics(folder)
        if (stored.get("config") != json.loads(json.dumps(dict(config), default=str))
                or stored.get("dataset_fingerprint") != collection.fingerprint
                or stored.get("revision") != collection.revision):
            log.warning("%s: %s holds results of another configuration or data; they will be replaced "
                        "(use another --out to keep both)", collection.name, folder)
            return None
        run = read_trec(folder / "run.trec")
    except R2MedError:
        return None
    metrics = evaluate(run, collection.qrels, measures=measures, count_missing=count_missing)
    log.info("%s: reusing finished results in %s", collection.name, folder)
    return TaskResult(collection.name, metrics, folder, stored.get("timing", {}), reused=True, run=run)
