"""The one way from task names and folders to collections.

A :class:`TaskRef` names a task and where its data is: the Hugging Face hub (at a ``--revision``
spec), a local folder, or the built-in demo.  Every command finds its collections here:

* :func:`resolve` -- the tasks a command runs on (``evaluate``, ``expand``, ``encode``...):
  ``--data-dir`` as one collection folder (its name is the task), a folder of collection folders
  (every one, or those ``--tasks`` names), or (no ``--data-dir``) benchmark tasks from the hub (R2MED's and
  BRIGHT's: :mod:`.benchmarks`; ``--long-documents`` for BRIGHT's long-document setting), each with the
  judgments file ``--qrels`` names in place of its own;
* :func:`locate` -- one task that results were filed under (``rerank``, ``fuse``, report texts,
  ``reproduce``): ``--data-dir`` when given, else the built-in demo, the source folder a run
  recorded, or the hub (benchmark tasks, at the recorded commit unless ``--revision`` says otherwise);
* :func:`check_hub` -- before a command downloads anything: every hub file its tasks need (their data files --
  only those holding queries and judgments when no documents are needed -- and the expansion files it will read
  from the hub, each family saying which: :meth:`r2med.data.benchmarks.Benchmark.hub_request`) found at their
  revisions, the refs pinned to the commits those resolved to, or one line refusing what is missing, with the
  way forward;
* :func:`load_task` -- the Python API's loader by name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol, get_args, runtime_checkable

from ..errors import PATH_CHARS, DataError, OptionError, R2MedError, did_you_mean, did_you_mean_folder, shown
from ..expansion_name import ExpansionName
from ..infra.containment import check_input_file, path_argument
from ..infra.file_hash import file_hash
from .benchmarks import benchmark_of, benchmarks
from .collection import Collection, JudgmentsFile
from .files import read_qrels
from .hub import FilesMissing, FilesNotCached, Problem, parse_revision, refusal, resolve_files
from .loaders import DEFAULT_SPLIT, DEMO_SOURCE, check_split, load_demo, load_folder
from .names import canonical_task, is_hub_task, parse_tasks, task_parts
from .tasks import TASK_NAMES, get_task

HUB = "hub"
DEMO = "demo"


#: Where a task's data is: the Hugging Face hub, the built-in demo, or a local folder.
SourceKind = Literal["hub", "demo", "folder"]
SOURCE_KINDS: tuple[SourceKind, ...] = get_args(SourceKind)


@dataclass(frozen=True)
class RecordedSource:
    """Where a finished run's data came from, as its ``metrics.json`` records it: the ``source`` it read (a
    folder, ``hub`` or the demo's), the hub commit (``revision``) and the BEIR ``split``; None: not recorded.
    What :func:`locate` and :func:`require` read of a run (a record makes one:
    :meth:`r2med.runs.record.RunRecord.recorded_source`)."""

    source: str | None = None
    revision: str | None = None
    split: str | None = None


@dataclass(frozen=True)
class TaskRef:
    """A task and where its data is: ``kind`` is ``"hub"``, ``"demo"`` or ``"folder"`` (then ``folder`` is the
    folder); ``split`` the BEIR split of a folder (hub and demo tasks have one, ``test``).  Made with
    :meth:`on_hub`, :meth:`the_demo` or :meth:`in_folder`."""

    name: str
    kind: SourceKind
    folder: Path | None = None
    revision: str | None = None  # hub tasks: the --revision spec (None: the pinned commit)
    split: str = DEFAULT_SPLIT
    strict: bool = False  # refuse repeated ids and judgments (``--strict``); it travels with the ref to workers
    qrels: Path | None = None  # judgments read from this file in place of the task's own (``--qrels``)

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise R2MedError(f"task {self.name!r}: unknown source kind {self.kind!r}; choose from {SOURCE_KINDS}")
        if (self.kind == "folder") != (self.folder is not None):
            raise R2MedError(f"task {self.name!r}: a folder source needs its folder, and only it has one")

    @classmethod
    def on_hub(cls, name: str, revision: str | None = None, strict: bool = False) -> TaskRef:
        """A benchmark's hub task (R2MED's ``Biology``, BRIGHT's ``bright:biology``), in r2med's spelling."""
        return cls(canonical_task(name), "hub", revision=revision, strict=strict)

    @classmethod
    def the_demo(cls, strict: bool = False) -> TaskRef:
        return cls(DEMO, "demo", strict=strict)

    @classmethod
    def in_folder(
        cls, name: str, folder: str | os.PathLike[str], split: str = DEFAULT_SPLIT, strict: bool = False
    ) -> TaskRef:
        return cls(name, "folder", Path(folder), split=split, strict=strict)

    @property
    def source(self) -> str:
        """Where the data is, as recorded: ``hub``, ``demo`` or the folder."""
        return str(self.folder) if self.folder is not None else self.kind

    def load(self, corpus: bool = True) -> Collection:
        """The collection (a hub task: through its family); ``corpus``: False reads a hub task's queries and
        judgments only (no documents downloaded; local folders are read whole).  With ``qrels``, that file's
        judgments replace the task's own (recorded by hash: :class:`~r2med.data.collection.JudgmentsFile`)."""
        if self.kind == "demo":
            collection = load_demo(strict=self.strict)
        elif self.kind == "hub":
            family = benchmark_of(self.name)
            assert family is not None  # on_hub checked the name
            collection = family.load(self.name, revision=self.revision, strict=self.strict, corpus=corpus)
        else:
            assert self.folder is not None
            collection = load_folder(self.folder, name=self.name, split=self.split, strict=self.strict)
        return with_judgments(collection, self.qrels, self.strict) if self.qrels is not None else collection


