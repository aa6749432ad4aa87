"""``r2med evaluate``: run one retriever over tasks -- load, index, search, score, write a run folder.

(:func:`r2med.evaluate` only scores a run; this module is the whole job.)

* :func:`plan` -- an :class:`~r2med.steps.EvaluateStep` (parsed once, at the edge it came from) made
  runnable: the query builder of its expansion, and the result's name (:func:`system_name`);
* :func:`run_task` -- one collection: retrieve, then :func:`~r2med.results.folders.finish_task`, or
  reuse a finished folder made with the same step and data;
* :func:`run_tasks` -- every task of a list of :class:`~r2med.data.TaskRef`, on the progress display;
* :func:`summary` -- the published configuration the results reproduce, if any, and a note when the
  run used another precision than the paper's code;
* :func:`demo_tasks` -- what ``r2med demo`` runs: the 8 tasks, or the built-in demo when the hub cannot be reached;
* :func:`score_files` -- ``r2med score``: a run file against judgments.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..data import Collection, TaskRef, check_hub, read_qrels, resolve
from ..data.benchmarks import benchmark_of, protocol_of
from ..data.hub import HubUnavailable
from ..data.loaders import qrels_file
from ..data.names import is_hub_task
from ..errors import NothingToScore, R2MedError, shown
from ..evaluation.metrics import Metrics
from ..evaluation.tie_data import CutTie
from ..evaluation.ties import TieRule, evaluate_with_ties
from ..expansion.precomputed import expansion_builder
from ..infra import progress
from ..infra.containment import SystemFolder, check_input_file, plain_name, system_folder
from ..infra.file_hash import file_fingerprint
from ..infra.home import fingerprint_texts, home, remember_collection
from ..infra.user_code import short_name
from ..measures import DEFAULT_MEASURES, Measure
from ..results.folders import TaskResult, finish_task, reuse, run_file
from ..retrieval.base import QueryText, Retriever, index_collection
from ..retrieval.registry import (
    make_retriever,  # imports numpy/scipy: not at CLI start-up
    retriever_meta,
)
from ..runs.run import Run, read_run
from ..steps import EvaluateStep
from ..typed.parse import RetrieverOptions

log = logging.getLogger(__name__)


class QueryBuilder(Protocol):
    """The query texts to search with for a collection and a retriever family (expansions hook in here:
    :class:`~r2med.expansion.precomputed.ExpansionQueries`, :class:`~r2med.expansion.reasoning.ReasoningQueries`),
    and the record of what it read (``config["expansion"]``)."""

    @property
    def label(self) -> str: ...

    def __call__(self, collection: Collection, family: str) -> Mapping[str, QueryText]: ...

    def describe(self, collection: Collection | None = None) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class Plan:
    """A step made runnable: its spec (:class:`~r2med.steps.EvaluateStep`), the result's name, the query
    builder of its expansion."""

    step: EvaluateStep
    label: str = ""
    query_builder: QueryBuilder | None = None

    @property
    def retriever(self) -> str:
        return self.step.retriever

    @property
    def options(self) -> RetrieverOptions:
        return self.step.options

    @property
    def name(self) -> str:
        return self.label or self.retriever


def plan(step: EvaluateStep) -> Plan:
    """``step`` made runnable: its expansion set up (checked up front) and its result named (:func:`system_name`)."""
    builder = None
    if step.expansion or step.expansion_file or step.expansion_dir:
        builder = expansion_builder(
            step.expansion,
            step.expansion_file,
            step.expansion_dir,
            step.data.data_dir,
            step.data.revision,
            strict=step.data.strict,
        )
    return Plan(step, system_name(step, builder.label if builder is not None else None), builder)


def system_name(step: EvaluateStep, expansion_label: str | None = None) -> str:
    """The name of the result of ``step`` (the same from the command line, a file and Python): its ``name``
    (``--name``), else the retriever -- and the model, for a retriever named after it
    (``dense-all-MiniLM-L6-v2``), or your encoder (``custom-MyEncoder``) -- and the expansion
    (``<retriever>+<method>-<llm>``)."""
    meta = retriever_meta(step.retriever)
    label = step.retriever
    model = getattr(step.options, meta.named_after, None) if meta.named_after else None
    if model:
        label = f"{step.retriever}-{model_name(str(model))}"
    encoder = getattr(step.options, "encoder", None)
    if step.retriever == "custom" and encoder is not None:
        label = f"custom-{short_name(encoder)}"
    if expansion_label:
        label = f"{label}+{expansion_label}"
    if step.name is not None:
        label = plain_name(step.name, "--name", run_name=True)
    plain_name(label, f"result name {shown(label)} (pass --name):", run_name=True)  # a folder under --out, the tag
    return label


#: Folder names that say nothing about the model in them: the parent folder names it instead.
GENERIC_FOLDERS = {"model", "models", "weights", "checkpoint", "checkpoints", "final", "best", "snapshot", "hf"}


def model_name(model: str) -> str:
    """A model's short name for a result's name: the last part of a hub id (``org/name`` -> ``name``) or of
    a folder (a Hugging Face cache snapshot: its repository's name; a generic folder such as ``model``:
    its parent's name); whitespace becomes ``_``."""
    parts = Path(model.rstrip("/\\")).parts or (model,)
    name = parts[-1]
    if len(parts) >= 3 and parts[-2] == "snapshots" and parts[-3].startswith("models--"):
        name = parts[-3].split("--")[-1]
    elif (name.lower() in GENERIC_FOLDERS or (len(name) == 40 and all(c in "0123456789abcdef" for c in name))) and len(
        parts
    ) >= 2:
        name = parts[-2]
    return "_".join(name.split()) or "model"


def queries_fingerprint(queries: Mapping[str, QueryText]) -> str:
    """Content hash of the query texts searched with (expansion parts included), part of every result's key."""
    return fingerprint_texts((qid, q if isinstance(q, str) else "\x1f".join(q)) for qid, q in queries.items())


def run_task(
    collection: Collection, job: Plan | EvaluateStep, out: SystemFolder | str | Path | None = None
) -> TaskResult:
    """Retrieve, evaluate and (with ``out``, the system folder: a path's parent is its results root) write
    ``out/<task>/`` for one collection; what is stored and whether a finished folder is recomputed: the step's
    :class:`~r2med.steps.Output`.  A system folder that is a link is refused in one line."""

    job = plan(job) if isinstance(job, EvaluateStep) else job
    step, output = job.step, job.step.output
    collection.warn_about_qrels()
    protocol = protocol_of(collection)
    depth = step.depth(protocol.depth)
    retriever_ = make_retriever(step.retriever, task=collection.name, options=step.options)
    check_excludes(retriever_, collection)
    builder = job.query_builder
    queries = builder(collection, retriever_.family) if builder is not None else collection.queries
    config = {
        **step.record(depth),
        **retriever_.config(),
        "expansion": dict(builder.describe(collection)) if builder is not None else None,
        "queries_fingerprint": queries_fingerprint(queries),
        **({"split": collection.split} if collection.split is not None else {}),
        **({"judgments": collection.judgments.record()} if collection.judgments is not None else {}),
    }
    expanded = config["expansion"].get("file") if isinstance(config["expansion"], Mapping) else None
    if expanded is not None and Path(expanded).is_file():  # the content of the expansion file read (schema 3)
        config["expansion_fingerprint"] = file_fingerprint(expanded)
    if collection.corpus_repeats and retriever_.indexes_repeats:
        config["corpus_repeats"] = len(collection.corpus_repeats)  # indexed too: the corpus read as a list
    reused = reuse(out, config, collection, output.measures, output.count_missing, output.overwrite)
    if reused is not None:
        return reused
    if step.options.cache:
        remember_collection(collection.fingerprint, collection.name, collection.source)
    t0 = time.perf_counter()
    index_collection(retriever_, collection)
    t1 = time.perf_counter()
    run = search(retriever_, queries, depth, collection)
    timing = {"index_s": t1 - t0, "search_s": time.perf_counter() - t1}
    timing["total_s"] = time.perf_counter() - t0
    cut = checked_cut_ties(retriever_)
    return finish_task(
        collection,
        job.name,
        run,
        config,
        out,
        output.measures,
        output.count_missing,
        timing,
        retriever_.encoding_facts(),
        cut=cut,
    )


def checked_cut_ties(retriever: Retriever) -> Mapping[str, CutTie] | None:
    """The retriever's :attr:`~r2med.retrieval.base.Retriever.cut_ties` after its search (None: unknown -- FAISS,
    your own retriever -- which is not "none"); a value of another shape (your own retriever's) is one line naming
    the retriever, never a half-written task folder."""
    cut = retriever.cut_ties
    if cut is not None and (
        not isinstance(cut, Mapping) or not all(isinstance(q, str) and isinstance(c, CutTie) for q, c in cut.items())
    ):
        raise R2MedError(f"retriever {retriever.name!r}: cut_ties must map query ids to CutTie, or be None")
    return cut


def check_excludes(retriever: Retriever, collection: Collection) -> None:
    """Refuse, in one line, a retriever that cannot remove each query's excluded documents inside its search when
    the task's protocol has them (BRIGHT's ``excluded_ids``): ignoring them would rank documents the protocol
    never lets a query have."""
    if collection.exclusions and not retriever.excludes:
        raise R2MedError(
            f"{collection.name}: {len(collection.exclusions)} queries exclude documents from their results, "
            f"which the retriever {retriever.name!r} cannot do inside its search (its search() takes no exclusions); "
            "give it an `excludes = True` search(queries, k, exclusions=...)"
        )


def search(retriever: Retriever, queries: Mapping[str, QueryText], depth: int, collection: Collection) -> Run:
    """The retriever's top ``depth`` per query, each query's excluded documents (the collection's) removed before
    the cut -- and checked: a document the protocol excludes in the run is an error, never a result."""
    if not collection.exclusions:
        return retriever.search(queries, k=depth)
    run = retriever.search(queries, k=depth, exclusions=collection.exclusions)
    _, leaked = collection.exclusions.drop_from(run)
    if leaked:
        raise R2MedError(f"{collection.name}: the retriever returned {leaked} excluded (query, document) pair(s)")
    return run


def run_tasks(job: Plan | EvaluateStep, tasks: Sequence[TaskRef]) -> list[TaskResult]:
    """:func:`run_task` for every task, in order, one collection in memory at a time, into the step's
    ``OUT/<system>/`` (none: nothing written), on the progress display (the task loop, and inside it each task's
    long steps)."""
    job = plan(job) if isinstance(job, EvaluateStep) else job
    root = job.step.output.out
    out = system_folder(root, job.name) if root is not None else None
    results = []
    with progress.task(job.name, total=len(tasks), unit="tasks") as loop:
        for ref in tasks:
            loop.describe(f"{job.name} · {ref.name}: loading")
            collection = ref.load()
            loop.describe(f"{job.name} · {collection.name}")
            result = run_task(collection, job, out)
            headline = protocol_of(collection).headline
            value = result.metrics.aggregate.get(headline.trec, result.headline)
            log.info("%s: %s = %.4f%s", result.task, headline.label, value, " (reused)" if result.reused else "")
            results.append(result)
            loop.advance()
    return results


def demo_tasks(revision: str | None = None, strict: bool = False) -> tuple[list[TaskRef], str | None]:
    """What ``r2med demo`` runs: R2MED's 8 tasks from the hub; when the hub cannot be reached (only then:
    a missing file or revision is an error), the built-in demo collection, with the reason."""

    try:
        return check_hub(resolve("all", None, revision, strict=strict)), None  # all 8 found before any download
    except HubUnavailable as exc:
        return [TaskRef.the_demo(strict=strict)], str(exc)


def demo_step(out: Path, overwrite: bool = False) -> EvaluateStep:
    """What ``r2med demo`` runs: the paper's BM25 (its default options) into ``out``."""
    return EvaluateStep.of("bm25", out=out, overwrite=overwrite)


def score_files(
    qrels: str | Path,
    run: str | Path,
    measures: Iterable[Measure] | None = None,
    count_missing: bool = False,
    strict: bool = False,
    split: str = "test",
    revision: str | None = None,
    judgments: str | Path | None = None,
    ties: TieRule = "trec_eval",
) -> Metrics:
    """``r2med score``: a run scored against judgments (equal scores ordered by ``ties``: trec_eval's rule, or the
    run's listed order: :func:`r2med.evaluation.ties.listed_order`).

    ``qrels``: TREC qrels, R2MED ``qrels.jsonl``, BEIR ``.tsv``, a collection folder (its judgments;
    ``split``: a BEIR folder's ``qrels/<split>.tsv``), or a benchmark's hub task (``bright:biology``,
    ``Biology``; :func:`score_task`: its judgments and exclusions only, under its protocol).
    ``run``: a TREC run file or a JSON score file (:func:`r2med.runs.run.read_run`), or a task folder, system
    folder or results root holding one task (the one named after the collection folder when there are several:
    :func:`~r2med.results.folders.run_file`).
    ``measures``: None for the default set (a hub task's: its protocol's).  ``judgments``: with a hub task, a
    judgments file scored on in place of the task's own (``--qrels``).
    """

    qrels, run = Path(qrels), Path(run)
    if not qrels.exists() and is_hub_task(str(qrels)):
        if split != "test":  # as evaluate refuses it: the hub tasks have one split
            raise R2MedError(
                f"--split {split}: the hub tasks (R2MED's and BRIGHT's) have one split (test); --split chooses among "
                "the qrels/<split>.tsv of a BEIR folder given as the judgments"
            )
        return score_task(str(qrels), run, measures, count_missing, strict, revision, judgments, ties)
    if judgments is not None or revision is not None:
        raise R2MedError(
            f"--qrels and --revision go with a hub task as the judgments (r2med score bright:biology RUN); "
            f"{qrels} is a file or folder of judgments itself"
        )
    collection = None
    split_folder = False  # a BEIR folder: its judgments are those of one split
    if qrels.is_dir():
        split_folder = (qrels / "qrels").is_dir()
        collection, qrels = qrels.name, qrels_file(qrels, split)
    if run.is_dir():
        run = run_file(run, task=collection)
        log.info("scoring %s against %s", run, qrels)
    check_input_file(qrels, "qrels")
    check_input_file(run, "run")
    try:
        judged = read_qrels(qrels, strict=strict)
    except R2MedError as exc:
        if _reads_as(read_run, qrels) and _reads_as(read_qrels, run):
            raise R2MedError(
                f"{exc}; the two files look swapped ({qrels} reads as a run, {run} as judgments): "
                f"`r2med score` takes the judgments first, then the run: r2med score {run} {qrels}"
            ) from None
        raise
    ranked = read_run(run)
    try:
        metrics = evaluate_with_ties(
            ranked, judged, measures=measures or DEFAULT_MEASURES, count_missing=count_missing, rule=ties
        )
    except NothingToScore as exc:
        hint = f"; these are the judgments of --split {split}" if collection is not None and split_folder else ""
        raise exc.at(f"{run} against {qrels}{hint}") from None
    unknown = sum(1 for q in ranked if q not in judged)
    if unknown:
        log.warning("%d run quer%s have no judgments and are not scored", unknown, "y" if unknown == 1 else "ies")
    return metrics


def score_task(
    task: str,
    run: str | Path,
    measures: Iterable[Measure] | None = None,
    count_missing: bool = False,
    strict: bool = False,
    revision: str | None = None,
    judgments: str | Path | None = None,
    ties: TieRule = "trec_eval",
) -> Metrics:
    """A run scored against a benchmark's hub task under its protocol: the task read for its queries and judgments
    only (a BRIGHT task's examples file: no documents downloaded, every file found at its revision first), each
    query's excluded documents removed from the run before scoring (counted in a warning), the protocol's measures
    (``measures`` None) -- pytrec_eval averaging over the queries both judged and answered, as BRIGHT's
    ``calculate_retrieval_metrics`` does unless ``count_missing``.  ``judgments``: a file judging in place of the
    task's own (``--qrels``)."""

    refs = resolve(task, None, revision, strict=strict, qrels=judgments)
    if len(refs) != 1:
        raise R2MedError(f"score takes one task's judgments; {task!r} names {len(refs)} tasks")
    run = Path(run)
    if run.is_dir():
        run = run_file(run, task=refs[0].name)
    check_input_file(run, "run")
    ranked = read_run(run)  # TREC or a JSON score file, read before anything is downloaded: a bad one is one line
    [ref] = check_hub(refs, corpus=False)
    collection = ref.load(corpus=False)
    if collection.exclusions:
        ranked, removed = collection.exclusions.drop_from(ranked)
        if removed:
            log.warning(
                "%s: %d entr%s the protocol of %s excludes removed before scoring (each query's excluded_ids)",
                run,
                removed,
                "y" if removed == 1 else "ies",
                collection.name,
            )
    if judgments is None:  # the task's own judgments: a bare run must be a run of this task
        check_fits(ranked, collection, str(run), revision)
    unknown = sum(1 for q in ranked if q not in collection.qrels)
    if unknown:
        log.warning("%d run quer%s have no judgments and are not scored", unknown, "y" if unknown == 1 else "ies")
    wanted = tuple(measures) if measures else protocol_of(collection).measures
    try:
        return evaluate_with_ties(ranked, collection.qrels, measures=wanted, count_missing=count_missing, rule=ties)
    except NothingToScore as exc:
        raise exc.at(f"{run} against {collection.name}") from None


def _hits(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]]) -> tuple[int, int]:
    """(judged-relevant documents the run retrieves, judged-relevant documents of the queries it answers), each
    document counted once: how well a run's documents fit a task's judgments, whatever its scores."""
    judged = {d for q, docs in qrels.items() if q in run for d, g in docs.items() if g > 0}
    retrieved = {d for q, docs in run.items() if q in qrels for d in docs}
    return len(retrieved & judged), len(judged)


