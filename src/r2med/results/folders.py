"""Run folders: the one folder model, what a finished task folder holds, how a job finishes one, when one is reused.

The folder model: ``OUT/<system>/<task>/``.  ``OUT`` is a *results root* (every writing command's
``--out``); a *system folder* (``OUT/bm25``) holds one *task folder* per task (``run.trec``,
``metrics.json``, ``r2med_results.json``; written by :func:`r2med.runs.run.write_task_results`, atomically).

* :func:`find_runs` -- the one resolver for every command that reads runs: each path is a results
  root (all systems in it), a system folder or a task folder, and a line says which it was;
* :func:`finish_task` -- the one way a job (evaluate, rerank, fuse) ends a task: it scores the run
  *as written* (scores rounded as ``run.trec`` stores them), so ``metrics.json`` always equals a
  re-score of ``run.trec``, and writes the folder;
* :func:`reuse` -- a finished folder made with the same configuration on the same data (corpus
  fingerprint and hub revision) is read back instead of recomputed, so an interrupted job resumes;
* :func:`read_run_folder` -- the finished task folders of a system folder (:class:`TaskFolder`);
* :func:`find_systems` -- the systems of a report, each matched to the published configuration it
  reproduces (:func:`r2med.results.grading.grade_system`: its recorded spec, field by field).
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy
import scipy

from ..data import Collection
from ..data.benchmarks import protocol_of
from ..data.bright import names
from ..data.loaders import DEFAULT_SPLIT
from ..data.tasks import TASK_NAMES
from ..errors import NothingToScore, R2MedError, did_you_mean_folder
from ..evaluation.metrics import Metrics
from ..evaluation.tie_data import CutTies
from ..evaluation.ties import TieRule, evaluate_with_ties, listed_order
from ..infra.containment import SystemFolder, as_system_folder, task_folder_name
from ..infra.home import fingerprint
from ..infra.json_shapes import json_object
from ..measures import DEFAULT_MEASURES, HEADLINE, Family, Measure
from ..retrieval.registry import RETRIEVERS
from ..runs.record import METRICS_FILE, JsonObject, RecordedConfig, RunData, RunRecord, read_record, same_config
from ..runs.run import RUN_FILE, Run, as_written, read_cut_ties, read_trec, write_task_results
from ..typed.parse import Origin, SpecError, parse
from ..version import __version__
from .grading import data_problem, grade_system, precision_change, published_label
from .published import PublishedKey

log = logging.getLogger(__name__)


@dataclass
class TaskResult:
    """What a job did for one task: its measures, where it wrote them, and the configuration."""

    task: str
    metrics: Metrics
    folder: Path | None
    timing: dict[str, float] = field(default_factory=dict)
    reused: bool = False
    run: Run | None = None
    #: the configuration as ``metrics.json`` records it (None: a result made by hand, of no recorded step)
    config: RecordedConfig | None = None
    #: which data it ran on, as ``metrics.json`` records it, typed (``data`` counts, ``source``, ``revision``,
    #: fingerprints, the family protocol, the expansion read): what :func:`r2med.results.grading.data_problem` grades
    data: RunData = field(default_factory=RunData)
    #: what its model ran with, as ``metrics.json``'s ``encoding`` records it (the weights' precision, the one its
    #: checkpoint declares...): what :func:`r2med.results.grading.grade` reads of a row loaded with ``auto``
    #: (open JSON: each encoder records its own facts)
    encoding: JsonObject = field(default_factory=dict)

    @property
    def headline(self) -> float:
        """nDCG@10 when computed, else the first measure."""
        aggregate = self.metrics.aggregate
        return aggregate[HEADLINE.trec] if HEADLINE.trec in aggregate else aggregate[self.metrics.measures[0].trec]

    def __repr__(self) -> str:
        """A summary (a notebook shows this): the task, its headline measure, the queries, where it was written;
        never the whole run (``.run``) or configuration (``.config``)."""
        aggregate = self.metrics.aggregate
        measure = (
            HEADLINE if HEADLINE.trec in aggregate else (self.metrics.measures[0] if self.metrics.measures else None)
        )
        value = f", {measure.label}={aggregate[measure.trec]:.4f}" if measure is not None else ""
        ranked = f", {len(self.run)} ranked queries" if self.run is not None else ""
        where = f", folder={str(self.folder)!r}" if self.folder is not None else ""
        return (
            f"TaskResult(task={self.task!r}{value}, {len(self.metrics.per_query)} scored queries{ranked}{where}"
            f"{', reused' if self.reused else ''})"
        )


@dataclass
class SystemResults:
    """What a writing command made of one system: its name, its folder (``OUT/<name>``) and each task's result."""

    name: str
    folder: Path
    results: list[TaskResult]


