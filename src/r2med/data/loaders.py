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
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

from ..errors import DataError, NotFound, OptionError, R2MedError, did_you_mean_folder
from ..expansion_name import ExpansionName
from ..infra.containment import path_argument
from .benchmarks import benchmark_of
from .collection import Collection
from .files import read_qrels, read_qrels_jsonl, read_qrels_tsv, read_texts

log = logging.getLogger(__name__)

EXPANSION_FILE = "query_with_hydoc.jsonl"
#: The ``source`` results of the built-in demo collection record.
DEMO_SOURCE = "built-in demo collection"


def find_expansion_files(root: Path) -> dict[ExpansionName, Path]:
    """The name (``<method>``, ``<llm>``) -> path of every ``<method>/<llm>/query_with_hydoc.jsonl`` under
    ``root``."""
    found = {}
    for path in sorted(root.glob(f"*/*/{EXPANSION_FILE}")):
        found[ExpansionName(path.parent.parent.name, path.parent.name)] = path
    return found


Split = Literal["test", "dev", "train"]
"""The BEIR splits ``--split`` takes (``qrels/<split>.tsv``)."""
SPLITS: tuple[str, ...] = get_args(Split)
DEFAULT_SPLIT: Split = "test"


def check_split(split: str) -> Split:
    """``split`` if it is one of :data:`SPLITS`, else a one-line error."""
    if split not in SPLITS:
        raise OptionError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    return split  # type: ignore[return-value]


def detect_layout(root: Path) -> Literal["jsonl", "beir"]:
    """A collection folder's layout: ``jsonl`` (``query.jsonl``, ``corpus.jsonl``, ``qrels.jsonl``: the layout of
    R2MED's hub data) or ``beir`` (``queries.jsonl``, ``corpus.jsonl``, ``qrels/<split>.tsv``)."""
    if (root / "query.jsonl").exists():
        return "jsonl"
    if (root / "queries.jsonl").exists() or (root / "qrels").is_dir():
        return "beir"
    raise DataError(
        root,
        None,
        "not a collection folder: expected query.jsonl (R2MED layout) or queries.jsonl + qrels/ (BEIR layout)",
    )


def describe_layout(root: Path) -> str:
    """What :func:`detect_layout` guessed and why, for errors: ``BEIR layout (queries.jsonl found)``."""
    if detect_layout(root) == "jsonl":
        return "R2MED layout (query.jsonl found)"
    return "BEIR layout (queries.jsonl found)" if (root / "queries.jsonl").exists() else "BEIR layout (qrels/ found)"


@contextmanager
def layout_context(root: Path) -> Iterator[None]:
    """Data errors raised inside say which layout the folder was read as (``BEIR layout (queries.jsonl
    found): .../corpus.jsonl:1: missing field '_id'``): a file read in the wrong layout explains itself."""
    try:
        yield
    except DataError as exc:
        if exc.context is not None:
            raise
        raise type(exc)(exc.path, exc.line, exc.message, context=describe_layout(root)) from None


def beir_splits(root: Path) -> list[str]:
    """The splits a BEIR folder has judgments for (``qrels/<split>.tsv``)."""
    return sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []


def _check_split_exists(root: Path, split: str) -> Path:
    path = root / "qrels" / f"{split}.tsv"
    if not path.is_file():
        have = beir_splits(root)
        listed = f"it has: {', '.join(have)}" if have else "it has no qrels/<split>.tsv"
        raise DataError(path, None, f"no judgments for --split {split}; {listed}", context=describe_layout(root))
    return path


def _check_one_split(root: Path, split: str) -> None:
    if split != DEFAULT_SPLIT:
        raise R2MedError(
            f"--split {split}: {root} is in {describe_layout(root)}, which has one split "
            "(qrels.jsonl); --split chooses among a BEIR folder's qrels/<split>.tsv"
        )


def qrels_file(root: str | os.PathLike[str], split: str = DEFAULT_SPLIT) -> Path:
    """The judgments file of a collection folder: ``qrels.jsonl`` (R2MED layout) or ``qrels/<split>.tsv`` (BEIR)."""
    root = Path(root)
    if detect_layout(root) == "beir":
        return _check_split_exists(root, split)
    _check_one_split(root, split)
    path = root / "qrels.jsonl"
    if not path.is_file():
        raise DataError(path, None, "no such judgments file in this collection folder", context=describe_layout(root))
    return path


def load_r2med_folder(
    root: str | os.PathLike[str], name: str | None = None, source: str | None = None, strict: bool = False
) -> Collection:
    root = Path(root)
    return load_r2med_files(
        root / "corpus.jsonl",
        root / "query.jsonl",
        root / "qrels.jsonl",
        name or root.name,
        source=source,
        strict=strict,
    )


