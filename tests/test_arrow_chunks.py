"""The Arrow chunk path of the BM25 analyzer (``arrow_chunks``, used by ``encode_corpus`` when pyarrow is installed).

Reference: ``EnglishAnalyzer.encode``, the pure-Python path (``str.split`` into chunks, each analysed once), itself
tested against ``tokenize`` and Lucene's recorded tokens in test_text.py; the Arrow path must give exactly its
(vocabulary in first-use order, term ids, lengths) on any text, whatever the batching and the threads.  Also the
probe that refuses an Arrow whose split would cut inside a token, and ShardedBM25 on shards large enough to take the
Arrow path against the unsharded BM25.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from r2med.errors import MissingExtraError
from r2med.retrieval import analyzer as analyzer_module
from r2med.retrieval.analyzer import EnglishAnalyzer, _terms_from_parts, arrow_chunks, encode_corpus

pytest.importorskip("pyarrow")

HOSTILE = [
    "",
    " ",
    "   leading and trailing runs   ",
    "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeeds",
    "information separators\x1cfile\x1dgroup\x1erecord\x1funit",  # str.split cuts here, Arrow's ASCII split does not
    "no-break\u00a0space and\u2007figure\u202fnarrow spaces",
    "ideographic\u3000space 日本\u3000語 abc日本 narrow\u202fno-break",  # U+202F joins words: never a cut
    "line\u2028separator paragraph\u2029separator next\u0085line ogham\u1680mark em\u2003space",
    "zero\u200bwidth joiner\u200dand BOM\ufeffinside",
    "U.S.A. e.g. 3.5mg covid-19 1,000.50 don't IL-6/IL-10 doctors' o'neil x:y 2:3",
    "Œdema naïve résumé café 100% α-synuclein β2 İstanbul ΣΑΣ ﬁne",
    "Herbalife® ™ x² ½ ① 😀 emoji😀glued",
    "the and of a an is",  # stop words only
    "",
    "word " * 20_000 + "tail",  # a very long text
    "x" * 5000 + " " + "y.z" * 2000,  # a very long token
]

SURROGATE = "a lone surrogate \ud800 between words, glued\udfffinside"  # JSON allows "\ud800": UTF-8 cannot encode it


def _plain(texts):
    return EnglishAnalyzer().encode(texts)


def _equal(got, want):
    vocab, ids, lengths = got
    assert vocab == want[0]
    assert ids.dtype == want[1].dtype and ids.tolist() == want[1].tolist()
    assert lengths.dtype == want[2].dtype and lengths.tolist() == want[2].tolist()


def _arrow(texts, batch, threads):
    """arrow_chunks + the shared analysis, as encode_corpus does, with a chosen batch size."""
    analyzer = EnglishAnalyzer()
    chunks, parts, lengths = arrow_chunks(texts, threads=threads, batch=batch)
    return _terms_from_parts(analyzer.analyse_chunks(chunks), parts, lengths)


@pytest.mark.parametrize("batch", [1, 2, 3, 7, 8192])
@pytest.mark.parametrize("threads", [1, 2])
def test_arrow_chunks_equal_the_plain_encode_on_hostile_texts(batch, threads):
    texts = HOSTILE * 2 + [t.upper() for t in HOSTILE[:12]]
    _equal(_arrow(texts, batch, threads), _plain(texts))


@pytest.mark.parametrize("batch", [1, 4, 100])
def test_a_batch_with_a_lone_surrogate_is_cut_by_python(batch):
    texts = HOSTILE[:8] + [SURROGATE] + HOSTILE[8:12]
    with pytest.raises(UnicodeEncodeError):
        SURROGATE.encode("utf-8")
    _equal(_arrow(texts, batch, threads=2), _plain(texts))


@pytest.mark.parametrize("workers", [1, 2])
def test_encode_corpus_takes_the_arrow_path_and_equals_encode(workers, monkeypatch):
    """encode_corpus itself, large enough to take the Arrow path (min_parallel=1), forked analysis included."""
    calls = []
    real = analyzer_module.arrow_chunks
    monkeypatch.setattr(analyzer_module, "arrow_chunks", lambda *a, **k: calls.append(1) or real(*a, **k))
    rng = random.Random(5)
    texts = [" ".join(rng.choice(HOSTILE[2:13]).split(" ")[: rng.randint(0, 12)]) for _ in range(300)]
    texts += HOSTILE
    got = encode_corpus(EnglishAnalyzer(), texts, workers=workers, min_parallel=1)
    assert calls == [1]
    _equal(got, _plain(texts))
    # the forked-process path without Arrow gives the same too
    _equal(encode_corpus(EnglishAnalyzer(), texts, workers=2, min_parallel=1, arrow=False), _plain(texts))


def test_arrow_equals_encode_on_random_text():
    """Any text over an alphabet of every kind of whitespace, joiner, CJK, emoji and case trap, in small batches."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    alphabet = (
        "abcXYZ019_ .:,;'\u2019-/()\t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u1680\u2003\u2028\u3000\u202f"
        "éÅßİΣσςﬁ²½①日本\u00ae\u2122\u2139\U0001f600\u0301\u200b"
    )

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.text(alphabet=alphabet, max_size=40), min_size=1, max_size=8), st.integers(1, 4))
    def check(texts, batch):
        _equal(_arrow(texts, batch, threads=2), _plain(texts))

    check()


