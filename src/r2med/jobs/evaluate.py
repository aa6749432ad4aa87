"""``r2med evaluate``: run one retriever over tasks -- load, index, search, score, write a run folder.

(:func:`r2med.evaluate` only scores a run; this module is the whole job.)

* :func:`plan` -- what a retriever is run with: its options, checked against its registry record
  (defaults filled in), the query builder of an expansion, and the result's name;
* :func:`run_task` -- one collection: retrieve, then :func:`~r2med.jobs.folders.finish_task`, or
  reuse a finished folder made with the same configuration and data;
* :func:`run_tasks` -- every task of a list of :class:`~r2med.data.TaskRef`, with progress events;
* :func:`summary` -- the published configuration the results reproduce, if any, and a note when the
  run used another precision than the paper's code;
* :func:`demo_tasks` -- what ``r2med demo`` runs: the 8 tasks, or the built-in demo when the hub cannot be reached;
* :func:`score_files` -- ``r2med score``: a run file against judgments.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache import fingerprint_texts
from ..data import Collection, TaskRef
from ..metrics import DEFAULT_MEASURES, HEADLINE, Metrics, evaluate
from ..paths import plain_name
from ..published import PublishedKey, match_published, precision_change
from ..retrieval.base import QueryText
from .folders import TaskResult, finish_task, reuse

log = logging.getLogger(__name__)

QueryBuilder = Callable[[Collection, str], Mapping[str, QueryText]]
"""(collection, retriever family) -> the query texts to search with (expansions hook in here)."""

Events = Callable[[str, str], None]
"""``events(task, stage)``: ``stage`` is ``"loading"``, ``"retrieving"`` or ``"done"`` (progress bars)."""


@dataclass(frozen=True)
class Plan:
    """How one retriever is run: registry name, checked options, the result's name, the query builder."""

    retriever: str
    options: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    query_builder: QueryBuilder | None = None

    @property
    def name(self) -> str:
        return self.label or self.retriever


def plan(retriever: str, options: Mapping[str, Any] | None = None, cache: bool = True,
         expansion: str | None = None, expansion_file: str | Path | None = None,
         expansion_dir: str | Path | None = None, data_dir: str | Path | None = None,
         revision: str | None = None) -> Plan:
    """Check ``options`` against the retriever's registry record and set up its expansion, if any.

    ``options`` holds what the user set (None: not set); an option the retriever does not take is a
    one-line error.  With an expansion the result is named ``<retriever>+<method>-<llm>``.
    """
    from ..retrieval.registry import retriever_meta

    checked = {"cache": cache, **retriever_meta(retriever).check_options(dict(options or {}))}
    builder, label = None, retriever
    if expansion or expansion_file or expansion_dir:
        from ..expansion.precomputed import expansion_builder

        builder = expansion_builder(expansion, expansion_file, expansion_dir, data_dir, revision)
        label = f"{retriever}+{builder.label}"
    plain_name(label, "result name", run_name=True)  # a folder under --out and the run's tag
    return Plan(retriever, checked, label, builder)


def queries_fingerprint(queries: Mapping[str, QueryText]) -> str:
    """Content hash of the query texts searched with (expansion parts included), part of every result's key."""
    return fingerprint_texts((qid, q if isinstance(q, str) else "\x1f".join(q)) for qid, q in queries.items())


def run_task(collection: Collection, retriever: str, options: Mapping[str, Any] | None = None, k: int = 100,
             out: str | Path | None = None, measures: Iterable[str] = DEFAULT_MEASURES, count_missing: bool = False,
             query_builder: QueryBuilder | None = None, label: str | None = None,
             overwrite: bool = False) -> TaskResult:
    """Retrieve, evaluate and (with ``out``) write ``out/<task>/`` for one collection."""
    from ..retrieval.registry import make_retriever  # imports numpy/scipy: not at CLI start-up

    options = dict(options or {})
    collection.warn_about_qrels()
    retriever_ = make_retriever(retriever, task=collection.name, **options)
    queries = query_builder(collection, retriever_.family) if query_builder else collection.queries
    describe = getattr(query_builder, "describe", None)
    config = {"retriever": retriever, "options": options, "k": k, **retriever_.config(),
              "expansion": describe(collection) if describe else None,
              "queries_fingerprint": queries_fingerprint(queries)}
    reused = reuse(out, config, collection, measures, count_missing, overwrite)
    if reused is not None:
        return reused
    t0 = time.perf_counter()
    retriever_.index(collection.corpus, corpus_fingerprint=collection.fingerprint)
    t1 = time.perf_counter()
    run = retriever_.search(queries, k=k)
    timing = {"index_s": t1 - t0, "search_s": time.perf_counter() - t1}
    timing["total_s"] = time.perf_counter() - t0
    return finish_task(collection, label or retriever, run, config, out, measures, count_missing, timing)


