"""r2med: load R2MED tasks, run BM25 / dense / reranking / query expansion, evaluate like trec_eval."""

from __future__ import annotations

__version__ = "0.1.0"

from .data import Collection, load_folder, load_task, read_qrels
from .metrics import Metrics, evaluate
from .retrieval import BM25, make_retriever
from .run import Run, read_trec, write_trec

__all__ = ["BM25", "Collection", "Metrics", "Run", "__version__", "evaluate", "load_folder", "load_task",
           "make_retriever", "read_qrels", "read_trec", "write_trec"]
