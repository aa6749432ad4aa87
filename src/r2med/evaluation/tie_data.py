"""The ranges the order of tied documents allows, as data: one measure's (:class:`MeasureRange`) and one run's
(:class:`Ties`, the ``ties`` block of ``metrics.json``), and what a depth cut dropped while tied with the last document
kept (:class:`CutTie`, :class:`CutSummary`).

Computed by :func:`r2med.evaluation.ties.tie_ranges`, held by :attr:`r2med.evaluation.metrics.Metrics.ties`: apart
from both so that the scores' type names them without :mod:`.metrics` and :mod:`.ties` importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..measures import Measure


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

    def to_json(self) -> dict[str, Any]:
        """The ``ties`` block of ``metrics.json``: ``tied_queries``; ``measures``: each measure some query depends
        on, with ``queries``, ``best``, ``worst``; ``per_query``: query -> measure -> ``best``, ``worst``; ``cut``
        (only when the retriever recorded its depth cut; absent: unknown): ``queries``, ``capped``."""
        cut = {} if self.cut is None else {"cut": {"queries": self.cut.queries, "capped": self.cut.capped}}
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