def stored_measures(asked: Iterable[Measure] = (), base: Sequence[Measure] | None = None) -> tuple[Measure, ...]:
    """What ``metrics.json`` stores: the task's protocol's measures (``base``; default: R2MED's set), then any other
    asked for (``-m`` only adds; it chooses the columns a command prints, never what a later ``report``/``compare``
    can use)."""
    return tuple(dict.fromkeys([*(DEFAULT_MEASURES if base is None else base), *asked]))


def task_measures(collection: Collection, asked: Iterable[Measure] = ()) -> tuple[Measure, ...]:
    """What ``metrics.json`` stores for a task of ``collection``: its protocol's measures plus those asked for."""
    return stored_measures(asked, protocol_of(collection).measures)


def versions() -> dict[str, str]:
    out = {
        "r2med": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
    }
    with contextlib.suppress(PackageNotFoundError):  # pragma: no cover - metadata missing in odd installs
        out["pytrec_eval"] = version("pytrec-eval-terrier")
    return out


def judgments_fingerprint(collection: Collection) -> str:
    """Content hash of a collection's queries (ids and texts), judgments and exclusions (where it has any: an
    R2MED task's hash is the same as before exclusions existed): with the corpus fingerprint, what says two runs
    were made on the same data."""
    parts: list[object] = [
        sorted(collection.queries.items()),
        sorted((q, sorted(docs.items())) for q, docs in collection.qrels.items()),
    ]
    if collection.exclusions:
        parts.append(collection.exclusions.fingerprint)
    return fingerprint("judgments", *parts)


def data_record(collection: Collection) -> JsonObject:
    """What ``metrics.json`` records about the data a run was made on (beside ``config``)."""
    return {
        "data": {
            "queries": len(collection.queries),
            "docs": len(collection.corpus) if collection.corpus_read else None,  # None: read for its judgments only
            "judged_queries": len(collection.qrels),
            "judgments": sum(len(docs) for docs in collection.qrels.values()),
        },
        "dataset_fingerprint": collection.dataset_fingerprint,
        "judgments_fingerprint": judgments_fingerprint(collection),
        "source": collection.source,
        "revision": collection.revision,
        **({"split": collection.split} if collection.split is not None else {}),
    }


def run_data(collection: Collection, config: RecordedConfig | None) -> RunData:
    """Which data a job's run on ``collection`` read, typed as its ``metrics.json`` records it (:func:`data_record`,
    the family's ``protocol``, ``config``'s ``expansion``): what a read-back record's
    :meth:`~r2med.runs.record.RunRecord.run_data` holds."""
    recorded = {**data_record(collection), "protocol": protocol_of(collection).record(collection)}
    return RunData.model_validate({**recorded, "expansion": config.expansion if config is not None else None})


def metrics_payload(
    collection: Collection,
    name: str,
    config: Mapping[str, object],
    metrics: Metrics,
    timing: Mapping[str, float],
    count_missing: bool = False,
    encoding: Mapping[str, object] | None = None,
    empty: Sequence[str] = (),
) -> dict[str, object]:
    """The ``metrics.json`` of one task folder; ``encoding``: what a model actually ran with (the versions
    of the packages that made its vectors, the max length per side, the framing, the dtype); ``empty``: the queries
    the system answered with no document (scored 0; ``run.trec`` cannot hold them)."""
    payload: dict[str, object] = {
        "task": collection.name,
        "retriever": name,
        "config": json_object(config),
        "aggregate": metrics.aggregate,
        "per_query": metrics.per_query,
        "count_missing": count_missing,
        "timing": dict(timing),
        "versions": versions(),
        **data_record(collection),
    }
    if encoding:
        payload["encoding"] = json_object(encoding)
    if metrics.ties is not None:
        payload["ties"] = metrics.ties.to_json()
    if empty:
        payload["empty_queries"] = list(empty)
    payload["protocol"] = protocol_of(collection).record(collection)
    return payload


