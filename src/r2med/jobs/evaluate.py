"""``r2med evaluate``: run one retriever over tasks -- load, index, search, score, write a run folder.

(:func:`r2med.evaluate` only scores a run; this module is the whole job.)

* :func:`plan` -- what a retriever is run with: its options, checked against its registry record
  (defaults filled in), the query builder of an expansion, and the result's name;
* :func:`run_task` -- one collection: retrieve, then :func:`~r2med.results.folders.finish_task`, or
  reuse a finished folder made with the same configuration and data;
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data import Collection, TaskRef
from ..errors import R2MedError, shown
from ..evaluation.metrics import DEFAULT_MEASURES, Metrics
from ..evaluation.ties import evaluate_with_ties
from ..infra import progress
from ..infra.containment import plain_name
from ..infra.home import fingerprint_texts
from ..results.folders import TaskResult, finish_task, reuse
from ..retrieval.base import QueryText, index_collection

log = logging.getLogger(__name__)

QueryBuilder = Callable[[Collection, str], Mapping[str, QueryText]]
"""(collection, retriever family) -> the query texts to search with (expansions hook in here)."""


@dataclass(frozen=True)
class Plan:
    """How one retriever is run: registry name, checked options, the result's name, the query builder."""

    retriever: str
    options: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    query_builder: QueryBuilder | None = None

    @property
    def name(self) -> str:
        return self.label or self.retriever


def plan(
    retriever: str,
    options: Mapping[str, Any] | None = None,
    cache: bool = True,
    expansion: str | None = None,
    expansion_file: str | Path | None = None,
    expansion_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    revision: str | None = None,
    name: str | None = None,
) -> Plan:
    """Check ``options`` against the retriever's registry record and set up its expansion, if any.

    ``options`` holds what the user set (None: not set); an option the retriever does not take is a
    one-line error.  The result is named ``name`` (``--name``), else after the retriever -- and the
    model, for a retriever named after it (``dense-all-MiniLM-L6-v2``) -- and the expansion
    (``<retriever>+<method>-<llm>``).
    """
    from ..retrieval.registry import retriever_meta

    meta = retriever_meta(retriever)
    checked = {"cache": cache, **meta.check_options(dict(options or {}))}
    label = retriever
    if meta.named_after and checked.get(meta.named_after):
        label = f"{retriever}-{model_name(str(checked[meta.named_after]))}"
    if retriever == "custom" and checked.get("encoder") is not None:
        from ..infra.user_code import short_name

        label = f"custom-{short_name(checked['encoder'])}"
    builder = None
    if expansion or expansion_file or expansion_dir:
        from ..expansion.precomputed import expansion_builder

        builder = expansion_builder(expansion, expansion_file, expansion_dir, data_dir, revision)
        label = f"{label}+{builder.label}"
    if name is not None:
        label = plain_name(name, "--name", run_name=True)
    plain_name(
        label, f"result name {shown(label)} (pass --name):", run_name=True
    )  # a folder under --out, the run's tag
    return Plan(retriever, checked, label, builder)


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
    collection: Collection,
    retriever: str,
    options: Mapping[str, Any] | None = None,
    k: int = 100,
    out: str | Path | None = None,
    measures: Iterable[str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    query_builder: QueryBuilder | None = None,
    label: str | None = None,
    overwrite: bool = False,
) -> TaskResult:
    """Retrieve, evaluate and (with ``out``) write ``out/<task>/`` for one collection."""
    from ..retrieval.registry import make_retriever  # imports numpy/scipy: not at CLI start-up

    options = dict(options or {})
    collection.warn_about_qrels()
    retriever_ = make_retriever(retriever, task=collection.name, **options)
    queries = query_builder(collection, retriever_.family) if query_builder else collection.queries
    describe = getattr(query_builder, "describe", None)
    config = {
        "retriever": retriever,
        "options": options,
        "k": k,
        **retriever_.config(),
        "expansion": describe(collection) if describe else None,
        "queries_fingerprint": queries_fingerprint(queries),
        **({"split": collection.split} if collection.split is not None else {}),
    }
    if collection.corpus_repeats and getattr(retriever_, "indexes_repeats", False):
        config["corpus_repeats"] = len(collection.corpus_repeats)  # indexed too: the corpus read as a list
    reused = reuse(out, config, collection, measures, count_missing, overwrite)
    if reused is not None:
        return reused
    if options.get("cache", True):
        from ..infra.home import remember_collection

        remember_collection(collection.fingerprint, collection.name, collection.source)
    t0 = time.perf_counter()
    index_collection(retriever_, collection)
    t1 = time.perf_counter()
    run = retriever_.search(queries, k=k)
    timing = {"index_s": t1 - t0, "search_s": time.perf_counter() - t1}
    timing["total_s"] = time.perf_counter() - t0
    facts = getattr(retriever_, "encoding_facts", None)
    return finish_task(
        collection,
        label or retriever,
        run,
        config,
        out,
        measures,
        count_missing,
        timing,
        facts() if callable(facts) else None,
    )