def with_judgments(collection: Collection, qrels: str | os.PathLike[str], strict: bool = False) -> Collection:
    """``collection`` judged by the file ``qrels`` (TREC, R2MED JSONL or BEIR TSV qrels) in place of its own, the
    file recorded by path and sha256 (every result made on it names it; none is graded against published rows)."""

    path = Path(qrels)
    judged = read_qrels(path, strict=strict)
    for qid, docs in judged.items():  # as the examples' reader refuses a gold id that is also excluded
        both = sorted(d for d, grade in docs.items() if grade > 0 and d in collection.exclusions.get(qid))
        if both:
            raise DataError(
                path,
                None,
                f"query {shown(qid)}: {shown(both[0])} is judged relevant, but the protocol of {collection.name} "
                "excludes it for that query (its excluded_ids): no run can retrieve it",
            )
    digest = file_hash(path, "sha256")  # a stream (--qrels <(...)) is what the reader read: read once
    return collection.replace(qrels=judged, judgments=JudgmentsFile(str(path.absolute()), digest))


def is_collection(folder: Path) -> bool:
    """A folder holding a collection (``corpus.jsonl``, R2MED or BEIR layout)."""
    return (folder / "corpus.jsonl").is_file()


def _root(data_dir: str | os.PathLike[str]) -> Path:
    # absolute: the folder is recorded as the results' source, usable from anywhere
    return Path(os.path.normpath(path_argument(data_dir, "--data-dir").expanduser().absolute()))


def _asked(tasks: str | Iterable[str] | None) -> list[str] | None:
    """The names in a ``--tasks`` spec as given (None for ``all``)."""
    if isinstance(tasks, str) and tasks.strip().lower() == "all":
        return None
    if isinstance(tasks, str):  # ``r2med`` names a folder here
        return task_parts(tasks.split(","))
    return task_parts(tasks)


def collection_folders(root: Path) -> list[Path]:
    """The collection sub-folders of ``root``: R2MED's tasks first in the paper's order, then the others by name."""
    found = sorted((c for c in root.iterdir() if c.is_dir() and is_collection(c)), key=lambda c: c.name)
    order = {name.lower(): i for i, name in enumerate(TASK_NAMES)}
    return sorted(found, key=lambda c: (order.get(c.name.lower(), len(order)), c.name))


