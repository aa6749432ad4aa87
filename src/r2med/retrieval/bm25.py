"""BM25 in two flavours over a sparse term-weight matrix, with self-describing index folders.

* ``paper`` (registered as ``bm25``): the R2MED paper's scoring (BRIGHT's code: gensim
  ``LuceneBM25Model`` + ``SparseMatrixSimilarity``).  Documents AND the query are passed
  through the BM25 model, so a query term contributes
  ``idf * qtf / (qtf + k1 * (1 - b + b * |q| / avgdl))`` times its document weight.
* ``standard`` (registered as ``bm25-standard``): textbook Lucene BM25, where a query term
  contributes its count times the document weight (what bm25s ``method="lucene"`` computes).

Both share one document matrix ``W[d, t] = idf_t * tf / (tf + k1 * (1 - b + b * dl / avgdl))``
with ``idf_t = ln((N + 1) / (df_t + 0.5))``, so one index serves both.  The index is keyed by
(corpus fingerprint, analyzer, k1, b), saved under the r2med home and reused; every file of it has
a CRC-32 in ``params.json``, and ``params.json`` itself (``avgdl``, ``k1``, ``b``, the analyzer, the sizes:
everything else that shapes scores) carries a CRC-32 of its other fields; all are checked on load (about
15 ms for 61K docs), and a damaged index is rebuilt.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import mmap
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import numpy as np
import orjson
import scipy.sparse as sp

from ..data import exclusion_cells
from ..data.exclusions import Exclusions
from ..errors import OptionError, R2MedError
from ..evaluation.tie_data import CutTie
from ..infra import progress
from ..infra.home import atomic_dir, cache_dir, fingerprint, fingerprint_texts, read_json
from ..infra.input_files import open_regular
from ..infra.json_types import JsonObject, JsonValue
from ..protocol import models
from ..runs.run import Run
from ..typed.lexical_choices import Bm25Flavour
from ..typed.options import Bm25Options
from ..typed.parse import Origin, RetrieverOptions, parse
from .analyzer import Analyzer, available_cores, encode_corpus, get_analyzer
from .base import BaseRetriever, QueryText, as_text
from .family_settings import settings_for
from .registry import RetrieverFactory, RetrieverMeta, options_as, register_retriever
from .topk import cut_ties_of, mask_cells, top_k_rows_cut

log = logging.getLogger(__name__)

FLAVOURS: tuple[Bm25Flavour, ...] = tuple(Bm25Flavour)
INDEX_FORMAT = 3  # 2: CRC-32 of every file in params.json; 3: and of params.json's own fields (params_crc32)
#: The key of params.json that holds the CRC-32 of its other fields (:func:`_params_checksum`).
PARAMS_CHECKSUM = "params_crc32"
_ARRAYS = ("indptr", "indices", "data", "idf")
_LISTS = ("vocab", "doc_ids")
#: Scores per block of a search (queries x documents, float32: 16 MB).  A block's sparse product comes out dense
#: (a long query matches nearly every document), so smaller blocks page in less at once: at BRIGHT LeetCode's
#: 413,932 documents (synthetic, 142 queries, exclusions), 10 queries a block searched in 3.15-3.24 s wall and
#: 4.6-5.6 CPU s against 81 a block (1 << 25) in 3.50-3.66 s and 6.5 CPU s, identical runs (docs/scaling.md).
SCORE_BLOCK = 1 << 22
#: A corpus at least this large shows the steps of building its index (:mod:`r2med.infra.progress`); a smaller one
#: builds in about a second (61K docs: ~3 s on 2 cores).
PROGRESS_MIN_DOCS = 20_000


class _Steps(Protocol):
    """What an index build reports its steps to (a progress display's task, or :class:`_NoSteps`)."""

    def advance(self, n: int = 1, /) -> None: ...

    def describe(self, text: str, /) -> None: ...


class _NoSteps:
    """What a small corpus's index build reports its steps to: nothing."""

    def advance(self, n: int = 1) -> None:
        pass

    def describe(self, text: str) -> None:
        pass


class IndexDamaged(ValueError):
    """A cached index whose files do not match the checksums written with them."""


class BM25(BaseRetriever):
    """BM25 retriever.  ``BM25(k1=0.9, b=0.4, flavour="paper").index(corpus).search(queries, k=100)``.

    Its options are :class:`~r2med.typed.options.Bm25Options` (which holds their one default): ``options`` as
    parsed (what the registry's factory passes), or ``k1``, ``b``, ``analyzer`` and ``cache`` as keywords, parsed
    here (None: not set; a NaN, a text or a bool k1 is the same typed error as on the command line)."""

    family = "lexical"

    def __init__(
        self,
        k1: float | None = None,
        b: float | None = None,
        flavour: str = Bm25Flavour.PAPER,
        analyzer: str | Analyzer | None = None,
        cache: bool = True,
        workers: int | None = None,
        *,
        options: Bm25Options | None = None,
    ):
        if flavour not in FLAVOURS:
            raise OptionError(f"unknown BM25 flavour {flavour!r}; choose from {tuple(f.value for f in FLAVOURS)}")
        if options is None:  # keywords from Python: their one parse
            given = {"k1": k1, "b": b, "cache": cache, "analyzer": analyzer if isinstance(analyzer, str) else None}
            options = parse(Bm25Options, given, Origin.python("BM25()"))
        elif k1 is not None or b is not None or analyzer is not None or not cache:
            raise OptionError("BM25(): pass the options as one Bm25Options or as keywords, not both")
        self.options = options
        self.k1, self.b, self.flavour = options.k1, options.b, Bm25Flavour(flavour)
        self.analyzer = get_analyzer(options.analyzer) if analyzer is None or isinstance(analyzer, str) else analyzer
        self.cache = options.cache
        self.workers = workers
        self.name = "bm25" if flavour == "paper" else "bm25-standard"
        self.doc_ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self.idf = np.zeros(0, dtype=np.float64)
        self.avgdl = 0.0
        self.weights_t: sp.csr_matrix | None = None  # terms x docs, float32
        self.index_path: Path | None = None
        self.built_from_cache = False
        #: what the last :meth:`search` cut dropped while tied with each query's last document (query id ->
        #: :class:`~r2med.evaluation.ties.CutTie`; queries without such documents absent)
        self.cut_ties: dict[str, CutTie] | None = None
        #: whose settings ran when a family defines its own for this BM25 (BRIGHT's ``bm25`` on a BRIGHT task:
        #: the same k1, b and analyzer): ``config["settings"]``; None: nothing to record
        self.settings_record: JsonObject | None = None

    # -- configuration ---------------------------------------------------------------------------
    def config(self) -> JsonObject:
        """What it computed beside its options (``self.options``, which a run records as ``config.options``: k1
        and b are recorded there, once): its flavour, the analyzer's own record, whose settings ran."""
        return {
            "retriever": self.name,
            "flavour": self.flavour,
            "analyzer": self.analyzer.config(),
            **({"settings": self.settings_record} if self.settings_record is not None else {}),
        }

    def index_key(self, corpus_fingerprint: str) -> str:
        return fingerprint("bm25-index", INDEX_FORMAT, corpus_fingerprint, self.analyzer.config(), self.k1, self.b)

    # -- indexing --------------------------------------------------------------------------------
    #: ``index`` takes ``repeats``: the corpus is read as a list, as the paper's BM25 script reads it.
    indexes_repeats = True

    def index(
        self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None, repeats: Sequence[str] = ()
    ) -> BM25:
        """Build (or load from the r2med home) the index of ``corpus`` (doc id -> text).

        ``repeats`` are the texts of the corpus file's other copies of repeated ids
        (:attr:`r2med.data.Collection.corpus_repeats`): they count in the collection's statistics (N,
        document frequencies, average length) as every line of the file does in the paper's BM25
        script, and are never returned; each id is scored by its text in ``corpus`` (its last record,
        whose score is the one the paper's per-id score table ends up holding).
        """
        if not corpus:
            raise R2MedError("cannot index an empty corpus")
        repeats = list(repeats)
        if self.cache:
            fp = corpus_fingerprint or fingerprint_texts(corpus.items())
            if repeats:
                fp = fingerprint(
                    "with-repeats", fp, fingerprint_texts((str(i), text) for i, text in enumerate(repeats))
                )
            path = cache_dir("bm25") / self.index_key(fp)
            if (path / "params.json").exists():
                try:
                    k1, b = self.k1, self.b
                    self._load_arrays(path)
                    if (self.k1, self.b) != (k1, b):
                        self.k1, self.b = k1, b
                        raise IndexDamaged("its params.json names other parameters than its key")
                    self.built_from_cache = True
                    log.info("BM25 index loaded from %s", path)
                    return self
                except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
                    log.warning("BM25 index at %s is damaged or unreadable (%s); rebuilding it", path, exc)
            with self._steps(len(corpus), 3) as steps:
                self._build(list(corpus), [*corpus.values(), *repeats], steps)
                steps.describe(self._step_name(len(corpus), "saving"))
                self.save(path, corpus_fingerprint=fp)
                steps.advance()
        else:
            with self._steps(len(corpus), 2) as steps:
                self._build(list(corpus), [*corpus.values(), *repeats], steps)
        return self

    @staticmethod
    def _step_name(n_docs: int, step: str) -> str:
        return f"BM25 index of {n_docs:,} docs · {step}"

    @contextlib.contextmanager
    def _steps(self, n_docs: int, total: int) -> Iterator[_Steps]:
        """The index's steps on the progress display (a large corpus only), else a stand-in that shows nothing."""
        if n_docs < PROGRESS_MIN_DOCS:
            yield _NoSteps()
            return
        with progress.task(self._step_name(n_docs, "analysing text"), total=total, unit="steps") as steps:
            yield steps

    def _build(self, doc_ids: list[str], texts: Sequence[str], steps: _Steps | None = None) -> None:
        with _small_pages():
            self._build_index(doc_ids, texts, steps or _NoSteps())

    def _build_index(self, doc_ids: list[str], texts: Sequence[str], steps: _Steps) -> None:
        """Index ``texts``; the first ``len(doc_ids)`` are the documents, any after them (repeated ids'
        other copies) count in the statistics only."""
        start = time.perf_counter()
        terms, ids, lengths = encode_corpus(self.analyzer, texts, workers=self.workers)
        steps.advance()
        steps.describe(self._step_name(len(texts), "weighting terms"))
        counts = term_counts(ids, lengths, len(terms))
        avgdl = float(lengths.sum()) / len(texts)
        idf = inverse_document_frequency(np.diff(counts.indptr), len(texts))
        weights_t = term_weights(counts, lengths, idf, avgdl, self.k1, self.b)
        self.weights_t = weights_t if len(texts) == len(doc_ids) else weights_t[:, : len(doc_ids)].tocsr()
        steps.advance()
        self.doc_ids, self.vocab, self.idf, self.avgdl = doc_ids, {t: i for i, t in enumerate(terms)}, idf, avgdl
        log.info(
            "BM25 index: %d docs, %d terms, %d postings in %.2fs",
            len(texts),
            len(terms),
            counts.nnz,
            time.perf_counter() - start,
        )

    # -- persistence -----------------------------------------------------------------------------
    def save(self, path: str | Path, corpus_fingerprint: str | None = None) -> Path:
        """Write the index as a self-describing folder (arrays + ``params.json``), atomically."""
        assert self.weights_t is not None, "index() first"
        path = Path(path)
        arrays = {
            "indptr": self.weights_t.indptr,
            "indices": self.weights_t.indices,
            "data": self.weights_t.data,
            "idf": self.idf,
        }
        lists = {"vocab": list(self.vocab), "doc_ids": self.doc_ids}
        with atomic_dir(path) as tmp:
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", array)
            for name, values in lists.items():
                (tmp / f"{name}.json").write_bytes(_dumps(values))
            checksums: JsonObject = {f.name: _crc32_file(f) for f in sorted(tmp.iterdir())}
            params: JsonObject = {
                "format": INDEX_FORMAT,
                "k1": self.k1,
                "b": self.b,
                "avgdl": self.avgdl,
                "n_docs": len(self.doc_ids),
                "n_terms": len(self.vocab),
                "analyzer": self.analyzer.config(),
                "corpus_fingerprint": corpus_fingerprint,
                "crc32": checksums,
            }
            params[PARAMS_CHECKSUM] = _params_checksum(params)
            (tmp / "params.json").write_text(json.dumps(params, indent=1), encoding="utf-8")
        self.index_path = path
        return path

    def _load_arrays(self, path: Path) -> None:
        """Load a saved index, checking every file against its CRC-32 (IndexDamaged when one differs)."""
        params = read_params(path)
        checksums = _checksums(params)
        n_terms, n_docs = _whole(params, "n_terms"), _whole(params, "n_docs")
        arrays = {name: _load_checked(path / f"{name}.npy", checksums) for name in _ARRAYS}
        lists = {name: _loads(_read_checked(path / f"{name}.json", checksums)) for name in _LISTS}
        if (
            len(lists["doc_ids"]) != n_docs
            or len(lists["vocab"]) != n_terms
            or len(arrays["idf"]) != n_terms
            or len(arrays["indptr"]) != n_terms + 1
        ):
            raise IndexDamaged("array sizes do not match params.json")
        self.weights_t = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=(n_terms, n_docs))
        self.idf = arrays["idf"]
        self.vocab = {t: i for i, t in enumerate(lists["vocab"])}
        self.doc_ids = lists["doc_ids"]
        self.avgdl = _number(params, "avgdl")
        self.k1, self.b = _number(params, "k1"), _number(params, "b")
        self.index_path = path

    @classmethod
    def load(cls, path: str | Path, flavour: str = "paper") -> BM25:
        params = read_params(Path(path))
        bm25 = cls(k1=_number(params, "k1"), b=_number(params, "b"), flavour=flavour, analyzer=_analyzer_name(params))
        bm25._load_arrays(Path(path))
        return bm25

    # -- search ----------------------------------------------------------------------------------
    def query_vectors(self, queries: Sequence[str]) -> sp.csr_matrix:
        """Queries as weighted term vectors (paper: BM25-weighted; standard: raw counts)."""
        rows, cols, vals = [], [], []
        vocab = self.vocab
        for row, text in enumerate(queries):
            ids = [vocab[t] for t in self.analyzer.tokenize(text) if t in vocab]
            if not ids:
                continue
            uniq, qtf = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
            qtf = qtf.astype(np.float64)
            if self.flavour == "paper":
                qlen = qtf.sum()
                weight = self.idf[uniq] * qtf / (qtf + self.k1 * (1.0 - self.b + self.b * qlen / self.avgdl))
            else:
                weight = qtf
            rows.append(np.full(len(uniq), row))
            cols.append(uniq)
            vals.append(weight)
        if not rows:
            return sp.csr_matrix((len(queries), len(vocab)), dtype=np.float32)
        return sp.csr_matrix(
            (np.concatenate(vals).astype(np.float32), (np.concatenate(rows), np.concatenate(cols))),
            shape=(len(queries), len(vocab)),
        )

    def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """public: dense (queries x docs) float32 scores of every document, for small query sets and for checks
        against another BM25 (:meth:`search` keeps only the top k)."""
        assert self.weights_t is not None, "index() first"
        scores: np.ndarray = (self.query_vectors(queries) @ self.weights_t).toarray()
        return scores

    #: ``search`` takes ``exclusions`` and removes them before the cut (:mod:`r2med.data.exclusions`)
    excludes = True

    def search(
        self,
        queries: Mapping[str, QueryText],
        k: int = 100,
        exclusions: Exclusions | None = None,
        batch_size: int = 512,
    ) -> Run:
        """Top-``k`` docs per query for all queries, as sparse matrix products in batches.

        Batches hold at most ``batch_size`` queries and about :data:`SCORE_BLOCK` scores, and run on as many
        threads as there are cores (scipy's sparse product and numpy's selection release the GIL;
        each query's row is computed alone, so scores do not depend on the split).  ``exclusions``: each
        query's excluded documents are set to ``-inf`` in its scores before the cut and never returned, so a
        query gets the best ``k`` of the other documents (BRIGHT's rule).  :attr:`cut_ties` then holds what the
        cut dropped while tied with each query's last document (a query matching fewer than ``k`` documents ends
        in zeros, tied with every other zero of the corpus).
        """
        if self.weights_t is None:
            raise R2MedError("BM25.search() called before index()")
        qids = list(queries)
        self.cut_ties = {}
        if not qids:
            return {}
        vectors = self.query_vectors([as_text(queries[q]) for q in qids])
        doc_ids, weights_t = self.doc_ids, self.weights_t
        rows, cols = excluded_cells(exclusions, qids, doc_ids)
        cores = self.workers if self.workers is not None else available_cores()
        threads = max(1, min(cores, len(qids) * len(doc_ids) // 1_000_000))
        step = max(1, min(batch_size, SCORE_BLOCK // max(len(doc_ids), 1), -(-len(qids) // threads)))

        def batch(start: int) -> tuple[list[dict[str, float]], dict[int, CutTie]]:
            block = (vectors[start : start + step] @ weights_t).toarray()
            mask_cells(block, rows, cols, row_offset=start)
            return ranked_rows_cut(block, doc_ids, k)

        starts = range(0, len(qids), step)
        parts: Iterable[tuple[list[dict[str, float]], dict[int, CutTie]]]
        if threads == 1:
            parts = map(batch, starts)
        else:
            with ThreadPoolExecutor(threads) as pool:
                parts = list(pool.map(batch, starts))
        run: Run = {}
        for start, (hits, cut) in zip(starts, parts):
            run.update(zip(qids[start : start + step], hits))
            self.cut_ties.update((qids[start + r], tie) for r, tie in cut.items())
        return run


def _params_checksum(params: Mapping[str, JsonValue]) -> str:
    """CRC-32 of every field of ``params.json`` but the checksum itself, over its canonical JSON."""
    fields = {k: v for k, v in params.items() if k != PARAMS_CHECKSUM}
    return f"{zlib.crc32(json.dumps(fields, sort_keys=True).encode('utf-8')):08x}"


def read_params(folder: Path) -> JsonObject:
    """An index's ``params.json``, checked against its own CRC-32 (IndexDamaged when a field was changed)."""
    params = read_json(folder / "params.json")  # nested too deeply: a ValueError too (rebuilt)
    if not isinstance(params, dict):
        raise IndexDamaged("params.json is not an object")
    if params.get("format") != INDEX_FORMAT:
        raise ValueError(f"index format {params.get('format')!r} != {INDEX_FORMAT}")
    if params.get(PARAMS_CHECKSUM) != _params_checksum(params):
        raise IndexDamaged("params.json does not match its checksum")
    return params


def describe_index(folder: Path) -> str:
    """What a saved index is, for ``r2med cache ls``: ``k1=.. b=.. <analyzer> · <n> docs`` (raises
    OSError/ValueError/KeyError when its ``params.json`` is unreadable or fails its checksum)."""
    params = read_params(folder)
    return f"k1={params['k1']} b={params['b']} {_analyzer_name(params)} · {params['n_docs']} docs"


def _number(params: Mapping[str, JsonValue], key: str) -> float:
    """A number of ``params.json`` (a ValueError when it is not one: the index is rebuilt)."""
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"params.json: {key} is not a number")
    return value


def _whole(params: Mapping[str, JsonValue], key: str) -> int:
    """A count of ``params.json`` (a ValueError when it is not a whole number)."""
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"params.json: {key} is not a whole number")
    return value


def _checksums(params: Mapping[str, JsonValue]) -> dict[str, str]:
    """``params.json``'s CRC-32 of each file (a ValueError when it is not file name -> text)."""
    value = params["crc32"]
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("params.json: crc32 is not file name -> CRC-32")
    return {name: str(crc) for name, crc in value.items()}


def _analyzer_name(params: Mapping[str, JsonValue]) -> str:
    """The name of the analyzer ``params.json`` records (a ValueError when it records none)."""
    analyzer = params["analyzer"]
    name = analyzer.get("name") if isinstance(analyzer, dict) else None
    if not isinstance(name, str):
        raise ValueError("params.json: analyzer has no name")
    return name


@contextlib.contextmanager
def _small_pages() -> Iterator[None]:
    """Ask numpy not to request transparent huge pages for the arrays made meanwhile.

    numpy ``madvise``s every large array for huge pages; where the kernel then compacts memory on the
    page fault (``defrag=madvise``, a common default), the index build's short-lived temporaries cost
    more in the kernel than in numpy: on the 61K-doc benchmark, build time in the kernel fell from
    0.50 to 0.19 s without it.  The setting is restored afterwards; without numpy's private switch
    (other versions) nothing changes.
    """
    core = getattr(np, "_core", None) or getattr(np, "core", None)  # numpy 2 / numpy 1
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is None:
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)


def _dumps(values: list[str]) -> bytes:
    return orjson.dumps(values)


def _loads(raw: bytes | mmap.mmap) -> list[str]:
    # a list of texts: the file _dumps wrote, its CRC-32 checked before it is read (the index's own file)
    loaded: list[str] = orjson.loads(memoryview(raw))
    return loaded


def _crc32_file(path: Path) -> str:
    return f"{zlib.crc32(_read_checked(path, None)):08x}"


def _read_checked(path: Path, checksums: Mapping[str, str] | None) -> bytes | mmap.mmap:
    """The file's bytes, memory-mapped (no copy); with ``checksums``, IndexDamaged unless its CRC-32 matches."""
    with open_regular(path) as handle:  # a FIFO or a device planted in the index: damage (rebuilt), never waited on
        size = handle.seek(0, 2)
        raw: bytes | mmap.mmap = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    if checksums is not None and f"{zlib.crc32(raw):08x}" != checksums.get(path.name):
        raise IndexDamaged(f"{path.name} does not match its checksum")
    return raw


def _load_checked(path: Path, checksums: Mapping[str, str]) -> np.ndarray:
    """A ``.npy`` array read in place from the checked, memory-mapped file (read-only, no copy)."""
    raw = _read_checked(path, checksums)
    header = io.BytesIO(raw[:4096])
    version = np.lib.format.read_magic(header)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_header(header)
    count = int(np.prod(shape)) if shape else 1
    array = np.frombuffer(raw, dtype=dtype, count=count, offset=header.tell())
    return array.reshape(shape, order="F" if fortran else "C")


def term_counts(ids: np.ndarray, lengths: np.ndarray, n_terms: int) -> sp.csc_matrix:
    """Term frequencies of documents given as concatenated term ids (``lengths`` per document):
    a (docs x terms) matrix stored term-major (``indptr`` over terms, doc indices ascending).

    Built column-major, docs come out in order within each term, so summing the duplicates (term
    frequencies) needs no sort, and the layout is already the (terms x docs) index's.
    """
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    tokens = sp.csr_matrix((np.ones(len(ids), dtype=np.float32), ids, indptr), shape=(len(lengths), n_terms))
    counts = tokens.tocsc()
    counts.has_canonical_format = False
    counts.sum_duplicates()
    return counts


def inverse_document_frequency(df: np.ndarray, n_docs: int) -> np.ndarray:
    """``ln((N + 1) / (df + 0.5))`` per term (gensim's ``LuceneBM25Model``)."""
    idf: np.ndarray = np.log(n_docs + 1.0) - np.log(df.astype(np.float64) + 0.5)
    return idf


def term_weights(
    counts: sp.csc_matrix, lengths: np.ndarray, idf: np.ndarray, avgdl: float, k1: float, b: float
) -> sp.csr_matrix:
    """The (terms x docs) float32 BM25 weights ``idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))``.

    ``counts`` comes from :func:`term_counts`; ``idf`` and ``avgdl`` may be collection-wide statistics
    (the sharded index weighs each shard with them, so its weights equal these bit for bit).  Computed
    in float64, in blocks of about 1M postings (small temporaries are reused instead of paged in afresh).
    """
    n_terms = counts.shape[1]
    postings = np.diff(counts.indptr)
    weights = np.empty(counts.nnz, dtype=np.float32)
    dl = lengths.astype(np.float64)
    bounds = np.searchsorted(counts.indptr, np.arange(0, counts.nnz, 1 << 20), side="right") - 1
    for lo, hi in zip(bounds, [*bounds[1:], n_terms]):
        a, z = counts.indptr[lo], counts.indptr[hi]
        tf = counts.data[a:z].astype(np.float64)
        norm = dl[counts.indices[a:z]]
        if avgdl > 0:
            norm *= b
            norm /= avgdl
            norm += 1.0 - b
            norm *= k1
        else:
            norm[:] = k1
        norm += tf
        tf *= np.repeat(idf[lo:hi], postings[lo:hi])
        tf /= norm
        weights[a:z] = tf
    return sp.csr_matrix((weights, counts.indices, counts.indptr), shape=(n_terms, counts.shape[0]))


def ranked_rows(scores: np.ndarray, doc_ids: Sequence[str], k: int) -> list[dict[str, float]]:
    """Each row's ``k`` best docs, best first (ties in corpus order), as {doc id: score}.

    A query that matches fewer than ``k`` docs is filled with zero-score docs in corpus order, as the
    paper's code returns them (a stable sort over all docs), so every query is answered and counts.
    Cells set to ``-inf`` (excluded documents: :func:`~r2med.retrieval.topk.mask_cells`) are never returned.
    """
    return ranked_rows_cut(scores, doc_ids, k)[0]


def ranked_rows_cut(
    scores: np.ndarray, doc_ids: Sequence[str], k: int
) -> tuple[list[dict[str, float]], dict[int, CutTie]]:
    """:func:`ranked_rows` and what each row's cut dropped while tied with its last document (row -> ids)."""
    positions, values, cut = top_k_rows_cut(scores, k)
    rows = [
        {doc_ids[i]: v for i, v in zip(pos.tolist(), val.tolist()) if v != -math.inf}
        for pos, val in zip(positions, values)
    ]
    return rows, cut_ties_of(cut, doc_ids)


def excluded_cells(
    exclusions: Exclusions | None, qids: Sequence[str], doc_ids: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The (query row, document column) pairs of ``exclusions`` among ``qids`` and ``doc_ids`` (none: empty)."""
    if not exclusions:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return exclusion_cells.excluded_cells(exclusions, qids, {d: i for i, d in enumerate(doc_ids)})


def _factory(flavour: Bm25Flavour) -> RetrieverFactory:
    def make(task: str | None, options: RetrieverOptions) -> BM25:
        retriever = BM25(flavour=flavour, options=options_as(options, Bm25Options))
        # a family's own BM25 (BRIGHT's is this one: k1 0.9, b 0.4, tested equal) is recorded, not applied: the
        # options' defaults are its values; Lucene's BM25 (bm25-standard) is r2med's own, with no warning
        _, retriever.settings_record = settings_for(_NAMES[flavour], task, warn=False)
        return retriever

    return make


_NAMES = {"paper": "bm25", "standard": "bm25-standard"}


#: The paper's BM25 (BRIGHT's code; ``r2med_models.json`` -> ``bm25``): k1=0.9, b=0.4, the paper's scoring.
PAPER: JsonObject = {
    "flavour": "paper",
    "k1": models()["retrievers"]["bm25"]["k1"],
    "b": models()["retrievers"]["bm25"]["b"],
}
#: the options' defaults (their one declaration: :class:`~r2med.typed.options.Bm25Options`)
_DEFAULTS = Bm25Options()


def _lexical(name: str, flavour: Bm25Flavour, description: str, paper: JsonObject) -> RetrieverMeta:
    """A BM25 flavour's registry entry (what both flavours share: their family, options, tolerance, summary)."""
    return RetrieverMeta(
        name,
        _factory(flavour),
        description,
        paper=paper,
        family="lexical",
        options=Bm25Options,
        tolerance="lexical",
        summary={"k1": _DEFAULTS.k1, "b": _DEFAULTS.b},
        recorded_once=("k1", "b"),  # recorded beside config.options too until issue 35
    )


if (_DEFAULTS.k1, _DEFAULTS.b) != (PAPER["k1"], PAPER["b"]):  # pragma: no cover - data and type agree
    raise ValueError("Bm25Options' defaults are not the paper's k1 and b (r2med_models.json)")
register_retriever(
    _lexical(
        "bm25",
        Bm25Flavour.PAPER,
        "BM25 as the R2MED paper scores it (BM25-weighted query; k1=0.9, b=0.4)",
        PAPER,
    )
)
register_retriever(
    _lexical("bm25-standard", Bm25Flavour.STANDARD, "textbook Lucene BM25 (query term counts)", {"flavour": "paper"})
)