def scored(
    run: Run,
    collection: Collection,
    measures: Iterable[Measure],
    count_missing: bool,
    ties: TieRule = "trec_eval",
    cut: CutTies | None = None,
) -> Metrics:
    """``run`` scored against ``collection``'s judgments (:func:`~r2med.evaluation.ties.evaluate_with_ties`, equal
    scores ordered by ``ties``); a run that shares no query with them is a one-line
    :class:`~r2med.errors.NothingToScore` naming the task (and its split), never a result of 0 queries.  A query
    ``run`` holds with no document was answered with nothing (a reranker's empty reply, or ``metrics.json``'s
    ``empty_queries`` read back): it scores 0.  ``cut``: the documents tied at the depth cut that the retriever
    dropped (None: unknown)."""
    empty = [qid for qid, docs in run.items() if not docs]
    try:
        return evaluate_with_ties(
            run,
            collection.qrels,
            measures=measures,
            count_missing=count_missing,
            rule=ties,
            answered_empty=empty,
            cut=cut,
        )
    except NothingToScore as exc:
        split = f" ({collection.split} split)" if collection.split is not None else ""
        raise exc.at(f"{collection.name}{split}") from None


def finish_task(
    collection: Collection,
    name: str,
    run: Run,
    config: Mapping[str, object],
    out: SystemFolder | str | Path | None,
    measures: Iterable[Measure],
    count_missing: bool,
    timing: Mapping[str, float],
    encoding: Mapping[str, object] | None = None,
    ties: TieRule = "trec_eval",
    cut: CutTies | None = None,
) -> TaskResult:
    """Score ``run`` as ``run.trec`` will hold it and (with ``out``, the system folder) write ``out/<task>/``
    atomically.

    ``name`` is the result's name (the run tag and ``metrics.json``'s ``retriever``); the measures
    stored are :func:`stored_measures` of ``measures`` (the defaults plus those asked for).  ``out``: a
    :class:`~r2med.infra.containment.SystemFolder`, or its path (its parent is then the results root); a system
    folder that is a link is refused (one line), as is anything between the root and it.  ``ties`` ``listed``:
    equal scores keep the order the run lists them in (:func:`~r2med.evaluation.ties.listed_order`); ``run.trec``
    then holds that ranking (scores by rank), so re-scoring it gives the stored figures, and the ``ties`` block
    keeps the ranges of the run as given.  ``cut``: what the retriever's depth cut dropped while tied with each
    query's last document (:class:`~r2med.evaluation.ties.CutTie`; None: unknown), scored into the ranges and kept
    beside the run (``cut_ties.json``) for reuse.
    """
    run = as_written(run)
    empty = [qid for qid, docs in run.items() if not docs]
    system = as_system_folder(out) if out is not None else None
    folder = system.task(collection.name) if system is not None else None
    metrics = scored(run, collection, task_measures(collection, measures), count_missing, ties, cut)
    if ties == "listed":
        run = listed_order(run)
    if folder is not None and system is not None:
        payload = metrics_payload(collection, name, config, metrics, timing, count_missing, encoding, empty)
        write_task_results(folder, run, payload, tag=name, root=system.root, cut=cut)
    recorded = RecordedConfig.read(json_object(config), folder / METRICS_FILE if folder is not None else "config")
    return TaskResult(
        collection.name,
        metrics,
        folder,
        dict(timing),
        run=run,
        config=recorded,
        data=run_data(collection, recorded),
        encoding=json_object(encoding) if encoding else {},
    )


