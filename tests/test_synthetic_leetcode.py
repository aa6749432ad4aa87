"""A smoke test of benchmarks/synthetic.py's ``leetcode_like`` (BRIGHT LeetCode's shape) at a small size.

References: the shape's published figures (LeetCode's 1-5 gold documents, 9-1,119 excluded per query, 75-103,665
characters a document: mteb's descriptive statistics and the real examples) and the log-normal's own identity
(mean = exp(mu + sigma^2 / 2)).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

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


def test_leetcode_counts_are_the_real_examples():
    """Per-query counts from the shared real examples: the README's totals (142 queries, 262 gold ids, 33,485
    excluded ids) and the 9-1,119 range of excluded documents per query (mteb's statistics)."""
    if not synthetic.LEETCODE_EXAMPLES.exists():
        pytest.skip("../shared/data/bright is not available")
    gold, excluded = synthetic.leetcode_counts()
    assert (len(gold), sum(gold), sum(excluded)) == (142, 262, 33_485)
    assert (min(excluded), max(excluded)) == (9, 1119)
    corpus = synthetic.leetcode_like(
        n_docs=5000, n_queries=20, vocab_size=1500, gold_counts=gold, excluded_counts=excluded
    )
    assert [len(corpus.qrels[q]) for q in corpus.queries] == gold[:20]
    assert [len(corpus.excluded[q]) for q in corpus.queries] == excluded[:20]


def test_write_bright_hub_is_read_by_the_bright_loader_offline(hf_cache):
    """The benchmark's hub files, laid in a Hugging Face cache, load as bright:leetcode offline at the pinned
    commit (r2med's BRIGHT loader, data/bright.py): the same documents, queries, judgments and exclusions."""
    pytest.importorskip("pyarrow")
    from r2med.data import bright

    corpus = synthetic.leetcode_like(n_docs=400, n_queries=6, vocab_size=800, seed=4)
    synthetic.write_bright_hub(hf_cache, corpus)
    loaded = bright.load("bright:leetcode")
    assert loaded.revision == synthetic.BRIGHT_PIN
    assert loaded.corpus == corpus.docs
    assert loaded.queries == corpus.queries
    assert loaded.qrels == corpus.qrels
    for qid, ids in corpus.excluded.items():
        assert loaded.exclusions.get(qid) == frozenset(ids)
