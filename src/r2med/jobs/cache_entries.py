"""``r2med cache ls|rm``: the entries under the r2med home, what each holds, and removing them safely.

The home holds one folder per kind of artifact (``bm25``, ``embeddings``, ``llm``...).  Each entry is
described by the module that writes it (:func:`r2med.retrieval.bm25.describe_index`,
:func:`r2med.retrieval.embedding_cache.describe_entry`, the LLM answer cache's line count); an
unfinished embedding entry and the temps left by interrupted writes are ``partial``.  Only listed
entries can be removed, and never anything outside the home's kind folders.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import R2MedError
from ..infra.containment import ensure_within, name_problem, refuse_links
from ..infra.home import collection_of, dir_size, home, read_json, temp_is_stale
from ..results.folders import task_folders
from ..retrieval.bm25 import describe_index
from ..retrieval.embedding_cache import describe_entry

LEGACY_DETAIL = "temp left by an interrupted write of an earlier r2med (`cache rm KIND --partial` removes it)"
_LEGACY_TEMP = re.compile(r"\..+\.(?:[a-z0-9_]{8}\.tmp|old\.\d+)")
TEMP_DETAIL = "temp left by an interrupted write (the next write of it, or `cache rm KIND --partial`, removes it)"


@dataclass
class CacheEntry:
    """One entry under the home: ``state`` is ``partial`` (removable with ``--partial``), ``writing`` or ``""``."""

    kind: str
    name: str
    path: Path
    bytes: int
    modified: float
    state: str
    detail: str
    collection: str | None = None
    """The collection an index or document embedding was built on (``unknown`` for entries made before r2med
    recorded it); None for entries that belong to no collection (LLM answers, query embeddings)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.name,
            "path": str(self.path),
            "bytes": self.bytes,
            "modified": self.modified,
            "state": self.state,
            "detail": self.detail,
            "collection": self.collection,
        }


def _kind_folders(root: Path) -> list[Path]:
    """The kinds under the home: real (not linked) folders with plain, unhidden names."""
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith("."))


UNKNOWN_COLLECTION = "unknown"


def entry_collection(kind: str, entry: Path) -> str | None:
    """The collection a ``bm25`` index or a document ``embeddings`` entry was built on (its recorded corpus
    fingerprint, looked up in :func:`r2med.infra.home.collection_of`): ``unknown`` when nobody recorded it."""
    meta_file = {"bm25": "params.json", "embeddings": "meta.json"}.get(kind)
    if meta_file is None or not entry.is_dir():
        return None
    try:
        meta = read_json(entry / meta_file)
    except (OSError, ValueError):
        return UNKNOWN_COLLECTION
    if not isinstance(meta, dict) or meta.get("role", "documents") != "documents":
        return None
    return collection_of(meta.get("corpus_fingerprint")) or UNKNOWN_COLLECTION


def _embeddings(entry: Path) -> tuple[str, bool]:
    text, complete = describe_entry(entry)
    return f"{text} · {'complete' if complete else 'partial'}", not complete


def _bm25(entry: Path) -> tuple[str, bool]:
    return describe_index(entry), False


def _answers(entry: Path) -> tuple[str, bool]:
    if not (entry.is_file() and entry.suffix == ".jsonl"):  # an LLM answer cache: one JSON line per answer
        return "", False
    with entry.open("rb") as fh:
        return f"{sum(1 for _ in fh)} records", False


def _demo(entry: Path) -> tuple[str, bool]:
    """``$R2MED_HOME/demo``: the results root of ``r2med demo`` (one system folder)."""
    return f"results of `r2med demo`: {len(task_folders(entry))} task(s)", False


#: kind folder -> (entry -> (what it holds, whether it is unfinished)), as the module that writes it reads it
DESCRIBERS = {"embeddings": _embeddings, "bm25": _bm25, "demo": _demo}


def _describe(kind: str, entry: Path) -> tuple[str, bool]:
    try:
        return DESCRIBERS.get(kind, _answers)(entry)
    except (OSError, ValueError, KeyError):
        return "unreadable", False


def _stale_temps_inside(entry: Path) -> int:
    return sum(1 for _, dirs, files in os.walk(entry) for n in dirs + files if temp_is_stale(n))


def cache_entries(kind: str | None = None) -> list[CacheEntry]:
    """Every entry under the home (of one ``kind``, which must be one of the home's own kind folders)."""
    root = home()
    kinds = _kind_folders(root)
    if kind is not None:
        chosen = [k for k in kinds if k.name == kind and name_problem(kind) is None]
        if not chosen:
            if name_problem(kind) is None and (root / kind).is_symlink():  # not a kind of the home: say why
                refuse_links(root, root / kind, include_last=True)
            known = ", ".join(k.name for k in kinds) or "none yet"
            raise R2MedError(f"no cached {kind!r} under {root} (kinds: {known}); see `r2med cache ls`")
        kinds = chosen
    out = []
    for folder in kinds:
        for entry in sorted(folder.iterdir()):
            stale = temp_is_stale(entry.name)
            legacy = stale is None and _LEGACY_TEMP.fullmatch(entry.name) is not None
            if legacy:  # an earlier r2med's temp (no writer id): listed, removed by --partial only
                stale = True
            if entry.name.startswith(".") and stale is None:
                continue
            link = entry.is_symlink()
            info = entry.lstat()
            size = dir_size(entry) if entry.is_dir() and not link else info.st_size
            if stale is not None:
                state, detail = (
                    ("partial", LEGACY_DETAIL if legacy else TEMP_DETAIL)
                    if stale
                    else ("writing", "temp of a write in progress")
                )
            else:
                detail, unfinished = (
                    ("link (only the link is removed)", False) if link else _describe(folder.name, entry)
                )
                state = "partial" if unfinished else ""
                leftovers = 0 if link or not entry.is_dir() else _stale_temps_inside(entry)
                if leftovers:
                    detail += f" · {leftovers} temp file(s) left by an interrupted write"
            collection = entry_collection(folder.name, entry) if stale is None and not link else None
            out.append(CacheEntry(folder.name, entry.name, entry, size, info.st_mtime, state, detail, collection))
    return out


def remove_entries(
    kind: str, names: list[str] | None = None, everything: bool = False, partial: bool = False
) -> tuple[int, int]:
    """Remove entries of ``kind`` (by name, all, or the partial ones); returns (count, bytes freed)."""
    entries = {e.name: e for e in cache_entries(kind)}
    if partial:
        chosen = [e for e in entries.values() if e.state == "partial"]
    elif everything:
        chosen = list(entries.values())
    elif names:
        missing = [n for n in names if n not in entries]
        if missing:
            raise R2MedError(f"no {kind} entry named {missing[0]!r}; see `r2med cache ls {kind}`")
        chosen = [entries[n] for n in names]
    else:
        raise R2MedError(f"name the {kind} entries to remove, or pass --all (see `r2med cache ls {kind}`)")
    root = home()
    freed = 0
    for e in chosen:
        ensure_within(root / e.kind, e.path)  # listed entries only: never above the home
        if e.path.is_symlink() or not e.path.is_dir():
            e.path.unlink(missing_ok=True)  # a link is removed, never followed
        else:
            shutil.rmtree(e.path)
        freed += e.bytes
    return len(chosen), freed