def resolve(
    tasks: str | Iterable[str] | None = "all",
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    split: str = DEFAULT_SPLIT,
    strict: bool = False,
    long_documents: bool = False,
    qrels: str | os.PathLike[str] | None = None,
) -> list[TaskRef]:
    """The tasks to run, checked before anything is loaded.

    * ``data_dir`` one collection folder: that collection (its name is the task); ``tasks`` other than
      ``all`` or its own name is an error, not ignored;
    * ``data_dir`` a folder of collection folders: every one (``tasks`` ``all``), or those ``tasks`` names
      (matched to the sub-folder names, case aside; an unknown name is an error listing them);
    * no ``data_dir``: benchmark tasks from the hub (at ``revision``): ``all`` is R2MED's 8, ``bright`` BRIGHT's
      12 (:func:`r2med.data.benchmarks.parse_tasks`); ``long_documents``: BRIGHT's long-document settings.

    ``split``: the BEIR split of the folders (``qrels/<split>.tsv``); the hub's tasks have only ``test``.
    ``strict``: the refs' collections refuse repeated ids and judgments when loaded.  ``qrels``: a judgments file
    for the one task named (checked here: it exists; its judgments replace the task's own when loaded).
    """
    parse_revision(revision)
    split = check_split(split)
    refs = _refs(tasks, data_dir, revision, split, strict, long_documents)
    if not refs:  # e.g. --tasks "," (only separators): never an empty table, never a traceback further on
        given = tasks if isinstance(tasks, str) else ",".join(map(str, tasks or ()))
        raise R2MedError(f"--tasks {shown(given, PATH_CHARS)} names no task; name one, or pass all")
    if qrels is None:
        return refs

    check_input_file(Path(qrels), "--qrels")
    if len(refs) != 1:
        raise R2MedError(
            f"--qrels {shown(str(qrels), PATH_CHARS)} holds the judgments of one task, but the command runs on "
            f"{len(refs)} ({', '.join(r.name for r in refs[:4])}{', ...' if len(refs) > 4 else ''}): name one "
            "with --tasks"
        )
    return [replace(refs[0], qrels=Path(os.path.abspath(qrels)))]


def _refs(
    tasks: str | Iterable[str] | None,
    data_dir: str | os.PathLike[str] | None,
    revision: str | None,
    split: str,
    strict: bool,
    long_documents: bool,
) -> list[TaskRef]:
    if data_dir is None:
        if split != DEFAULT_SPLIT:
            raise R2MedError(
                f"--split {split}: the hub tasks (R2MED's and BRIGHT's) have one split (test); --split chooses among "
                "the qrels/<split>.tsv of BEIR folders given with --data-dir"
            )
        return [TaskRef.on_hub(name, revision, strict=strict) for name in parse_tasks(tasks, long_documents)]
    if long_documents:
        raise R2MedError(
            "--long-documents is BRIGHT's long-document setting of its hub tasks; with --data-dir, pass the "
            "folder of the collection you mean"
        )
    root = _root(data_dir)
    asked = _asked(tasks)
    if is_collection(root):
        other = [t for t in asked or [] if t.lower() != root.name.lower()]
        if other:
            raise R2MedError(
                f"--data-dir {data_dir} is one collection ({root.name}); --tasks {','.join(other)} "
                "does not name it: pass the folder holding the collections, or leave --tasks out"
            )
        return [TaskRef.in_folder(root.name, root, split=split, strict=strict)]
    if not root.is_dir():
        raise R2MedError(f"--data-dir {data_dir}: no such folder{did_you_mean_folder(Path(data_dir).expanduser())}")
    folders = collection_folders(root)
    if not folders:
        raise R2MedError(
            f"--data-dir {data_dir}: not a collection folder (no corpus.jsonl) and holds none "
            "(expected <data-dir>/corpus.jsonl or <data-dir>/<collection>/corpus.jsonl)"
        )
    if asked is None:
        return [TaskRef.in_folder(_task_name(f), f, split=split, strict=strict) for f in folders]
    by_name = {f.name.lower(): f for f in folders}
    refs = []
    for name in asked:
        folder = by_name.get(name.lower())
        if folder is None:
            raise R2MedError(
                f"--tasks {name}: no such collection in --data-dir {data_dir}"
                f"{did_you_mean(name, [f.name for f in folders])}; "
                f"it holds: {', '.join(f.name for f in folders)}"
            )
        refs.append(TaskRef.in_folder(_task_name(folder), folder, split=split, strict=strict))
    return refs