def run_tasks(job: Plan, tasks: Sequence[TaskRef], k: int = 100, out: str | Path | None = None,
              measures: Iterable[str] = DEFAULT_MEASURES, count_missing: bool = False, overwrite: bool = False,
              events: Events | None = None) -> list[TaskResult]:
    """:func:`run_task` for every task, in order, one collection in memory at a time."""
    results = []
    for ref in tasks:
        if events:
            events(ref.name, "loading")
        collection = ref.load()
        if events:
            events(collection.name, "retrieving")
        result = run_task(collection, job.retriever, job.options, k=k, out=out, measures=measures,
                          count_missing=count_missing, query_builder=job.query_builder, label=job.name,
                          overwrite=overwrite)
        log.info("%s: nDCG@10 = %.4f%s", result.task, result.headline, " (reused)" if result.reused else "")
        results.append(result)
        if events:
            events(collection.name, "done")
    return results


def with_headline(measures: Iterable[str]) -> tuple[str, ...]:
    """``measures`` with nDCG@10 first if missing (summaries and published figures are nDCG@10)."""
    measures = tuple(measures)
    return measures if HEADLINE in measures else (HEADLINE, *measures)


@dataclass
class Summary:
    """What a summary table shows beside a job's results."""

    name: str
    published: PublishedKey | None = None
    precision: tuple[str, str] | None = None  # (used, the paper's) when they differ
    retriever: str = ""


def summary(name: str, results: Sequence[TaskResult]) -> Summary:
    """The published configuration ``results`` reproduce (:func:`r2med.published.match_published`) and
    the precision they ran in when it is not the paper's (the published figures stay shown)."""
    configs = [r.config for r in results]
    published = match_published(name, configs) if results else None
    if published is not None and published.reranker:
        published = None  # a reranked run's own table shows no published row (see `r2med report`)
    change = next((c for c in map(precision_change, configs) if c), None) if published is not None else None
    return Summary(name, published, change, str(configs[0].get("retriever", name)) if configs else name)


def demo_tasks(revision: str | None = None) -> tuple[list[TaskRef], str | None]:
    """What ``r2med demo`` runs: R2MED's 8 tasks from the hub; when the hub cannot be reached (only then:
    a missing file or revision is an error), the built-in demo collection, with the reason."""
    from ..data import resolve
    from ..data.hub import HubUnavailable, download, revision_for
    from ..tasks import TASK_NAMES, get_task

    try:
        download(get_task(TASK_NAMES[0]).hub_id, "query.jsonl", revision_for(TASK_NAMES[0], revision))
    except HubUnavailable as exc:
        return [TaskRef("demo", "demo")], str(exc)
    return resolve("all", None, revision), None


#: ``r2med demo`` runs the paper's BM25 as it was first published by r2med (no options recorded).
DEMO = Plan("bm25", label="bm25")


def score_files(qrels: str | Path, run: str | Path, measures: Iterable[str] | None = None,
                count_missing: bool = False) -> Metrics:
    """A TREC run file scored against judgments (TREC qrels, R2MED ``qrels.jsonl`` or BEIR ``.tsv``)."""
    from ..data import read_qrels
    from ..paths import check_input_file
    from ..run import read_trec

    check_input_file(qrels, "qrels")
    check_input_file(run, "run")
    judged = read_qrels(qrels)
    ranked = read_trec(run)
    unknown = sum(1 for q in ranked if q not in judged)
    if unknown:
        log.warning("%d run quer%s have no judgments and are not scored", unknown, "y" if unknown == 1 else "ies")
    return evaluate(ranked, judged, measures=measures, count_missing=count_missing)
