"""The best ``k`` of many scores: the one top-k rule of every r2med retriever.

Rows of scores (queries x documents, or x a chunk / shard of them) are cut to their best ``k``
columns, best first.  Equal scores are ordered by position (corpus order), also at the cut-off:
among tied documents the earlier one wins, as the paper's code does with a stable sort over the
whole corpus.  Positions can be offset (a chunk or a shard starting at ``offset``), so per-chunk
lists merge (:func:`merge_top_k`) into exactly the list one pass over all columns gives.

Excluded documents (:class:`r2med.data.exclusions.Exclusions`) are removed inside the search: a block's excluded
cells are set to ``-inf`` (:func:`mask_cells`) before its best ``k`` are kept, so they rank after every other
document, and every caller drops ``-inf`` entries from what it returns -- the top ``k`` of the other documents,
exactly, as BRIGHT's code computes it by popping them from each query's scores before the cut.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def top_k_indices(row: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best entries of a 1-D ``row``, best first, ties by the lower index.

    Positive, zero and negative scores are taken in that order, so a sparse row (BM25: a few
    thousand positive scores, the rest zero) is selected among its positive entries only, and
    the zeros that fill a short list come in corpus order without being sorted.
    """
    k = min(k, row.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    chosen = []
    for tier in (row > 0, row == 0, row < 0):
        found = np.flatnonzero(tier)
        if len(found) >= k:
            chosen.append(_best(found, row, k))
            break
        chosen.append(found)
        k -= len(found)
    picked = np.concatenate(chosen)
    return picked[np.lexsort((picked, -row[picked]))]


def _best(candidates: np.ndarray, row: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` best of ``candidates`` (ascending indices into ``row``), ties by the lower index."""
    values = row[candidates]
    m = len(values)
    if k >= m:
        return candidates
    kth = np.partition(values, m - k)[m - k]  # the k-th largest value
    above = candidates[values > kth]
    return np.concatenate([above, candidates[values == kth][: k - len(above)]])


def top_k_rows(scores: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` columns of each row of ``scores``: (positions + ``offset``, scores), best first."""
    n_rows, n_cols = scores.shape
    k = min(k, n_cols)
    positions = np.empty((n_rows, k), dtype=np.int64)
    values = np.empty((n_rows, k), dtype=scores.dtype)
    for r in range(n_rows):
        order = top_k_indices(scores[r], k)
        positions[r] = order + offset
        values[r] = scores[r, order]
    return positions, values


def merge_top_k(parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge ``(positions, scores)`` arrays of the same rows (one per chunk or shard) into the top ``k``.

    Positions are global, so ties are broken by corpus order exactly as one :func:`top_k_rows`
    over all columns would: the result does not depend on how the columns were split.
    """
    positions = np.concatenate([p for p, _ in parts], axis=1)
    scores = np.concatenate([s for _, s in parts], axis=1)
    order = np.lexsort((positions, -scores), axis=-1)[:, :k]
    return np.take_along_axis(positions, order, axis=1), np.take_along_axis(scores, order, axis=1)


def mask_cells(block: np.ndarray, rows: np.ndarray, cols: np.ndarray, row_offset: int = 0, col_offset: int = 0) -> None:
    """Set to ``-inf``, in place, the cells of ``block`` that the (row, column) pairs ``rows``/``cols`` name.

    ``block`` holds the query rows ``row_offset ..`` and document columns ``col_offset ..`` of a larger score
    matrix; ``rows`` (sorted) and ``cols`` are positions in that matrix
    (:meth:`r2med.data.exclusions.Exclusions.cells`), and pairs outside the block are left alone.
    """
    if len(rows) == 0:
        return
    n_rows, n_cols = block.shape
    lo, hi = np.searchsorted(rows, [row_offset, row_offset + n_rows])
    r, c = rows[lo:hi] - row_offset, cols[lo:hi] - col_offset
    inside = (c >= 0) & (c < n_cols)
    block[r[inside], c[inside]] = -np.inf
