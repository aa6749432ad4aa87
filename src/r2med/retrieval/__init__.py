"""Retrievers: the ``Retriever`` protocol, the registry (:mod:`.registry`), BM25 and (extra ``dense``) dense models."""

import importlib
from typing import TYPE_CHECKING

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


if TYPE_CHECKING:
    from .bm25 import BM25


def __getattr__(name: str) -> "type[BM25]":  # BM25 imports numpy/scipy: loaded on first use
    if name == "BM25":  # the registry's lazy loading: the module by name, on first use
        bm25: type[BM25] = importlib.import_module(".bm25", __name__).BM25
        return bm25
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