def reuse(
    out: SystemFolder | str | Path | None,
    config: Mapping[str, object],
    collection: Collection,
    measures: Iterable[Measure],
    count_missing: bool,
    overwrite: bool = False,
) -> TaskResult | None:
    """The finished results in ``out/<task>/`` if they were made with ``config`` on this collection, else None.

    Unreadable or foreign results are ignored (and replaced when the task is written).  A record written before
    runs recorded their judgments fingerprint or their ties is reused as it stands: the measures and their ties are
    scored in memory and the folder is not rewritten; only a folder stored with fewer measures than asked is
    re-scored and rewritten.
    """
    if out is None:
        return None
    folder = as_system_folder(out).task(collection.name)  # a linked system folder: refused, even when recomputed
    if overwrite:
        return None
    if not (folder / METRICS_FILE).exists():
        return None
    try:
        stored = read_record(folder)
        recorded_judgments = stored.judgments_fingerprint
        wanted = json_object(config)
        other = other_custom_model(stored.config, RecordedConfig.read(wanted, folder / METRICS_FILE))
        if other is not None:
            raise NameCollision(
                f"{folder.parent}: holds results of {other}, another model under the same name; "
                "pass --name (or label in an experiment) to keep both, or --overwrite to replace them"
            )
        if (
            stored.config is None
            or not same_config(stored, compared(wanted), compared(recorded_as_v3(stored.config, stored.read_version)))
            or stored.dataset_fingerprint != collection.dataset_fingerprint
            or stored.revision != collection.revision
            or recorded_judgments not in (None, judgments_fingerprint(collection))
        ):
            log.warning(
                "%s: %s holds results of another configuration or data; they will be replaced "
                "(use another --out to keep both)",
                collection.name,
                folder,
            )
            return None
        run = read_trec(folder / RUN_FILE)
        run.update({qid: {} for qid in stored.empty_queries or () if qid not in run})  # answered with nothing
        cut = read_cut_ties(folder)  # None: not recorded (unknown), as before
    except NameCollision:
        raise
    except R2MedError:
        return None
    measures = task_measures(collection, measures)
    timing = stored.timing or {}
    log.info("%s: reusing finished results in %s", collection.name, folder)
    if not {m.trec for m in measures} <= set(stored.aggregate):  # stored before with fewer measures: re-scored
        name = str(stored.retriever or folder.parent.name)
        result = finish_task(
            collection, name, run, config, out, measures, count_missing, timing, stored.encoding, cut=cut
        )
    else:  # scored in memory (a record from before runs recorded their judgments or ties too): nothing rewritten
        metrics = scored(run, collection, measures, count_missing, cut=cut)
        result = TaskResult(
            collection.name,
            metrics,
            folder,
            timing,
            run=run,
            config=stored.config,
            data=run_data(collection, stored.config),
            encoding=dict(stored.encoding or {}),
        )
    result.reused = True
    return result


def compared(config: JsonObject) -> JsonObject:
    """What reuse compares of a ``config`` as recorded (JSON: reuse compares everything a run recorded): all of it,
    but for a reranked run its reranker's record (what the options resolved to: the model, tokenizer, lengths,
    label, dtype...) rather than the options as written (``--model`` naming the preset's own checkpoint is the same
    reranker)."""
    if config.get("step") == "rerank":
        return {k: v for k, v in config.items() if k != "options"}
    return dict(config)


def recorded_as_v3(config: RecordedConfig, read_version: int) -> JsonObject:
    """A record's config as schema 3 writes it: a record of schema 3 as read; an older evaluate record with its
    ``options`` as its retriever's options type records them (an option a run did not record had its default:
    ``r2med demo`` before schema 3 recorded none); options this r2med's type refuses as recorded (such a record is
    never reused).  (An option recorded under its old name, ``revision``, is read as ``model_revision`` by the
    record's reader.)"""

    recorded = config.as_json()
    meta = RETRIEVERS.get(str(config.retriever))
    if config.step == "evaluate" and meta is not None:
        recorded = meta.upgrade_config(recorded)  # each fact once (BM25's k1 and b: in ``options`` only)
    options = recorded.get("options")
    if config.step != "evaluate" or not isinstance(options, Mapping) or meta is None:
        return recorded
    if read_version >= 3:
        return {**recorded, "options": options}
    try:
        return {
            **recorded,
            "options": json_object(parse(meta.options, options, Origin.record("a recorded config")).record()),
        }
    except SpecError:
        return recorded


class NameCollision(R2MedError):
    """A result folder that holds another custom model's results under the same name (never replaced silently)."""


def custom_model(config: RecordedConfig | None) -> tuple[str, str] | None:
    """(spec or class, class) of the custom encoder or scorer a recorded ``config`` ran (its code), else None."""
    found: object = None
    if config is not None and config.encoder is not None and config.encoder.extra is not None:
        found = config.encoder.extra.get("custom")
    if config is not None and config.reranker is not None and config.reranker.scorer is not None:
        found = config.reranker.scorer
    if not isinstance(found, dict):
        return None
    cls = str(found.get("class"))
    return str(found.get("spec") or cls), cls


