"""``r2med import``: runs made elsewhere (your own code, another toolkit) as r2med results.

Each run is validated as every run file is (:func:`r2med.runs.run.read_run`: TREC, or a JSON score file
``{qid: {docid: score}}``; ``file:line`` errors), scored
against its collection's judgments and written to ``OUT/<name>/<task>/`` through
:func:`~r2med.results.folders.finish_task`, exactly as ``evaluate`` writes its results -- so ``report``,
``compare``, ``fuse``, ``rerank``, ``export`` and the HTML page take it.  The configuration records what
the run is: ``retriever: "imported"`` (it never matches a published row), the file, its sha256, its own
run tag(s) and any note.  Importing the same file again reuses the finished folder.

Which task each file is (:func:`assign_tasks`): with ``--tasks`` naming tasks, the files map to them
one by one, in order; otherwise each file goes to the collection it fits best by content (:class:`Fit`: the
judged documents it retrieves, then the queries it holds; none, or a tie, is a one-line error), and two files may
not go to the same task.  Either way a file that another task fits better -- another of the tasks named, or a task
its file name says (:func:`named_tasks`) -- is a one-line error naming that task: BRIGHT's query ids are 0..N in
every task, so ids alone cannot tell a file given in the wrong order.  Run files are read as released
(:func:`r2med.runs.run.read_run`): TREC, JSON scores, FlagEmbedding's search-results JSON, gzipped or not.

A benchmark's hub task is read for its queries and judgments only: importing needs no documents (a BRIGHT task's
examples file alone; an R2MED task's ``query.jsonl`` and ``qrels.jsonl``), found at the task's revision before
anything is downloaded.  Under a protocol with exclusions (BRIGHT), each query's excluded documents are removed
from the imported run before it is scored (a released run may hold them; BRIGHT's own runs never do), counted
in a warning and recorded (``config.imported.excluded_removed``).  ``--qrels FILE`` scores it on that file's
judgments instead of the task's own, recorded by hash (``config.judgments``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data import Collection, TaskRef, check_hub, resolve
from ..data.benchmarks import benchmarks
from ..data.names import is_hub_task
from ..data.resolve import _asked
from ..errors import NothingToScore, R2MedError, shown
from ..evaluation.run_scores import check_run_scores
from ..evaluation.ties import TieRule
from ..infra.containment import check_input_file, check_output_dir, plain_name, system_folder
from ..infra.file_hash import file_hash
from ..infra.json_types import JsonObject, JsonValue
from ..measures import DEFAULT_MEASURES, Measure
from ..measures import measure as as_measure
from ..results.folders import SystemResults, TaskResult, finish_task, reuse
from ..runs.run import Run, check_run_ids, format_trec, read_score_file, read_trec, run_format, trec_tags
from ..serve.trace_score import union_run
from ..serve.traces import read_trace
from ..steps import ImportStep
from .agent_traces import check_task, task_collection
from .evaluate import check_fits

log = logging.getLogger(__name__)

#: What an imported run's configuration names as its retriever: no published row has it.
IMPORTED = "imported"


@dataclass(frozen=True)
class RunFile:
    """A run file read and checked: its run, its sha256 and the tags its sixth column names."""

    path: Path
    run: Run
    sha256: str
    tags: tuple[str, ...]
    #: what the file states of itself (a search-results file's ``eval_name``, ``model_name``, ``dataset_name``...)
    stated: Mapping[str, JsonValue] = field(default_factory=dict)  # the file's own facts: open JSON

    def source(self) -> JsonObject:
        """What ``config.imported`` records of the file."""
        out: JsonObject = {"file": str(self.path), "sha256": self.sha256, "tags": list(self.tags)}
        if self.stated:
            out["stated"] = dict(self.stated)
        return out


def read_run_file(path: str | os.PathLike[str]) -> RunFile:
    """A run file validated (:func:`r2med.runs.run.read_run`: TREC or a JSON score file) with its hash and
    tags (a score file has none)."""
    path = Path(path)
    check_input_file(path, "run")
    stated: Mapping[str, JsonValue] = {}
    if run_format(path) == "json":
        run, stated = read_score_file(path)
        tags: tuple[str, ...] = ()
    else:
        run, tags = read_trec(path), trec_tags(path)
    return RunFile(Path(os.path.abspath(path)), run, file_hash(path, "sha256"), tags, stated)


@dataclass(frozen=True)
class Fit:
    """How well a run fits a task, by content: how many of its queries are the task's (``shared``) and how many of
    the task's judged-relevant (query, document) pairs it retrieves (``judged``)."""

    task: str
    shared: int
    judged: int

    @property
    def key(self) -> tuple[int, int]:
        """Larger fits better: judged documents retrieved first (BRIGHT's query ids are 0..N in every task, so
        shared ids alone do not tell its tasks apart), then shared queries."""
        return (self.judged, self.shared)


