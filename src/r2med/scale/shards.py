"""Splitting a corpus into contiguous shards, and turning merged top-k arrays back into a run.

Shards are contiguous slices in corpus order, so "global position" (shard start + local index)
is each document's place in the unsharded corpus; :func:`r2med.retrieval.topk.merge_top_k` breaks
score ties by it, which makes a merged ranking independent of how many shards there were.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import R2MedError


@dataclass(frozen=True)
class Shard:
    """One contiguous slice ``[start, stop)`` of a corpus."""

    index: int
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start


def plan_shards(n_docs: int, shards: int | None = None, shard_size: int | None = None) -> list[Shard]:
    """Cut ``n_docs`` into ``shards`` near-equal slices, or slices of ``shard_size`` docs."""
    if n_docs <= 0:
        raise R2MedError("cannot shard an empty corpus")
    if shard_size is not None:
        if shard_size < 1:
            raise R2MedError(f"shard size must be at least 1 (got {shard_size})")
        bounds = list(range(0, n_docs, shard_size)) + [n_docs]
    else:
        shards = shards or 1
        if shards < 1:
            raise R2MedError(f"number of shards must be at least 1 (got {shards})")
        shards = min(shards, n_docs)
        bounds = [n_docs * i // shards for i in range(shards + 1)]
    return [Shard(i, a, b) for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]


def split_corpus(
    corpus: Mapping[str, str], shards: int | None = None, shard_size: int | None = None
) -> list[tuple[Shard, list[str], list[str]]]:
    """``(shard, doc ids, texts)`` for each contiguous shard of ``corpus`` (dict order)."""
    ids = list(corpus)
    texts = list(corpus.values())
    return [(s, ids[s.start : s.stop], texts[s.start : s.stop]) for s in plan_shards(len(ids), shards, shard_size)]


def to_run(
    qids: Sequence[str], doc_ids: Sequence[str], positions: np.ndarray, scores: np.ndarray
) -> dict[str, dict[str, float]]:
    """A :data:`r2med.runs.run.Run` from merged arrays (query rows in ``qids`` order); ``-inf`` entries (excluded
    documents, ranked last) are left out."""
    return {
        qid: {doc_ids[p]: float(s) for p, s in zip(positions[r].tolist(), scores[r].tolist()) if s != -math.inf}
        for r, qid in enumerate(qids)
    }
