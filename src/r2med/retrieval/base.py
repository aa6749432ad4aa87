"""The ``Retriever`` protocol and the registry of retrievers by name.

A retriever is made for one task (dense presets carry per-task instructions),
indexes a corpus once, and searches many queries at a time.  A query is a text,
or a tuple of texts (query + expansion) that dense retrievers embed separately
and average -- the R2MED paper's rule -- and lexical retrievers join with spaces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..errors import R2MedError
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


RetrieverFactory = Callable[..., Retriever]
_REGISTRY: dict[str, tuple[RetrieverFactory, str]] = {}


def register_retriever(name: str, factory: RetrieverFactory, description: str = "") -> None:
    """Register a factory ``factory(task=..., **options) -> Retriever`` under ``name``."""
    if name in _REGISTRY and _REGISTRY[name][0] is not factory:
        raise ValueError(f"retriever {name!r} is already registered")
    _REGISTRY[name] = (factory, description)


#: Modules that register retrievers when imported (they import heavy libraries lazily).
BUILTIN_MODULES = ["bm25", "dense"]


def _load_builtin() -> None:
    import importlib
    import importlib.util

    for module in BUILTIN_MODULES:
        name = f"{__package__}.{module}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def available_retrievers() -> dict[str, str]:
    _load_builtin()
    return {name: desc for name, (_, desc) in sorted(_REGISTRY.items())}


def make_retriever(name: str, task: str | None = None, **options: Any) -> Retriever:
    """Build the retriever registered as ``name`` for ``task``; unknown options are an error."""
    _load_builtin()
    if name not in _REGISTRY:
        raise R2MedError(f"unknown retriever {name!r}; choose from: {', '.join(sorted(_REGISTRY))}")
    factory, _ = _REGISTRY[name]
    return factory(task=task, **{k: v for k, v in options.items() if v is not None})


def as_text(query: QueryText) -> str:
    """A lexical view of a query: expansion parts joined with single spaces."""
    return query if isinstance(query, str) else " ".join(query)