def fit(run: Run, collection: Collection) -> Fit:
    """How ``run`` fits ``collection`` (its queries and judgments; no documents needed)."""
    shared = judged = 0
    for qid, docs in run.items():
        if qid not in collection.queries:
            continue
        shared += 1
        relevant = collection.qrels.get(qid)
        if relevant:
            judged += sum(1 for d in docs if relevant.get(d, 0) > 0)
    return Fit(collection.name, shared, judged)


def poor(f: Fit, run: Run) -> bool:
    """Whether a run fits its task poorly: fewer than half its queries are the task's, or it retrieves none of the
    task's judged documents."""
    return 2 * f.shared < len(run) or f.judged == 0


def named_tasks(path: Path, stated: Mapping[str, JsonValue] | None = None) -> list[str]:
    """The benchmark tasks a run file's name says (``biology.bm25.txt``: R2MED's Biology and bright:biology), or the
    file's own ``dataset_name`` (a search-results file's), every family asked through its task names."""

    def words(text: str) -> str:
        return "_" + re.sub(r"[^a-z0-9]+", "_", text.lower()) + "_"

    said = words(path.name) + (words(str(stated.get("dataset_name") or "")) if stated else "")
    found = []
    for family in benchmarks():
        for task in family.task_names():
            bare = task.rsplit(":", 1)[-1]
            if words(bare) in said:
                found.append(task)
    return found


def _candidates(file: RunFile, known: Sequence[Collection], revision: str | None) -> list[Collection]:
    """The collections ``file`` may be meant for besides ``known``: the tasks its name says, each loaded without
    documents when it can be (one that cannot -- not on this machine, offline -- is passed over)."""
    have = {c.name.lower() for c in known}
    out = []
    for task in named_tasks(file.path, file.stated):
        if task.lower() in have:
            continue
        try:
            [ref] = check_hub([TaskRef.on_hub(task, revision)], corpus=False)
            out.append(ref.load(corpus=False))
        except (R2MedError, OSError) as exc:
            log.debug("%s: task %s not considered (%s)", file.path, task, exc)
    return out


def _check_fit(
    file: RunFile, chosen: Collection, known: Sequence[Collection], explicit: bool, flag: str, revision: str | None
) -> None:
    """A run that another task fits better is an error naming that task: a task its file name says (``biology.txt``
    sent to R2MED's Biology while it fits ``bright:biology`` better: R2MED's Biology is built from BRIGHT's, so
    the content decides, not the name), or -- when it fits its own task poorly (:func:`poor`) -- another of the
    tasks named (files given in the wrong order)."""
    mine = fit(file.run, chosen)
    others = _candidates(file, known, revision) if chosen.benchmark is not None else []  # a local folder: no hub
    if poor(mine, file.run):
        others = [c for c in known if c.name != chosen.name] + others
    if not others:
        return
    best = max((fit(file.run, c) for c in others), key=lambda f: f.key)
    if best.key <= mine.key or best.judged == 0:
        return
    n = len(file.run)
    named = any(c.name == best.task for c in known)
    fix = (
        f"pass the files in the order {flag} lists the tasks"
        if explicit and named
        else f"name its task ({_naming(flag, best.task)})"
    )
    raise R2MedError(
        f"{file.path}: fits {best.task} better than {chosen.name}: it retrieves {best.judged} judged-relevant "
        f"document(s) of {best.task} and {mine.judged} of {chosen.name}; {best.shared} of its {n} queries are "
        f"{best.task}'s, {mine.shared} are {chosen.name}'s; {fix}"
    )