def other_custom_model(stored: RecordedConfig | None, config: RecordedConfig) -> str | None:
    """When a folder's record names another custom encoder or scorer than ``config`` (another spec or class:
    two models under one name), the other one in words; else None (an edited module under the same spec is the
    same model, recomputed)."""
    mine, theirs = custom_model(config), custom_model(stored)
    if mine is None or theirs is None or mine == theirs:
        return None
    return f"{theirs[0]!r}"


# -- reading finished folders ---------------------------------------------------------------------


@dataclass
class TaskFolder:
    """One finished task folder: its ``metrics.json`` (a checked :class:`~r2med.runs.record.RunRecord`)
    and (lazily) its run."""

    task: str
    folder: Path
    record: RunRecord
    _run: Run | None = field(default=None, repr=False)

    @property
    def aggregate(self) -> dict[str, float]:
        return self.record.aggregate

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        return self.record.per_query

    @property
    def config(self) -> RecordedConfig | None:
        """The configuration it recorded (None: a record with none)."""
        return self.record.config

    @property
    def name(self) -> str:
        """The result's name (``metrics.json``'s ``retriever``; the parent folder when absent)."""
        return str(self.record.retriever or self.folder.parent.name)

    def value(self, measure: Measure) -> float | None:
        key = measure.trec
        v = self.aggregate.get(key)
        if v is None and self.per_query:
            vals = [q[key] for q in self.per_query.values() if key in q]
            v = sum(vals) / len(vals) if vals and len(vals) == len(self.per_query) else None
        return v

    def scores(self, measure: Measure) -> dict[str, float]:
        """Per-query values of ``measure`` (query id -> value)."""
        key = measure.trec
        return {q: v[key] for q, v in self.per_query.items() if key in v}

    @property
    def run(self) -> Run:
        if self._run is None:
            path = self.folder / RUN_FILE
            run = read_trec(path) if path.exists() else {}
            run.update({qid: {} for qid in self.record.empty_queries or () if qid not in run})  # answered with nothing
            self._run = run
        return self._run


def is_task_folder(path: Path) -> bool:
    return (path / METRICS_FILE).is_file()


def task_folders(folder: str | os.PathLike[str]) -> list[Path]:
    """The finished task folders of a run folder (itself when it is one), sorted by name."""
    folder = Path(folder)
    if is_task_folder(folder):
        return [folder]
    return sorted(c for c in folder.iterdir() if c.is_dir() and is_task_folder(c)) if folder.is_dir() else []


def read_run_folder(folder: str | os.PathLike[str], tasks: set[str] | None = None) -> list[TaskFolder]:
    """Every finished task of a run folder (or a single task folder); ``tasks``: lowercased names to keep.

    Each ``metrics.json`` is checked (:func:`r2med.runs.record.read_record`): a damaged one is an error
    naming it.
    """
    found = []
    for path in task_folders(folder):
        record = read_record(path)
        task = str(record.task or path.name)
        if tasks is None or task.lower() in tasks:
            found.append(TaskFolder(task, path, record))
    return found


@dataclass
class System:
    """One run folder as a system of a report: its tasks and the published configuration it reproduces."""

    name: str
    folder: Path
    tasks: dict[str, TaskFolder]
    published: PublishedKey | None = None
    #: why it shows no published figure though it names a published row (the fields of its spec that differ)
    ungraded: str | None = None

    def measures(self) -> set[str]:
        """The pytrec_eval names of the measures any of its tasks stores (``metrics.json``'s keys)."""
        out: set[str] = set()
        for t in self.tasks.values():
            out |= set(t.aggregate)
        return out


# -- one folder model: a results root holds system folders, a system folder holds task folders ---------

ROOT, SYSTEM, TASK = "root", "system", "task"


def is_system_folder(path: Path) -> bool:
    """A folder holding at least one finished task folder."""
    return path.is_dir() and any(c.is_dir() and is_task_folder(c) for c in path.iterdir())


