"""What an agent retrieved through ``r2med serve``, scored per benchmark query (``r2med score --trace``).

An agent searches several times per question; its trace (:mod:`.traces`) holds each search's query id (the
benchmark query the search served, sent as ``query_id``), text and returned documents.  Per query id, in trace order:

* ``searches`` -- how many searches named it; ``turns`` are their order (1, 2, ...);
* the **union** -- every document returned to any of them, in order of first retrieval, each query's excluded
  documents (BRIGHT's ``excluded_ids``) removed first (``excluded_removed`` counts them: returned only by searches
  that did not apply them);
* ``distinct`` -- the union's size;
* ``recall`` -- judged-relevant documents (grade > 0) in the union / all judged-relevant documents of the query;
  ``recall_by_turn`` -- the same after each turn (the union of turns 1..t);
* ``ndcg_cut_10`` -- nDCG@10 of the union ranked in order of first retrieval (trec_eval's, through pytrec_eval).

Averages are over the traced queries that have judgments; searches without a query id cannot be attributed and are
counted apart (``unattributed``).  :func:`union_run` is the union as a run (score = its length minus the rank), which
``r2med import --trace`` files as a system.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from ..data.exclusions import Exclusions
from ..errors import NothingToScore
from ..evaluation.metrics import evaluate
from ..runs.run import Run
from .traces import Trace


@dataclass
class QueryTrace:
    """One query's searches, reduced to what scoring needs."""

    query_id: str
    turns: list[list[str]] = field(default_factory=list)  # each search's ids, in trace order

    def union(self, banned: frozenset[str] = frozenset()) -> tuple[list[str], int]:
        """The documents in order of first retrieval without ``banned`` ones, and how many banned were dropped."""
        seen: dict[str, None] = {}
        dropped: set[str] = set()
        for ids in self.turns:
            for d in ids:
                if d in banned:
                    dropped.add(d)
                else:
                    seen.setdefault(d, None)
        return list(seen), len(dropped)


def by_query(trace: Trace) -> tuple[dict[str, QueryTrace], int]:
    """The trace's searches grouped by query id (trace order kept), and how many named no query."""
    queries: dict[str, QueryTrace] = {}
    unattributed = 0
    for record in trace.searches:
        qid = record.get("query_id")
        if not isinstance(qid, str):
            unattributed += 1
            continue
        ids = record.get("ids")  # a list (read_trace refuses a search record without one)
        queries.setdefault(qid, QueryTrace(qid)).turns.append([str(d) for d in ids] if isinstance(ids, list) else [])
    return queries, unattributed


def union_run(trace: Trace, exclusions: Exclusions | None = None) -> Run:
    """Each query's union (excluded documents removed) as a run: score = union length minus rank."""
    queries, _ = by_query(trace)
    run: Run = {}
    for qid, q in queries.items():
        ids, _ = q.union(exclusions.get(qid) if exclusions else frozenset())
        run[qid] = {d: float(len(ids) - i) for i, d in enumerate(ids)}
    return run


class QueryScore(TypedDict):
    """One judged query's scores (see the module)."""

    searches: int
    distinct: int
    recall: float
    recall_by_turn: list[float]
    ndcg_cut_10: float
    excluded_removed: int


#: the scores of a query that are averaged over the queries (``recall_by_turn`` is not)
Averaged = Literal["searches", "distinct", "recall", "ndcg_cut_10", "excluded_removed"]
AVERAGED: tuple[Averaged, ...] = ("searches", "distinct", "recall", "ndcg_cut_10", "excluded_removed")


@dataclass
class TraceScore:
    """Per query and averaged (see the module)."""

    per_query: dict[str, QueryScore]
    average: dict[Averaged, float]
    unattributed: int
    unjudged: list[str]
    torn: int

    def to_json(self) -> dict[str, object]:
        return {
            "average": self.average,
            "queries": len(self.per_query),
            "per_query": self.per_query,
            "unattributed_searches": self.unattributed,
            "unjudged_queries": self.unjudged,
            "torn_lines": self.torn,
        }


def score_trace(
    trace: Trace, qrels: Mapping[str, Mapping[str, int]], exclusions: Exclusions | None = None
) -> TraceScore:
    """Score ``trace`` against ``qrels`` (see the module); ``exclusions``: the task's, removed from each union."""
    queries, unattributed = by_query(trace)
    judged = {q: t for q, t in queries.items() if any(g > 0 for g in qrels.get(q, {}).values())}
    unjudged = sorted(q for q in queries if q not in judged)
    if not judged:
        raise NothingToScore(f"{trace.path}: no traced search names a judged query of the task (query_id)")
    run = union_run(trace, exclusions)
    ndcg = evaluate({q: run[q] for q in judged}, {q: qrels[q] for q in judged}, ["ndcg_cut_10"], count_missing=False)
    per_query: dict[str, QueryScore] = {}
    for qid, q in judged.items():
        banned = exclusions.get(qid) if exclusions else frozenset()
        relevant = {d for d, g in qrels[qid].items() if g > 0}
        union, dropped = q.union(banned)
        by_turn = []
        for t in range(1, len(q.turns) + 1):
            so_far, _ = QueryTrace(qid, q.turns[:t]).union(banned)
            by_turn.append(len(relevant.intersection(so_far)) / len(relevant))
        per_query[qid] = {
            "searches": len(q.turns),
            "distinct": len(union),
            "recall": len(relevant.intersection(union)) / len(relevant),
            "recall_by_turn": by_turn,
            "ndcg_cut_10": float(ndcg.per_query[qid]["ndcg_cut_10"]) if qid in ndcg.per_query else 0.0,
            "excluded_removed": dropped,
        }
    n = len(per_query)
    average = {key: sum(float(v[key]) for v in per_query.values()) / n for key in AVERAGED}
    return TraceScore(per_query, average, unattributed, unjudged, trace.torn)
