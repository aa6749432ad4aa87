"""Dense retrieval: encode the corpus once (cached), embed queries, exact or FAISS top-k search.

Registers ``dense`` (any embedding model: ``model=<hub id or folder>``) and the R2MED paper's
dense retrievers as presets (``contriever``, ``medcpt``, ``inst-l``, ``inst-xl``, ``bmr-410m``,
``bmr-2b``, ``bmr-7b``, ``bge``, ``e5``, ``grit``, ``sfr``, ``nv``, ``openai``, ``voyage``; see
:mod:`r2med.retrieval.presets`); :func:`register_preset` registers presets from other data (the
later models, :mod:`r2med.retrieval.later_presets`).

Precision: a preset runs in the precision its published code used (``dtype``); a preset whose
published code falls back to another one on a CPU (``cpu_dtype``: the later FlagEmbedding presets
run fp16 on a GPU and fp32 on a CPU) does the same when it is built for a CPU and ``--dtype`` is not
given.  The precision used is recorded in the run's configuration, and either one counts as the
published configuration (:func:`r2med.results.grading.precision_change`).

* Document and query embeddings go through :class:`~r2med.retrieval.embedding_cache.EmbeddingCache`
  (keyed by every vector-defining setting and the fingerprint of the corpus / the query texts;
  resumable, checksummed), so a re-run with the same queries encodes nothing.
* A query given as a tuple ``(query, expansion)`` is embedded part by part and averaged.
* Scoring: ``similarity="cosine"`` (the default, and what the R2MED paper uses for every
  retriever: BEIR's ``cos_sim``) normalises query and document vectors before the inner
  product; ``"dot"`` takes the raw inner product.  A sentence-transformers model that names
  ``dot`` as its own similarity gets ``dot`` unless told otherwise.
* Exact search: chunked ``Q @ D.T`` with a running ``argpartition`` top-k (torch on GPU, numpy
  on CPU); ``faiss="<index factory string>"`` (e.g. ``"HNSW32"``, ``"IVF1024,Flat"``) uses FAISS
  instead.  ``ignore_identical_ids`` (on by default, as BEIR and the paper) never returns a doc
  whose id equals the query id.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Protocol, Unpack

import numpy as np

from ..data.exclusion_cells import excluded_cells
from ..data.exclusions import NO_EXCLUSIONS, Exclusions
from ..errors import MissingExtraError, R2MedError
from ..evaluation.tie_data import CutTie
from ..infra import progress
from ..infra.home import fingerprint, fingerprint_texts
from ..infra.json_types import JsonObject, JsonValue
from ..infra.versions import package_versions
from ..runs.run import Run
from ..typed.dense_choices import Similarity, choices_of
from ..typed.options import DenseOptions, EncoderOptions, MedcptOptions, PresetOptions
from ..typed.parse import RetrieverOptions, field_names
from .base import BaseRetriever, QueryText
from .embedding_cache import DEFAULT_CHUNK_SIZE, SLOW_CHUNK_SIZE, EmbeddingCache
from .encoders import (
    API_LOADERS,
    BaseEncoder,
    Encoder,
    EncoderSettings,
    is_sentence_transformers_model,
    make_encoder,
    sentence_transformers_similarity,
)
from .encoders.api import ApiOptions
from .family_settings import settings_for
from .presets import DENSE_PRESETS, Preset, add_preset, get_preset, preset_meta
from .registry import DENSE_EXTRA, RetrieverFactory, RetrieverMeta, options_as, register_retriever
from .topk import CutPositions, cut_ties_of, mask_cells, merge_top_k_cut, top_k_rows_cut

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

SIMILARITIES: tuple[Similarity, ...] = tuple(Similarity)
#: texts per batch of a model that names none (``--batch-size``; a preset: its own)
BATCH_SIZE = 32
#: documents per block of the exact search (``search_chunk``)
SEARCH_CHUNK = 65536


def check_similarity(similarity: str) -> Similarity:
    """``similarity`` as a :class:`Similarity`; an unknown name is a one-line error listing the choices."""
    try:
        return Similarity(similarity)
    except ValueError:
        raise R2MedError(f"unknown similarity {str(similarity)!r}; choose from {choices_of(Similarity)}") from None


class DenseRetriever(BaseRetriever):
    """``DenseRetriever(settings).index(corpus).search(queries, k)`` over one embedding model."""

    family = "dense"

    def __init__(
        self,
        settings: EncoderSettings,
        name: str = "dense",
        batch_size: int = BATCH_SIZE,
        device: str | None = None,
        cache: bool = True,
        chunk_size: int | None = None,
        ignore_identical_ids: bool | None = None,
        faiss: str | None = None,
        token_budget: int | None = None,
        encoder: Encoder | None = None,
        search_chunk: int | None = None,
        similarity: str = Similarity.COSINE,
        **api_options: Unpack[ApiOptions],
    ):
        self.settings = settings
        self.similarity = check_similarity(similarity)
        self.name = name
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise R2MedError("--batch-size must be at least 1")
        self.device = device
        self.cache = cache
        #: rows per embedding-cache chunk (None: :meth:`cache_chunk_size` chooses by where encoding runs)
        self.chunk_size = None if chunk_size is None else int(chunk_size)
        #: None: on, as BEIR and the paper
        self.ignore_identical_ids = True if ignore_identical_ids is None else bool(ignore_identical_ids)
        self.faiss = faiss
        self.token_budget = token_budget
        self.search_chunk = SEARCH_CHUNK if search_chunk is None else int(search_chunk)
        self._api_options = api_options
        self._encoder = encoder
        self.doc_ids: list[str] = []
        self.embeddings: np.ndarray | None = None
        self.cache_entry: EmbeddingCache | None = None
        #: docs that went through the model in the last index() (0 when the cache had them all)
        self.docs_encoded = 0
        #: queries that went through the model in the last search() (0 when the cache had them all)
        self.queries_encoded = 0
        self.query_cache_entry: EmbeddingCache | None = None
        self._faiss_index: _FaissIndex | None = None  # built by a search
        #: what the last exact :meth:`search` cut dropped while tied with each query's last document (query id ->
        #: :class:`~r2med.evaluation.ties.CutTie`); None after a FAISS search, which does not say (unknown)
        self.cut_ties: dict[str, CutTie] | None = None
        #: whose settings a preset ran when they are not its own family's (BRIGHT's on a BRIGHT task):
        #: ``config["settings"]`` (:mod:`r2med.retrieval.family_settings`); None: its own
        self.settings_record: JsonObject | None = None

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = make_encoder(
                self.settings,
                device=self.device,
                batch_size=self.batch_size,
                token_budget=self.token_budget,
                **self._api_options,
            )
        return self._encoder

    def config(self) -> JsonObject:
        return {
            "retriever": self.name,
            "encoder": self.settings.key(),
            "similarity": self.similarity,
            "ignore_identical_ids": self.ignore_identical_ids,
            "search": self.faiss or "exact",
            **({"settings": self.settings_record} if self.settings_record is not None else {}),
        }

    def encoding_facts(self) -> JsonObject | None:
        """What the vectors were actually made with, for ``metrics.json``: the versions of the packages that
        make them, the max length per side, the framing and the dtype (issue 20).  Vectors read from the
        embedding cache were made by an earlier run: ``made_by`` says so (that run's metrics.json has them)."""
        s = self.settings
        groups = {"gritlm": ("torch", "gritlm"), "openai": ("openai",), "voyage": ("voyage",)}.get(s.loader, ("torch",))
        facts: JsonObject = {
            "versions": dict[str, JsonValue](package_versions(groups)),
            "dtype": s.dtype,
            "framing": {"framing": s.framing or "tokenizer's own"},
        }
        # what the encoder reports it used: r2med's encoders (BaseEncoder) keep it; a plain Encoder given in Python
        # reports nothing (the settings above stand)
        encoder = self._encoder if isinstance(self._encoder, BaseEncoder) else None
        if encoder is not None and encoder.used:
            used = encoder.used
            facts["max_length"] = dict(encoder.max_lengths)  # used["max_length"]: the same dict
            facts["dtype"] = used.get("dtype", s.dtype)
            framing = used.get("framing")
            if isinstance(framing, dict) and framing:
                facts["framing"] = dict(framing)
            keep = ("weights", "declared_dtype", "compute", "device", "pooling", "model_commit")
            facts.update({k: used[k] for k in keep if k in used})
        facts["made_by"] = "this run" if (self.docs_encoded or self.queries_encoded) else "the embedding cache"
        return facts

    # -- indexing --------------------------------------------------------------------------------
    def index(self, corpus: Mapping[str, str], corpus_fingerprint: str | None = None) -> DenseRetriever:
        """Embed ``corpus`` (doc id -> text), or load its embeddings from the r2med home."""
        if not corpus:
            raise R2MedError("cannot index an empty corpus")
        self.doc_ids = list(corpus)
        texts = list(corpus.values())
        start = time.perf_counter()
        chunk_size = self.cache_chunk_size() if self.cache else 0  # before the progress display (it may import torch)
        with self._encoding("docs", len(texts)) as (on_start, _):
            if self.cache:
                fp = corpus_fingerprint or fingerprint_texts(corpus.items())
                self.cache_entry = EmbeddingCache(
                    self._cache_config(), fp, len(texts), chunk_size=chunk_size, role="documents"
                )
                self.embeddings = self.cache_entry.get_or_encode(
                    texts,
                    lambda chunk: self.encoder.encode_corpus(chunk, batch_size=self.batch_size),
                    on_start=on_start,
                )
                self.docs_encoded = self.cache_entry.encoded_docs
            else:
                self.embeddings = np.asarray(
                    self.encoder.encode_corpus(texts, batch_size=self.batch_size), dtype=np.float32
                )
                self.docs_encoded = len(texts)
        self._faiss_index = None
        log.info(
            "%s: %d docs indexed (%d encoded) in %.1fs",
            self.name,
            len(texts),
            self.docs_encoded,
            time.perf_counter() - start,
        )
        return self

    @contextlib.contextmanager
    def _encoding(
        self, unit: str, items: int, texts: int | None = None
    ) -> Iterator[tuple[Callable[[int, int], None], progress.Progress]]:
        """Encoding on the progress display: texts encoded of those to encode, their rate and ETA, and
        how many items came from the embedding cache.  ``texts``: texts the ``items`` make (a query with
        an expansion is two).  Yields ``on_start(to_encode, cached)`` (in items) for the cache."""
        texts = items if texts is None else texts
        with progress.task(f"{self.name}: encoding {unit}", total=texts, unit=unit, counters=("cached",)) as p:

            def on_start(to_encode: int, cached: int) -> None:
                p.set_total(to_encode if texts == items else round(to_encode * texts / max(items, 1)))
                p.count(cached=cached)

            encoder = self.encoder  # r2med's encoders (BaseEncoder) report each batch; a plain Encoder each call
            listener = encoder if isinstance(encoder, BaseEncoder) else None
            if listener is not None:
                listener.on_batch = p.advance
            try:
                yield on_start, p
            finally:
                if listener is not None:
                    listener.on_batch = None

    def _cache_config(self) -> JsonObject:
        return self.encoder.config()  # building an encoder is cheap: models load on first use

    def cache_chunk_size(self) -> int:
        """Rows per embedding-cache chunk: ``chunk_size`` when given; else 4,096 for a local model on a GPU and
        256 (:data:`~r2med.retrieval.embedding_cache.SLOW_CHUNK_SIZE`) where encoding is slow -- a CPU, an
        embedding API, your own encoder -- so an interruption loses minutes of work, not half an hour."""
        if self.chunk_size is None:
            custom = self.settings.model.startswith("custom:")
            slow = custom or self.settings.loader in API_LOADERS or _on_cpu(self.device)
            self.chunk_size = SLOW_CHUNK_SIZE if slow else DEFAULT_CHUNK_SIZE
        return self.chunk_size

    # -- search ----------------------------------------------------------------------------------
    #: ``search`` takes ``exclusions`` and removes them before the cut (:mod:`r2med.data.exclusions`)
    excludes = True

    def search(self, queries: Mapping[str, QueryText], k: int = 100, exclusions: Exclusions | None = None) -> Run:
        """The top ``k`` documents of each query; ``exclusions``: each query's excluded documents (and its own id,
        with ``ignore_identical_ids``) are set to ``-inf`` inside the search, block by block, and never returned:
        the exact top ``k`` of the other documents, with FAISS as without.  The exact search also sets
        :attr:`cut_ties`; FAISS leaves it None (what its cut dropped is unknown)."""
        if self.embeddings is None:
            raise R2MedError("DenseRetriever.search() called before index()")
        self.cut_ties = None
        qids = list(queries)
        if not qids:
            return {}
        q = self.embed_queries([queries[i] for i in qids])
        if q.ndim != 2 or q.shape[1] != self.embeddings.shape[1]:
            raise R2MedError(
                f"{self.name}: the query vectors are {q.shape[-1]} wide and the document vectors "
                f"{self.embeddings.shape[1]}; an encoder must give queries and documents one width"
            )
        cosine = self.similarity == "cosine"
        if cosine:
            q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)  # as torch's normalize
        cells = None
        if self.ignore_identical_ids or exclusions:
            pos = {d: i for i, d in enumerate(self.doc_ids)}
            cells = excluded_cells(exclusions or NO_EXCLUSIONS, qids, pos, identical=self.ignore_identical_ids)
        if self.faiss:
            scores, idx = self._faiss_search(q, k, cells)
        else:
            scores, idx, cut = exact_top_k_cut(
                q,
                self.embeddings,
                k,
                cells=cells,
                chunk=self.search_chunk,
                device=self.device,
                normalize_docs=cosine,
            )
            self.cut_ties = {qids[r]: tie for r, tie in cut_ties_of(cut, self.doc_ids).items()}
        run: Run = {}
        for row, qid in enumerate(qids):
            run[qid] = {self.doc_ids[j]: float(s) for s, j in zip(scores[row], idx[row]) if j >= 0}
        return run

    def embed_queries(self, texts: list[QueryText]) -> np.ndarray:
        """The query vectors (encoder output, before any cosine normalisation), cached like documents:
        keyed by the encoder settings and a fingerprint of the query texts (expansion parts included)."""
        self.queries_encoded = 0

        def encode(chunk: Sequence[QueryText]) -> np.ndarray:
            return self.encoder.encode_queries(chunk, batch_size=self.batch_size)

        parts = sum(len(q) if isinstance(q, tuple) else 1 for q in texts)
        chunk_size = self.cache_chunk_size() if self.cache else 0
        with self._encoding("queries" if parts == len(texts) else "query texts", len(texts), parts) as (on_start, _):
            if not self.cache:
                self.queries_encoded = len(texts)
                return np.asarray(encode(texts), dtype=np.float32)
            fp = fingerprint("queries", [q if isinstance(q, str) else list(q) for q in texts])
            self.query_cache_entry = EmbeddingCache(
                self._cache_config(), fp, len(texts), chunk_size=chunk_size, role="queries"
            )
            q = self.query_cache_entry.get_or_encode(texts, encode, on_start=on_start)
            self.queries_encoded = self.query_cache_entry.encoded_docs
            return np.asarray(q, dtype=np.float32)

    def _faiss_search(
        self, q: np.ndarray, k: int, cells: tuple[np.ndarray, np.ndarray] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS's top ``k`` of the documents each query may get: it asks FAISS for ``k`` plus the most documents
        any query excludes (``cells``: :meth:`~r2med.data.exclusions.Exclusions.cells`), then drops the excluded
        ones, so at least ``k`` of FAISS's own ranking remain for each query."""
        try:
            import faiss
        except ImportError as exc:  # pragma: no cover
            raise MissingExtraError("faiss-cpu", "dense", "FAISS search") from exc
        assert self.faiss is not None and self.embeddings is not None  # search() checked both
        if self._faiss_index is None:
            d = np.array(self.embeddings, dtype=np.float32)  # a copy: the cached array stays as encoded
            if self.similarity == "cosine":
                d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
            index = faiss.index_factory(d.shape[1], self.faiss, faiss.METRIC_INNER_PRODUCT)
            if not index.is_trained:
                index.train(d)
            index.add(d)
            self._faiss_index = index
        rows, cols = cells if cells is not None else (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        extra = int(np.bincount(rows).max()) if len(rows) else 0
        n_docs = len(self.embeddings)
        scores, idx = self._faiss_index.search(np.ascontiguousarray(q), min(k + extra, n_docs))
        if not extra:
            return scores[:, :k], idx[:, :k]
        out_s = np.full((len(q), k), -np.inf, dtype=np.float32)
        out_i = np.full((len(q), k), -1, dtype=np.int64)
        starts = np.searchsorted(rows, np.arange(len(q) + 1))
        for r in range(len(q)):
            keep = ~np.isin(idx[r], cols[starts[r] : starts[r + 1]])
            s, i = scores[r][keep][:k], idx[r][keep][:k]
            out_s[r, : len(s)], out_i[r, : len(i)] = s, i
        return out_s, out_i


def exact_top_k(
    queries: np.ndarray,
    docs: np.ndarray,
    k: int,
    exclude: np.ndarray | None = None,
    chunk: int = 65536,
    device: str | None = None,
    normalize_docs: bool = False,
    torch_products: bool | None = None,
    cells: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-``k``: (scores, doc indices), best first, ties by doc index (also at the cut);
    :func:`exact_top_k_cut` without what the cut dropped."""
    scores, idx, _ = exact_top_k_cut(queries, docs, k, exclude, chunk, device, normalize_docs, torch_products, cells)
    return scores, idx


def exact_top_k_cut(
    queries: np.ndarray,
    docs: np.ndarray,
    k: int,
    exclude: np.ndarray | None = None,
    chunk: int = 65536,
    device: str | None = None,
    normalize_docs: bool = False,
    torch_products: bool | None = None,
    cells: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, CutPositions]:
    """Exact inner-product top-``k``: (scores, doc indices, what the cut dropped while tied with each query's last
    document: :data:`~r2med.retrieval.topk.CutPositions`), best first, ties by doc index (also at the cut).

    Scores ``queries @ docs.T`` one doc chunk at a time (``docs`` may be a memmap) and keeps a
    running top-k (:mod:`r2med.retrieval.topk`), so memory stays at ``n_queries * (chunk + k)``.
    ``exclude[i]`` is a doc index query ``i`` must not get (-1 for none); ``cells`` = (rows, columns) are
    (query, doc index) pairs that must not be returned (rows sorted: :meth:`r2med.data.exclusions.Exclusions.cells`),
    set to ``-inf`` in each chunk before its top-k is kept.  An excluded doc comes back as index -1 with score
    ``-inf`` when fewer than ``k`` others remain.  ``normalize_docs`` divides each doc row by
    its norm first (cosine scores when the queries are normalised too).  The products run in torch on
    a CUDA device (``torch_products``: None = when one is used), in numpy otherwise.
    """
    n_q, n_d = len(queries), len(docs)
    k = min(k, n_d)
    if n_q == 0:
        return np.zeros((0, k), dtype=np.float32), np.zeros((0, k), dtype=np.int64), {}
    products = (
        _torch_products(device)
        if (torch_products is None and _use_torch(device)) or torch_products
        else _numpy_products
    )
    rows = np.arange(n_q)
    best: tuple[np.ndarray, np.ndarray, CutPositions] | None = None
    for lo in range(0, n_d, chunk):
        s = products(queries, docs[lo : lo + chunk], normalize_docs)
        if exclude is not None:
            hit = (exclude >= lo) & (exclude < lo + s.shape[1])
            s[rows[hit], exclude[hit] - lo] = -np.inf
        if cells is not None:
            mask_cells(s, cells[0], cells[1], col_offset=lo)
        part = top_k_rows_cut(s, k, offset=lo)
        best = part if best is None else merge_top_k_cut([best, part], k)
    assert best is not None, "exact_top_k needs at least one doc"  # every caller has a non-empty corpus
    positions, scores, cut = best
    return scores, np.where(np.isneginf(scores), -1, positions), cut  # an excluded doc never comes back


def _numpy_products(queries: np.ndarray, block: np.ndarray, normalize_docs: bool) -> np.ndarray:
    block = np.asarray(block, dtype=np.float32)
    if normalize_docs:
        block = block / np.maximum(np.linalg.norm(block, axis=1, keepdims=True), 1e-12)
    products: np.ndarray = queries @ block.T
    return products


def _torch_products(device: str | None) -> Callable[[np.ndarray, np.ndarray, bool], np.ndarray]:
    import torch

    dev = torch.device("cuda" if device in (None, "auto") else device)
    held: dict[int, torch.Tensor] = {}

    def products(queries: np.ndarray, block: np.ndarray, normalize_docs: bool) -> np.ndarray:
        if id(queries) not in held:  # the queries go to the device once
            held.clear()
            held[id(queries)] = torch.as_tensor(np.ascontiguousarray(queries), device=dev)
        d = torch.as_tensor(np.ascontiguousarray(block, dtype=np.float32), device=dev)
        if normalize_docs:
            d = torch.nn.functional.normalize(d, dim=-1)
        scores: np.ndarray = (held[id(queries)] @ d.T).cpu().numpy()
        return scores

    return products


class _FaissIndex(Protocol):
    """What r2med calls of a FAISS index (``faiss.index_factory``'s; faiss names its class per build)."""

    def search(self, x: np.ndarray, k: int, /) -> tuple[np.ndarray, np.ndarray]: ...


def _use_torch(device: str | None) -> bool:
    if device is not None and not str(device).startswith(("cuda", "auto")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# -- registry --------------------------------------------------------------------------------------

#: API embedders' client settings (passed on to the encoder; an error for a local model).
API_OPTIONS = ("api_key", "base_url", "timeout", "max_retries", "backoff_base", "backoff_max")
#: the fields of :class:`~r2med.retrieval.encoders.EncoderSettings` (what defines a vector) the options set (the
#: options and the settings name them alike)
SETTING_FIELDS = tuple(
    option for option in field_names(EncoderOptions) if option in {f.name for f in fields(EncoderSettings)}
)


# Any: each value is its option's own type, passed by field name to EncoderSettings(**...) (which types it there)
def encoder_settings(options: EncoderOptions) -> dict[str, Any]:
    """What ``options`` sets of the encoder settings (what defines a vector), by the settings' names: the rest is
    the model's own (``dense``) or the preset's."""
    values = {setting: getattr(options, setting) for setting in SETTING_FIELDS}
    return {setting: value for setting, value in values.items() if value is not None}


def dense_retriever(
    settings: EncoderSettings, name: str, options: EncoderOptions, batch_size: int, similarity: str
) -> DenseRetriever:
    """The retriever over ``settings`` with the options that do not define a vector (how it runs and searches)."""
    return DenseRetriever(
        settings,
        name=name,
        batch_size=batch_size,
        device=options.device,
        cache=options.cache,
        chunk_size=options.chunk_size,
        ignore_identical_ids=options.ignore_identical_ids,
        faiss=options.faiss,
        token_budget=options.token_budget,
        search_chunk=options.search_chunk,
        similarity=similarity,
        **api_options(options),
    )


def api_options(options: EncoderOptions) -> ApiOptions:
    """The API client settings ``options`` sets (:data:`API_OPTIONS`; an error for a local model's encoder)."""
    api = ApiOptions()
    if options.api_key is not None:
        api["api_key"] = options.api_key
    if options.base_url is not None:
        api["base_url"] = options.base_url
    if options.timeout is not None:
        api["timeout"] = options.timeout
    if options.max_retries is not None:
        api["max_retries"] = options.max_retries
    if options.backoff_base is not None:
        api["backoff_base"] = options.backoff_base
    if options.backoff_max is not None:
        api["backoff_max"] = options.backoff_max
    return api


def make_dense(task: str | None, options: RetrieverOptions) -> DenseRetriever:
    """``dense``: any embedding model (``model=`` a hub id or a local folder: :class:`DenseOptions` requires it)."""
    given = options_as(options, DenseOptions)
    settings = encoder_settings(given)
    model, revision = settings["model"], given.model_revision
    if given.pooling is not None:  # an explicit pooling means AutoModel + that pooling, even for an ST folder
        settings.setdefault("loader", "transformers")
    elif settings.get("loader", "auto") == "auto" and is_sentence_transformers_model(model, revision):
        settings["loader"] = "sentence-transformers"  # known now (a folder, a cached hub id): the loader that runs
    similarity = given.similarity
    if similarity is None:  # the model's own (sentence-transformers), else cosine as the paper
        own = None
        if settings.get("loader", "auto") in ("auto", "sentence-transformers"):
            own = sentence_transformers_similarity(model, revision)
        if own not in (None, *SIMILARITIES):
            log.warning("%s scores with %s similarity; r2med supports cosine and dot: using cosine", model, own)
        similarity = own if own in SIMILARITIES else Similarity.COSINE
    return dense_retriever(EncoderSettings(**settings), "dense", given, given.batch_size or BATCH_SIZE, similarity)


def _preset_factory(name: str) -> RetrieverFactory:
    def make(task: str | None, options: RetrieverOptions) -> DenseRetriever:
        given = options_as(options, PresetOptions)
        settings = encoder_settings(given)
        preset = get_preset(name)
        medcpt_published = isinstance(given, MedcptOptions) and given.medcpt_published
        family, record = settings_for(name, task, preset.home, preset.per_task(), settings)
        similarity = given.similarity or (family.similarity if family else None) or preset.similarity
        remote = family.encoder.get("trust_remote_code") if family else preset.fields.get("trust_remote_code")
        if remote and not given.trust_remote_code:
            raise R2MedError(
                f"{name} ({preset.hub_id}) runs its own code from the hub; opt in with --trust-remote-code"
            )
        cpu_dtype = preset.fields.get("cpu_dtype") if family is None else None  # a family's dtype is its own
        if cpu_dtype and given.dtype is None and _on_cpu(given.device):
            settings["dtype"] = cpu_dtype  # as its published code does on a CPU; recorded in the run's config
            log.info(
                "%s: %s on a CPU, as its published code falls back (it ran %s on a GPU; --dtype to choose)",
                name,
                cpu_dtype,
                preset.dtype,
            )
        encoder = preset.settings(task, medcpt_published=medcpt_published, family=family, **settings)
        retriever = dense_retriever(encoder, name, given, given.batch_size or preset.batch_size, similarity)
        retriever.settings_record = record
        return retriever

    make.__doc__ = f"the {name} dense preset (its own settings; another family's where that family has any)"
    return make


def _on_cpu(device: str | None) -> bool:
    """Whether a local model built now runs on the CPU (``device`` as given; ``auto``: no GPU visible)."""
    if device is not None and device not in ("", "auto"):
        return not str(device).startswith("cuda")
    try:
        import torch
    except ImportError:  # the encoder says which extra is missing when it loads
        return True
    return not torch.cuda.is_available()


register_retriever(
    RetrieverMeta(
        "dense",
        make_dense,
        "any embedding model: --model <hub id or folder> (pooling, instructions)",
        options=DenseOptions,
        extra=DENSE_EXTRA,
        named_after="model",
        summary={
            "hub_id": "--model <hub id or folder>",
            "pooling": "the model's own (sentence-transformers), else mean (--pooling)",
            "max_length": "the model's own (--max-length)",
            "similarity": "the model's own (sentence-transformers), else cosine (--similarity)",
            "dtype": "fp32 (--dtype)",
        },
    )
)


def register_preset(preset: Preset) -> RetrieverMeta:
    """Register a dense preset given as a data record (:class:`~r2med.retrieval.presets.Preset`): its
    settings, instructions and registry facts (``needs_gpu``, ``packages``, ``api_key_env``, ``dtype``
    in ``preset.fields``) make its retriever and its :class:`~r2med.retrieval.registry.RetrieverMeta`."""
    if preset.name not in DENSE_PRESETS:
        add_preset(preset)
    return register_retriever(
        RetrieverMeta.from_mapping(
            {
                "name": preset.name,
                "factory": _preset_factory(preset.name),
                "options": MedcptOptions if preset.query_hub_id else PresetOptions,
                **preset_meta(preset.name),
            }
        )
    )


for _name in DENSE_PRESETS:
    register_preset(get_preset(_name))
