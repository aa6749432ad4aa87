"""Reranking first-stage runs: the ``Reranker`` protocol and registry, cross-encoders, RankLLaMA, LLM listwise.

``r2med.rerank`` is also callable: ``r2med.rerank(run, queries, corpus, "bge-reranker", top_k=10)`` is
:func:`r2med.rerank.base.rerank` (the package stays importable as ``r2med.rerank.<module>``).
"""

import sys
import types
from typing import Any

from .base import (RERANKERS, Reranker, RerankerMeta, all_rerankers, available_rerankers, make_reranker,
                   register_reranker, rerank, reranker_meta)

__all__ = ["RERANKERS", "Reranker", "RerankerMeta", "all_rerankers", "available_rerankers", "make_reranker",
           "register_reranker", "rerank", "reranker_meta"]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`~r2med.rerank.base.rerank` (so ``r2med.rerank(...)`` works whether
    ``r2med.rerank`` names the package or the function)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return rerank(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
