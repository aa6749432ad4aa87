"""Retrievers: the ``Retriever`` protocol, the registry (:mod:`.registry`), BM25 and (extra ``dense``) dense models."""

import importlib
from typing import Any

from .base import BaseRetriever, QueryText, Retriever
from .registry import (
    RetrieverMeta,
    all_retrievers,
    available_retrievers,
    make_retriever,
    options_as,
    register_retriever,
    retriever_meta,
)

__all__ = [
    "BM25",
    "BaseRetriever",
    "QueryText",
    "Retriever",
    "RetrieverMeta",
    "all_retrievers",
    "available_retrievers",
    "make_retriever",
    "options_as",
    "register_retriever",
    "retriever_meta",
]


def __getattr__(name: str) -> Any:  # BM25 imports numpy/scipy: loaded on first use
    if name == "BM25":  # the registry's lazy loading: the module by name, on first use
        return importlib.import_module(".bm25", __name__).BM25
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
