"""Document-embedding cache: chunked, atomic, resumable, memory-mapped on read.

Layout under ``$R2MED_HOME/embeddings/<key>/``::

    meta.json            what the vectors are (encoder settings, corpus fingerprint, n, chunk size)
    chunks/00000.npy     finished chunks while encoding is in progress (each written atomically)
    embeddings.npy       the final (n, dim) float32 matrix, present only when complete

``key`` is a fingerprint of everything that changes a vector (model id and revision, pooling,
normalisation, max length, instructions... = ``EncoderSettings.key()``) and of the corpus.
A chunk file exists only once complete (temp file + rename), so an encoding killed at any
point resumes from its finished chunks and never reads a torn file; ``embeddings.npy`` is
assembled from the chunks (again atomically) and then the chunks are removed.

The cache is also the hand-off point for distributed encoding (Ray): workers call
:meth:`EmbeddingCache.write_chunk` for the chunks in :meth:`EmbeddingCache.missing_chunks`
and the driver calls :meth:`EmbeddingCache.finalize`.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..cache import atomic_path, cache_dir, fingerprint, write_json_atomic

log = logging.getLogger(__name__)

CACHE_FORMAT = 1
KIND = "embeddings"
DEFAULT_CHUNK_SIZE = 4096


def embedding_key(encoder_config: dict[str, Any], corpus_fingerprint: str) -> str:
    return fingerprint("dense-embeddings", CACHE_FORMAT, encoder_config, corpus_fingerprint)


class EmbeddingCache:
    """The cached document embeddings of one (encoder settings, corpus) pair."""

    def __init__(self, encoder_config: dict[str, Any], corpus_fingerprint: str, n_docs: int,
                 chunk_size: int = DEFAULT_CHUNK_SIZE, root: str | Path | None = None):
        self.key = embedding_key(encoder_config, corpus_fingerprint)
        self.path = Path(root or cache_dir(KIND)) / self.key
        self.n_docs = n_docs
        self.meta = {"format": CACHE_FORMAT, "encoder": encoder_config, "corpus_fingerprint": corpus_fingerprint,
                     "n_docs": n_docs, "chunk_size": chunk_size}
        stored = self._stored_meta()
        if stored is not None and stored.get("n_docs") == n_docs:
            chunk_size = int(stored.get("chunk_size", chunk_size))  # resume with the original chunking
            self.meta["chunk_size"] = chunk_size
        self.chunk_size = max(1, int(chunk_size))
        #: what the last :meth:`get_or_encode` did (tests and logs read these)
        self.encoded_docs = 0
        self.reused_docs = 0

    # -- state ---------------------------------------------------------------------------------
    @property
    def final_path(self) -> Path:
        return self.path / "embeddings.npy"

    @property
    def chunk_dir(self) -> Path:
        return self.path / "chunks"

    def _stored_meta(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    @property
    def n_chunks(self) -> int:
        return (self.n_docs + self.chunk_size - 1) // self.chunk_size

    def chunk_range(self, i: int) -> tuple[int, int]:
        return i * self.chunk_size, min((i + 1) * self.chunk_size, self.n_docs)

    def chunk_path(self, i: int) -> Path:
        return self.chunk_dir / f"{i:05d}.npy"

    def complete(self) -> bool:
        return self.final_path.exists()

    def missing_chunks(self) -> list[int]:
        return [i for i in range(self.n_chunks) if not self.chunk_path(i).exists()]

    # -- reading and writing -------------------------------------------------------------------
    def load(self, mmap: bool = True) -> np.ndarray | None:
        """The finished matrix (memory-mapped), or None when it is not complete / unreadable."""
        if not self.complete():
            return None
        try:
            arr = np.load(self.final_path, mmap_mode="r" if mmap else None)
        except (OSError, ValueError) as exc:
            log.warning("embedding cache %s is unreadable (%s); re-encoding", self.final_path, exc)
            return None
        if arr.ndim != 2 or arr.shape[0] != self.n_docs:
            log.warning("embedding cache %s has shape %s, expected %d rows; re-encoding", self.path, arr.shape,
                        self.n_docs)
            return None
        return arr

    def start(self) -> None:
        """Prepare the folder for writing chunks: record the layout, drop chunks of another layout."""
        self.path.mkdir(parents=True, exist_ok=True)
        stored = self._stored_meta()
        if stored != self.meta:
            if stored is not None:  # other chunking or size: chunks are not reusable
                shutil.rmtree(self.chunk_dir, ignore_errors=True)
            write_json_atomic(self.path / "meta.json", self.meta)

    def write_chunk(self, i: int, emb: np.ndarray) -> None:
        """Store chunk ``i`` (rows ``chunk_range(i)``) atomically."""
        lo, hi = self.chunk_range(i)
        emb = np.ascontiguousarray(emb, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != hi - lo:
            raise ValueError(f"chunk {i} needs {hi - lo} rows, got shape {emb.shape}")
        self.chunk_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.chunk_path(i), suffix=".npy") as tmp:
            with open(tmp, "wb") as fh:
                np.save(fh, emb)

    def read_chunk(self, i: int) -> np.ndarray:
        return np.load(self.chunk_path(i))

    def finalize(self) -> np.ndarray:
        """Assemble the chunks into ``embeddings.npy`` (atomically), drop them, return the memmap."""
        missing = self.missing_chunks()
        if missing and self.complete():  # another process finished the same entry first
            return self._load_or_fail()
        if missing:
            raise RuntimeError(f"cannot finalize {self.path}: chunks {missing[:5]} are missing")
        try:
            first = self.read_chunk(0)
            with atomic_path(self.final_path, suffix=".npy") as tmp:
                out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32,
                                                shape=(self.n_docs, first.shape[1]))
                for i in range(self.n_chunks):
                    lo, hi = self.chunk_range(i)
                    out[lo:hi] = first if i == 0 else self.read_chunk(i)
                out.flush()
                del out
        except FileNotFoundError:
            if self.complete():  # a concurrent run finalized and removed the chunks meanwhile
                return self._load_or_fail()
            raise
        shutil.rmtree(self.chunk_dir, ignore_errors=True)
        return self._load_or_fail()

    def _load_or_fail(self) -> np.ndarray:
        arr = self.load()
        if arr is None:
            raise RuntimeError(f"embedding cache {self.path} could not be read back after writing")
        return arr

    def get_or_encode(self, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray],
                      progress: Callable[[int], None] | None = None) -> np.ndarray:
        """The embeddings of ``texts`` (the corpus in order): from the cache, or encoded chunk by
        chunk with ``encode`` (resuming after the last finished chunk)."""
        if len(texts) != self.n_docs:
            raise ValueError(f"cache for {self.n_docs} docs got {len(texts)} texts")
        self.encoded_docs = self.reused_docs = 0
        arr = self.load()
        if arr is not None:
            self.reused_docs = self.n_docs
            log.info("embeddings loaded from cache %s", self.path)
            return arr
        self.start()
        missing = self.missing_chunks()
        self.reused_docs = sum(np.subtract(*self.chunk_range(i)[::-1]) for i in range(self.n_chunks)
                               if i not in set(missing))
        if self.reused_docs:
            log.info("resuming encoding: %d of %d docs already in finished chunks", self.reused_docs, self.n_docs)
        start = time.perf_counter()
        for i in missing:
            lo, hi = self.chunk_range(i)
            self.write_chunk(i, encode(list(texts[lo:hi])))
            self.encoded_docs += hi - lo
            if progress:
                progress(hi - lo)
            if len(missing) > 1:
                rate = self.encoded_docs / max(time.perf_counter() - start, 1e-9)
                log.info("encoded %d/%d docs (chunk %d/%d, %.1f docs/s)", self.reused_docs + self.encoded_docs,
                         self.n_docs, i + 1, self.n_chunks, rate)
        return self.finalize()


def list_entries(root: str | Path | None = None) -> list[dict[str, Any]]:
    """Every embedding cache entry with its model, size and state (for ``r2med cache ls``)."""
    base = Path(root or cache_dir(KIND))
    out = []
    for entry in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        meta: dict[str, Any] = {}
        try:
            meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        out.append({"key": entry.name, "path": entry, "model": (meta.get("encoder") or {}).get("model"),
                    "n_docs": meta.get("n_docs"), "complete": (entry / "embeddings.npy").exists()})
    return out
