"""BM25 over sharded indexes whose scores equal the unsharded index's.

Building is two passes over contiguous shards (each pass a Ray task per shard with ``ray=True``):

1. **analyse** -- each shard turns its texts into term ids in a shard-local vocabulary and
   reports that vocabulary, its document frequencies and its total length;
2. the driver merges the collection-wide statistics: one vocabulary in first-seen corpus order
   (the order the unsharded index assigns term ids), document frequencies, N and the average
   document length, hence the idf;
3. **weigh** -- each shard maps its term ids to the global ones and computes
   ``idf_t * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` with those global statistics.

Every shard's weights are therefore bit-for-bit the unsharded weights of its documents, a query
vector is built once with the global statistics, and each shard's top-k (ties by corpus order)
merges into the global top-k.  With Ray, shard matrices stay in the object store where they were
built and search tasks run next to them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from ..data.exclusions import Exclusions
from ..errors import R2MedError
from ..evaluation.tie_data import CutTie
from ..infra.json_shapes import json_object
from ..infra.json_types import JsonObject
from ..retrieval.analyzer import encode_corpus, get_analyzer
from ..retrieval.base import BaseRetriever, QueryText, as_text
from ..retrieval.bm25 import (
    BM25,
    SCORE_BLOCK,
    excluded_cells,
    inverse_document_frequency,
    term_counts,
    term_weights,
)
from ..retrieval.topk import CutPositions, cut_ties_of, mask_cells, merge_top_k_cut, top_k_rows_cut
from ..runs.run import Run
from .cluster import LOCAL, ObjectRef, connect, map_tasks, remote_ref_pairs, remote_refs, require_ray
from .shards import Shard, plan_shards, to_run

log = logging.getLogger(__name__)

# -- per-shard work (plain functions, so they run the same in-process or as Ray tasks) -----------


def analyse_shard(
    texts: Sequence[str], analyzer: str
) -> tuple[tuple[list[str], np.ndarray, int, int], tuple[np.ndarray, np.ndarray]]:
    """Pass 1: ((local vocab, local df, total length, n docs), (local term ids, lengths)); a large shard is cut
    into chunks by Arrow when pyarrow is installed (:func:`r2med.retrieval.analyzer.encode_corpus`, one core: a
    task's share), with the same result."""
    vocab, ids, lengths = encode_corpus(get_analyzer(analyzer), texts, workers=1)
    df = np.diff(term_counts(ids, lengths, len(vocab)).indptr).astype(np.int64)
    return (vocab, df, int(lengths.sum()), len(lengths)), (ids, lengths)


def weigh_shard(
    encoded: tuple[np.ndarray, np.ndarray], mapping: np.ndarray, idf: np.ndarray, avgdl: float, k1: float, b: float
) -> sp.csr_matrix:
    """Pass 2: the shard's (global terms x shard docs) BM25 weight matrix, as the unsharded index computes it."""
    ids, lengths = encoded
    counts = term_counts(mapping[ids] if len(ids) else ids, lengths, len(idf))
    return term_weights(counts, lengths, idf, avgdl, k1, b)


def search_bm25_shard(
    weights_t: sp.csr_matrix,
    query_vectors: sp.csr_matrix,
    k: int,
    offset: int,
    cells: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    """Top ``k`` of one shard for every query: (global positions, float32 scores, what the shard's cut dropped
    while tied with each query's last document: :data:`~r2med.retrieval.topk.CutPositions`).  ``cells``: the
    excluded (query row, global document position) pairs (:meth:`r2med.data.exclusions.Exclusions.cells`), set to
    ``-inf`` in the shard's scores before its top ``k`` is kept."""
    n_docs = weights_t.shape[1]
    step = max(1, SCORE_BLOCK // max(n_docs, 1))  # the unsharded search's block
    parts = []
    cut: CutPositions = {}
    for start in range(0, query_vectors.shape[0], step):
        scores = (query_vectors[start : start + step] @ weights_t).toarray()
        if cells is not None:
            mask_cells(scores, cells[0], cells[1], row_offset=start, col_offset=offset)
        positions, values, block_cut = top_k_rows_cut(scores, k, offset)
        parts.append((positions, values))
        cut.update((start + r, dropped) for r, dropped in block_cut.items())
    return np.concatenate([p for p, _ in parts]), np.concatenate([s for _, s in parts]), cut


# -- the retriever --------------------------------------------------------------------------------


class ShardedBM25(BaseRetriever):
    """BM25 split over ``shards`` index shards, run in-process or (``ray=True``, or a Ray address)
    as Ray tasks.

    ``ShardedBM25(shards=8, ray=True).index(corpus).search(queries, k=100)`` returns the same
    top-k and scores as ``BM25().index(corpus).search(queries, k=100)`` (ties by corpus order).
    """

    family = "lexical"
    #: ``index`` takes ``repeats`` as :class:`~r2med.retrieval.bm25.BM25` does (the corpus read as a list)
    indexes_repeats = True

    def __init__(
        self,
        k1: float | None = None,
        b: float | None = None,
        flavour: str = "paper",
        analyzer: str | None = None,
        shards: int = 4,
        shard_size: int | None = None,
        ray: bool | str = False,
        resources: dict[str, float] | None = None,
    ):
        # The head holds the collection-wide statistics and builds query vectors; it has no weights.  It parses
        # the options (None: BM25's default)
        self.head = BM25(k1=k1, b=b, flavour=flavour, analyzer=analyzer, cache=False)
        self.name = f"{self.head.name}-sharded"
        self.analyzer_name = self.head.options.analyzer
        self.n_shards, self.shard_size = shards, shard_size
        self.ray = ray
        self.resources = resources
        #: what the last :meth:`search` cut dropped while tied with each query's last document (query id -> tie)
        self.cut_ties: dict[str, CutTie] = {}
        self.plan: list[Shard] = []
        self.doc_ids: list[str] = []
        self.shards: list[sp.csr_matrix | ObjectRef] = []  # csr matrices, or Ray ObjectRefs to them
        self.timing: dict[str, float] = {}

    def config(self) -> JsonObject:
        return {
            **self.head.config(),
            "options": json_object(self.head.options.record()),
            "retriever": self.name,
            "shards": len(self.plan) or self.n_shards,
        }

    @property
    def stats(self) -> dict[str, int | float]:
        return {"n_docs": len(self.doc_ids), "n_terms": len(self.head.vocab), "avgdl": self.head.avgdl}

    def index(
        self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None, repeats: Sequence[str] = ()
    ) -> ShardedBM25:
        """Index ``corpus``; ``repeats`` (the file's other copies of repeated ids) count in the statistics
        only, as in :meth:`r2med.retrieval.bm25.BM25.index`: analysed after the shards, never searched."""
        if not corpus:
            raise R2MedError("cannot index an empty corpus")
        t0 = time.perf_counter()
        self.doc_ids = list(corpus)
        texts = list(corpus.values())
        self.plan = plan_shards(len(texts), self.n_shards, self.shard_size)
        args = [(texts[s.start : s.stop], self.analyzer_name) for s in self.plan]
        encoded: list[tuple[np.ndarray, np.ndarray]] = []
        encoded_refs: list[ObjectRef] = []  # with Ray: each stays in the object store, next to its shard
        if self.ray:
            connect(self.ray if isinstance(self.ray, str) else LOCAL)
            ray = require_ray()
            pairs = remote_ref_pairs(analyse_shard, args, resources=self.resources)
            stats: list[tuple[list[str], np.ndarray, int, int]] = ray.get([p[0] for p in pairs])
            encoded_refs = [p[1] for p in pairs]
        else:
            results = map_tasks(analyse_shard, args)
            stats, encoded = [r[0] for r in results], [r[1] for r in results]
        if repeats:  # after the corpus: their new terms take ids after its terms, as unsharded
            stats = [*stats, analyse_shard(list(repeats), self.analyzer_name)[0]]
        t1 = time.perf_counter()
        mappings, idf, avgdl = self._merge_statistics(stats)
        mappings = mappings[: len(self.plan)]  # the repeats' statistics are merged; they have no shard
        t2 = time.perf_counter()
        head = self.head
        if self.ray:
            ray = require_ray()
            idf_ref = ray.put(idf)
            self.shards = remote_refs(
                weigh_shard,
                [(e, m, idf_ref, avgdl, head.k1, head.b) for e, m in zip(encoded_refs, mappings)],
                resources=self.resources,
            )
            ray.wait(self.shards, num_returns=len(self.shards))
        else:
            self.shards = [weigh_shard(e, m, idf, avgdl, head.k1, head.b) for e, m in zip(encoded, mappings)]
        self.timing = {"analyse_s": t1 - t0, "merge_s": t2 - t1, "weigh_s": time.perf_counter() - t2}
        log.info(
            "sharded BM25: %d docs in %d shards, %d terms (%.2fs)",
            len(texts),
            len(self.plan),
            len(idf),
            time.perf_counter() - t0,
        )
        return self

    def _merge_statistics(
        self, stats: Sequence[tuple[list[str], np.ndarray, int, int]]
    ) -> tuple[list[np.ndarray], np.ndarray, float]:
        vocab: dict[str, int] = {}
        mappings = []
        for local_vocab, _, _, _ in stats:  # first-seen order over contiguous shards = the unsharded order
            mappings.append(
                np.fromiter(
                    (vocab.setdefault(t, len(vocab)) for t in local_vocab), dtype=np.int32, count=len(local_vocab)
                )
            )
        df = np.zeros(len(vocab), dtype=np.int64)
        for mapping, (_, local_df, _, _) in zip(mappings, stats):
            np.add.at(df, mapping, local_df)
        n_docs = sum(s[3] for s in stats)
        total_length = sum(s[2] for s in stats)
        avgdl = float(total_length) / n_docs
        idf = inverse_document_frequency(df, n_docs)
        head = self.head
        head.vocab = vocab
        head.idf, head.avgdl, head.doc_ids = idf, avgdl, self.doc_ids
        return mappings, idf, avgdl

    #: ``search`` takes ``exclusions`` and removes them before the cut, in every shard
    excludes = True

    def search(self, queries: Mapping[str, QueryText], k: int = 100, exclusions: Exclusions | None = None) -> Run:
        """Global top-``k`` per query: per-shard top-``k`` merged (ties by corpus order).  ``exclusions``: each
        shard sets its excluded documents to ``-inf`` before its cut, and none is returned (the unsharded rule).
        :attr:`cut_ties`: what the cut dropped while tied with each query's last document, as the unsharded
        :class:`~r2med.retrieval.bm25.BM25` says it."""
        if not self.shards:
            raise R2MedError("ShardedBM25.search() called before index()")
        qids = list(queries)
        qv = self.head.query_vectors([as_text(queries[q]) for q in qids])
        cells = excluded_cells(exclusions, qids, self.doc_ids) if exclusions else None
        if self.ray:
            ray = require_ray()
            qv_ref = ray.put(qv)
            cells_ref = ray.put(cells) if cells is not None else None
            parts = map_tasks(
                search_bm25_shard,
                [(w, qv_ref, k, s.start, cells_ref) for w, s in zip(self.shards, self.plan)],
                use_ray=True,
                resources=self.resources,
            )
        else:
            parts = [search_bm25_shard(w, qv, k, s.start, cells) for w, s in zip(self.shards, self.plan)]
        positions, scores, cut = merge_top_k_cut(parts, k)
        self.cut_ties = {qids[r]: tie for r, tie in cut_ties_of(cut, self.doc_ids).items()}
        return to_run(qids, self.doc_ids, positions, scores)
