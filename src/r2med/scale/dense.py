"""Exact dense search over embedding shards, merged into a global top-k.

Each shard is searched exactly (chunked ``Q @ D.T``, a top-k per chunk whose ties -- also at
the cut-off -- go to the lower corpus position), positions are global, and
:func:`r2med.retrieval.topk.merge_top_k` merges the per-shard lists with the same tie rule, so the
result equals one exact search over the whole matrix whatever the sharding.  With ``ray=True`` each
shard is one Ray task that reads its shard from the store (a memory map on a shared path, or the
object store for in-memory arrays), so only the small per-shard top-k lists travel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..data.exclusion_cells import excluded_cells
from ..data.exclusions import NO_EXCLUSIONS, Exclusions
from ..errors import R2MedError
from ..evaluation.tie_data import CutTie
from ..retrieval.dense import exact_top_k_cut
from ..retrieval.topk import CutPositions, cut_ties_of, merge_top_k_cut
from ..runs.run import Run
from .cluster import LOCAL, connect, map_tasks
from .encode import load_shards
from .store import ShardStore

#: a shard of embeddings: an array (in memory, or resolved from Ray's object store), or ``(store location, index)``
ShardSource = np.ndarray | tuple[str, int]


def search_dense_shard(
    queries: np.ndarray,
    shard: ShardSource,
    offset: int,
    k: int,
    exclude: np.ndarray | None,
    chunk: int = 65536,
    cells: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    """Top ``k`` of one shard: (global positions, scores, what its cut dropped while tied with each query's last
    document: :data:`~r2med.retrieval.topk.CutPositions`); ``shard`` is an array or ``(store location, index)``.

    The shard (possibly a memory map) is searched exactly (:func:`r2med.retrieval.dense.exact_top_k`);
    ``exclude`` and ``cells`` (the excluded (query row, document) pairs: :meth:`r2med.data.exclusions.Exclusions.cells`)
    hold global positions, and an excluded doc sorts after every other in the merge.
    """
    if isinstance(shard, tuple):
        location, index = shard
        shard = ShardStore(location).read_shard(index, mmap=True)
    local = None
    if exclude is not None:
        local = np.where((exclude >= offset) & (exclude < offset + len(shard)), exclude - offset, -1)
    local_cells = None
    if cells is not None:
        inside = (cells[1] >= offset) & (cells[1] < offset + len(shard))
        local_cells = (cells[0][inside], cells[1][inside] - offset)
    scores, positions, cut = exact_top_k_cut(
        queries, shard, k, exclude=local, chunk=chunk, device="cpu", cells=local_cells
    )
    shifted = {r: (dropped + offset, total) for r, (dropped, total) in cut.items()}
    return np.where(positions < 0, np.iinfo(np.int64).max, positions + offset), scores, shifted


class ShardedDenseIndex:
    """Embedding shards (arrays, or a store written by :func:`r2med.scale.encode.encode_distributed`)."""

    def __init__(
        self, doc_ids: Sequence[str], shards: Sequence[ShardSource], sizes: Sequence[int], location: str | None = None
    ):
        if sum(sizes) != len(doc_ids):
            raise R2MedError(f"{len(doc_ids)} doc ids but {sum(sizes)} embeddings in the shards")
        self.doc_ids = list(doc_ids)
        self.shards = list(shards)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist()
        self.location = location
        #: what the last :meth:`search` cut dropped while tied with each query's last document (as the unsharded
        #: exact search says it: query id -> :class:`~r2med.evaluation.ties.CutTie`)
        self.cut_ties: dict[str, CutTie] = {}

    @classmethod
    def from_arrays(cls, doc_ids: Sequence[str], shards: Sequence[np.ndarray]) -> ShardedDenseIndex:
        """public: an index over embeddings held in memory (one array per shard, rows in ``doc_ids`` order)."""
        return cls(doc_ids, shards, [len(s) for s in shards])

    @classmethod
    def from_store(cls, location: str) -> ShardedDenseIndex:
        doc_ids, arrays = load_shards(location)
        return cls(doc_ids, [(location, i) for i in range(len(arrays))], [len(a) for a in arrays], location)

    def search(
        self,
        queries: np.ndarray,
        qids: Sequence[str],
        k: int = 100,
        ignore_identical_ids: bool = True,
        ray: bool | str = False,
        exclusions: Exclusions | None = None,
    ) -> Run:
        """Global top-``k`` per query embedding row (``qids`` name the rows); ``ray``: True or an address.
        ``exclusions``: each query's excluded documents are removed inside every shard's search, before its cut."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        cells = None
        if ignore_identical_ids or exclusions:
            pos = {d: i for i, d in enumerate(self.doc_ids)}
            cells = excluded_cells(exclusions or NO_EXCLUSIONS, list(qids), pos, identical=ignore_identical_ids)
        shards = self.shards
        if ray:
            ray_mod = connect(ray if isinstance(ray, str) else LOCAL)
            q_ref = ray_mod.put(queries)
            cells_ref = ray_mod.put(cells) if cells is not None else None
            shards = [ray_mod.put(s) if isinstance(s, np.ndarray) else s for s in shards]
            parts = map_tasks(
                search_dense_shard,
                [(q_ref, s, o, k, None, 65536, cells_ref) for s, o in zip(shards, self.offsets)],
                use_ray=True,
            )
        else:
            parts = [search_dense_shard(queries, s, o, k, None, cells=cells) for s, o in zip(shards, self.offsets)]
        positions, scores, cut = merge_top_k_cut(parts, k)
        self.cut_ties = {qids[r]: tie for r, tie in cut_ties_of(cut, self.doc_ids).items()}
        n = len(self.doc_ids)
        return {
            qid: {self.doc_ids[p]: float(s) for p, s in zip(positions[r].tolist(), scores[r].tolist()) if p < n}
            for r, qid in enumerate(qids)
        }