def made_by(system_folder: Path) -> str:
    """The command that wrote a system folder (``evaluate``, ``rerank`` or ``fuse``), read from the
    configuration its first task recorded."""
    first = task_folders(system_folder)
    config = read_record(first[0]).config if first else None
    return config.step if config is not None and config.step in ("rerank", "fuse") else "evaluate"


@dataclass
class SystemRef:
    """One system a command reads: its folder, the task folders asked for (None: all), how it was named."""

    folder: Path
    tasks: list[Path] | None = None
    via: str = SYSTEM  # ROOT, SYSTEM or TASK: what the path given on the command line was

    @property
    def root(self) -> Path:
        """The results root the system lies in (its parent folder)."""
        return self.folder.parent

    def task_paths(self) -> list[Path]:
        return list(self.tasks) if self.tasks is not None else task_folders(self.folder)


@dataclass
class RunSelection:
    """The systems found in the paths a command was given, and a line per path saying what it was."""

    systems: list[SystemRef]
    found: list[str] = field(default_factory=list)

    @property
    def out(self) -> Path:
        """The results root of the first system: where a writing command's results go by default."""
        return self.systems[0].root

    def announce(self) -> None:
        """Log what each path was (INFO), once the systems were read: bad input stays a one-line error."""
        for line in self.found:
            log.info("%s", line)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _names(folders: Sequence[Path], most: int = 6) -> str:
    names = [f.name for f in folders]
    return ", ".join(names[:most]) + (f", ... ({len(names) - most} more)" if len(names) > most else "")


def find_runs(paths: Iterable[str | os.PathLike[str]], skip_from_root: Sequence[str] = ()) -> RunSelection:
    """The systems in ``paths`` -- each a results root (every system folder directly in it), a system
    folder or a task folder -- in the order given, each system once (task folders of one system merge).

    ``skip_from_root``: kinds of systems (:func:`made_by`: ``rerank``, ``fuse``) a root's listing leaves
    out (a command does not take its own kind of output from a root; name the folder to use it).
    Results nested deeper than ``root/<system>/<task>`` are not read: the found line names them.
    Each path's line (``runs: results root, 3 systems (bm25, ...)``) is kept in ``found``
    (:meth:`RunSelection.announce` logs them).
    """
    by_folder: dict[Path, SystemRef] = {}
    found: list[str] = []

    def add(folder: Path, tasks: list[Path] | None, via: str) -> None:
        key = folder.resolve()  # one system given as an absolute and a relative path is one system
        ref = by_folder.get(key)
        if ref is None:
            by_folder[key] = SystemRef(folder, tasks, via)
        elif ref.tasks is not None:
            known = {t.resolve() for t in ref.tasks}
            ref.tasks = None if tasks is None else ref.tasks + [t for t in tasks if t.resolve() not in known]

    for p in paths:
        path = Path(p)
        if not path.exists():
            raise R2MedError(f"{path}: no such run folder{did_you_mean_folder(path)}")
        if not path.is_dir():
            raise R2MedError(f"{path}: not a folder; pass a results root (--out), a system folder or a task folder")
        if is_task_folder(path):
            add(path.parent, [path], TASK)
            found.append(f"{path}: task folder ({path.name} of system {path.parent.name})")
            continue
        tasks = task_folders(path)
        if tasks:
            add(path, None, SYSTEM)
            found.append(f"{path}: system folder {path.name} ({_plural(len(tasks), 'task')})")
            continue
        children = sorted(c for c in path.iterdir() if is_system_folder(c))
        nested = sorted(
            {m.parent.parent.parent for m in path.glob(f"*/*/*/{METRICS_FILE}") if is_task_folder(m.parent)} - {path}
        )
        if not children:
            hint = (
                f"; results lie deeper, in {_names(nested)}: pass that folder"
                if nested
                else f" (expected <root>/<system>/<task>/{METRICS_FILE})"
            )
            raise R2MedError(f"{path}: no results found{hint}")
        skipped = [c for c in children if skip_from_root and made_by(c) in skip_from_root]
        kept = [c for c in children if c not in skipped]
        line = f"{path}: results root, {_plural(len(children), 'system')} ({_names(children)})"
        if skipped:
            line += (
                f"; {len(skipped)} made by `r2med {'/'.join(skip_from_root)}` left out "
                f"({_names(skipped)}): name a system folder to use one"
            )
        if nested:
            line += f"; results in sub-roots are not read ({_names(nested)}): pass them to include them"
        found.append(line)
        for c in kept:
            add(c, None, ROOT)
    systems = list(by_folder.values())
    if not systems:
        raise R2MedError(f"no systems to read in {', '.join(str(p) for p in paths)}")
    return RunSelection(systems, found)


