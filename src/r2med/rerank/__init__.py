"""Reranking first-stage runs: the ``Reranker`` protocol, cross-encoders, RankLLaMA, LLM listwise."""

from .base import Reranker, available_rerankers, make_reranker, register_reranker, rerank_run

__all__ = ["Reranker", "available_rerankers", "make_reranker", "register_reranker", "rerank_run"]
