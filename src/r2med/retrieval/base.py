"""The ``Retriever`` protocol and the query type it searches with (its registry: :mod:`.registry`).

A retriever is made for one task (dense presets carry per-task instructions),
indexes a corpus once, and searches many queries at a time.  A query is a text,
or a tuple of texts (query + expansion) that dense retrievers embed separately
and average -- the R2MED paper's rule -- and lexical retrievers join with spaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..runs.run import Run

if TYPE_CHECKING:
    from ..data import Collection
    from ..data.exclusions import Exclusions

QueryText = str | tuple[str, ...]


@runtime_checkable
class Retriever(Protocol):
    name: str
    family: str  # "lexical" or "dense": decides how expansions combine with queries

    def index(self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None) -> Retriever:
        """Index (or load the cached index of) ``corpus``; the fingerprint, when given, keys caches."""
        ...

    def search(self, queries: Mapping[str, QueryText], k: int = 100, exclusions: Exclusions | None = None) -> Run:
        """The top ``k`` documents of each query, best first; ``exclusions``: each query's documents it must never
        get, removed from its scores before the cut (a retriever that does so says ``excludes = True``; r2med
        refuses to run one that does not on a task with exclusions)."""
        ...

    def config(self) -> dict[str, Any]: ...


def as_text(query: QueryText) -> str:
    """A lexical view of a query: expansion parts joined with single spaces."""
    return query if isinstance(query, str) else " ".join(query)


def index_collection(retriever: Retriever, collection: Collection) -> None:
    """Index ``collection``'s corpus as the paper's code for this kind of retriever reads it: a retriever
    whose ``indexes_repeats`` is true (BM25: the paper's BM25 script reads the corpus file as a list)
    also gets the other copies of repeated ids (:attr:`~r2med.data.Collection.corpus_repeats`); the
    others (dense: the paper's dense loader fills a dict) see each id once, its last record."""
    if collection.corpus_repeats and getattr(retriever, "indexes_repeats", False):
        retriever.index(
            collection.corpus,
            corpus_fingerprint=collection.fingerprint,  # type: ignore[call-arg]
            repeats=collection.corpus_repeats,
        )
    else:
        retriever.index(collection.corpus, corpus_fingerprint=collection.fingerprint)
