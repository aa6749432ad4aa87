"""Per-query excluded documents: what a query must never be given, removed from its scores before the cut.

BRIGHT's examples name, per query, the documents its answer was drawn from (``excluded_ids``: LeetCode's other
solutions to the same problem, AoPS's and TheoremQA's sibling problems); BRIGHT's code pops them from the query's
scores *before* it keeps the top 1000 (xlang-ai/BRIGHT retrievers.py:120-122, 218-220), so the run holds the best
1000 of the other documents.  An :class:`Exclusions` holds them, typed and frozen: query id -> the frozenset of
document ids that query never gets (``"N/A"``, BRIGHT's "none", is never one of them).

Retrievers honour them inside their top-k search, never by building per-query lists of all other documents
(LeetCode: 142 queries x 413,932 documents): :func:`r2med.data.exclusion_cells.excluded_cells` gives the (query
row, document column) pairs of a search's corpus order, which the search sets to ``-inf`` in each block of scores
before it keeps the best ``k`` (:func:`r2med.retrieval.topk.mask_cells`), and an excluded document is never returned
(:mod:`r2med.retrieval.bm25`, :mod:`r2med.retrieval.dense`, :mod:`r2med.scale`).  Runs made elsewhere (imported,
reranked, fused) have them removed by :meth:`Exclusions.drop_from`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from ..infra.home import fingerprint
from ..infra.json_types import JsonObject

#: What BRIGHT's examples hold in ``excluded_ids`` (and ``gold_ids_long``) for "none".
NONE_MARKER = "N/A"


def _empty() -> Mapping[str, frozenset[str]]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Exclusions:
    """Query id -> the document ids that query must never be given (read-only; empty: no query has any).

    Built with :meth:`of`, which drops BRIGHT's ``"N/A"`` and queries left with none.
    """

    by_query: Mapping[str, frozenset[str]] = field(default_factory=_empty)

    @classmethod
    def of(cls, mapping: Mapping[str, Iterable[str]]) -> Exclusions:
        """Exclusions from ``{query id: ids}`` (any iterable of ids; ``"N/A"`` and repeats dropped)."""
        kept = {}
        for qid, ids in mapping.items():
            found = frozenset(i for i in ids if i != NONE_MARKER)
            if found:
                kept[qid] = found
        return cls(MappingProxyType(kept))

    def __bool__(self) -> bool:
        return bool(self.by_query)

    def __len__(self) -> int:
        """The number of queries with at least one excluded document."""
        return len(self.by_query)

    def __contains__(self, qid: object) -> bool:
        return qid in self.by_query

    def get(self, qid: str) -> frozenset[str]:
        """The documents query ``qid`` must not get (empty when none)."""
        return self.by_query.get(qid, frozenset())

    @property
    def pairs(self) -> int:
        """The (query, document) pairs excluded in all."""
        return sum(len(ids) for ids in self.by_query.values())

    @cached_property
    def fingerprint(self) -> str | None:
        """A content hash of every (query, excluded document) pair (None: no exclusions), recorded with results."""
        if not self.by_query:
            return None

        return fingerprint("exclusions", sorted((q, sorted(ids)) for q, ids in self.by_query.items()))

    def record(self) -> JsonObject | None:
        """What ``metrics.json`` records of them: the queries with exclusions, the pairs, the fingerprint."""
        if not self.by_query:
            return None
        return {"queries": len(self.by_query), "pairs": self.pairs, "fingerprint": self.fingerprint}

    def only(self, qids: Iterable[str]) -> Exclusions:
        """The exclusions of the queries ``qids`` only."""
        wanted = set(qids)
        return Exclusions(MappingProxyType({q: ids for q, ids in self.by_query.items() if q in wanted}))

    def unknown(self, corpus: Mapping[str, object]) -> int:
        """How many excluded (query, document) pairs name a document ``corpus`` does not hold (BRIGHT's code stops
        with a ``KeyError`` on one; r2med counts them: there is nothing to remove)."""
        return sum(1 for ids in self.by_query.values() for d in ids if d not in corpus)

    def drop_from(self, run: Mapping[str, Mapping[str, float]]) -> tuple[dict[str, dict[str, float]], int]:
        """``run`` without any excluded document (each query's order kept), and how many entries were removed."""
        out: dict[str, dict[str, float]] = {}
        removed = 0
        for qid, docs in run.items():
            banned = self.by_query.get(qid)
            if not banned:
                out[qid] = dict(docs)
                continue
            kept = {d: s for d, s in docs.items() if d not in banned}
            removed += len(docs) - len(kept)
            out[qid] = kept
        return out, removed


#: No exclusions (R2MED's tasks, local folders).
NO_EXCLUSIONS = Exclusions()