@runtime_checkable
class HubExpansions(Protocol):
    """What reads expansions from the hub for a command (``r2med evaluate``'s expansion query builder): which
    expansion it will download for a task, or None where a local file serves it."""

    def hub_expansion(self, task: str) -> ExpansionName | None: ...


def check_hub(refs: Sequence[TaskRef], readers: Iterable[object] = (), corpus: bool = True) -> list[TaskRef]:
    """``refs`` with their hub tasks checked before anything is downloaded: each task's data files (``corpus``:
    False, those holding queries and judgments only) and the expansion files ``readers`` (:class:`HubExpansions`;
    anything else is skipped) will take from the hub are found at the task's revision (its family's
    :meth:`~r2med.data.benchmarks.Benchmark.hub_request`), and each hub ref comes back at the commit that
    revision resolved to, so every later download (and every Ray worker) reads that one commit.
    Files missing at any task's revision are one line for the whole command (:func:`r2med.data.hub.refusal`),
    raised before a byte is downloaded; folder and demo refs pass unchanged."""
    sources = [r for r in readers if isinstance(r, HubExpansions)]
    hub_refs = [r for r in refs if r.kind == "hub"]
    checked: dict[int, TaskRef] = {}
    problems: list[Problem] = []
    for ref in hub_refs:
        family = benchmark_of(ref.name)
        assert family is not None  # TaskRef.on_hub checked the name
        expansions = list(dict.fromkeys(e for e in (s.hub_expansion(ref.name) for s in sources) if e is not None))
        request = family.hub_request(ref.name, ref.revision, expansions, corpus=corpus)
        try:
            found = resolve_files(request.repo_id, request.paths, request.revision)
        except (FilesMissing, FilesNotCached) as exc:
            problems.append((ref.name, request.why, exc))
            continue
        checked[id(ref)] = replace(ref, revision=found.commit)
    if problems:
        raise refusal(problems, hub_refs[0].revision, [r.name for r in hub_refs])
    return [checked.get(id(r), r) for r in refs]


def _task_name(folder: Path) -> str:
    """A collection sub-folder's task name: R2MED's spelling for its tasks (``biology`` -> ``Biology``)."""
    return get_task(folder.name).name if folder.name.lower() in _lowered() else folder.name


def locate(
    task: str,
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    *,
    recorded: RecordedSource | None = None,
    hub: bool = True,
    alone: bool = False,
    strict: bool = False,
) -> TaskRef | None:
    """Where the collection of ``task`` (a name results are filed under) is, or None.

    With ``data_dir``: the folder ``<data_dir>/<task>``, or ``data_dir`` itself when it is one collection
    folder named ``task`` (any name when ``alone``: the only task asked for).  Then the built-in
    demo (``task == "demo"`` or a recorded demo source); without ``data_dir``, the folder a run
    recorded as its ``source`` (``recorded``: what its metrics.json says of its data); last, when ``hub`` allows, the
    hub for R2MED's tasks, at ``revision`` or else the commit the run recorded.  A folder is read at
    the BEIR split the run recorded (``split``; else ``test``).  ``strict``: as in :func:`resolve`.
    """
    recorded = recorded or RecordedSource()
    split = recorded.split if recorded.split is not None else DEFAULT_SPLIT
    if data_dir is not None:
        root = _root(data_dir)
        names = [task] + ([get_task(task).name] if task.lower() in _lowered() else [])
        for name in names:
            if (root / name).is_dir():
                return TaskRef.in_folder(task, root / name, split=split, strict=strict)
        if is_collection(root) and (alone or root.name == task):
            return TaskRef.in_folder(task, root, split=split, strict=strict)
    source = recorded.source or ""
    if task == DEMO or source == DEMO_SOURCE:
        return TaskRef.the_demo(strict=strict)
    if data_dir is None and source and Path(source).is_dir():
        return TaskRef.in_folder(task, source, split=split, strict=strict)
    if hub and is_hub_task(task):
        return TaskRef.on_hub(task, revision or recorded.revision, strict=strict)
    return None


