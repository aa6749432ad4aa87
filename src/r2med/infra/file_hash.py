"""The one file-hash helper: a file's content hash as every record names one.

Each record that says which file it was made from hashes the file's bytes through :func:`file_hash`, with the
algorithm that record has always used (so a recorded value is the same as before this helper existed):

* ``"sha256"`` -- an imported run file (``config.imported.sha256``), your own encoder's or scorer's module
  (``module_sha256``), an LFS file of the Hugging Face cache (named by its SHA-256);
* ``"blake2b-80"`` -- r2med's short content fingerprint (BLAKE2b, 10 bytes): the first-stage ``run.trec`` a
  reranked or fused result was made from (``run_fingerprint``), the expansion file a run read
  (``expansion_fingerprint``) and the hub expansion files r2med verified (:mod:`r2med.data.hub_integrity`);
* ``"git-sha1"`` -- git's blob id (SHA-1 of ``blob <size>\\0`` and the content): how the hub and the Hugging Face
  cache name a file that is not in LFS.

Files are read in 1 MiB blocks (never whole into memory); an input given as a stream (a pipe) is hashed as its
readers read it, once (:func:`r2med.infra.input_files.open_input`).
"""

from __future__ import annotations

import hashlib
import os
from typing import Final, Literal, Protocol

from .input_files import is_stream, open_input, read_input

#: the algorithms of :func:`file_hash`
HashAlgorithm = Literal["sha256", "blake2b-80", "git-sha1"]
ALGORITHMS: Final[tuple[HashAlgorithm, ...]] = ("sha256", "blake2b-80", "git-sha1")
_BLOCK: Final = 1 << 20


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def hexdigest(self) -> str: ...


def file_hash(path: str | os.PathLike[str], algorithm: HashAlgorithm = "sha256") -> str:
    """The hex digest of ``path``'s bytes by ``algorithm`` (see the module docstring); an unknown algorithm is a
    ValueError, an unreadable file the OSError of reading it."""
    h: Hasher
    if algorithm == "sha256":
        h = hashlib.sha256()
    elif algorithm == "blake2b-80":
        h = hashlib.blake2b(digest_size=10)
    elif algorithm == "git-sha1":
        size = len(read_input(path)) if is_stream(path) else os.path.getsize(path)
        h = hashlib.sha1(b"blob %d\0" % size)
    else:
        raise ValueError(f"unknown file hash {algorithm!r}; choose from: {', '.join(ALGORITHMS)}")

    with open_input(path) as handle:  # a stream the readers read is hashed as they read it (read once)
        for block in iter(lambda: handle.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def file_fingerprint(path: str | os.PathLike[str]) -> str:
    """r2med's short content fingerprint of a file (``blake2b-80``): what a run records of the files it read."""
    return file_hash(path, "blake2b-80")