#: below this share of its queries' relevant documents retrieved (at any depth), a run is checked against the
#: benchmark's other tasks: a real run of the task finds far more (BM25's Recall@1000 on BRIGHT is above 0.3)
FIT_SHARE = 0.01


def check_fits(
    run: Mapping[str, Mapping[str, float]], collection: Collection, where: str, revision: str | None
) -> None:
    """A bare run (a file: no recorded task) scored against a benchmark task must be a run of that task: BRIGHT's
    tasks share query ids 0..N, so a run of another task would be scored, at 0, as if it were this one's.

    The run fits when it retrieves at least :data:`FIT_SHARE` of the documents judged relevant for the queries it
    answers.  Otherwise the benchmark's other tasks are read (queries and judgments only) and the one it fits
    far better (10 times the documents, and :data:`FIT_SHARE`) is named in the error; a run that retrieves none
    of the task's judged documents is an error even when no other task is found (or can be read)."""
    hits, judged = _hits(run, collection.qrels)
    if not judged or hits >= FIT_SHARE * judged:
        return
    best: tuple[str, int, int] | None = None
    for other in _siblings(collection.name, revision):
        their_hits, their_judged = _hits(run, other.qrels)
        better = their_judged > 0 and their_hits >= max(10 * hits, 1, FIT_SHARE * their_judged)
        if better and (best is None or their_hits / their_judged > best[1] / best[2]):
            best = (other.name, their_hits, their_judged)
    if best is None and hits:
        return
    fits = (
        f"; it fits {best[0]} ({best[1]:,} of its {best[2]:,} relevant documents retrieved): r2med score {best[0]} "
        f"{where}"
        if best is not None
        else "; a run of another task or corpus?"
    )
    raise R2MedError(
        f"{where}: not a run of {collection.name}: it retrieves {hits:,} of the {judged:,} documents judged relevant "
        f"for its queries{fits}"
    )


def _siblings(task: str, revision: str | None) -> list[Collection]:
    """The other hub tasks of ``task``'s benchmark, read for their queries and judgments where they can be (a
    task that cannot be read -- offline, not in the cache -- is left out)."""
    try:
        family = benchmark_of(task)
    except R2MedError:
        family = None
    if family is None:
        return []
    found = []
    for name in family.task_names():
        if name.lower() == task.lower():
            continue
        try:
            found.append(
                TaskRef.on_hub(name, revision if revision and "=" not in revision else None).load(corpus=False)
            )
        except (R2MedError, OSError):
            continue
    return found


def _reads_as(reader: Callable[[Path], object], path: Path) -> bool:
    """Whether ``reader`` reads ``path`` without an error (which file a swapped pair of arguments is)."""
    try:
        reader(path)
    except (R2MedError, OSError, UnicodeDecodeError):
        return False
    return True


def demo_out(out: str | Path | None = None) -> Path:
    """Where ``r2med demo`` writes: ``--out`` when given, else ``$R2MED_HOME/demo`` (never into a results root
    of the user's, where a later ``report`` would mix it in)."""
    return Path(out) if out is not None else home() / "demo"
