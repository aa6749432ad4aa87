"""The ranges the order of tied documents allows, as data: one measure's (:class:`MeasureRange`) and one run's
(:class:`Ties`, the ``ties`` block of ``metrics.json``: written, read back and checked here), and what a depth cut
dropped while tied with the last document kept (:class:`CutTie`, :class:`CutSummary`, ``cut_ties.json``).

Computed by :func:`r2med.evaluation.ties.tie_ranges`, held by :attr:`r2med.evaluation.metrics.Metrics.ties`: apart
from both so that the scores' type names them without :mod:`.metrics` and :mod:`.ties` importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ..errors import R2MedError
from ..measures import from_trec

if TYPE_CHECKING:
    from ..infra.json_types import JsonObject, JsonValue
    from ..measures import Measure


#: At most this many ids of one query's documents tied at the depth cut are recorded (the first in corpus order);
#: with more, the group's other documents are counted (:attr:`CutTie.total`) but take no part in the range, which
#: may then be narrower than the true one (a relevant one among them would raise the best order's value).
CUT_TIES_CAP: Final = 1000
#: Two values closer than this are the same value (best and worst of a query whose order does not matter).
TOLERANCE: Final = 1e-9


@dataclass(frozen=True)
class MeasureRange:
    """One measure's range over the orders of tied documents: the reported value (trec_eval's tie-break), the
    value in the best and in the worst order, and how many queries depend on the order."""

    measure: Measure
    reported: float
    best: float
    worst: float
    queries: int

    @property
    def decided(self) -> bool:
        """Whether the order of tied documents changes this value."""
        return self.queries > 0


@dataclass(frozen=True)
class CutTie:
    """One query's documents with the same score as the last document its run kept, which the depth cut dropped
    (the top-k rule keeps the earliest in corpus order): ``ids`` the first of them in corpus order (at most
    :data:`r2med.evaluation.ties.CUT_TIES_CAP`), ``total`` how many there were."""

    ids: tuple[str, ...]
    total: int

    @property
    def capped(self) -> bool:
        """Whether the cut dropped more tied documents than ``ids`` holds."""
        return self.total > len(self.ids)


CutTies = Mapping[str, CutTie]
"""Query id -> :class:`CutTie`, for the queries whose cut dropped a tied document (the others: absent); a run
whose retriever said nothing has ``None`` instead (unknown, which is not "none")."""


@dataclass(frozen=True)
class CutSummary:
    """What the ``ties`` block says of the depth cut when the run's retriever recorded it: ``queries`` scored whose
    cut dropped documents tied with the last one kept, ``capped`` those with more than the cap
    (:data:`r2med.evaluation.ties.CUT_TIES_CAP`)."""

    queries: int = 0
    capped: int = 0


@dataclass
class Ties:
    """The tie ranges of one run against its judgments: per measure (the aggregate) and per query.

    ``aggregate`` and ``per_query`` are keyed by pytrec_eval names (``metrics.json``'s); ``per_query`` holds, for
    each query that depends on the order for some measure, ``measure -> (best, worst)`` for those measures only;
    ``queries``: how many queries the reported average takes; ``tied_queries``: how many of them hold a tied group
    of documents with different grades (documents tied at the depth cut included); ``cut``: what the run's
    retriever said of its depth cut, or None when it said nothing (unknown: an imported run cannot know what its
    cut dropped)."""

    measures: tuple[Measure, ...]
    aggregate: dict[str, MeasureRange]
    per_query: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    queries: int = 0
    tied_queries: int = 0
    cut: CutSummary | None = None

    def decided(self, measures: Iterable[Measure] | None = None) -> list[MeasureRange]:
        """The ranges of ``measures`` (default: all) that the order of tied documents changes."""
        wanted = [m.trec for m in (self.measures if measures is None else measures)]
        return [self.aggregate[m] for m in wanted if m in self.aggregate and self.aggregate[m].decided]

    def depending(self, measures: Iterable[Measure] | None = None) -> int:
        """How many queries depend on the order of tied documents for at least one of ``measures``."""
        wanted = {m.trec for m in (self.measures if measures is None else measures)}
        return sum(1 for values in self.per_query.values() if wanted & set(values))

    def to_json(self) -> JsonObject:
        """The ``ties`` block of ``metrics.json``: ``tied_queries``; ``measures``: each measure some query depends
        on, with ``queries``, ``best``, ``worst``; ``per_query``: query -> measure -> ``best``, ``worst``; ``cut``
        (only when the retriever recorded its depth cut; absent: unknown): ``queries``, ``capped``."""
        cut: JsonObject = {} if self.cut is None else {"cut": {"queries": self.cut.queries, "capped": self.cut.capped}}
        return {
            "tied_queries": self.tied_queries,
            "measures": {
                r.measure.trec: {"queries": r.queries, "best": r.best, "worst": r.worst} for r in self.decided()
            },
            "per_query": {
                qid: {m: {"best": best, "worst": worst} for m, (best, worst) in values.items()}
                for qid, values in self.per_query.items()
            },
            **cut,
        }


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
    block: object,
    aggregate: Mapping[str, float],
    per_query: Mapping[str, Mapping[str, float]],
    max_queries: int,
    max_id_chars: int,
) -> JsonObject:
    """``metrics.json``'s ``ties`` block, checked against the record's measures: every measure a pytrec_eval name
    the record holds, every value finite and within 0..1, worst <= the reported value <= best (aggregate and per
    query), each measure's ``queries`` the count of queries ``per_query`` lists it for, each such query one the
    record scored; any fault a :class:`BlockError` naming the key.  Returns the block as read."""

    def count(value: object, key: str, most: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
            raise BlockError(f"ties.{key} must be a whole number 0..{most:,}, got {_shown(value)}")
        return value

    def value(holder: object, where: str, key: str) -> float:
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


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _range(entry: JsonValue) -> tuple[float, float] | None:
    """``(best, worst)`` of a checked block's entry (None: not one)."""
    if not isinstance(entry, dict):
        return None
    best, worst = entry.get("best"), entry.get("worst")
    if not isinstance(best, (int, float)) or not isinstance(worst, (int, float)):
        return None
    return float(best), float(worst)


def block_ranges(block: Mapping[str, JsonValue] | None, measure: Measure) -> tuple[float, float, int] | None:
    """``(best, worst, queries)`` of ``measure`` in a checked ``ties`` block, or None when ties do not decide it
    (or the record was written before r2med recorded ties)."""
    if not block:
        return None
    measures = block.get("measures")
    entry = measures.get(measure.trec) if isinstance(measures, dict) else None
    found = _range(entry)
    queries = entry.get("queries") if isinstance(entry, dict) else None
    if found is None or not isinstance(queries, int) or not queries:
        return None
    return found[0], found[1], int(queries)


def block_query_ranges(block: Mapping[str, JsonValue] | None, measure: Measure) -> dict[str, tuple[float, float]]:
    """query id -> ``(best, worst)`` of ``measure`` for the queries that depend on the order (from a checked
    block; empty when none or no block)."""
    rows = block.get("per_query") if block else None
    if not isinstance(rows, dict):
        return {}
    key = measure.trec
    ranges = {qid: _range(values.get(key)) if isinstance(values, dict) else None for qid, values in rows.items()}
    return {qid: found for qid, found in ranges.items() if found is not None}
