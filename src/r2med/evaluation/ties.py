"""Ties that decide a measure: which queries' values depend on the order of tied documents, and each measure's
exact range over every such order.

trec_eval (and pytrec_eval, and so every figure r2med reports) breaks a tie between equal scores by document id;
the order of equal-scored documents is otherwise undefined, and a pointwise LLM reranker scoring from a handful of
values, a fusion of coarse scores or an imported run can hold ties at every cut-off.  This module owns what is
said about them, beside the reported figure (which stays trec_eval's):

* a *tied group* is a query's documents with exactly the same score (the float as pytrec_eval reads it); its
  place in the ranking is fixed, only the order inside it is not.  The run's documents take part, and so do the
  documents tied with its last one that the retriever's depth cut dropped (:class:`CutTie`, when the retriever
  says: r2med's top-k paths do, :data:`CUT_TIES_CAP` ids at most): they compete for the run's last places, so the
  orders below are cut back to the run's length.  A run that does not say (imported, FAISS, your own retriever,
  a reranked or older run) has its cut's ties *unknown* -- not none: :attr:`Ties.cut` is None;
* a query *depends on the order of tied documents* for a measure when its value differs between the two extreme
  orders below (beyond :data:`TOLERANCE`);
* the measure's *range*: its value with every tied group's documents in descending grade (relevant first,
  higher gain first: the *best* order) and in ascending grade (relevant last: the *worst*), unjudged
  documents and negative grades counting as 0 (as trec_eval counts them).  These two orders are the exact
  extremes of every measure r2med reports (nDCG@k, MAP@k, R@k, P@k, MRR) at once: swapping two neighbours of a
  group so that the higher grade comes first never lowers any of them (a higher gain gets the larger discount;
  a relevant document moved up raises precision at its rank and leaves every later count as it was), and
  repeated swaps reach the best order from any order -- the worst likewise.  The aggregate's range is the mean
  of the queries' ranges over the same queries the reported average takes (each query's order is free of the
  others'), ``count_missing`` zeros included.

Both orders are scored by :func:`r2med.evaluation.metrics.evaluate`, the code path of the reported figure, as runs
whose scores are the orders' ranks; only queries holding a tied group of documents with different grades are
re-scored, so a run without ties (a dense run) costs one pass over its scores.

:func:`tie_ranges` computes a :class:`Ties`; :meth:`Ties.to_json` is the ``ties`` block of ``metrics.json``
(:func:`check_block` its reader's check); :func:`tie_line` the one line commands print; :func:`block_ranges`
reads a stored block back for the report and compare.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Literal

from ..errors import OptionError
from ..measures import Family
from .metrics import evaluate
from .tie_data import CUT_TIES_CAP, TOLERANCE, CutSummary, CutTies, MeasureRange, Ties

if TYPE_CHECKING:
    from ..measures import Measure
    from .metrics import Metrics

#: What the report marks a cell with whose value ties decide (terminal, Markdown, LaTeX, HTML): a mark of its own,
#: used for nothing else (``≈`` reads as "about equal" -- as in "within tolerance" -- and is no mark of r2med's).
TIED_MARK: Final = "◇"


def _grades(qrels_q: Mapping[str, int]) -> dict[str, int]:
    """A query's judgments as the gains trec_eval orders by (a negative grade counts as 0)."""
    return {d: g for d, g in qrels_q.items() if g > 0}


def deciding_scores(docs: Mapping[str, float], grades: Mapping[str, int]) -> set[float]:
    """The scores of a query's tied groups that hold documents of different grades (``grades``: the positive
    ones); when there is none, every order of its ties scores the same.  One pass over the scores when none
    tie."""
    sizes = Counter(docs.values())
    if len(sizes) == len(docs):  # no ties: the common case
        return set()
    graded: dict[float, Counter[int]] = {}
    for d, g in grades.items():
        score = docs.get(d)
        if score is not None and sizes[score] > 1:
            graded.setdefault(score, Counter())[g] += 1
    # a group is uniform when none of it is graded, or all of it at one grade
    return {score for score, found in graded.items() if len(found) > 1 or sum(found.values()) < sizes[score]}


def extreme_orders(
    docs: Mapping[str, float], grades: Mapping[str, int], groups: Iterable[float] | None = None
) -> tuple[list[str], list[str]]:
    """A query's documents in the best and in the worst order of its tied groups: score order kept between
    groups; inside each, descending grade (``grades``: the positive ones; others count 0) for the best and
    ascending for the worst.  ``groups``: the scores of the groups to order (default:
    :func:`deciding_scores`; the others' order changes no measure)."""
    ranked = sorted(docs, key=docs.__getitem__, reverse=True)
    best, worst = ranked, list(ranked)
    descending = [-docs[d] for d in ranked]
    for score in deciding_scores(docs, grades) if groups is None else groups:
        start, end = bisect_left(descending, -score), bisect_right(descending, -score)
        by_grade = sorted(ranked[start:end], key=lambda d: grades.get(d, 0))
        best[start:end] = by_grade[::-1]
        worst[start:end] = by_grade
    return best, worst