def run_tasks(
    job: Plan,
    tasks: Sequence[TaskRef],
    k: int = 100,
    out: str | Path | None = None,
    measures: Iterable[str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
) -> list[TaskResult]:
    """:func:`run_task` for every task, in order, one collection in memory at a time (on the progress
    display: the task loop, and inside it each task's long steps)."""
    results = []
    with progress.task(job.name, total=len(tasks), unit="tasks") as loop:
        for ref in tasks:
            loop.describe(f"{job.name} · {ref.name}: loading")
            collection = ref.load()
            loop.describe(f"{job.name} · {collection.name}")
            result = run_task(
                collection,
                job.retriever,
                job.options,
                k=k,
                out=out,
                measures=measures,
                count_missing=count_missing,
                query_builder=job.query_builder,
                label=job.name,
                overwrite=overwrite,
            )
            log.info("%s: nDCG@10 = %.4f%s", result.task, result.headline, " (reused)" if result.reused else "")
            results.append(result)
            loop.advance()
    return results


def demo_tasks(revision: str | None = None, strict: bool = False) -> tuple[list[TaskRef], str | None]:
    """What ``r2med demo`` runs: R2MED's 8 tasks from the hub; when the hub cannot be reached (only then:
    a missing file or revision is an error), the built-in demo collection, with the reason."""
    from ..data import check_hub, resolve
    from ..data.hub import HubUnavailable

    try:
        return check_hub(resolve("all", None, revision, strict=strict)), None  # all 8 found before any download
    except HubUnavailable as exc:
        return [TaskRef.the_demo(strict=strict)], str(exc)


#: ``r2med demo`` runs the paper's BM25 as it was first published by r2med (no options recorded).
DEMO = Plan("bm25", label="bm25")


def score_files(
    qrels: str | Path,
    run: str | Path,
    measures: Iterable[str] | None = None,
    count_missing: bool = False,
    strict: bool = False,
    split: str = "test",
) -> Metrics:
    """``r2med score``: a run scored against judgments.

    ``qrels``: TREC qrels, R2MED ``qrels.jsonl``, BEIR ``.tsv``, or a collection folder (its judgments;
    ``split``: a BEIR folder's ``qrels/<split>.tsv``).
    ``run``: a TREC run file or a JSON score file (:func:`r2med.runs.run.read_run`), or a task folder, system
    folder or results root holding one task (the one named after the collection folder when there are several:
    :func:`~r2med.results.folders.run_file`).
    """
    from ..data import read_qrels
    from ..data.loaders import qrels_file
    from ..infra.containment import check_input_file
    from ..results.folders import run_file
    from ..runs.run import read_run

    qrels, run = Path(qrels), Path(run)
    collection = None
    if qrels.is_dir():
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
    unknown = sum(1 for q in ranked if q not in judged)
    if unknown:
        log.warning("%d run quer%s have no judgments and are not scored", unknown, "y" if unknown == 1 else "ies")
    return evaluate_with_ties(ranked, judged, measures=measures, count_missing=count_missing)


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
    from ..infra.home import home

    return Path(out) if out is not None else home() / "demo"