def load_r2med_files(
    corpus_path: Path,
    query_path: Path,
    qrels_path: Path,
    name: str,
    source: str | None = None,
    revision: str | None = None,
    strict: bool = False,
) -> Collection:
    """A collection from the three R2MED files (expansion files are looked for beside ``query.jsonl``).

    ``source`` is recorded in results (default: the folder of ``query.jsonl``, absolute, so it is found
    from any directory); ``revision`` is the hub commit the files came from; ``strict``: a repeated id or
    judgment is an error (default: the last one is kept, as the paper's loader).
    """
    repeats: list[str] = []
    corpus, _ = read_texts(corpus_path, repeats=repeats, strict=strict, spaces=True)
    queries, meta = read_texts(query_path, keep_meta=True, strict=strict)
    qrels = read_qrels_jsonl(qrels_path, strict=strict)
    return Collection(
        name=name,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        corpus_repeats=tuple(repeats),
        source=source or str(query_path.parent.absolute()),
        query_meta=meta,
        expansion_files=find_expansion_files(query_path.parent),
        revision=revision,
    )


def load_r2med_judgments(
    query_path: Path, qrels_path: Path, name: str, source: str, revision: str | None = None, strict: bool = False
) -> Collection:
    """A collection of the R2MED queries and judgments files only (no corpus read: ``corpus_read`` False), for
    commands that score runs made elsewhere (``import``, ``score``)."""
    queries, meta = read_texts(query_path, keep_meta=True, strict=strict)
    qrels = read_qrels_jsonl(qrels_path, strict=strict)
    return Collection(
        name=name,
        corpus={},
        queries=queries,
        qrels=qrels,
        source=source,
        query_meta=meta,
        revision=revision,
        corpus_read=False,
    )


def load_beir_folder(
    root: str | os.PathLike[str], name: str | None = None, split: str = DEFAULT_SPLIT, strict: bool = False
) -> Collection:
    """A BEIR folder's corpus, and the queries and judgments of ``split`` (``qrels/<split>.tsv``)."""
    root = Path(root)
    split = check_split(split)
    qrels_path = _check_split_exists(root, split)
    repeats: list[str] = []
    with layout_context(root):
        corpus, _ = read_texts(
            root / "corpus.jsonl", id_key="_id", title_key="title", repeats=repeats, strict=strict, spaces=True
        )
        queries, meta = read_texts(root / "queries.jsonl", id_key="_id", keep_meta=True, strict=strict)
        qrels = read_qrels_tsv(qrels_path, strict=strict)
    # BEIR ships all splits' queries in one file: keep those judged in this split.
    queries = {q: t for q, t in queries.items() if q in qrels} or queries
    meta = {q: m for q, m in meta.items() if q in queries}
    return Collection(
        name=name or root.name,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        source=str(root.absolute()),
        query_meta=meta,
        split=split,
        corpus_repeats=tuple(repeats),
    )


def _check_local_name(name: str, root: Path) -> None:
    """A local collection may not take the name of a benchmark's task that is read from its hub only (BRIGHT's
    ``bright:pony``): its results would stand in that task's column of a report as if they were the hub task's.  A
    family whose tasks have local copies (R2MED's ``Biology`` folder) keeps the name: its data is checked by counts
    before a figure grades it."""
    try:
        family = benchmark_of(name)
    except R2MedError:  # a name like a family's that is none of its tasks: a local collection's own name
        return
    if family is not None and not family.local_copies:
        raise OptionError(
            f"{root}: a local collection named {name!r}, {family.title}'s task {family.canonical(name)} -- whose "
            f"data is read from its hub only; rename the folder (or pass another name)"
        )


def load_folder(
    root: str | os.PathLike[str],
    name: str | None = None,
    qrels: str | None = None,
    split: str = DEFAULT_SPLIT,
    strict: bool = False,
) -> Collection:
    """Load a collection folder in R2MED or BEIR layout (detected); ``qrels`` overrides the judgments file.

    ``split`` chooses a BEIR folder's judgments (``qrels/<split>.tsv``); an R2MED folder has one split,
    so anything but ``test`` is an error there.  Data errors name the layout guessed.  ``strict``: a
    repeated id or judgment is a ``file:line`` error (default: the last one is kept, as the paper's loader).
    """
    root = path_argument(root, "collection folder")
    split = check_split(split)
    if not root.is_dir():
        raise NotFound(f"{root}: no such folder{did_you_mean_folder(root)}")
    if root.name in ("", ".", ".."):  # name the collection after the real folder
        root = Path(os.path.normpath(root.absolute()))
    _check_local_name(name or root.name, root)
    layout = detect_layout(root)
    if layout == "jsonl":
        _check_one_split(root, split)
        with layout_context(root):
            coll = load_r2med_folder(root, name, strict=strict)
    else:
        coll = load_beir_folder(root, name, split, strict=strict)
    return coll.replace(qrels=read_qrels(qrels, strict=strict)) if qrels else coll


def load_demo(strict: bool = False) -> Collection:
    """The built-in demo collection (package data): short medical passages with judgments."""
    root = resources.files("r2med").joinpath("demo_data")
    with resources.as_file(root) as path:
        return load_r2med_folder(Path(path), name="demo", source=DEMO_SOURCE, strict=strict)