def run_file(path: str | os.PathLike[str], task: str | None = None) -> Path:
    """The ``run.trec`` a path means: a file itself, or the one task folder of a task/system folder or root
    (:func:`find_runs`) -- the one named ``task`` (a collection's name) when there are several."""
    path = Path(path)
    if not path.is_dir():
        return path
    selection = find_runs([path])
    folders = [t for ref in selection.systems for t in ref.task_paths()]

    def listed(found: list[Path]) -> str:
        return ", ".join(str(f) for f in found[:6]) + (" ..." if len(found) > 6 else "")

    if task is not None and len(folders) > 1:
        named = [f for f in folders if _names_task(f.name, task)]
        if len(named) > 1:
            raise R2MedError(
                f"{path}: ambiguous: {len(named)} task folders hold {task} ({listed(named)}); pass the system folder "
                "or the task folder you mean"
            )
        if not named:
            raise R2MedError(
                f"{path}: holds {len(folders)} task folders ({listed(folders)}), none of them {task}; pass the task "
                f"folder of {task} or its run.trec"
            )
        folders = named
    if len(folders) != 1:
        raise R2MedError(
            f"{path}: holds {len(folders)} task folders ({listed(folders)}); pass one task folder or its run.trec"
        )
    if task is not None:  # a run folder's recorded task is the task it is scored against
        recorded = _recorded_task(folders[0])
        if recorded is not None and not _names_task(recorded, task):
            raise R2MedError(
                f"{folders[0]}: holds a run of {recorded}, not of {task}: scored against {task}'s judgments it would "
                f"read as a score of another task (r2med score {recorded} {folders[0]})"
            )
    selection.announce()
    return folders[0] / RUN_FILE


def _names_task(name: str, task: str) -> bool:
    """Whether a folder or recorded name ``name`` is ``task`` (its name, or its task folder's, case aside)."""
    return name.lower() in (task.lower(), task_folder_name(task).lower()) or task_folder_name(name).lower() == (
        task_folder_name(task).lower()
    )


def _recorded_task(folder: Path) -> str | None:
    """The task ``folder``'s ``metrics.json`` records, or None when it records none (or cannot be read: the
    reader of the run says why, if it matters)."""
    try:
        return read_record(folder).task
    except R2MedError:
        return None


def load_system(folder: str | os.PathLike[str] | SystemRef, name: str | None = None) -> System:
    """A system folder (or one of :func:`find_runs`' systems, only its chosen tasks) as a :class:`System`."""
    ref = folder if isinstance(folder, SystemRef) else None
    folder = folder.folder if isinstance(folder, SystemRef) else Path(folder)
    if ref is None and is_task_folder(folder):
        ref = SystemRef(folder.parent, [folder], TASK)
        folder = folder.parent
    paths = ref.task_paths() if ref is not None else task_folders(folder)
    tasks = {t.task: t for path in paths for t in read_run_folder(path)}
    system = System(name or folder.name, folder, tasks)
    grade = grade_system(
        {t.task: t.config for t in tasks.values()}, {t.task: t.record.encoding for t in tasks.values()}
    )
    system.published, system.ungraded = grade.key, grade.reason_for(tasks)
    return system


