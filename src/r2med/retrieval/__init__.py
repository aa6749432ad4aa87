"""Retrievers: the ``Retriever`` protocol, the registry, BM25 and (extra ``dense``) dense models."""

from .base import QueryText, Retriever, available_retrievers, make_retriever, register_retriever
from .bm25 import BM25

__all__ = ["BM25", "QueryText", "Retriever", "available_retrievers", "make_retriever", "register_retriever"]
