"""Embedding shard stores: ``.npy`` shards at a local path or any pyarrow / fsspec URI.

A store is a folder (``/shared/emb``, ``file:///...``, ``s3://bucket/emb``, ``gs://...``, or any
scheme fsspec knows) holding ``manifest.json`` (what the vectors are: encoder settings, corpus
fingerprint, document count, shard size) and ``shards/<00000>.npy``.  A shard file appears under
its final name only once complete -- written to a temp name and renamed (an object PUT on
object stores) -- so its presence is the record that the shard is finished: a restarted job
encodes only the shards that are missing.  The layout of ``shards/`` is the one of the local
embedding cache's ``chunks/`` (:mod:`r2med.retrieval.embedding_cache`), so a store can also be
pointed at a cache entry and finalised by it.
"""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import R2MedError
from ..infra.containment import refuse_links
from ..infra.home import atomic_path, parse_json, write_json_atomic
from ..infra.input_files import read_regular
from ..infra.json_types import JsonObject

try:  # the scale extra's; only a URI whose scheme pyarrow does not know needs it (then a missing one is one line)
    import fsspec
except ImportError:
    fsspec = None

if TYPE_CHECKING:
    import pyarrow.fs as pafs

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SHARDS = "shards"
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_uri(location: str) -> bool:
    return bool(_SCHEME.match(location)) and not location.startswith("file://")


class ShardStore:
    """Read and write numbered ``.npy`` shards under ``location`` (a path or URI); picklable."""

    def __init__(self, location: str, shard_dir: str = SHARDS):
        self.location = str(location)
        self.shard_dir = shard_dir
        self._fs: pafs.FileSystem | None = None
        self._root: str | None = None

    def __getstate__(self) -> dict[str, str | None]:
        return {"location": self.location, "shard_dir": self.shard_dir, "_fs": None, "_root": None}

    # -- filesystem ----------------------------------------------------------------------------
    @property
    def local(self) -> bool:
        return not is_uri(self.location)

    def _local_root(self) -> Path:
        loc = self.location[len("file://") :] if self.location.startswith("file://") else self.location
        return Path(loc).expanduser()

    def _remote(self) -> tuple[pafs.FileSystem, str]:
        """(pyarrow filesystem, root path) for a URI; fsspec through pyarrow's handler when needed."""
        if self._fs is None:
            import pyarrow.fs as pafs

            try:
                self._fs, self._root = pafs.FileSystem.from_uri(self.location)
            except (ValueError, OSError):  # pyarrow.ArrowInvalid is a ValueError
                if fsspec is None:
                    raise R2MedError(
                        f"cannot open {self.location!r}: unknown scheme; install fsspec and its "
                        "filesystem package (e.g. s3fs, gcsfs)"
                    ) from None
                fs, root = fsspec.core.url_to_fs(self.location)
                self._fs, self._root = pafs.PyFileSystem(pafs.FSSpecHandler(fs)), root
        assert self._root is not None  # set together with self._fs
        return self._fs, self._root

    def _join(self, *parts: str) -> str:
        return "/".join([self._remote()[1].rstrip("/"), *parts])

    def write_bytes(self, rel: str, data: bytes) -> None:
        if self.local:
            root = self._local_root()  # the folder named (--dest or the home's): it may be a link, nothing below
            with atomic_path(refuse_links(root, root / rel)) as tmp:
                tmp.write_bytes(data)
            return
        fs, _ = self._remote()
        final = self._join(rel)
        tmp_name = f"{final}.{uuid.uuid4().hex}.tmp"
        fs.create_dir(final.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(tmp_name) as out:
            out.write(data)
        fs.move(tmp_name, final)

    def read_bytes(self, rel: str) -> bytes:
        if self.local:
            return read_regular(self._local_root() / rel)  # a FIFO there is never waited on
        fs, _ = self._remote()
        with fs.open_input_stream(self._join(rel)) as src:
            data: bytes = src.read()
        return data

    def _exists(self, rel: str) -> bool:
        if self.local:
            return (self._local_root() / rel).exists()
        import pyarrow.fs as pafs

        fs, _ = self._remote()
        found: bool = fs.get_file_info(self._join(rel)).type != pafs.FileType.NotFound
        return found

    def _list(self, rel: str) -> list[str]:
        if self.local:
            folder = self._local_root() / rel
            return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        import pyarrow.fs as pafs

        fs, _ = self._remote()
        infos = fs.get_file_info(pafs.FileSelector(self._join(rel), allow_not_found=True))
        return sorted(i.base_name for i in infos)

    # -- manifest ------------------------------------------------------------------------------
    def read_manifest(self) -> JsonObject | None:
        """The store's ``manifest.json`` (None: none, or unreadable); one that is not a JSON object is one line."""
        try:
            manifest = parse_json(self.read_bytes(MANIFEST))
        except (OSError, FileNotFoundError, ValueError):
            return None
        if not isinstance(manifest, dict):
            raise R2MedError(f"{self.location}: {MANIFEST} is not what r2med writes (a JSON object)")
        return manifest

    def write_manifest(self, manifest: JsonObject) -> None:
        if self.local:
            write_json_atomic(refuse_links(self._local_root(), self._local_root() / MANIFEST), manifest)
        else:
            self.write_bytes(MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode("utf-8"))

    # -- shards --------------------------------------------------------------------------------
    def shard_name(self, i: int) -> str:
        return f"{self.shard_dir}/{i:05d}.npy"

    def has_shard(self, i: int) -> bool:
        return self._exists(self.shard_name(i))

    def finished(self) -> set[int]:
        """Shards whose file is present (only complete files ever carry a shard's name)."""
        return {int(n[:-4]) for n in self._list(self.shard_dir) if re.fullmatch(r"\d+\.npy", n)}

    def write_shard(self, i: int, emb: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(emb, dtype=np.float32))
        self.write_bytes(self.shard_name(i), buf.getvalue())

    def read_shard(self, i: int, mmap: bool = False) -> np.ndarray:
        shard: np.ndarray
        if self.local and mmap:
            shard = np.load(self._local_root() / self.shard_name(i), mmap_mode="r")
        else:
            shard = np.load(io.BytesIO(self.read_bytes(self.shard_name(i))))
        return shard

    def remove_stale_temps(self) -> int:
        """Delete temp files left by killed writers (local stores); returns how many."""
        if not self.local:
            return 0
        folder = refuse_links(self._local_root(), self._local_root() / self.shard_dir, include_last=True)
        stale = [p for p in folder.glob(".*.tmp") if not p.is_symlink()] if folder.is_dir() else []
        for p in stale:
            p.unlink(missing_ok=True)
        return len(stale)