def _depth(measures: Sequence[Measure]) -> int | None:
    """How deep a ranking the measures read (their largest cut-off), or None when one reads it all; MRR reads
    down to the first relevant document (:func:`_as_run` keeps that far)."""
    cutoffs = []
    for m in measures:
        if m.cutoff is not None:
            cutoffs.append(m.cutoff)
        elif m.family is not Family.MRR:
            return None
    return max(cutoffs, default=0)


def _as_run(
    orders: Mapping[str, Sequence[str]], grades: Mapping[str, Mapping[str, int]], depth: int | None
) -> dict[str, dict[str, float]]:
    """Orders as a run whose scores are the ranks (first = highest), so pytrec_eval ranks exactly so; cut below
    ``depth`` and the first relevant document (nothing there changes a measure that reads no deeper)."""
    run = {}
    for q, ids in orders.items():
        keep = len(ids)
        if depth is not None:
            first = next((i for i, d in enumerate(ids) if d in grades[q]), len(ids))
            keep = min(len(ids), max(depth, first + 1))
        run[q] = {d: float(keep - i) for i, d in enumerate(ids[:keep])}
    return run


#: How equal scores are ordered when a run is scored: ``trec_eval`` (by document id, descending: trec_eval's and
#: pytrec_eval's rule, r2med's default) or ``listed`` (in the order the run lists them: a TREC file's lines, a JSON
#: score file's keys -- what BRIGHT's and RaDeR's code did when they cut a sorted list before scoring it).
TieRule = Literal["trec_eval", "listed"]
TIE_RULES: Final[tuple[TieRule, ...]] = ("trec_eval", "listed")
#: The rule every published figure r2med grades against was scored with (their authors' code fed pytrec_eval).
PUBLISHED_TIE_RULE: Final[TieRule] = "trec_eval"


