"""The excluded (query, document) pairs of one search as numpy index arrays: what a top-k search sets to ``-inf``
before its cut (:func:`r2med.retrieval.topk.mask_cells`).

Apart from :mod:`.exclusions` (pure Python, loaded with every collection and so when the command line starts) so
that numpy is imported by the searches that need it, not by ``r2med --help``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .exclusions import Exclusions


def excluded_cells(
    exclusions: Exclusions, qids: Sequence[str], doc_index: Mapping[str, int], identical: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the pairs ``exclusions`` excludes among the queries ``qids`` (row = position in ``qids``)
    and the documents of ``doc_index`` (document id -> column), as int64 arrays sorted by row; ids the corpus does
    not hold are skipped.  ``identical``: also each query's own id where it is a document's (BEIR's
    ``ignore_identical_ids``)."""
    rows: list[int] = []
    cols: list[int] = []
    for row, qid in enumerate(qids):
        found = {doc_index[d] for d in exclusions.by_query.get(qid, ()) if d in doc_index}
        if identical and qid in doc_index:
            found.add(doc_index[qid])
        rows += [row] * len(found)
        cols += sorted(found)
    return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
