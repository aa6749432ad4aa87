"""r2med: load R2MED tasks, run BM25 / dense / reranking / query expansion, evaluate like trec_eval.

The names below are imported on first use (PEP 562), so ``import r2med`` and the command line start
without loading numpy or scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .version import __version__

_EXPORTS = {
    "Collection": "data",
    "load_folder": "data",
    "load_task": "data",
    "read_qrels": "data",
    "Metrics": "evaluation.metrics",
    "evaluate": "evaluation.metrics",
    "BM25": "retrieval",
    "make_retriever": "retrieval",
    "fuse": "runs.fusion",
    "import_run": "jobs.imports",
    "show_query": "jobs.show",
    "make_reranker": "reranking",
    "rerank": "reranking",
    "Run": "runs.run",
    "read_trec": "runs.run",
    "write_trec": "runs.run",
}

__all__ = [
    "BM25",
    "Collection",
    "Metrics",
    "Run",
    "__version__",
    "evaluate",
    "fuse",
    "import_run",
    "load_folder",
    "load_task",
    "make_reranker",
    "make_retriever",
    "read_qrels",
    "read_trec",
    "rerank",
    "show_query",
    "write_trec",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .data import Collection, load_folder, load_task, read_qrels
    from .evaluation.metrics import Metrics, evaluate
    from .jobs.imports import import_run
    from .jobs.show import show_query
    from .reranking import make_reranker, rerank
    from .retrieval import BM25, make_retriever
    from .runs.fusion import fuse
    from .runs.run import Run, read_trec, write_trec


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'r2med' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
