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

The cut also says what it dropped that it could as well have kept: the ``*_cut`` forms return, for each row whose
``k``-th score is shared by documents the cut left out, those documents' positions (corpus order, the first
:data:`~r2med.evaluation.ties.CUT_TIES_CAP`) and how many there are (:data:`CutPositions`).  A run alone cannot
show them; :mod:`r2med.evaluation.ties` lets them compete for the last places of the range it computes.  Excluded
cells (``-inf``) are never ties.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..evaluation.tie_data import CUT_TIES_CAP, CutTie

CutPositions = dict[int, tuple[np.ndarray, int]]
"""Row -> (positions of the documents tied with the row's ``k``-th score that the cut dropped, ascending, at most
:data:`~r2med.evaluation.ties.CUT_TIES_CAP`; how many it dropped); rows whose cut dropped no tie are absent."""
_NONE = np.zeros(0, dtype=np.int64)


def top_k_indices(row: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best entries of a 1-D ``row``, best first, ties by the lower index.

    Positive, zero and negative scores are taken in that order, so a sparse row (BM25: a few
    thousand positive scores, the rest zero) is selected among its positive entries only, and
    the zeros that fill a short list come in corpus order without being sorted.
    """
    return _select(row, k)[0]


def _select(row: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_k_indices` and the indices (ascending) of the entries equal to the ``k``-th that it left out."""
    k = min(k, row.shape[0])
    if k <= 0:
        return _NONE, _NONE
    chosen = []
    dropped = _NONE
    for tier in (row > 0, row == 0, row < 0):
        found = np.flatnonzero(tier)
        if len(found) >= k:
            best, dropped = _best(found, row, k)
            chosen.append(best)
            break
        chosen.append(found)
        k -= len(found)
    picked = np.concatenate(chosen)
    return picked[np.lexsort((picked, -row[picked]))], dropped


def _best(candidates: np.ndarray, row: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of ``candidates`` (ascending indices into ``row``), ties by the lower index; and the
    candidates equal to the ``k``-th best that were left out (ascending)."""
    values = row[candidates]
    m = len(values)
    if k >= m:
        return candidates, _NONE
    kth = np.partition(values, m - k)[m - k]  # the k-th largest value
    above = candidates[values > kth]
    tied = candidates[values == kth]
    n = k - len(above)
    return np.concatenate([above, tied[:n]]), tied[n:]


def top_k_rows(scores: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` columns of each row of ``scores``: (positions + ``offset``, scores), best first."""
    positions, values, _ = top_k_rows_cut(scores, k, offset)
    return positions, values


def top_k_rows_cut(scores: np.ndarray, k: int, offset: int = 0) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    """:func:`top_k_rows` and, per row, the documents tied with its ``k``-th score that the cut dropped
    (:data:`CutPositions`, positions + ``offset``)."""
    n_rows, n_cols = scores.shape
    k = min(k, n_cols)
    positions = np.empty((n_rows, k), dtype=np.int64)
    values = np.empty((n_rows, k), dtype=scores.dtype)
    cut: CutPositions = {}
    for r in range(n_rows):
        order, dropped = _select(scores[r], k)
        positions[r] = order + offset
        values[r] = scores[r, order]
        if len(dropped) and scores[r, dropped[0]] != -np.inf:
            cut[r] = (dropped[:CUT_TIES_CAP] + offset, len(dropped))
    return positions, values, cut


def merge_top_k(parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge ``(positions, scores)`` arrays of the same rows (one per chunk or shard) into the top ``k``.

    Positions are global, so ties are broken by corpus order exactly as one :func:`top_k_rows`
    over all columns would: the result does not depend on how the columns were split.
    """
    positions = np.concatenate([p for p, _ in parts], axis=1)
    scores = np.concatenate([s for _, s in parts], axis=1)
    order = np.lexsort((positions, -scores), axis=-1)[:, :k]
    return np.take_along_axis(positions, order, axis=1), np.take_along_axis(scores, order, axis=1)


def merge_top_k_cut(
    parts: Sequence[tuple[np.ndarray, np.ndarray, CutPositions]], k: int
) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    """:func:`merge_top_k` of ``(positions, scores, cut)`` parts (:func:`top_k_rows_cut`), with the merged cut's
    dropped ties: a part's entries equal to the merged ``k``-th score that the merge left out, and the ties a
    part's own cut dropped when its ``k``-th score is the merged one (a part's cut at a higher score dropped
    nothing the merged list could hold; at a lower one, nothing tied with it).  The same as one
    :func:`top_k_rows_cut` over all columns, however they were split."""
    positions = np.concatenate([p for p, _, _ in parts], axis=1)
    scores = np.concatenate([s for _, s, _ in parts], axis=1)
    order = np.lexsort((positions, -scores), axis=-1)
    top = order[:, :k]
    kept_p, kept_s = np.take_along_axis(positions, top, axis=1), np.take_along_axis(scores, top, axis=1)
    cut: CutPositions = {}
    if kept_s.shape[1] < k or not kept_s.shape[0]:
        return kept_p, kept_s, cut  # fewer columns than k: nothing was dropped
    kth = kept_s[:, k - 1]
    rows: set[int] = set()
    if order.shape[1] > k:  # the merge itself left out an entry equal to the k-th
        nxt = np.take_along_axis(scores, order[:, k : k + 1], axis=1)[:, 0]
        rows.update(np.flatnonzero(nxt == kth).tolist())
    for _, part_scores, part_cut in parts:
        rows.update(r for r in part_cut if part_scores[r, -1] == kth[r])
    for r in sorted(rows):
        v = kth[r]
        if v == -np.inf:
            continue  # excluded documents are never ties
        rest = order[r, k:]
        same = positions[r, rest[scores[r, rest] == v]]
        found, total = [same], len(same)
        for _, part_scores, part_cut in parts:
            if r in part_cut and part_scores[r, -1] == v:
                found.append(part_cut[r][0])
                total += part_cut[r][1]
        if total:
            cut[r] = (np.sort(np.concatenate(found))[:CUT_TIES_CAP], total)
    return kept_p, kept_s, cut


def cut_ties_of(cut: CutPositions, doc_ids: Sequence[str]) -> dict[int, CutTie]:
    """:data:`CutPositions` as document ids (row -> :class:`~r2med.evaluation.ties.CutTie`).  An id the corpus
    repeats (BM25 indexes every copy) is named once, and counted once among the recorded."""
    out = {}
    for r, (pos, total) in cut.items():
        ids = tuple(dict.fromkeys(doc_ids[p] for p in pos.tolist()))
        out[r] = CutTie(ids, total - (len(pos) - len(ids)))
    return out


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
