"""The r2med home folder, content fingerprints and atomic file writes.

Every expensive artifact (BM25 index, embeddings, LLM answers, runs) lives under
the r2med home (``$R2MED_HOME``, default ``~/.cache/r2med``), in a folder named
by a fingerprint of everything that changes it.  Files are written to a temp
file in the same folder and renamed into place, so a crash never leaves a
half-written file under its final name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ENV_HOME = "R2MED_HOME"


def home() -> Path:
    """The r2med home folder (created on first use)."""
    path = Path(os.environ.get(ENV_HOME) or Path.home() / ".cache" / "r2med").expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir(kind: str) -> Path:
    """A sub-folder of the home for one kind of artifact (``bm25``, ``embeddings``, ``llm``...)."""
    path = home() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def fingerprint(*parts: Any) -> str:
    """A short stable hash of JSON-serialisable parts (settings, ids, other fingerprints)."""
    h = hashlib.blake2b(digest_size=10)
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()


def fingerprint_texts(items: Iterable[tuple[str, str]]) -> str:
    """Fingerprint of an ordered sequence of (id, text) pairs, e.g. a corpus."""
    h = hashlib.blake2b(digest_size=10)
    for key, text in items:
        h.update(key.encode("utf-8"))
        h.update(b"\x1f")
        h.update(text.encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temp path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp_path, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` via a synced temp file and a rename."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())


def write_json_atomic(path: str | os.PathLike[str], obj: Any, indent: int | None = 1) -> None:
    write_text_atomic(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Build a folder under a temp name and rename it into place when the block succeeds.

    If ``path`` already exists it is replaced.  On failure the temp folder is removed,
    so no half-built folder is ever visible under ``path``.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700
        if target.exists():
            old = target.with_name(f".{target.name}.old.{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
