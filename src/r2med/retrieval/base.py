"""The ``Retriever`` protocol and the query type it searches with (its registry: :mod:`.registry`).

A retriever is made for one task (dense presets carry per-task instructions),
indexes a corpus once, and searches many queries at a time.  A query is a text,
or a tuple of texts (query + expansion) that dense retrievers embed separately
and average -- the R2MED paper's rule -- and lexical retrievers join with spaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ..run import Run

QueryText = str | tuple[str, ...]


@runtime_checkable
class Retriever(Protocol):
    name: str
    family: str  # "lexical" or "dense": decides how expansions combine with queries

    def index(self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None) -> Retriever:
        """Index (or load the cached index of) ``corpus``; the fingerprint, when given, keys caches."""
        ...

    def search(self, queries: Mapping[str, QueryText], k: int = 100) -> Run: ...

    def config(self) -> dict[str, Any]: ...


def as_text(query: QueryText) -> str:
    """A lexical view of a query: expansion parts joined with single spaces."""
    return query if isinstance(query, str) else " ".join(query)