def _lowered() -> set[str]:
    return {t.lower() for t in TASK_NAMES}


def task_filter(spec: str | None) -> set[str] | None:
    """``--tasks`` as a filter over tasks found in run folders: None for ``all``, else the lowercased names
    (a benchmark task in r2med's spelling -- ``bright:earth-science`` is ``bright:earth_science`` -- and a family's
    word for its tasks expanded: ``r2med``, ``bright``, ``bright:long``)."""
    if not spec or spec.strip().lower() == "all":
        return None

    found: set[str] = set()
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        group = next((b.aliases()[part.lower()] for b in benchmarks() if part.lower() in b.aliases()), None)
        if group is not None:
            found |= {t.lower() for t in group}
            continue
        try:
            found.add(canonical_task(part).lower())
        except OptionError:
            found.add(part.lower())  # a local collection's name
    return found


def load_task(
    task: str,
    source: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    split: str = DEFAULT_SPLIT,
    strict: bool = False,
) -> Collection:
    """Load a benchmark task (R2MED's ``Biology``, BRIGHT's ``bright:biology``) by name.

    ``source`` is ``None``/``"hub"`` for the Hugging Face hub (through the standard HF cache, at
    the task's pinned commit unless ``revision`` -- ``main``, a commit, or ``TASK=REV`` pairs --
    says otherwise), a folder holding one sub-folder per task (``<source>/<Task>/corpus.jsonl``),
    or one collection folder. ``"demo"`` loads the built-in demo collection.  ``split``: a BEIR
    folder's split (``qrels/<split>.tsv``).  ``strict``: refuse repeated ids and judgments.
    """
    if not isinstance(task, str) or not task:
        raise OptionError(f"load_task: expected a task name (text: Biology, bright:pony), got {shown(task)}")
    if task == DEMO or source == DEMO:
        return load_demo(strict=strict)
    if source is None or str(source) == HUB:
        return TaskRef.on_hub(task, revision, strict=strict).load()
    root = _root(source)
    name = get_task(task).name if task.lower() in _lowered() else task
    for folder in (root / task, root / name):
        if folder.is_dir():
            return load_folder(folder, name=name, split=split, strict=strict)
    return load_folder(
        root, name=task, split=split, strict=strict
    )  # one collection folder (or the reader's error naming it)


def require(
    ref: TaskRef | None,
    task: str,
    recorded: RecordedSource | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> TaskRef:
    """``ref``, or a one-line error saying that the collection of ``task`` cannot be found: which folder was
    searched (``data_dir``, as :func:`locate` was given it) and whether the run's recorded source exists."""
    if ref is not None:
        return ref
    source = (recorded.source if recorded is not None else None) or ""
    exists = bool(source) and source not in (HUB, DEMO_SOURCE) and Path(source).is_dir()
    if data_dir is not None:
        where = (
            f"cannot find the collection of task {shown(task)} in --data-dir {shown(str(data_dir), PATH_CHARS)} "
            f"(searched {shown(str(Path(data_dir) / task), PATH_CHARS)} and the folder itself)"
        )
        if exists:
            raise R2MedError(
                f"{where}; the run's recorded source {shown(source, PATH_CHARS)} exists: "
                "leave out --data-dir to use it, or pass the folder holding it"
            )
        gone = f"; the run's recorded source {shown(source, PATH_CHARS)} is gone too" if source else ""
        raise R2MedError(f"{where}{gone}; pass the --data-dir that holds it")
    where = f" (recorded source {shown(source, PATH_CHARS)} is gone)" if source else ""
    raise R2MedError(f"cannot find the collection of task {shown(task)}{where}; pass --data-dir")