def _naming(flag: str, task: str) -> str:
    """How the user names ``task``: ``--tasks bright:pony`` (command line), ``tasks = ["bright:pony"]`` (a file)."""
    return f"{flag} {task}" if flag.startswith("-") else f'{flag} = ["{task}"]'


def assign_tasks(
    files: Sequence[RunFile],
    refs: Sequence[TaskRef],
    explicit: bool,
    flag: str = "--tasks",
    revision: str | None = None,
) -> list[tuple[RunFile, Collection]]:
    """Each run file with its collection.

    ``explicit`` (``--tasks`` named tasks, or one collection): file i is task i, and the counts must
    match.  Otherwise the run's content decides (:class:`Fit`: the task whose judged documents it retrieves most,
    then whose queries it holds most; none holding any of its queries, or two fitting as well, is an error); two
    files for one task is an error.  Either way a file that fits its task poorly while another task fits it better
    (:func:`_check_fit`: one of ``refs``, or one its name says) is an error naming that task.  ``flag``: how the
    tasks were named (``--tasks``; an experiment file's ``tasks``), for the messages.
    """
    if not refs:
        raise R2MedError("no task to import into; name one with --tasks")
    if explicit or len(refs) == 1:
        if len(files) != len(refs):
            raise R2MedError(
                f"{len(files)} run file(s) for {len(refs)} task(s) ({', '.join(r.name for r in refs)}); "
                f"pass one run file per task, in the order {flag} lists them"
            )
        collections = [ref.load(corpus=False) for ref in refs]
        for f, c in zip(files, collections):
            _check_fit(f, c, collections, explicit, flag, revision)
        return list(zip(files, collections))
    collections = [ref.load(corpus=False) for ref in refs]
    pairs: list[tuple[RunFile, Collection]] = []
    taken: dict[str, Path] = {}
    for f in files:
        fits = [(fit(f.run, c), c) for c in collections]
        best = max(x.key for x, _ in fits)
        winners = [c for x, c in fits if x.key == best]
        if best[1] == 0:
            raise R2MedError(
                f"{f.path}: none of its {len(f.run)} query ids is a query of "
                f"{', '.join(c.name for c in collections)}; name the task with {flag}"
            )
        if len(winners) > 1:
            raise R2MedError(
                f"{f.path}: it fits {' and '.join(c.name for c in winners)} equally "
                f"({best[1]} of its queries and {best[0]} judged document(s) each); name the task with {flag}"
            )
        collection = winners[0]
        _check_fit(f, collection, collections, False, flag, revision)
        if collection.name in taken:
            raise R2MedError(
                f"{f.path}: its queries are those of {collection.name}, as are those of "
                f"{taken[collection.name]}; import one run per task (or one --name per run)"
            )
        taken[collection.name] = f.path
        pairs.append((f, collection))
    for f, collection in pairs:  # said once every file is matched: a bad match stays a one-line error
        log.info("%s: task %s", f.path, collection.name)
    return pairs


