"""Reranking first-stage runs: the ``Reranker`` protocol and registry, cross-encoders, RankLLaMA, LLM listwise.

The top-level ``r2med.rerank(run, queries, corpus, "bge-reranker", top_k=10)`` is :func:`.base.rerank`.
"""

from .base import (
    RERANKERS,
    Reranker,
    RerankerMeta,
    all_rerankers,
    available_rerankers,
    make_reranker,
    register_reranker,
    rerank,
    reranker_meta,
)

__all__ = [
    "RERANKERS",
    "Reranker",
    "RerankerMeta",
    "all_rerankers",
    "available_rerankers",
    "make_reranker",
    "register_reranker",
    "rerank",
    "reranker_meta",
]
