"""Loading a :class:`Collection` from an R2MED folder, a BEIR folder or the built-in demo (the hub:
:mod:`.hub`; which of them a task name means: :mod:`.resolve`).

Layouts:

* **R2MED** -- ``corpus.jsonl`` (``id``, ``text``), ``query.jsonl`` (``id``, ``text``, extra keys
  kept as metadata), ``qrels.jsonl`` (``q_id``, ``p_id``, ``score``) and optional
  ``<method>/<llm>/query_with_hydoc.jsonl`` expansion files.
* **BEIR** -- ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``)
  and ``qrels/<split>.tsv``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..errors import DataError, R2MedError
from .collection import Collection
from .files import read_qrels, read_qrels_jsonl, read_qrels_tsv, read_texts

log = logging.getLogger(__name__)

EXPANSION_FILE = "query_with_hydoc.jsonl"
#: The ``source`` results of the built-in demo collection record.
DEMO_SOURCE = "built-in demo collection"


def find_expansion_files(root: Path) -> dict[str, Path]:
    """``"<method>:<llm>"`` -> path for every ``<method>/<llm>/query_with_hydoc.jsonl`` under ``root``."""
    found = {}
    for path in sorted(root.glob(f"*/*/{EXPANSION_FILE}")):
        found[f"{path.parent.parent.name}:{path.parent.name}"] = path
    return found


def detect_layout(root: Path) -> str:
    if (root / "query.jsonl").exists():
        return "r2med"
    if (root / "queries.jsonl").exists() or (root / "qrels").is_dir():
        return "beir"
    raise DataError(root, None, "not a collection folder: expected query.jsonl (R2MED layout) "
                                "or queries.jsonl + qrels/ (BEIR layout)")


def qrels_file(root: str | os.PathLike[str], split: str = "test") -> Path:
    """The judgments file of a collection folder: ``qrels.jsonl`` (R2MED layout) or ``qrels/<split>.tsv`` (BEIR)."""
    root = Path(root)
    path = root / "qrels.jsonl" if detect_layout(root) == "r2med" else root / "qrels" / f"{split}.tsv"
    if not path.is_file():
        raise DataError(path, None, "no such judgments file in this collection folder")
    return path


def load_r2med_folder(root: str | os.PathLike[str], name: str | None = None, source: str | None = None) -> Collection:
    root = Path(root)
    return load_r2med_files(root / "corpus.jsonl", root / "query.jsonl", root / "qrels.jsonl", name or root.name,
                            source=source)


def load_r2med_files(corpus_path: Path, query_path: Path, qrels_path: Path, name: str, source: str | None = None,
                     revision: str | None = None) -> Collection:
    """A collection from the three R2MED files (expansion files are looked for beside ``query.jsonl``).

    ``source`` is recorded in results (default: the folder of ``query.jsonl``, absolute, so it is found
    from any directory); ``revision`` is the hub commit the files came from.
    """
    repeats: list[str] = []
    corpus, _ = read_texts(corpus_path, repeats=repeats)
    queries, meta = read_texts(query_path, keep_meta=True)
    qrels = read_qrels_jsonl(qrels_path)
    return Collection(name=name, corpus=corpus, queries=queries, qrels=qrels, corpus_repeats=tuple(repeats),
                      source=source or str(query_path.parent.absolute()), query_meta=meta,
                      expansion_files=find_expansion_files(query_path.parent), revision=revision)


def load_beir_folder(root: str | os.PathLike[str], name: str | None = None, split: str = "test") -> Collection:
    root = Path(root)
    repeats: list[str] = []
    corpus, _ = read_texts(root / "corpus.jsonl", id_key="_id", title_key="title", repeats=repeats)
    queries, meta = read_texts(root / "queries.jsonl", id_key="_id", keep_meta=True)
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels = read_qrels_tsv(qrels_path)
    # BEIR ships all splits' queries in one file: keep those judged in this split.
    queries = {q: t for q, t in queries.items() if q in qrels} or queries
    return Collection(name=name or root.name, corpus=corpus, queries=queries, qrels=qrels,
                      source=str(root.absolute()), query_meta=meta, corpus_repeats=tuple(repeats))


def load_folder(root: str | os.PathLike[str], name: str | None = None, qrels: str | None = None,
                split: str = "test") -> Collection:
    """Load a collection folder in R2MED or BEIR layout (detected); ``qrels`` overrides the judgments file."""
    root = Path(root)
    if not root.is_dir():
        raise R2MedError(f"{root}: no such folder")
    if root.name in ("", ".", ".."):  # name the collection after the real folder
        root = Path(os.path.normpath(root.absolute()))
    layout = detect_layout(root)
    coll = load_r2med_folder(root, name) if layout == "r2med" else load_beir_folder(root, name, split)
    return coll.replace(qrels=read_qrels(qrels)) if qrels else coll


def load_demo() -> Collection:
    """The built-in demo collection (package data): short medical passages with judgments."""
    from importlib import resources

    root = resources.files("r2med").joinpath("demo_data")
    with resources.as_file(root) as path:
        return load_r2med_folder(Path(path), name="demo", source=DEMO_SOURCE)
