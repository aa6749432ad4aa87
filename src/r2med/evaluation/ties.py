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
from typing import TYPE_CHECKING, Any, Final, Literal

from .tie_data import CutSummary, CutTie, CutTies, MeasureRange, Ties

if TYPE_CHECKING:
    from ..measures import Measure
    from .metrics import Metrics

#: At most this many ids of one query's documents tied at the depth cut are recorded (the first in corpus order);
#: with more, the group's other documents are counted (:attr:`CutTie.total`) but take no part in the range, which
#: may then be narrower than the true one (a relevant one among them would raise the best order's value).
CUT_TIES_CAP: Final = 1000
#: Two values closer than this are the same value (best and worst of a query whose order does not matter).
TOLERANCE: Final = 1e-9
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
    from ..measures import Family

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
    from .metrics import evaluate

    if rule not in TIE_RULES:
        from ..errors import OptionError

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
    from .metrics import evaluate

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


# -- the documents tied at the depth cut, beside the run ---------------------------------------------


def cut_ties_json(cut: CutTies) -> dict[str, object]:
    """The task folder's record of what the depth cut dropped while tied (``cut_ties.json``): the cap, and per
    query with such documents its ``total`` and ``ids`` (the first :data:`CUT_TIES_CAP` in corpus order)."""
    return {
        "cap": CUT_TIES_CAP,
        "queries": {q: {"total": c.total, "ids": list(c.ids)} for q, c in cut.items()},
    }


def parse_cut_ties(data: object) -> dict[str, CutTie]:
    """:func:`cut_ties_json`'s object read back; any fault a :class:`BlockError` naming the key."""
    if not isinstance(data, dict) or set(data) != {"cap", "queries"} or not isinstance(data["queries"], dict):
        raise BlockError("cut ties must be an object of cap and queries")
    cap = data["cap"]
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise BlockError(f"cut ties: cap must be a whole number of at least 1, got {_shown(cap)}")
    out: dict[str, CutTie] = {}
    for q, entry in data["queries"].items():
        where = f"cut ties: queries[{_shown(q)}]"
        if not isinstance(entry, dict) or set(entry) != {"total", "ids"}:
            raise BlockError(f"{where} must be an object of total and ids")
        ids, total = entry["ids"], entry["total"]
        if not isinstance(ids, list) or not all(isinstance(d, str) and d for d in ids) or len(ids) > cap:
            raise BlockError(f"{where}.ids must be a list of at most {cap:,} document ids")
        if len(set(ids)) != len(ids):
            raise BlockError(f"{where}.ids names a document twice")
        if isinstance(total, bool) or not isinstance(total, int) or total < max(len(ids), 1):
            raise BlockError(f"{where}.total must be a whole number of at least its ids' count, got {_shown(total)}")
        out[q] = CutTie(tuple(ids), total)
    return out


# -- the block in metrics.json ----------------------------------------------------------------------


class BlockError(ValueError):
    """A fault in a ``ties`` block; the message names the key (``ties.measures.ndcg_cut_10.best``)."""


