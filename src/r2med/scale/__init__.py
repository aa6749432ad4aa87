"""Scale-out: the same retrieval and evaluation, split into shards and run on a Ray cluster.

* :mod:`.cluster` -- connecting to Ray (``--ray [ADDRESS]``) and mapping work over shards, locally
  or as Ray tasks.
* :mod:`.shards` -- splitting a corpus into contiguous shards and merging per-shard top-k lists.
* :mod:`.bm25` -- BM25 over sharded indexes with collection-wide statistics (scores equal the
  unsharded :class:`r2med.retrieval.bm25.BM25`).
* :mod:`.dense` -- exact top-k over embedding shards, merged into a global top-k.
* :mod:`.encode` -- distributed encoding: a Ray Data actor pool around the dense encoders, writing
  embedding shards atomically to a local path or URI and resuming from the finished ones.

The (retriever x task) matrix of ``r2med evaluate --ray`` is a job: :mod:`r2med.jobs.ray`.

Ray is the optional extra ``scale``; nothing here imports it until a function needs it.
"""

from __future__ import annotations

from .bm25 import ShardedBM25
from .cluster import connect
from .shards import split_corpus

__all__ = ["ShardedBM25", "connect", "split_corpus"]