def _check_against(run: Run, collection: Collection, where: str) -> None:
    """Warn (counted) about query ids the collection lacks and docs not in its corpus."""
    unknown = [q for q in run if q not in collection.queries]
    if unknown:
        log.warning(
            "%s: %d of its %d queries (e.g. %r) are not queries of %s and are not scored",
            where,
            len(unknown),
            len(run),
            unknown[0],
            collection.name,
        )
    corpus = collection.corpus
    missing = sum(1 for docs in run.values() for d in docs if d not in corpus) if collection.corpus_read else 0
    if missing:
        log.warning(
            "%s: %d doc entr%s not in the corpus of %s; they count as non-relevant",
            where,
            missing,
            "y" if missing == 1 else "ies",
            collection.name,
        )


def import_run(
    run: Run | Mapping[str, Mapping[str, float]] | str | os.PathLike[str],
    collection: Collection,
    name: str,
    out: str | os.PathLike[str] | None = None,
    note: str | None = None,
    measures: Iterable[Measure | str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
    ties: TieRule = "trec_eval",
    source: Mapping[str, JsonValue] | None = None,
) -> TaskResult:
    """Score a run made elsewhere against ``collection`` and (with ``out``, a results root) write
    ``out/<name>/<collection.name>/`` as ``evaluate`` would.  ``ties``: ``listed`` orders equal scores as the run
    lists them (:func:`r2med.evaluation.ties.listed_order`), recorded as ``config.ties``.

    ``run``: a :data:`r2med.Run` (query id -> doc id -> score) or a TREC run file's path.  The
    configuration records ``retriever: "imported"``, the file (None for a Run given in Python), the
    sha256 of the file (of the run as r2med writes it, for a Run) and its tags, and ``note``.
    ``measures``: :class:`~r2med.measures.Measure` values or any spelling of one (``"nDCG@10"``), parsed at once.
    ``source``: what to record of a Run's origin in place of the above (``r2med import --trace``: the trace file).
    """
    asked = tuple(as_measure(m) for m in measures)
    plain_name(name, "--name", run_name=True)
    if isinstance(run, (str, os.PathLike)):
        file = read_run_file(run)
        recorded: JsonObject = file.source()
        ranked, where = file.run, str(file.path)
    else:
        ranked = check_run(run)
        digest = hashlib.sha256(format_trec(ranked).encode("utf-8")).hexdigest()
        recorded = dict(source) if source is not None else {"file": None, "sha256": digest, "tags": []}
        where = str(recorded.get("file") or f"{name} (a run given in Python)")
    if not isinstance(collection, Collection):
        raise R2MedError(
            f"import_run: collection must be a Collection (r2med.load_task / load_folder), got {shown(collection)}"
        )
    step = ImportStep.model_validate(
        {
            "runs": (),
            "name": name,
            "note": note,
            "ties": ties,
            "output": {"out": out, "measures": asked, "count_missing": count_missing, "overwrite": overwrite},
        }
    )
    return _finish(ranked, recorded, collection, step, where)


def check_run(run: Mapping[str, Mapping[str, float]]) -> Run:
    """A Run given in Python, checked as a run file is: ids keeping the id rule, finite numeric scores, not empty."""
    if not isinstance(run, Mapping) or not run:
        raise R2MedError("the run must be a non-empty mapping of query id -> {doc id: score}")
    for qid in run:
        if not isinstance(qid, str):
            raise R2MedError(f"run query {qid!r}: expected a text id mapped to {{doc id: score}}")
    checked = check_run_scores(run)
    check_run_ids(checked)
    return checked


def _finish(
    run: Run, source: Mapping[str, JsonValue], collection: Collection, step: ImportStep, where: str
) -> TaskResult:
    output = step.output
    imported: JsonObject = {**source, "note": step.note}
    if collection.exclusions:
        run, removed = collection.exclusions.drop_from(run)
        imported["excluded_removed"] = removed
        if removed:
            log.warning(
                "%s: %d entr%s the protocol of %s excludes removed before scoring (each query's excluded_ids)",
                where,
                removed,
                "y" if removed == 1 else "ies",
                collection.name,
            )
    config: JsonObject = {"step": "import", "retriever": IMPORTED, "imported": imported}
    if step.ties != "trec_eval":  # recorded only when not the default: folders made before reuse as they were
        config["ties"] = step.ties
    if collection.judgments is not None:
        config["judgments"] = {**collection.judgments.record()}
    target = system_folder(output.out, step.name) if output.out is not None else None
    reused = reuse(target, config, collection, output.measures, output.count_missing, output.overwrite)
    if reused is not None:
        return reused
    t0 = time.perf_counter()
    try:
        result = finish_task(
            collection, step.name, run, config, target, output.measures, output.count_missing, {}, ties=step.ties
        )
    except NothingToScore as exc:  # the file that shares no query with its task, named (in one line)
        raise exc.at(where) from None
    _check_against(run, collection, where)
    result.timing["total_s"] = time.perf_counter() - t0
    return result


def import_files(step: ImportStep, refs: Sequence[TaskRef] | None = None, flag: str = "--tasks") -> SystemResults:
    """``r2med import`` / ``[[imports]]``: every run file checked first (nothing is written when one is bad),
    matched to its task (:func:`assign_tasks`; among ``refs``, default: the step's data), then scored and written
    to ``out/<name>/<task>/``.  ``flag``: what named the tasks, for the messages (an experiment's ``tasks``)."""

    if step.trace is not None and step.runs:
        raise R2MedError("import --trace TRACE takes no run files")
    if not step.runs and step.trace is None:
        raise R2MedError("import needs at least one run file (or --trace TRACE -t TASK)")
    plain_name(step.name, "--name", run_name=True)
    out = Path(step.output.out or ".")
    check_output_dir(out)
    target = system_folder(out, step.name)  # a link there: refused before any file is read
    if step.trace is not None:
        d, o = step.data, step.output
        result = import_trace(
            step.trace, d.task_text, step.name, out, d.data_dir, d.revision, d.strict, step.note, o.measures,
            o.count_missing, o.overwrite,
        )  # fmt: skip
        return SystemResults(step.name, target.path, [result])
    read = [read_run_file(f) for f in step.runs]
    data = step.data
    tasks = data.task_text
    if refs is None:
        long = data.long_documents
        refs = resolve(tasks, data.data_dir, data.revision, strict=data.strict, long_documents=long, qrels=data.qrels)
        refs = check_hub(refs, corpus=False)  # queries and judgments only, found before any download
    pairs = assign_tasks(read, refs, explicit=_asked(tasks) is not None, flag=flag, revision=data.revision)
    if data.qrels is None:  # a bare run on a hub task's own judgments: a run of that task (BRIGHT's share query ids)
        for file, collection in pairs:
            if is_hub_task(collection.name):
                check_fits(file.run, collection, str(file.path), data.revision)
    results = []
    for file, collection in pairs:
        results.append(_finish(file.run, file.source(), collection, step, str(file.path)))
    return SystemResults(step.name, target.path, results)


def import_trace(
    trace: str | os.PathLike[str],
    task: str,
    name: str,
    out: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
    strict: bool = False,
    note: str | None = None,
    measures: Iterable[Measure] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
) -> TaskResult:
    """``r2med import --trace TRACE -t TASK --name NAME``: each query's union in the trace (in order of first
    retrieval, the task's exclusions removed: :func:`r2med.serve.trace_score.union_run`) filed as a system through
    :func:`import_run`; the configuration records the trace file and its sha256."""

    check_output_dir(Path(out))
    read = read_trace(trace)
    collection = task_collection(task, data_dir, revision, strict)
    check_task(read, collection)
    run = {q: docs for q, docs in union_run(read, collection.exclusions).items() if docs}
    if not run:
        raise R2MedError(f"{read.path}: no traced search names a query of {collection.name} (query_id)")
    source: JsonObject = {
        "file": os.path.abspath(trace),
        "sha256": file_hash(Path(trace), "sha256"),
        "tags": [],
        "trace": True,
    }
    return import_run(run, collection, name, out, note, measures, count_missing, overwrite, source=source)
