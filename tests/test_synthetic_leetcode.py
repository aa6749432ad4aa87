"""A smoke test of benchmarks/synthetic.py's ``leetcode_like`` (BRIGHT LeetCode's shape) at a small size.

References: the shape's published figures (LeetCode's 1-5 gold documents, 9-1,119 excluded per query, 75-103,665
characters a document: mteb's descriptive statistics and the real examples) and the log-normal's own identity
(mean = exp(mu + sigma^2 / 2)).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import synthetic


def test_leetcode_shape_small():
    corpus = synthetic.leetcode_like(n_docs=3000, n_queries=12, vocab_size=1500, seed=3)
    assert len(corpus.docs) == 3000 and len(corpus.queries) == 12
    lengths = [len(t) for t in corpus.docs.values()]
    # lengths are drawn in characters and made words: the real bounds hold up to a word length
    assert min(lengths) >= 75 // 2 and max(lengths) <= 103_665 * 1.2
    assert 0.6 * 1058.5 < sum(lengths) / len(lengths) < 1.5 * 1058.5
    for qid, gold in corpus.qrels.items():
        excluded = corpus.excluded[qid]
        assert 1 <= len(gold) <= 5
        assert 9 <= len(excluded) <= 1119
        assert not set(gold) & set(excluded)
        assert set(gold) | set(excluded) <= corpus.docs.keys()
    again = synthetic.leetcode_like(n_docs=3000, n_queries=12, vocab_size=1500, seed=3)
    assert again == corpus


def test_lognormal_fit_keeps_the_mean():
    mu, sigma = synthetic._lognormal_for(1058.5, 103_665, 413_932)
    assert math.isclose(math.exp(mu + sigma * sigma / 2), 1058.5, rel_tol=1e-9)
    assert 0.5 < sigma < 2.0
