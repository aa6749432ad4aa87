"""Loading a :class:`Collection` from an R2MED folder, a BEIR folder, the hub or the built-in demo.

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


def load_r2med_folder(root: str | os.PathLike[str], name: str | None = None) -> Collection:
    root = Path(root)
    return load_r2med_files(root / "corpus.jsonl", root / "query.jsonl", root / "qrels.jsonl", name or root.name)


def load_r2med_files(corpus_path: Path, query_path: Path, qrels_path: Path, name: str) -> Collection:
    """A collection from the three R2MED files (expansion files are looked for beside ``query.jsonl``)."""
    corpus, _ = read_texts(corpus_path)
    queries, meta = read_texts(query_path, keep_meta=True)
    qrels = read_qrels_jsonl(qrels_path)
    return Collection(  # the source is recorded in results: absolute, so it is found from any directory
        name=name, corpus=corpus, queries=queries, qrels=qrels, source=str(query_path.parent.absolute()),
        query_meta=meta, expansion_files=find_expansion_files(query_path.parent),
    )


def load_beir_folder(root: str | os.PathLike[str], name: str | None = None, split: str = "test") -> Collection:
    root = Path(root)
    corpus, _ = read_texts(root / "corpus.jsonl", id_key="_id", title_key="title")
    queries, meta = read_texts(root / "queries.jsonl", id_key="_id", keep_meta=True)
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels = read_qrels_tsv(qrels_path)
    # BEIR ships all splits' queries in one file: keep those judged in this split.
    queries = {q: t for q, t in queries.items() if q in qrels} or queries
    return Collection(name=name or root.name, corpus=corpus, queries=queries, qrels=qrels,
                      source=str(root.absolute()), query_meta=meta)


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
    if qrels:
        coll.qrels = read_qrels(qrels)
    return coll


def load_task(task: str, source: str | os.PathLike[str] | None = None, revision: str | None = None) -> Collection:
    """Load an R2MED task by name.

    ``source`` is ``None``/``"hub"`` for the Hugging Face hub (through the standard HF cache, at
    the task's pinned commit unless ``revision`` -- ``main``, a commit, or ``TASK=REV`` pairs --
    says otherwise), a folder holding one sub-folder per task (``<source>/<Task>/corpus.jsonl``),
    or one collection folder. ``"demo"`` loads the built-in demo collection.
    """
    from ..tasks import get_task

    if task == "demo" or source == "demo":
        return load_demo()
    if source is None or str(source) == "hub":
        from .hub import load_from_hub

        return load_from_hub(get_task(task).name, revision=revision)
    root = Path(source)
    for candidate in (root / task, root / get_task(task).name):
        if candidate.is_dir():
            return load_folder(candidate, name=get_task(task).name)
    return load_folder(root, name=task)


def load_demo() -> Collection:
    """The built-in demo collection (package data): short medical passages with judgments."""
    from importlib import resources

    root = resources.files("r2med").joinpath("demo_data")
    with resources.as_file(root) as path:
        coll = load_r2med_folder(Path(path), name="demo")
    coll.source = "built-in demo collection"
    return coll
