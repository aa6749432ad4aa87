"""Embedding cache (documents and queries): chunked, atomic, resumable, checksummed, memory-mapped on read.

Layout under ``$R2MED_HOME/embeddings/<key>/``::

    meta.json            what the vectors are (role, encoder settings, text fingerprint, n, chunk size)
    chunks/00000.npy     finished chunks while encoding is in progress (each written atomically)
    chunks/00000.sum     the chunk's checksum (written before the chunk itself)
    checksums.json       one checksum per chunk of rows of the final matrix
    embeddings.npy       the final (n, dim) float32 matrix, present only when complete

Chunks are 4,096 rows when a model encodes on a GPU and 256 rows (:data:`SLOW_CHUNK_SIZE`) when encoding is
slow (a CPU, an API, your own encoder: ``r2med.retrieval.dense.DenseRetriever`` chooses), so an interruption
loses at most one chunk, and the interrupted run says how many texts its finished chunks keep.  An entry keeps
the chunking it was started with (``meta.json``): a resumed encoding encodes exactly the chunks an uninterrupted
one would, so its vectors are the same bytes.

``key`` is a fingerprint of everything that changes a vector (model id and commit, pooling,
normalisation, max length, instructions, dtype... = ``EncoderSettings.key()``), of the texts
(the corpus, or the query texts with their expansion parts) and of the role.  A chunk file
exists only once complete (temp file + rename), so an encoding killed at any point resumes from
its finished chunks and never reads a torn file; ``embeddings.npy`` is assembled from the chunks
(again atomically, after its ``checksums.json``) and then the chunks are removed.  The key spells the model's
commit ``revision`` (:data:`KEY_SPELLING`), its name before it became ``model_revision``: an entry made before
the rename keeps its key (``meta.json`` records the settings as they are spelled when the entry is made).

Integrity: every load verifies the checksum of each chunk of rows (xxh3-64 when ``xxhash`` is
installed, else CRC-32; both far faster than the disk).  Rows that fail are re-encoded alone
(the good chunks are kept) with a warning; a chunk file that is truncated, has the wrong shape
or fails its checksum is dropped and re-encoded with a warning.  An entry whose header cannot
be read, or that has no checksums, is re-encoded whole.

The cache is also the hand-off point for distributed encoding (Ray): workers call
:meth:`EmbeddingCache.write_chunk` (or write the same ``chunks/`` layout through
:class:`r2med.scale.store.ShardStore`) for the chunks in :meth:`EmbeddingCache.missing_chunks`
and the driver calls :meth:`EmbeddingCache.finalize`.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..errors import R2MedError
from ..infra.containment import refuse_links
from ..infra.home import atomic_path, cache_dir, fingerprint, read_json, write_json_atomic, write_text_atomic
from ..infra.input_files import NotRegularFile, exists_as_regular, open_regular, read_regular
from ..infra.json_shapes import as_object
from ..infra.json_types import JsonObject, JsonValue
from ..infra.optional import optional_module, required_module

log = logging.getLogger(__name__)


def _regular(path: Path) -> Path:
    """``path`` if it is a regular file, else a NotRegularFile (an OSError: the entry is damage, encoded again)
    -- checked before a memory map, which would wait on a FIFO."""
    if not exists_as_regular(path) and path.exists():
        raise NotRegularFile(f"{path} is not a regular file")
    return path


CACHE_FORMAT = 2  # 2: checksums, roles (documents / queries)
#: the version of the code that turns texts into vectors, part of every key: vectors made by an older version are
#: never served (2: a left-padded batch gives each text the positions it has alone, issue 38)
ENCODING_VERSION = 2
KIND = "embeddings"
DEFAULT_CHUNK_SIZE = 4096
#: Rows per chunk where encoding is slow -- a model on a CPU, an embedding API (paid per request), your own
#: encoder: an interruption loses at most one chunk (256 texts: about 2 minutes at 2 docs/s), not 4,096 (34 minutes).
SLOW_CHUNK_SIZE = 256
CHECKSUMS = "checksums.json"
ROLES = ("documents", "queries")


#: the names a key spells as it did when the cache was made: a model's commit, ``model_revision`` in the settings
#: and records, was named ``revision`` -- keyed under that name, the vectors cached before the rename keep their key
KEY_SPELLING: dict[str, str] = {"model_revision": "revision"}


def keyed(encoder_config: Mapping[str, JsonValue]) -> JsonObject:
    """``encoder_config`` with the names :data:`KEY_SPELLING` spells as a key does."""
    return {KEY_SPELLING.get(name, name): value for name, value in encoder_config.items()}


def embedding_key(encoder_config: Mapping[str, JsonValue], texts_fingerprint: str, role: str = "documents") -> str:
    return fingerprint(
        "dense-embeddings", CACHE_FORMAT, ENCODING_VERSION, keyed(encoder_config), texts_fingerprint, role
    )


# -- checksums -----------------------------------------------------------------------------------


def checksum_algorithm() -> str:
    """``xxh3_64`` when the ``xxhash`` package is importable (~30 GB/s), else ``crc32`` (zlib, ~2 GB/s)."""
    return "crc32" if optional_module("xxhash") is None else "xxh3_64"


def array_checksum(arr: np.ndarray, algorithm: str | None = None) -> str:
    """``"<algorithm>:<hex>"`` of the raw bytes of ``arr`` (float32 rows, C order; a memmap slice is not copied)."""
    algorithm = algorithm or checksum_algorithm()
    data = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data  # a memoryview of the bytes, not a copy
    if algorithm == "xxh3_64":
        xxhash = required_module("xxhash", "dense", "the embedding cache's xxh3-64 checksums")
        return f"xxh3_64:{xxhash.xxh3_64_hexdigest(data)}"
    if algorithm == "crc32":
        return f"crc32:{zlib.crc32(data):08x}"
    raise ValueError(f"unknown checksum algorithm {algorithm!r}")


def verify_checksum(arr: np.ndarray, expected: str) -> bool | None:
    """True / False, or None when ``expected`` uses an algorithm this installation lacks."""
    algorithm = str(expected).partition(":")[0]
    try:
        return array_checksum(arr, algorithm) == expected
    except (ImportError, ValueError):
        return None


#: what a cache's texts are (a document's text; a query, or a query with its expansions)
_Text = TypeVar("_Text")


class EmbeddingCache:
    """The cached embeddings of one (encoder settings, texts, role) triple."""

    def __init__(
        self,
        encoder_config: Mapping[str, JsonValue],
        corpus_fingerprint: str,
        n_docs: int,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        root: str | Path | None = None,
        role: str = "documents",
    ):
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        self.role = role
        self.key = embedding_key(encoder_config, corpus_fingerprint, role)
        self.encoder_config = encoder_config
        self.path = Path(root or cache_dir(KIND)) / self.key
        self.n_docs = n_docs
        self.meta: JsonObject = {
            "format": CACHE_FORMAT,
            "role": role,
            "encoder": dict(encoder_config),
            "corpus_fingerprint": corpus_fingerprint,
            "n_docs": n_docs,
            "chunk_size": chunk_size,
        }
        stored = self._stored_meta()
        if stored is not None and stored.get("n_docs") == n_docs:
            stored_size = stored.get("chunk_size", chunk_size)  # resume with the original chunking
            chunk_size = int(stored_size) if isinstance(stored_size, (int, float, str)) else chunk_size
            self.meta["chunk_size"] = chunk_size
        self.chunk_size = max(1, int(chunk_size))
        #: what the last :meth:`get_or_encode` did (tests and logs read these)
        self.encoded_docs = 0
        self.reused_docs = 0
        #: seconds the last load spent verifying checksums
        self.verify_seconds = 0.0

    # -- state ---------------------------------------------------------------------------------
    @property
    def final_path(self) -> Path:
        return self.path / "embeddings.npy"

    @property
    def checksums_path(self) -> Path:
        return self.path / CHECKSUMS

    @property
    def chunk_dir(self) -> Path:
        return self.path / "chunks"

    def _stored_meta(self) -> JsonObject | None:
        try:
            stored = read_json(self.path / "meta.json")
        except (OSError, ValueError):
            return None
        return stored if isinstance(stored, dict) else None

    @property
    def n_chunks(self) -> int:
        return (self.n_docs + self.chunk_size - 1) // self.chunk_size

    def chunk_range(self, i: int) -> tuple[int, int]:
        return i * self.chunk_size, min((i + 1) * self.chunk_size, self.n_docs)

    def chunk_path(self, i: int) -> Path:
        return self.chunk_dir / f"{i:05d}.npy"

    def sum_path(self, i: int) -> Path:
        return self.chunk_dir / f"{i:05d}.sum"

    def complete(self) -> bool:
        return self.final_path.exists()

    def missing_chunks(self) -> list[int]:
        return [i for i in range(self.n_chunks) if not self.chunk_path(i).exists()]

    # -- reading and writing -------------------------------------------------------------------
    def _load_verified(self, mmap: bool = True) -> tuple[np.ndarray | None, list[int]]:
        """(the final matrix, chunks whose rows fail their checksum); (None, []) when absent or unusable."""
        self.verify_seconds = 0.0
        if not self.complete():
            return None, []
        try:
            _regular(self.final_path)
            arr = np.load(self.final_path, mmap_mode="r" if mmap else None)
        except (OSError, ValueError, EOFError) as exc:
            log.warning("embedding cache %s is unreadable (%s); re-encoding", self.final_path, exc)
            return None, []
        if arr.ndim != 2 or arr.shape[0] != self.n_docs or arr.dtype != np.float32:
            log.warning(
                "embedding cache %s has shape %s (%s), expected %d float32 rows; re-encoding",
                self.path,
                arr.shape,
                arr.dtype,
                self.n_docs,
            )
            return None, []
        try:
            sums = as_object(read_json(self.checksums_path), CHECKSUMS)
            listed, size = sums.get("digests"), sums.get("chunk_size")
            digests = [d for d in listed if isinstance(d, str)] if isinstance(listed, list) else []
            ok = isinstance(listed, list) and len(digests) == len(listed) == self.n_chunks and size == self.chunk_size
        except (OSError, ValueError):
            ok = False
        if not ok:
            log.warning(
                "embedding cache %s has no usable %s, so its vectors cannot be verified; re-encoding",
                self.path,
                CHECKSUMS,
            )
            return None, []
        start = time.perf_counter()
        bad = []
        for i, expected in enumerate(digests):
            lo, hi = self.chunk_range(i)
            verdict = verify_checksum(arr[lo:hi], expected)
            if verdict is None:
                log.warning(
                    "embedding cache %s was checksummed with %s, which this installation lacks "
                    "(pip install 'r2med[dense]', which brings xxhash); re-encoding",
                    self.path,
                    str(expected).partition(":")[0],
                )
                return None, []
            if not verdict:
                bad.append(i)
        self.verify_seconds = time.perf_counter() - start
        return arr, bad

    def load(self, mmap: bool = True) -> np.ndarray | None:
        """The finished, verified matrix (memory-mapped), or None when it is incomplete, unreadable or damaged."""
        arr, bad = self._load_verified(mmap)
        if arr is None or bad:
            if bad:
                log.warning("embedding cache %s: rows of chunk(s) %s fail their checksum", self.path, bad[:10])
            return None
        return arr

    def start(self) -> None:
        """Prepare the folder for writing chunks: record the layout, drop chunks of another layout.  A linked
        entry or chunk folder is refused (nothing is written or deleted through a link)."""
        self._refuse_links()
        self.path.mkdir(parents=True, exist_ok=True)
        stored = self._stored_meta()
        if stored is not None and isinstance(old := stored.get("encoder"), dict):  # an entry made before the rename:
            stored = {**stored, "encoder": keyed(old)}  # the same settings, its chunks kept
        if stored != {**self.meta, "encoder": keyed(self.encoder_config)}:
            if stored is not None:  # other chunking or size: chunks are not reusable
                shutil.rmtree(self.chunk_dir, ignore_errors=True)
            write_json_atomic(self.path / "meta.json", self.meta)

    def _refuse_links(self) -> None:
        refuse_links(self.path.parent, self.chunk_dir, include_last=True)  # the entry and its chunk folder

    def write_chunk(self, i: int, emb: np.ndarray) -> None:
        """Store chunk ``i`` (rows ``chunk_range(i)``) atomically, its checksum first."""
        lo, hi = self.chunk_range(i)
        emb = np.ascontiguousarray(emb, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != hi - lo:
            raise ValueError(f"chunk {i} needs {hi - lo} rows, got shape {emb.shape}")
        self._refuse_links()
        self.chunk_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.sum_path(i), array_checksum(emb) + "\n")
        with atomic_path(self.chunk_path(i), suffix=".npy") as tmp, open(tmp, "wb") as fh:
            np.save(fh, emb)

    def _drop_chunk(self, i: int) -> None:
        for path in (self.chunk_path(i), self.sum_path(i)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def read_chunk(self, i: int) -> np.ndarray | None:
        """Chunk ``i`` if its file is complete, of the right shape and matches its checksum; else it is
        dropped (a warning says why) and None is returned, so it is encoded again.  A missing chunk
        raises ``FileNotFoundError``."""
        lo, hi = self.chunk_range(i)
        path = self.chunk_path(i)
        try:
            with open_regular(path) as handle:  # a FIFO or a device there: damage (dropped), never waited on
                arr = np.load(handle)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, EOFError) as exc:
            log.warning(
                "embedding cache chunk %s is truncated or unreadable (%s); dropping it, it will be encoded again",
                path,
                exc,
            )
            self._drop_chunk(i)
            return None
        if arr.ndim != 2 or arr.shape[0] != hi - lo or arr.dtype != np.float32:
            log.warning(
                "embedding cache chunk %s has shape %s (%s), expected %d float32 rows; dropping it",
                path,
                arr.shape,
                arr.dtype,
                hi - lo,
            )
            self._drop_chunk(i)
            return None
        try:
            expected = read_regular(self.sum_path(i), limit=4096).decode("utf-8").strip()
        except FileNotFoundError:
            expected = None  # written through a ShardStore (Ray): the file's own structure is the check
        except (OSError, ValueError) as exc:
            log.warning("embedding cache checksum of chunk %s is unreadable (%s); dropping it", path, exc)
            self._drop_chunk(i)
            return None
        if expected is not None and verify_checksum(arr, expected) is False:
            log.warning("embedding cache chunk %s fails its checksum; dropping it, it will be encoded again", path)
            self._drop_chunk(i)
            return None
        loaded: np.ndarray = arr
        return loaded

    def verify_chunks(self) -> list[int]:
        """Read every finished chunk, dropping damaged ones; returns the indices dropped."""
        dropped = []
        for i in range(self.n_chunks):
            with contextlib.suppress(FileNotFoundError):
                if self.chunk_path(i).exists() and self.read_chunk(i) is None:
                    dropped.append(i)
        return dropped

    def finalize(self) -> np.ndarray:
        """Assemble the chunks into ``embeddings.npy`` (atomically, after ``checksums.json``), drop them,
        and return the verified memmap."""
        missing = self.missing_chunks()
        if missing and self.complete():  # another process finished the same entry first
            return self._load_or_fail()
        if missing:
            raise RuntimeError(f"cannot finalize {self.path}: chunks {missing[:5]} are missing")
        try:
            chunks = []
            first = self.read_chunk(0)
            dim = None if first is None else first.shape[1]
            with atomic_path(self.final_path, suffix=".npy") as tmp:
                out = None
                for i in range(self.n_chunks):
                    chunk = first if i == 0 else self.read_chunk(i)
                    if chunk is None or chunk.shape[1] != dim:
                        if chunk is not None:
                            self._drop_chunk(i)
                        raise RuntimeError(
                            f"cannot finalize {self.path}: chunk {i} was damaged and has been "
                            "removed; run again to encode it"
                        )
                    if out is None:
                        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(self.n_docs, dim))
                    lo, hi = self.chunk_range(i)
                    out[lo:hi] = chunk
                    chunks.append(array_checksum(chunk))
                assert out is not None  # chunk 0 exists (read above), so the loop ran and opened the file
                out.flush()
                del out
                write_json_atomic(
                    self.checksums_path,
                    {"format": CACHE_FORMAT, "chunk_size": self.chunk_size, "n": self.n_docs, "digests": chunks},
                )
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

    def _reopen_damaged(self, arr: np.ndarray, bad: list[int]) -> None:
        """Turn a final matrix with damaged rows back into a partial entry: its good chunks become
        chunk files (verified rows only), then the final file goes; the bad chunks are then missing."""
        log.warning(
            "embedding cache %s: %d of %d chunk(s) fail their checksum (damaged on disk: chunks %s); re-encoding %d %s",
            self.path,
            len(bad),
            self.n_chunks,
            bad[:10],
            sum(np.subtract(*self.chunk_range(i)[::-1]) for i in bad),
            self.role,
        )
        self.start()
        for i in range(self.n_chunks):
            if i not in bad and not self.chunk_path(i).exists():
                lo, hi = self.chunk_range(i)
                self.write_chunk(i, np.asarray(arr[lo:hi]))
        for i in bad:
            self._drop_chunk(i)
        del arr
        for path in (self.final_path, self.checksums_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def get_or_encode(
        self,
        texts: Sequence[_Text],
        encode: Callable[[list[_Text]], np.ndarray],
        progress: Callable[[int], None] | None = None,
        on_start: Callable[[int, int], None] | None = None,
    ) -> np.ndarray:
        """The embeddings of ``texts`` (in order): from the cache, or encoded chunk by chunk with
        ``encode`` (resuming after the last finished chunk; damaged chunks are encoded again).

        ``progress(n)`` after each chunk; ``on_start(to_encode, reused)`` once, before encoding starts
        (``(0, n)`` when the cache holds them all)."""
        if len(texts) != self.n_docs:
            raise ValueError(f"cache for {self.n_docs} texts got {len(texts)}")
        self.encoded_docs = self.reused_docs = 0
        arr, bad = self._load_verified()
        if arr is not None and not bad:
            self.reused_docs = self.n_docs
            log.info(
                "%s embeddings loaded from cache %s (verified in %.3fs)", self.role, self.path, self.verify_seconds
            )
            if on_start is not None:
                on_start(0, self.n_docs)
            return arr
        if arr is not None:
            self._reopen_damaged(arr, bad)
            del arr
        self.start()
        self.verify_chunks()
        missing = self.missing_chunks()
        missing_set = set(missing)
        self.reused_docs = sum(
            np.subtract(*self.chunk_range(i)[::-1]) for i in range(self.n_chunks) if i not in missing_set
        )
        if self.reused_docs:
            log.info(
                "resuming encoding: %d of %d %s already in finished chunks", self.reused_docs, self.n_docs, self.role
            )
        if on_start is not None:
            on_start(self.n_docs - self.reused_docs, self.reused_docs)
        start = time.perf_counter()
        width = self._stored_width(missing_set)
        try:
            for i in missing:
                lo, hi = self.chunk_range(i)
                chunk = encode(list(texts[lo:hi]))
                if width is not None and chunk.ndim == 2 and chunk.shape[1] != width:
                    raise R2MedError(
                        f"the encoder gave vectors of width {chunk.shape[1]} for {self.role} {lo}..{hi - 1} but width "
                        f"{width} for the earlier ones (embedding cache {self.path}); one encoder gives one width"
                    )
                self.write_chunk(i, chunk)
                width = chunk.shape[1]
                self.encoded_docs += hi - lo
                if progress:
                    progress(hi - lo)
                self._log_rate(i, missing, start)
        except BaseException:
            kept = self.reused_docs + self.encoded_docs
            if kept:
                log.warning(
                    "%d of %d %s are kept in finished chunks of %d under %s: the same command resumes after them",
                    kept,
                    self.n_docs,
                    self.role,
                    self.chunk_size,
                    self.path,
                )
            raise
        return self.finalize()

    def _stored_width(self, missing: set[int]) -> int | None:
        """The width of the vectors in a finished chunk of this entry (None when there is none)."""
        for i in range(self.n_chunks):
            if i not in missing:
                with contextlib.suppress(OSError, ValueError, EOFError):
                    arr = np.load(_regular(self.chunk_path(i)), mmap_mode="r")
                    return int(arr.shape[1]) if arr.ndim == 2 else None
        return None

    def _log_rate(self, i: int, missing: list[int], start: float) -> None:
        if len(missing) > 1:
            rate = self.encoded_docs / max(time.perf_counter() - start, 1e-9)
            log.debug(
                "encoded %d/%d %s (chunk %d/%d, %.1f/s)",
                self.reused_docs + self.encoded_docs,
                self.n_docs,
                self.role,
                i + 1,
                self.n_chunks,
                rate,
            )


def describe_entry(folder: Path) -> tuple[str, bool]:
    """(what one cache entry holds, whether it is complete) for ``r2med cache ls``:
    ``<model> [pooling=.. max_length=..] · <n> docs|queries``; raises OSError/ValueError/KeyError when unreadable."""
    meta = as_object(read_json(folder / "meta.json"), "meta.json")
    enc = as_object(meta["encoder"], "meta.json's encoder")
    extras = " ".join(f"{k}={enc[k]}" for k in ("pooling", "max_length") if enc.get(k) is not None)
    unit = "docs" if meta.get("role", "documents") == "documents" else "queries"
    return f"{enc.get('model')} {extras} · {meta['n_docs']} {unit}", (folder / "embeddings.npy").exists()