def test_a_split_that_would_cut_a_token_is_refused(monkeypatch):
    """The probe: an Arrow whose whitespace split also cut at U+202F (which joins words, as Lucene's tokenizer
    takes it) is not used."""
    import pyarrow.compute as pc

    monkeypatch.setattr(analyzer_module, "_ARROW", [])
    assert analyzer_module._arrow_compute() is pc  # today's Arrow passes
    monkeypatch.setattr(analyzer_module, "_ARROW", [])
    monkeypatch.setattr(pc, "ascii_split_whitespace", pc.utf8_split_whitespace)  # cuts at U+202F too
    assert analyzer_module._arrow_compute() is None
    # refused: encode_corpus falls back to Python's cut, and asking for Arrow is a clear error
    texts = ["narrow\u202fspace", "x y"] * 3
    _equal(encode_corpus(EnglishAnalyzer(), texts, workers=1, min_parallel=1), _plain(texts))
    with pytest.raises(MissingExtraError):
        encode_corpus(EnglishAnalyzer(), texts, workers=1, min_parallel=1, arrow=True)


def test_sharded_bm25_on_arrow_sized_shards_equals_bm25(monkeypatch):
    """ShardedBM25's shards take the Arrow path from 20,000 documents on: the index and the run with exclusions
    are still exactly the unsharded BM25's (which takes it too on the whole corpus: checked against encode)."""
    from r2med import BM25
    from r2med.data.exclusions import Exclusions
    from r2med.scale import ShardedBM25

    calls = []
    real = analyzer_module.arrow_chunks
    monkeypatch.setattr(analyzer_module, "arrow_chunks", lambda *a, **k: calls.append(len(a[0])) or real(*a, **k))
    rng = random.Random(11)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()
    corpus = {
        f"d{i}": " ".join(rng.choices(words, k=rng.randint(1, 9))) + rng.choice(["", " 日本\u3000語", "\u00a0x"])
        for i in range(40_002)
    }
    queries = {f"q{i}": " ".join(rng.choices(words, k=4)) for i in range(12)}
    exclusions = Exclusions.of({q: rng.sample(list(corpus), 50) for q in queries})
    ref = BM25(cache=False, workers=1).index(corpus)
    assert calls == [40_002]
    want_terms = EnglishAnalyzer().encode(list(corpus.values()))[0]
    assert list(ref.vocab) == want_terms
    sharded = ShardedBM25(shards=2).index(corpus)
    assert calls == [40_002, 20_001, 20_001]
    assert list(sharded.head.vocab) == list(ref.vocab)
    np.testing.assert_array_equal(sharded.head.idf, ref.idf)
    want = ref.search(queries, k=1000, exclusions=exclusions)
    got = sharded.search(queries, k=1000, exclusions=exclusions)
    assert {q: list(d.items()) for q, d in got.items()} == {q: list(d.items()) for q, d in want.items()}