def find_systems(paths: Iterable[str | os.PathLike[str]], published: Mapping[str, str] | None = None) -> list[System]:
    """Systems from results roots, system folders or task folders (:func:`find_runs`); names made unique
    (``parent/name``) when two folders share one.

    ``published`` maps a system name to a published label (``bm25``, ``nv+hyde-gpt4``) to
    override the automatic match (``none`` to match nothing).
    """
    selection = find_runs(paths)
    systems = [load_system(ref) for ref in selection.systems]
    selection.announce()
    names = [s.name for s in systems]
    for s in systems:
        if names.count(s.name) > 1:
            s.name = f"{s.folder.parent.name}/{s.name}"
    for name, label in (published or {}).items():
        match = [s for s in systems if s.name == name]
        if not match:
            raise R2MedError(
                f"--published {name}={label}: no system named {name!r}; systems: {', '.join(s.name for s in systems)}"
            )
        key = None if label.lower() == "none" else published_label(label, match[0].tasks)
        if label.lower() != "none" and key is None:
            raise R2MedError(f"--published {name}={label}: no published figures for {label!r}")
        if key is not None and not set(match[0].tasks) & key.all_graded_tasks():
            raise R2MedError(
                f"--published {name}={label}: {key.title} has no published figure for {name}'s tasks "
                f"({', '.join(sorted(match[0].tasks))})"
            )
        match[0].published, match[0].ungraded = key, None
    return systems


def task_order(systems: Iterable[System]) -> list[str]:
    """R2MED's 8 tasks in the paper's order first, then BRIGHT's in its order (each task, then its long-document
    setting), then any other task names in order of appearance."""
    seen: list[str] = []
    for s in systems:
        for t in s.tasks:
            if t not in seen:
                seen.append(t)
    known = [*TASK_NAMES, *(n for t in names() for n in (t, f"{t}:long"))]
    return [t for t in known if t in seen] + [t for t in seen if t not in known]


def split_columns(systems: list[System]) -> list[System]:
    """Each split of a task a column of its own: a task some system ran on another split than ``test`` is
    keyed ``<task> (<split>)`` in every system (``nfcorpus (dev)``, ``nfcorpus (test)``), so the dev and test
    results of one BEIR folder are never averaged, ranked or compared as one column; a task run on ``test``
    only keeps its name (a record naming no split ran on ``test``: R2MED's hub tasks).  The
    :class:`TaskFolder` s keep their task name (where the data is found)."""
    splits: dict[str, set[str]] = {}
    for system in systems:
        for task, folder in system.tasks.items():
            splits.setdefault(task, set()).add(folder.record.split or DEFAULT_SPLIT)
    for system in systems:
        system.tasks = {
            (task if splits[task] == {DEFAULT_SPLIT} else f"{task} ({folder.record.split or DEFAULT_SPLIT})"): folder
            for task, folder in system.tasks.items()
        }
    return systems


@dataclass
class Summary:
    """What a summary table shows beside a job's results."""

    name: str
    published: PublishedKey | None = None
    precision: tuple[str, str] | None = None  # (used, the paper's) when they differ
    retriever: str = ""
    #: task -> why its published figure is not shown (its data is not the hub task's: data_problem)
    ungraded: dict[str, str] = field(default_factory=dict)
    #: why no published figure is shown though the results name a published row (the fields that differ)
    reason: str | None = None
    #: the checkpoint the user claimed the run's local model folder holds, when the grade rests on that claim
    claim: str | None = None


def _measure_of(key: PublishedKey, task: str) -> Measure:
    """The measure ``key``'s figure on ``task`` is of (BRIGHT's long documents: Recall@1; else nDCG@10)."""
    for measure in (HEADLINE, Measure(Family.RECALL, 1)):
        if task in key.figures(measure):
            return measure
    return HEADLINE


def summary(name: str, results: Sequence[TaskResult]) -> Summary:
    """The published configuration ``results`` reproduce (:func:`r2med.results.grading.grade_system`), or why
    not when they name one, and the precision they ran in when it is not the paper's (the figures stay shown)."""
    configs = [r.config for r in results if r.config is not None]
    grade = grade_system({r.task: r.config for r in results}, {r.task: r.encoding for r in results})
    published = grade.key
    if published is not None and published.reranker:
        published = None  # a reranked run's own table shows no published row (see `r2med report`)
    change = next((c for c in map(precision_change, configs) if c), None) if published is not None else None
    figures = published.all_graded_tasks() if published is not None else set()
    ungraded = {
        r.task: problem
        for r in results
        if r.task in figures and published is not None
        for problem in [data_problem(r.task, r.data, published, _measure_of(published, r.task))]
        if problem is not None
    }
    retriever = (configs[0].retriever or name) if configs else name
    reason = grade.reason_for([r.task for r in results])
    claim = grade.claim if published is not None else None
    return Summary(name, published, change, retriever, ungraded, reason, claim)
