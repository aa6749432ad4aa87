"""Precomputed expansions: ``<method>/<llm>/query_with_hydoc.jsonl`` from a file, a folder or the hub.

An expansion file has one record per query: ``{"id", "text", "hy_doc", ...}`` (R2MED's
layout).  :func:`load_expansions` finds it for a collection -- an explicit file, an
expansion folder (``DIR/<task>/<method>/<llm>/`` or ``DIR/<method>/<llm>/``), the files
found beside a local collection's data (``Collection.expansion_files``), or the hub config
``<method>`` split ``<llm>`` of the task's repo, at the commit the task's data came from (verified against its
content hash, as every hub file) -- and checks that every query has one.

:class:`ExpansionQueries` is ``r2med evaluate``'s ``QueryBuilder``: ``(collection, retriever
family) -> {qid: query text or (query, expansion)}`` under the paper's combination rule.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.benchmarks import Benchmark, benchmark, benchmark_of
from ..data.collection import Collection
from ..data.files import field_id, iter_jsonl
from ..data.hub import expansion_path, snapshot_commit
from ..data.loaders import EXPANSION_FILE
from ..errors import DataError, OptionError, R2MedError
from ..expansion_name import ExpansionName
from ..infra.containment import task_folder_name
from ..infra.home import fingerprint, read_json
from ..infra.json_shapes import as_object
from ..retrieval.base import QueryText
from ..runs.record import ExpansionRecord
from .combine import check_method, combine
from .reasoning import ReasoningQueries
from .spec import ExpansionSpec
from .traces import TRACE_FORMATS, normalize_llm

log = logging.getLogger(__name__)

#: The version of the query + expansion combination rules (:mod:`.combine`); part of every result's key.
COMBINATION_RULE = "paper-v1"
#: The stamp (``files``) of an expansion given no local file or folder: :meth:`ExpansionQueries.describe`'s of none
NO_LOCAL_FILES = fingerprint([])


@dataclass
class Expansions:
    """One expansion file in memory: query id -> raw ``hy_doc`` (traces not yet stripped)."""

    method: str
    llm: str
    texts: dict[str, str]
    path: Path

    def __len__(self) -> int:
        return len(self.texts)


def read_expansion_file(path: str | Path, method: str = "", llm: str = "") -> Expansions:
    """Read ``query_with_hydoc.jsonl`` with ``file:line`` errors (missing id/hy_doc, duplicates)."""
    path = Path(path)
    texts: dict[str, str] = {}
    for number, record in iter_jsonl(path):
        qid = field_id(path, number, record, "id")
        if "hy_doc" not in record:
            raise DataError(path, number, "missing field 'hy_doc' (the expansion text)")
        doc = record["hy_doc"]
        if doc is None:
            doc = ""
        if not isinstance(doc, str):
            raise DataError(path, number, f"field 'hy_doc' must be a string, got {type(doc).__name__}")
        if qid in texts:
            raise DataError(path, number, f"duplicate query id {qid!r}")
        texts[qid] = doc
    if not texts:
        raise DataError(path, None, "no records (empty file)")
    method = method or path.parent.parent.name
    llm = llm or path.parent.name
    return Expansions(method=method, llm=llm, texts=texts, path=path)


def local_expansion_file(task: str, method: str, llm: str, folders: Sequence[Path] | None = None) -> Path | None:
    """The ``method:llm`` expansion file of ``task`` in one of ``folders`` (``DIR/<task>/<method>/<llm>/`` -- the
    task's folder named as ``r2med expand`` names it, :func:`~r2med.infra.containment.task_folder_name`:
    ``bright:pony`` is ``bright-pony`` -- or ``DIR/<method>/<llm>/``), if one holds it."""
    rel = Path(method) / llm / EXPANSION_FILE
    for folder in folders or []:
        for cand in (folder / task_folder_name(task) / rel, folder / task / rel, folder / rel):
            if cand.exists():
                return cand
    return None


def _family(collection: Collection) -> Benchmark | None:
    """The family whose hub holds ``collection``'s expansions: its own, else the family a local copy of whose task
    it is (a folder named after an R2MED task), or None."""
    if collection.benchmark is not None:
        return benchmark(collection.benchmark)
    try:
        family = benchmark_of(collection.name)
    except OptionError:
        return None
    return family if family is not None and family.local_copies else None


def find_expansion_file(
    collection: Collection, method: str, llm: str, folders: list[Path] | None = None, revision: str | None = None
) -> Path:
    """Where the ``method:llm`` expansions of ``collection`` are (see the module docstring for the order)."""
    local = local_expansion_file(collection.name, method, llm, folders)
    if local is not None:
        return local
    key = ExpansionName(method, llm)
    if key in collection.expansion_files and collection.revision is None:  # a hub snapshot's: verified below
        return collection.expansion_files[key]
    family = _family(collection)
    hub = family.expansion_file(collection.name, method, llm, collection.revision or revision) if family else None
    if hub is not None:  # from its family's hub, at the commit the task's data came from
        return hub
    found = [name.text for name in sorted(collection.expansion_files)]
    where = ", ".join(str(f) for f in folders or []) or collection.source or collection.name
    raise R2MedError(
        f"no {key.text} expansions for {collection.name} (looked in {where}"
        + (f"; available: {', '.join(found)}" if found else "")
        + "); generate them with `r2med expand` or pass --expansion-file"
    )


def load_expansions(
    collection: Collection,
    method: str,
    llm: str,
    path: str | Path | None = None,
    folders: list[Path] | None = None,
    revision: str | None = None,
) -> Expansions:
    """The expansions for every query of ``collection``; a query without one is a DataError."""
    method, llm = check_method(method), normalize_llm(llm)
    file = Path(path) if path else find_expansion_file(collection, method, llm, folders, revision)
    if not file.exists():
        raise R2MedError(f"{file}: expansion file not found")
    exp = read_expansion_file(file, method, llm)
    missing = [q for q in collection.queries if q not in exp.texts]
    if missing:
        raise DataError(
            file,
            None,
            f"{len(missing)} of {len(collection.queries)} queries of {collection.name} "
            f"have no expansion (first: {missing[0]!r}); is this the right task's file?",
        )
    extra = sum(1 for q in exp.texts if q not in collection.queries)
    if extra:
        log.warning("%s: %d expansion(s) name queries not in %s (ignored)", file, extra, collection.name)
    empty = sum(1 for q in collection.queries if not exp.texts[q].strip())
    if empty:
        log.warning("%s: %d expansion(s) are empty", file, empty)
    return exp


class ExpansionQueries:
    """A ``QueryBuilder`` (:mod:`r2med.jobs.evaluate`): the collection's queries combined with expansions.

    ``ExpansionQueries("hyde", "gpt4")`` looks the file up per collection; ``path`` forces
    one file (one task).  ``trace`` overrides the trace format (default: by LLM name).
    """

    def __init__(
        self,
        method: str,
        llm: str,
        path: str | Path | None = None,
        folders: Sequence[str | Path] | None = None,
        revision: str | None = None,
        trace: str | None = None,
    ):
        self.method, self.llm = check_method(method), normalize_llm(llm)
        self.path = Path(path) if path else None
        self.folders = [Path(f) for f in folders or []]
        self.revision = revision
        if trace is not None and trace not in TRACE_FORMATS:
            raise R2MedError(f"unknown reasoning-trace format {trace!r}; choose from: {', '.join(TRACE_FORMATS)}")
        self.trace = trace
        self.loaded: dict[str, Expansions] = {}

    def hub_expansion(self, task: str) -> ExpansionName | None:
        """Its name when the expansions of the hub task ``task`` will be read from the hub (no file and no
        folder given here holds them), else None: what :func:`r2med.data.check_hub` checks before any download."""
        if self.path is not None or local_expansion_file(task, self.method, self.llm, self.folders) is not None:
            return None
        return ExpansionName(self.method, self.llm)

    @property
    def label(self) -> str:
        """The results folder suffix: ``<method>-<llm>``."""
        return f"{self.method}-{self.llm}"

    def describe(self, collection: Collection | None = None) -> dict[str, str]:
        """What decides the query texts, recorded in results as ``config["expansion"]`` (and keying their reuse):
        the method, the LLM, the trace format (``auto``: by LLM name), the combination rule, a stamp of the
        local files (paths, sizes, modification times) and, once ``collection``'s expansions were loaded,
        the file they came from."""
        stamps = []
        roots = ([self.path] if self.path else []) + self.folders
        for root in roots:
            files = [root] if root.is_file() else sorted(root.glob(f"**/{self.method}/{self.llm}/{EXPANSION_FILE}"))
            stamps += [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.exists()]
        described = {
            "method": self.method,
            "llm": self.llm,
            "trace": self.trace or "auto",
            "rule": COMBINATION_RULE,
            "files": fingerprint(stamps),
        }
        if collection is not None and collection.name in self.loaded:
            described["file"] = str(self.loaded[collection.name].path)
            prompt = Path(self.loaded[collection.name].path).parent / "prompt.json"  # made with --prompt-file
            if prompt.is_file():
                try:
                    described["prompt_sha256"] = str(as_object(read_json(prompt))["sha256"])
                except (ValueError, KeyError, TypeError, OSError):
                    described["prompt_sha256"] = "unreadable prompt.json"
        return described

    def __call__(self, collection: Collection, family: str) -> dict[str, QueryText]:
        exp = load_expansions(collection, self.method, self.llm, self.path, self.folders, self.revision)
        self.loaded[collection.name] = exp
        log.info("%s: %d %s:%s expansions from %s", collection.name, len(exp), self.method, self.llm, exp.path)
        return {
            qid: combine(text, exp.texts[qid], self.method, self.llm, family, self.trace)
            for qid, text in collection.queries.items()
        }


def read_from_hub(described: ExpansionRecord) -> bool:
    """Whether a recorded expansion (``config["expansion"]``, :meth:`ExpansionQueries.describe`) was read from the
    hub: it was given no local file or folder (its ``files`` stamp is that of none) and the file it read, where
    recorded (not before schema 2), is a Hugging Face cache snapshot's -- r2med took the task's file from the hub at
    the commit the data came from (:func:`find_expansion_file`), verified against its content hash as every hub
    file is.  A record without the stamp says nothing of where its file came from: False."""
    file = described.file
    from_cache = file is None or snapshot_commit(file) is not None
    return described.files == NO_LOCAL_FILES and from_cache


def expansion_builder(
    spec: ExpansionSpec | str | None,
    file: str | Path | None = None,
    folder: str | Path | None = None,
    data_dir: str | Path | None = None,
    revision: str | None = None,
    strict: bool = False,
) -> ExpansionQueries | ReasoningQueries:
    """The ``QueryBuilder`` for ``r2med evaluate --expansion/--expansion-file/--expansion-dir`` (checked up front):
    ``reason:<llm>`` is BRIGHT's reasoning query set of that LLM (:mod:`.reasoning`), any other ``METHOD:LLM``
    R2MED's expansions.  ``spec`` is the step's parsed :class:`~.spec.ExpansionSpec` (text from a Python caller
    is parsed here, once).  ``strict``: a reasoning set repeating a query id is refused (else its last row is kept,
    counted in a warning), as ``--strict`` refuses repeats in the task's own files."""
    if isinstance(spec, str):
        spec = ExpansionSpec.of(spec)
    if spec is not None and spec.reasoning:
        if folder is not None:
            raise R2MedError(
                f"--expansion {spec.text}: BRIGHT's reasoning query sets are read from its hub (or one task's file: "
                "--expansion-file); --expansion-dir takes R2MED-layout expansion folders"
            )
        if file is not None and not Path(file).is_file():
            raise R2MedError(f"{file}: expansion file not found")
        return ReasoningQueries(spec.llm, path=file, strict=strict)
    if spec is not None:
        method, llm = spec.method, spec.llm
    elif file:
        path = Path(file)
        method, llm = check_method(path.parent.parent.name), normalize_llm(path.parent.name)
    else:
        raise R2MedError("--expansion-dir needs --expansion METHOD:LLM")
    if file is not None and not Path(file).is_file():
        raise R2MedError(f"{file}: expansion file not found")
    if folder is not None and not Path(folder).is_dir():
        raise R2MedError(f"{folder}: no such expansion folder")
    if file is None and folder is None and data_dir is None:
        expansion_path(method, llm)  # unknown hub split -> one-line error listing the splits
    folders = [Path(f) for f in (folder, data_dir) if f is not None]
    return ExpansionQueries(method, llm, path=file, folders=folders, revision=revision)