def listed_order(run: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """``run`` with equal scores broken in the order each query lists its documents: every query's documents
    ranked by score, then by their place in the run (a stable sort), and scored by that rank (``n``, ``n - 1``, ...
    ``1``), so that trec_eval's rule -- and every reader of the written ``run.trec`` -- ranks them so."""
    out: dict[str, dict[str, float]] = {}
    for qid, docs in run.items():
        order = sorted(enumerate(docs.items()), key=lambda item: (-item[1][1], item[0]))
        n = len(order)
        out[qid] = {doc: float(n - rank) for rank, (_, (doc, _)) in enumerate(order)}
    return out


def evaluate_with_ties(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Iterable[Measure | str] | None = None,
    count_missing: bool = False,
    rule: TieRule = "trec_eval",
    answered_empty: Iterable[str] = (),
    cut: CutTies | None = None,
) -> Metrics:
    """:func:`r2med.evaluation.metrics.evaluate` with ``ties`` set: the reported figures (trec_eval's tie-break;
    ``rule`` ``listed``: the run's own order of equal scores, :func:`listed_order`) and the ranges the order of
    tied documents of ``run`` allows (:func:`tie_ranges`: either rule's figure is one of those orders, so it lies
    within them).  ``measures``: as :func:`~r2med.evaluation.metrics.evaluate` takes them (Measure values or any
    spelling, parsed there); ``cut``: the documents the retriever's depth cut dropped while tied with the last one
    kept (None: unknown)."""
    if rule not in TIE_RULES:
        raise OptionError(f"--ties: {rule!r} is no tie rule; choose from {', '.join(TIE_RULES)}")
    scored = listed_order(run) if rule == "listed" else run
    metrics = evaluate(scored, qrels, measures=measures, count_missing=count_missing, answered_empty=answered_empty)
    metrics.ties = tie_ranges(run, qrels, metrics, cut)
    return metrics


def tie_ranges(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    metrics: Metrics,
    cut: CutTies | None = None,
) -> Ties:
    """The tie ranges of ``run`` against ``qrels`` for the measures of ``metrics`` (its reported evaluation: the
    same queries, measures and ``count_missing``).  ``cut``: each query's documents tied with its last one that the
    depth cut dropped (None: unknown); they join that tied group, and both orders are cut back to the query's
    length -- the best lets relevant ones in, the worst lets irrelevant ones push relevant kept ones out."""
    measures = metrics.measures
    grades: dict[str, dict[str, int]] = {}
    best_orders: dict[str, list[str]] = {}
    worst_orders: dict[str, list[str]] = {}
    cut_queries = capped = 0
    for qid, docs in run.items():
        q = str(qid)
        dropped = cut.get(q) if cut and docs else None
        if q not in metrics.per_query:
            continue  # not scored (not judged)
        if dropped is not None:
            cut_queries += 1
            capped += dropped.capped
        elif len(docs) < 2 or len(set(docs.values())) == len(docs):
            continue  # no ties: the common case, one pass over the scores
        scores = {str(d): float(s) for d, s in docs.items()}
        if dropped is not None:
            last = min(scores.values())
            scores.update((d, last) for d in dropped.ids if d not in scores)
        judged = _grades({str(d): int(g) for d, g in _judgments(qrels, q).items()})
        groups = deciding_scores(scores, judged)
        if groups:
            grades[q] = judged
            best_orders[q], worst_orders[q] = (order[: len(docs)] for order in extreme_orders(scores, judged, groups))
    per_query: dict[str, dict[str, tuple[float, float]]] = {}
    if best_orders:
        depth = _depth(measures)
        judgments = {q: {str(d): int(g) for d, g in _judgments(qrels, q).items()} for q in best_orders}
        best = evaluate(_as_run(best_orders, grades, depth), judgments, measures).per_query
        worst = evaluate(_as_run(worst_orders, grades, depth), judgments, measures).per_query
        for q in best_orders:
            shown = metrics.per_query[q]
            ranges = {
                m: (max(best[q][m], shown[m]), min(worst[q][m], shown[m]))
                for m in (measure.trec for measure in measures)
                if best[q][m] - worst[q][m] > TOLERANCE
            }
            if ranges:
                per_query[q] = ranges
    n = len(metrics.per_query)
    aggregate = {}
    for measure in measures:
        m = measure.trec
        hits = {q: values[m] for q, values in per_query.items() if m in values}
        delta_best = math.fsum(b - metrics.per_query[q][m] for q, (b, _) in hits.items())
        delta_worst = math.fsum(w - metrics.per_query[q][m] for q, (_, w) in hits.items())
        reported = metrics.aggregate[m]
        aggregate[m] = MeasureRange(
            measure,
            reported,
            reported + delta_best / n if hits else reported,
            reported + delta_worst / n if hits else reported,
            len(hits),
        )
    summary = None if cut is None else CutSummary(cut_queries, capped)
    return Ties(measures, aggregate, per_query, queries=n, tied_queries=len(best_orders), cut=summary)


def _judgments(qrels: Mapping[str, Mapping[str, int]], qid: str) -> Mapping[str, int]:
    """A query's judgments (``qrels`` may key queries by another type than text, as a run may)."""
    if qid in qrels:
        return qrels[qid]
    return next(docs for q, docs in qrels.items() if str(q) == qid)


# -- what commands say ------------------------------------------------------------------------------


def _range_text(r: MeasureRange, scale: float, digits: int, count: bool) -> str:
    queries = f"; {r.queries} quer{'y' if r.queries == 1 else 'ies'}" if count else ""
    return f"{r.reported * scale:.{digits}f} (range {r.worst * scale:.{digits}f}–{r.best * scale:.{digits}f}{queries})"


def tie_line(ties: Ties | None, measures: Sequence[Measure], task: str | None = None, scale: float = 1.0) -> str | None:
    """The one line a command prints when ties decide one of ``measures``, else None::

        ties: 112 of 112 queries depend on the order of tied documents; nDCG@10 0.2745 (range 0.2101–0.3980)

    ``scale``: 100 beside a table of values x100 (two decimals then, four otherwise); ``task`` names the task."""
    if ties is None:
        return None
    decided = ties.decided(measures)
    if not decided:
        return None
    digits = 2 if scale == 100 else 4
    counts = {r.queries for r in decided}
    shown = ", ".join(f"{r.measure.label} {_range_text(r, scale, digits, len(counts) > 1)}" for r in decided)
    where = f" ({task})" if task else ""
    return (
        f"ties{where}: {ties.depending(measures)} of {ties.queries} queries depend on the order of tied documents; "
        f"{shown}{_cut_text(ties.cut)}"
    )


def _cut_text(cut: CutSummary | None) -> str:
    """What a tie line adds about the depth cut: unknown (the run does not say what its cut dropped), or the
    queries whose tied group at the cut held more documents than were recorded."""
    if cut is None:
        return "; ties at the depth cut unknown"
    if cut.capped:
        return (
            f"; {cut.capped} quer{'y' if cut.capped == 1 else 'ies'} tied more than {CUT_TIES_CAP:,} documents "
            "at the depth cut (the first taken: the range may be wider)"
        )
    return ""
