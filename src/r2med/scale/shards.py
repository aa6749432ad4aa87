"""Splitting a corpus into contiguous shards, and merging per-shard top-k lists into a global one.

Shards are contiguous slices in corpus order, so "global position" (shard start + local index)
is each document's place in the unsharded corpus; merges break score ties by it, which makes a
merged ranking independent of how many shards there were.
"""

from __future__ import annotations

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


def split_corpus(corpus: Mapping[str, str], shards: int | None = None, shard_size: int | None = None
                 ) -> list[tuple[Shard, list[str], list[str]]]:
    """``(shard, doc ids, texts)`` for each contiguous shard of ``corpus`` (dict order)."""
    ids = list(corpus)
    texts = list(corpus.values())
    return [(s, ids[s.start:s.stop], texts[s.start:s.stop]) for s in plan_shards(len(ids), shards, shard_size)]


def topk_rows(scores: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` columns of each row of ``scores``: (positions + ``offset``, scores), best first.

    Ties are broken by the lower position, also at the cut-off, so the result is fully
    deterministic (a row's zero-score tail comes back in corpus order, as BM25's fill does).
    """
    n_rows, n_cols = scores.shape
    k = min(k, n_cols)
    positions = np.empty((n_rows, k), dtype=np.int64)
    values = np.empty((n_rows, k), dtype=scores.dtype)
    if k == 0:
        return positions, values
    for r in range(n_rows):
        row = scores[r]
        if k < n_cols:
            cut = row[np.argpartition(row, n_cols - k)[n_cols - k:]].min()
            above = np.flatnonzero(row > cut)
            sel = np.concatenate([above, np.flatnonzero(row == cut)[: k - len(above)]])
        else:
            sel = np.arange(n_cols)
        order = sel[np.lexsort((sel, -row[sel]))]
        positions[r] = order + offset
        values[r] = row[order]
    return positions, values


def merge_topk(parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge per-shard ``(positions, scores)`` arrays (rows = queries) into the global top ``k``.

    Positions are global, so ties are broken by corpus order exactly as an unsharded
    :func:`topk_rows` would: the merge is independent of the number of shards.
    """
    positions = np.concatenate([p for p, _ in parts], axis=1)
    scores = np.concatenate([s for _, s in parts], axis=1)
    order = np.lexsort((positions, -scores), axis=-1)[:, :k]
    return np.take_along_axis(positions, order, axis=1), np.take_along_axis(scores, order, axis=1)


def to_run(qids: Sequence[str], doc_ids: Sequence[str], positions: np.ndarray, scores: np.ndarray
           ) -> dict[str, dict[str, float]]:
    """A :data:`r2med.run.Run` from merged arrays (query rows in ``qids`` order)."""
    return {qid: {doc_ids[p]: float(s) for p, s in zip(positions[r].tolist(), scores[r].tolist())}
            for r, qid in enumerate(qids)}