def check_block(
    block: Any,
    aggregate: Mapping[str, float],
    per_query: Mapping[str, Mapping[str, float]],
    max_queries: int,
    max_id_chars: int,
) -> dict[str, Any]:
    """``metrics.json``'s ``ties`` block, checked against the record's measures: every measure a pytrec_eval name
    the record holds, every value finite and within 0..1, worst <= the reported value <= best (aggregate and per
    query), each measure's ``queries`` the count of queries ``per_query`` lists it for, each such query one the
    record scored; any fault a :class:`BlockError` naming the key.  Returns the block as read."""
    from ..errors import R2MedError
    from ..measures import from_trec

    def count(value: Any, key: str, most: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            raise BlockError(f"ties.{key} must be a whole number 0..{most:,}, got {_shown(value)}")
        return value

    def value(holder: Any, where: str, key: str) -> float:
        v = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
            raise BlockError(f"ties.{where}.{key} is {_shown(v)}, not a number within 0..1")
        return float(v)

    def bounds(best: float, worst: float, reported: float | None, where: str) -> None:
        if worst > best + TOLERANCE:
            raise BlockError(f"ties.{where}: worst {worst:g} is above best {best:g}")
        if reported is not None and not worst - TOLERANCE <= reported <= best + TOLERANCE:
            raise BlockError(f"ties.{where}: the reported {reported:g} lies outside {worst:g}..{best:g}")

    if not isinstance(block, dict):
        raise BlockError(f"ties must be an object, got {type(block).__name__}")
    unknown = sorted(set(block) - {"tied_queries", "measures", "per_query", "cut"})
    if unknown:
        raise BlockError(f"ties has an unknown key {_shown(unknown[0])}")
    count(block.get("tied_queries", 0), "tied_queries", max_queries)
    if "cut" in block:
        cut = block["cut"]
        if not isinstance(cut, dict) or set(cut) != {"queries", "capped"}:
            raise BlockError("ties.cut must be an object of queries and capped")
        if count(cut["capped"], "cut.capped", max_queries) > count(cut["queries"], "cut.queries", max_queries):
            raise BlockError(f"ties.cut.capped {cut['capped']} is above ties.cut.queries {cut['queries']}")
    measures = block.get("measures", {})
    rows = block.get("per_query", {})
    if not isinstance(measures, dict):
        raise BlockError(f"ties.measures must be an object, got {type(measures).__name__}")
    if not isinstance(rows, dict) or len(rows) > max_queries:
        raise BlockError(f"ties.per_query must be an object of at most {max_queries:,} queries")
    for name, entry in measures.items():
        key_path = f"measures.{_shown(name)}"
        try:
            from_trec(name)
        except R2MedError:
            raise BlockError(f"ties.{key_path} is not a measure r2med stores (pytrec_eval names)") from None
        if name not in aggregate:
            raise BlockError(f"ties.{key_path}: the record has no aggregate {_shown(name)}")
        if not isinstance(entry, dict):
            raise BlockError(f"ties.{key_path} must be an object of queries, best, worst")
        count(entry.get("queries"), f"{key_path}.queries", max_queries)
        bounds(value(entry, key_path, "best"), value(entry, key_path, "worst"), aggregate[name], key_path)
    listed: dict[str, int] = {}
    for qid, values in rows.items():
        if len(qid) > max_id_chars:
            raise BlockError(f"ties.per_query: a query id of {len(qid):,} characters")
        if per_query and qid not in per_query:
            raise BlockError(f"ties.per_query[{_shown(qid)}]: a query the record did not score")
        if not isinstance(values, dict):
            raise BlockError(f"ties.per_query[{_shown(qid)}] must be an object of measure -> best, worst")
        for name, entry in values.items():
            key_path = f"per_query[{_shown(qid)}].{_shown(name)}"
            if name not in measures:
                raise BlockError(f"ties.{key_path}: a measure ties.measures does not list")
            reported = per_query[qid].get(name) if per_query else None
            bounds(value(entry, key_path, "best"), value(entry, key_path, "worst"), reported, key_path)
            listed[name] = listed.get(name, 0) + 1
    for name, entry in measures.items():
        if listed.get(name, 0) != entry["queries"]:
            raise BlockError(
                f"ties.measures.{_shown(name)}.queries is {entry['queries']}, but ties.per_query lists "
                f"{listed.get(name, 0)} queries for it"
            )
    return block


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def block_ranges(block: Mapping[str, Any] | None, measure: Measure) -> tuple[float, float, int] | None:
    """``(best, worst, queries)`` of ``measure`` in a checked ``ties`` block, or None when ties do not decide it
    (or the record was written before r2med recorded ties)."""
    if not block:
        return None
    entry = block.get("measures", {}).get(measure.trec)
    if not entry or not entry.get("queries"):
        return None
    return float(entry["best"]), float(entry["worst"]), int(entry["queries"])


def block_query_ranges(block: Mapping[str, Any] | None, measure: Measure) -> dict[str, tuple[float, float]]:
    """query id -> ``(best, worst)`` of ``measure`` for the queries that depend on the order (from a checked
    block; empty when none or no block)."""
    if not block:
        return {}
    key = measure.trec
    return {
        qid: (float(values[key]["best"]), float(values[key]["worst"]))
        for qid, values in block.get("per_query", {}).items()
        if key in values
    }
