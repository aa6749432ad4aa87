"""The index ``r2med serve`` answers from: one task's collection and one indexed retriever, loaded once.

A batch of searches (:class:`Search`: a query text, its depth, and optionally the benchmark query it serves) is
answered by one ``retriever.search`` call -- the same call ``r2med evaluate`` makes, with the same index and cached
embeddings -- at the batch's largest depth, each query's list then cut to its own depth in r2med's one order
(:func:`r2med.runs.run.ranked`: score, then corpus position), so a reply holds exactly the first ``k`` documents of
``evaluate``'s run for that query, with their scores as its run file stores them (``SCORE_FORMAT``: exact for float32
scores).  A search naming a benchmark query of a task with exclusions (BRIGHT's
``excluded_ids``) has those documents removed inside the search, before the cut, as ``evaluate`` does; one that
names none is answered without them and says so.

A served *system* may be more than one retriever (:class:`System`): several first stages fused per query as
``r2med fuse`` fuses their runs (:func:`r2med.runs.fusion.fuse`, each member's list at its ``evaluate`` depth with
the scores its run file stores, the fused list kept to the fusion's depth), and/or a reranker applied to the
(fused) first stage per query as ``r2med rerank`` applies it (:func:`r2med.reranking.base.rerank`, its depth and
tail rule); the reply is then the first ``k`` documents of that command's run for the query.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..data import Collection
from ..data.exclusions import Exclusions
from ..errors import R2MedError
from ..infra.json_types import JsonObject, JsonValue
from ..reranking.base import Reranker, rerank
from ..retrieval.base import Retriever
from ..runs.fusion import fuse
from ..runs.run import SCORE_FORMAT, Run, ranked
from ..typed.options import FusionOptions

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


@dataclass(frozen=True)
class Fusion:
    """The members' lists fused per query as ``r2med fuse`` fuses runs: its options, the fused list's depth."""

    options: FusionOptions
    depth: int

    def apply(self, runs: Sequence[Run]) -> Run:
        o = self.options
        return fuse(runs, o.method, k=o.k, norm=o.norm, weights=o.weights, depth=self.depth)


@dataclass(frozen=True)
class Rerank:
    """The first stage reranked per query as ``r2med rerank`` reranks a run: the reranker, its depth, the tail."""

    reranker: Reranker
    top_k: int
    keep_tail: bool


@dataclass(frozen=True)
class System:
    """What answers a search beyond one retriever: more retrievers fused (``others``, ``fusion``) and a reranker."""

    others: tuple[Retriever, ...] = ()
    fusion: Fusion | None = None
    rerank: Rerank | None = None

    def depth(self, first_stage: int) -> int:
        """How many documents its lists hold, its first stage holding ``first_stage``."""
        depth = self.fusion.depth if self.fusion is not None else first_stage
        if self.rerank is not None and not self.rerank.keep_tail:
            depth = min(depth, self.rerank.top_k)
        return depth


class ServedIndex:
    """A collection and its indexed retriever (``system``: more retrievers fused, a reranker); ``served`` says what
    it is (as ``evaluate``, ``fuse`` and ``rerank`` record it)."""

    def __init__(
        self,
        collection: Collection,
        retriever: Retriever,
        depth: int,
        served: Mapping[str, JsonValue],
        system: System | None = None,
    ):
        self.collection, self.retriever, self.depth = collection, retriever, int(depth)
        self.system = system or System()
        if bool(self.system.others) != (self.system.fusion is not None):
            raise R2MedError("several retrievers are served fused (a fusion method), one is served alone")
        self.served: JsonObject = dict(served)  # the served system's record (as evaluate/fuse/rerank record it)
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
        excluded = self.collection.exclusions
        named = {key: excluded.get(s.query_id) for key, s in zip(keys, searches) if s.query_id is not None}
        with self._lock:
            run = self._run(texts, named, max(s.k for s in searches))
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

    def _run(self, texts: Mapping[str, str], named: Mapping[str, frozenset[str]], k: int) -> Run:
        """The run of ``texts`` (key -> text; ``named``: key -> its query's excluded ids): one retriever searched to
        ``k``; a system's members each searched to the depth of their ``evaluate`` run, its scores as the run file
        stores them (what ``fuse`` and ``rerank`` read), then fused and reranked."""
        system = self.system
        plain = system.fusion is None and system.rerank is None
        retrievers = (self.retriever, *system.others)
        runs = []
        for retriever in retrievers:
            depth = k if plain else self.depth
            if self.collection.exclusions:
                run = retriever.search(texts, k=depth, exclusions=Exclusions.of(named))
            else:
                run = retriever.search(texts, k=depth)
            runs.append(run if plain else as_stored(run))
        first = runs[0] if system.fusion is None else system.fusion.apply(runs)
        if system.rerank is None:
            return first
        r = system.rerank
        first = as_stored(first) if system.fusion is not None else first
        return rerank(first, texts, self.collection.corpus, r.reranker, top_k=r.top_k, keep_tail=r.keep_tail)


def as_stored(run: Run) -> Run:
    """``run``'s scores as its run file stores them (``SCORE_FORMAT``): what ``fuse`` and ``rerank`` read back."""
    return {q: {d: float(format(v, SCORE_FORMAT)) for d, v in docs.items()} for q, docs in run.items()}
