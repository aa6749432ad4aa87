"""The index ``r2med serve`` answers from: one task's collection and one indexed retriever, loaded once.

A batch of searches (:class:`Search`: a query text, its depth, and optionally the benchmark query it serves) is
answered by one ``retriever.search`` call -- the same call ``r2med evaluate`` makes, with the same index and cached
embeddings -- at the batch's largest depth, each query's list then cut to its own depth in r2med's one order
(:func:`r2med.runs.run.ranked`: score, then corpus position), so a reply holds exactly the first ``k`` documents of
``evaluate``'s run for that query, with their scores as its run file stores them (``SCORE_FORMAT``: exact for float32
scores).  A search naming a benchmark query of a task with exclusions (BRIGHT's
``excluded_ids``) has those documents removed inside the search, before the cut, as ``evaluate`` does; one that
names none is answered without them and says so.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..data import Collection
from ..data.exclusions import Exclusions
from ..errors import R2MedError
from ..retrieval.base import Retriever
from ..runs.run import SCORE_FORMAT, ranked

#: What a reply says of BRIGHT's exclusions (a trace records the same word).
APPLIED, NOT_APPLIED, NO_EXCLUSIONS = "applied", "not applied", "none"

NOT_APPLIED_NOTE = (
    "this task excludes documents per query (BRIGHT's excluded_ids) and the request named no benchmark query "
    "(query_id), so exclusions were not applied: results may hold documents the protocol never lets a query have"
)


@dataclass(frozen=True)
class Search:
    """One query to search: its text, how many documents, the benchmark query it serves (None: not named)."""

    text: str
    k: int
    query_id: str | None = None


@dataclass(frozen=True)
class Hits:
    """One search's documents, best first, with their scores; ``exclusions``: applied, not applied or none."""

    ids: list[str]
    scores: list[float]
    exclusions: str


class ServedIndex:
    """A collection and its indexed retriever; ``served`` says what it is (as ``evaluate`` records it)."""

    def __init__(self, collection: Collection, retriever: Retriever, depth: int, served: Mapping[str, Any]):
        self.collection, self.retriever, self.depth = collection, retriever, int(depth)
        self.served = dict(served)
        self.position = {did: i for i, did in enumerate(collection.corpus)}
        self._lock = threading.Lock()  # one search at a time: retrievers are not thread-safe

    @property
    def has_exclusions(self) -> bool:
        return bool(self.collection.exclusions)

    def check_query_id(self, query_id: str | None) -> None:
        """A named benchmark query must be one of the task's (else a 400 naming it)."""
        if query_id is not None and query_id not in self.collection.queries:
            raise R2MedError(f"query_id {query_id!r} is not a query of {self.collection.name}")

    def document(self, doc_id: str) -> str | None:
        return self.collection.corpus.get(doc_id)

    def search(self, searches: Sequence[Search]) -> list[Hits]:
        """Answer ``searches`` with one retriever call (see the module)."""
        if not searches:
            return []
        keys = [str(i) for i in range(len(searches))]
        texts = {key: s.text for key, s in zip(keys, searches)}
        depth = max(s.k for s in searches)
        excluded = self.collection.exclusions
        named = {key: excluded.get(s.query_id) for key, s in zip(keys, searches) if s.query_id is not None}
        with self._lock:
            if excluded:
                run = self.retriever.search(texts, k=depth, exclusions=Exclusions.of(named))
            else:
                run = self.retriever.search(texts, k=depth)
        replies = []
        for key, s in zip(keys, searches):
            order = ranked(run.get(key, {}), self.position)[: s.k]
            if not excluded:
                state = NO_EXCLUSIONS
            elif s.query_id is None:
                state = NOT_APPLIED
            else:
                state = APPLIED
                banned = excluded.get(s.query_id)
                if any(d in banned for d, _ in order):
                    raise R2MedError(f"the retriever returned an excluded document for query {s.query_id!r}")
            replies.append(Hits([d for d, _ in order], [float(format(v, SCORE_FORMAT)) for _, v in order], state))
        return replies
