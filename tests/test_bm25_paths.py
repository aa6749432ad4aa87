"""BM25's fast paths give the same scores as the plain ones: threaded and batched search, the forked
two-process index build."""

from __future__ import annotations

import numpy as np
import pytest

from r2med import BM25


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(3000)] + ["the", "of", "il-6", "e.g.", "covid-19", "don't"]
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    lengths = rng.integers(1, 60, size=25_000)
    tokens = rng.choice(words, size=int(lengths.sum()) + 120 * 20, p=p).tolist()  # one draw, cut into texts
    ends = np.cumsum(lengths).tolist()
    docs = {f"d{i}": " ".join(tokens[a:b]) for i, (a, b) in enumerate(zip([0, *ends[:-1]], ends))}
    docs["empty"] = ""
    queries = {f"q{i}": " ".join(tokens[ends[-1] + 20 * i : ends[-1] + 20 * (i + 1)]) for i in range(120)}
    return docs, queries


@pytest.mark.parametrize("flavour", ["paper", "standard"])
def test_threaded_and_batched_search_equal_one_batch(corpus, flavour):
    docs, queries = corpus
    serial = BM25(flavour=flavour, cache=False, workers=1).index(docs)
    threaded = BM25(flavour=flavour, cache=False, workers=4).index(docs)  # also the forked build
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(serial.weights_t, name), getattr(threaded.weights_t, name))
    one = serial.search(queries, k=50, batch_size=10_000)
    assert threaded.search(queries, k=50) == one  # 4 threads (120 queries x 25K docs)
    assert serial.search(queries, k=50, batch_size=7) == one
    # the reference: the dense score matrix, ranked by score then corpus order
    scores = serial.score_matrix(list(queries.values()))
    doc_ids = list(docs)
    for row, qid in enumerate(queries):
        order = np.lexsort((np.arange(len(doc_ids)), -scores[row]))[:50]
        assert list(one[qid]) == [doc_ids[i] for i in order]
        assert list(one[qid].values()) == [float(scores[row, i]) for i in order]
