"""The ``Retriever`` protocol, the base that gives its optional capabilities their defaults, and the query type it
searches with (its registry: :mod:`.registry`).

A retriever is made for one task (dense presets carry per-task instructions),
indexes a corpus once, and searches many queries at a time.  A query is a text,
or a tuple of texts (query + expansion) that dense retrievers embed separately
and average -- the R2MED paper's rule -- and lexical retrievers join with spaces.

Besides indexing and searching, the protocol names what a retriever may do beyond the minimum, each with its
default in :class:`BaseRetriever`: ``indexes_repeats`` (its ``index`` takes the corpus file's other copies of
repeated ids), ``excludes`` (its ``search`` removes each query's excluded documents before the cut),
``encoding_facts`` (what its vectors were made with, for ``metrics.json``) and ``cut_ties`` (what its last search's
depth cut dropped while tied with each query's last document; None: unknown, which is not "none").  A retriever
that subclasses the base states only what it does; an object that implements only the minimum is given the
defaults once, where it is built (:func:`as_retriever`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, TypeGuard, runtime_checkable

from ..errors import R2MedError
from ..infra.json_types import JsonObject, JsonValue
from ..runs.run import Run

if TYPE_CHECKING:
    from ..data import Collection
    from ..data.exclusions import Exclusions
    from ..evaluation.tie_data import CutTie

QueryText = str | tuple[str, ...]


@runtime_checkable
class Retriever(Protocol):
    name: str
    family: str  # "lexical" or "dense": decides how expansions combine with queries
    #: ``index`` takes ``repeats``: the other copies of repeated ids (:func:`index_collection`)
    indexes_repeats: bool
    #: ``search`` takes ``exclusions`` and removes them before the cut
    excludes: bool

    @property
    def cut_ties(self) -> Mapping[str, CutTie] | None:
        """What the last ``search``'s depth cut dropped while tied with each query's last document (query id ->
        :class:`~r2med.evaluation.tie_data.CutTie`; r2med's exact top-k paths set it); None: unknown."""
        ...

    def index(self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None) -> Retriever:
        """Index (or load the cached index of) ``corpus``; the fingerprint, when given, keys caches."""
        ...

    def search(self, queries: Mapping[str, QueryText], k: int = 100, exclusions: Exclusions | None = None) -> Run:
        """The top ``k`` documents of each query, best first; ``exclusions``: each query's documents it must never
        get, removed from its scores before the cut (a retriever that does so says ``excludes = True``; r2med
        refuses to run one that does not on a task with exclusions)."""
        ...

    def config(self) -> JsonObject: ...

    def encoding_facts(self) -> JsonObject | None:
        """What the last index and search encoded with (``metrics.json``'s ``encoding``); None: nothing to say."""
        ...


class BaseRetriever:
    """The defaults of the protocol's optional capabilities: the corpus seen once per id, no exclusions inside the
    search, no encoding facts.  A retriever subclasses it and states what it does otherwise."""

    indexes_repeats: bool = False
    excludes: bool = False
    cut_ties: Mapping[str, CutTie] | None = None

    def encoding_facts(self) -> JsonObject | None:
        return None


#: the members every retriever has; the others are capabilities with a default (:class:`BaseRetriever`)
REQUIRED = ("name", "family", "index", "search", "config")
CAPABILITIES = ("indexes_repeats", "excludes", "encoding_facts")


class _Minimal(Protocol):
    """The members every retriever has (:data:`REQUIRED`), as an object that implements only those gives them."""

    name: str
    family: str

    def index(self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None, **more: object) -> object: ...

    def search(self, queries: Mapping[str, QueryText], k: int = 100, exclusions: Exclusions | None = None) -> Run: ...

    def config(self) -> Mapping[str, JsonValue]: ...


def _has_minimum(built: object) -> TypeGuard[_Minimal]:
    return all(hasattr(built, member) for member in REQUIRED)


class _WithDefaults(BaseRetriever):
    """An object that implements the minimum of the protocol, with the defaults of the capabilities it leaves out
    (those it has are its own)."""

    def __init__(self, inner: _Minimal):
        self.inner = inner
        self.name: str = inner.name
        self.family: str = inner.family
        for capability in CAPABILITIES:  # read once, where it is built: its own where it has one
            if hasattr(inner, capability):
                setattr(self, capability, getattr(inner, capability))

    def index(self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None, **more: object) -> _WithDefaults:
        self.inner.index(corpus, corpus_fingerprint=corpus_fingerprint, **more)
        return self

    def search(self, queries: Mapping[str, QueryText], k: int = 100, exclusions: Exclusions | None = None) -> Run:
        run: Run = (
            self.inner.search(queries, k=k, exclusions=exclusions) if exclusions else self.inner.search(queries, k=k)
        )
        self.cut_ties = getattr(self.inner, "cut_ties", None)  # its own, where it keeps one; else unknown
        return run

    def config(self) -> JsonObject:
        return dict(self.inner.config())


def as_retriever(built: object, where: str) -> Retriever:
    """What a factory built (``where``: the retriever's name) as a :class:`Retriever`: itself when it has every
    member (a :class:`BaseRetriever` subclass does); an object with the minimum (:data:`REQUIRED`) behind the
    capabilities' defaults; anything else is a one-line error naming what it lacks."""
    if isinstance(built, Retriever):
        return built
    if _has_minimum(built):
        return _WithDefaults(built)
    missing = [member for member in REQUIRED if not hasattr(built, member)]
    raise R2MedError(
        f"retriever {where!r}: its factory built a {type(built).__name__}, which has no {', '.join(missing)}"
    )


def as_text(query: QueryText) -> str:
    """A lexical view of a query: expansion parts joined with single spaces."""
    return query if isinstance(query, str) else " ".join(query)


def index_collection(retriever: Retriever, collection: Collection) -> None:
    """Index ``collection``'s corpus as the paper's code for this kind of retriever reads it: a retriever
    whose ``indexes_repeats`` is true (BM25: the paper's BM25 script reads the corpus file as a list)
    also gets the other copies of repeated ids (:attr:`~r2med.data.Collection.corpus_repeats`); the
    others (dense: the paper's dense loader fills a dict) see each id once, its last record."""
    if collection.corpus_repeats and retriever.indexes_repeats:
        retriever.index(
            collection.corpus,
            corpus_fingerprint=collection.fingerprint,  # type: ignore[call-arg]
            repeats=collection.corpus_repeats,
        )
    else:
        retriever.index(collection.corpus, corpus_fingerprint=collection.fingerprint)
