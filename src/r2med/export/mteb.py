"""MTEB export: r2med results (``metrics.json`` records) written in MTEB's own results layout.

The files are built and written by the ``mteb`` package's classes (``TaskResult``, ``ModelMeta``,
``ResultCache.save_to_cache``), imported inside the functions that need them (extra ``r2med[mteb]``;
``import mteb`` takes seconds).  What this module owns is the translation:

* **tasks** -- an r2med task (``Biology``...) becomes the MTEB task whose dataset is the same hub repo
  (``R2MED/Biology`` -> ``R2MEDBiologyRetrieval``), found in mteb's ``R2MED`` benchmark, so the names
  and pinned dataset revisions are always those of the installed mteb.  Other tasks are skipped
  with a warning.
* **measures** -- pytrec_eval names to MTEB's score keys (:func:`mteb_scores`), only where the value
  is the one MTEB's retrieval evaluator would have computed from the same run; ``main_score`` is
  ``ndcg_at_10``.  Everything MTEB computes that r2med does not is listed as absent.
* **data revision** -- a result is only exported under the revision the data was loaded at: when
  the run's recorded revision is not MTEB's pin (another commit, a branch, or unknown because the
  data came from a local folder) the export refuses unless ``force`` (see :func:`export_mteb`).
* **a local collection named as an MTEB task** (``mteb_task``: ``--mteb-task SciFact``) -- a BEIR
  folder is accepted as MTEB's task when its counts (documents, queries of the split, non-zero
  judgments) equal the task's descriptive statistics in the installed mteb (read offline from the
  package, :func:`mteb_task_counts`: each count the statistics determine -- where they say two things, as mteb's
  PMC-Treatment does, that count is not compared and a warning says so); otherwise a one-line refusal giving both.

Layout written under ``out`` (mteb's results cache, the same as the results repository)::

    out/results/<org>__<model>/<model revision>/<MTEB task>.json
                                                 model_meta.json
                                                 run_settings.jsonl

Load it back with ``mteb.ResultCache(cache_path=out).load_results(include_remote=False)``.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ..data.benchmarks import benchmarks
from ..data.tasks import TASKS
from ..errors import MissingExtraError, R2MedError
from ..infra.containment import ensure_within, name_problem, refuse_links
from ..infra.home import atomic_dir, cache_dir
from ..infra.json_types import JsonValue
from ..measures import HEADLINE, Family, Measure, from_trec
from ..runs.record import RunRecord, parse_record

if TYPE_CHECKING:
    from mteb import TaskResult
    from mteb.abstasks.abstask import AbsTask
    from mteb.models.model_meta import ModelMeta

    from ..data.collection import Collection

log = logging.getLogger(__name__)

SPLIT = "test"
"""The split MTEB evaluates R2MED on (``eval_splits=["test"]``)."""
SUBSET = "default"
"""MTEB's one subset of each R2MED task (``eng-Latn``)."""
MAIN_SCORE = str(HEADLINE.mteb)
"""MTEB's ``main_score`` for the R2MED tasks (and the R2MED paper's headline measure)."""
K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 20, 100, 1000)
"""MTEB's retrieval cutoffs (``AbsTaskRetrieval.k_values``); the installed task's own list is used when known."""
MODEL_PREFIX = "r2med/"
"""Put before a model name without an organisation (MTEB model names are ``org/name``)."""

_NAUC_FAMILIES = ("ndcg", "map", "recall", "precision", "mrr")
_NAUC_STATS = ("max", "std", "diff1")


def mteb_score_keys(k_values: Sequence[int] = K_VALUES) -> list[str]:
    """Every score key an MTEB retrieval evaluation writes for ``k_values`` (148 for MTEB's default cutoffs):
    ``ndcg/map/recall/precision/mrr/hit_rate_at_k``, ``accuracy`` (= ``recall_at_1``) and the
    abstention curves ``nauc_<family>_at_k_<max|std|diff1>``."""
    keys = [Measure(family, k).mteb_at(k) for family in (Family.NDCG, Family.MAP, Family.RECALL) for k in k_values]
    keys.append("accuracy")
    keys += [Measure(Family.PRECISION, k).mteb_at(k) for k in k_values]
    keys += [Measure(Family.MRR).mteb_at(k) for k in k_values]
    keys += [f"nauc_{family}_at_{k}_{stat}" for family in _NAUC_FAMILIES for k in k_values for stat in _NAUC_STATS]
    keys += [f"hit_rate_at_{k}" for k in k_values]
    return keys


@dataclass
class MtebScores:
    """One task's scores under MTEB's keys, with where each came from and what could not be carried over."""

    values: dict[str, float]
    """MTEB key -> value (fractions 0..1, as both r2med and MTEB store them), ``main_score`` included."""
    derived: dict[str, str] = field(repr=False)
    """MTEB key -> the r2med measure (or derivation) it holds."""
    left_out: dict[str, str]
    """r2med measure -> why it has no MTEB key."""
    absent: list[str] = field(repr=False)
    """MTEB's keys (for the task's cutoffs) that r2med did not compute."""


def summarize_keys(keys: Iterable[str]) -> str:
    """``ndcg_at_3``, ``ndcg_at_5``, ``nauc_map_at_1_max``... -> ``ndcg_at_{3,5}, nauc_* (1)``: a short list for
    messages."""
    groups: dict[str, list[str]] = {}
    nauc = 0
    for key in keys:
        if key.startswith("nauc_"):
            nauc += 1
            continue
        m = re.fullmatch(r"(.+_at)_(\d+)", key)
        if m:
            groups.setdefault(m.group(1), []).append(m.group(2))
        else:
            groups.setdefault(key, [])
    parts = [
        f"{name}_{{{','.join(ks)}}}" if len(ks) > 1 else (f"{name}_{ks[0]}" if ks else name)
        for name, ks in groups.items()
    ]
    if nauc:
        parts.append(f"nauc_* ({nauc})")
    return ", ".join(parts) if parts else "none"


def run_depth(run: Mapping[str, Mapping[str, float]]) -> int:
    """The most docs any query has in ``run`` (what decides whether ``recip_rank`` is MTEB's ``mrr_at_k``)."""
    return max((len(docs) for docs in run.values()), default=0)


def mteb_scores(record: RunRecord, k_values: Sequence[int] = K_VALUES, depth: int | None = None) -> MtebScores:
    """Translate a ``metrics.json`` record's measures into MTEB's score keys.

    * ``ndcg_cut_k`` / ``map_cut_k`` / ``recall_k`` / ``P_k`` -> ``ndcg_at_k`` / ``map_at_k`` /
      ``recall_at_k`` / ``precision_at_k`` for ``k`` in MTEB's cutoffs (MTEB computes these with
      pytrec_eval too); ``recall_1`` also gives ``accuracy`` (MTEB's ``accuracy`` is ``recall_at_1``).
    * ``recip_rank`` (pytrec_eval's, over the whole ranking) -> ``mrr_at_k`` for every MTEB cutoff
      ``k >= depth``, where ``depth`` is the most docs any query has in the run (:func:`run_depth`):
      within that cutoff MTEB's MRR@k sees the whole ranking (same order, same ties).  Unknown depth:
      left out.
    * ``hit_rate_at_k`` (pytrec_eval ``success_k``, not stored by r2med) is the share of queries with
      ``recall_k > 0`` in ``per_query``; derived when every query has ``recall_k``.
    * ``main_score`` = ``ndcg_at_10``.

    Averages are r2med's (see :mod:`r2med.evaluation.metrics`); nothing is rescaled (both store fractions).
    """
    aggregate, per_query = record.aggregate, record.per_query
    ks = set(k_values)
    values: dict[str, float] = {}
    derived: dict[str, str] = {}
    left_out: dict[str, str] = {}
    for measure, value in aggregate.items():
        try:
            parsed = from_trec(str(measure))
        except R2MedError:
            left_out[measure] = "no MTEB counterpart"
            continue
        if parsed.cutoff is None:
            if depth is None:
                left_out[measure] = f"run depth unknown, so it cannot be matched to an MTEB {parsed.family.mteb_stem}_k"
                continue
            cut = [k for k in k_values if k >= depth]
            if not cut:
                left_out[measure] = f"runs are {depth} deep, deeper than MTEB's largest cutoff {max(k_values)}"
            for k in cut:
                values[parsed.mteb_at(k)] = float(value)
                derived[parsed.mteb_at(k)] = f"{measure} (runs at most {depth} deep)"
            continue
        k = parsed.cutoff
        if k not in ks:
            left_out[measure] = f"cutoff {k} is not one of MTEB's ({', '.join(map(str, k_values))})"
            continue
        key = parsed.mteb_at(k)
        values[key] = float(value)
        derived[key] = measure
    recall_at_1 = Measure(Family.RECALL, 1).trec
    if recall_at_1 in aggregate and 1 in ks:
        values["accuracy"] = float(aggregate[recall_at_1])
        derived["accuracy"] = recall_at_1
    if per_query:
        for k in k_values:
            name = Measure(Family.RECALL, k).trec
            if all(name in row for row in per_query.values()):
                values[f"hit_rate_at_{k}"] = sum(1.0 for row in per_query.values() if row[name] > 0) / len(per_query)
                derived[f"hit_rate_at_{k}"] = f"share of queries with {name} > 0"
    if MAIN_SCORE in values:
        values["main_score"] = values[MAIN_SCORE]
        derived["main_score"] = derived[MAIN_SCORE]
    absent = [key for key in mteb_score_keys(k_values) if key not in values]
    return MtebScores(values, derived, left_out, absent)


@dataclass(frozen=True)
class CollectionCounts:
    """What must match between a local collection and an MTEB task for the one to be filed as the other."""

    documents: int
    queries: int
    judgments: int
    """Judgments with a non-zero grade (MTEB's ``num_relevant_docs``)."""

    def __str__(self) -> str:
        return f"{self.documents:,} docs, {self.queries:,} queries, {self.judgments:,} non-zero judgments"


def collection_counts(collection: Collection) -> CollectionCounts:
    """A :class:`~r2med.data.Collection`'s counts, as MTEB's descriptive statistics count them."""
    return CollectionCounts(
        len(collection.corpus),
        len(collection.queries),
        sum(1 for docs in collection.qrels.values() for grade in docs.values() if grade != 0),
    )


def find_mteb_task(name: str) -> AbsTask:
    """The installed mteb's task called ``name`` (``SciFact``), or a one-line error with mteb's suggestion."""
    mteb = _import_mteb()
    try:
        task: AbsTask = mteb.get_task(name)  # mteb imported late (it loads for seconds): typed here
    except KeyError as exc:
        raise R2MedError(
            f"--mteb-task {name}: {str(exc.args[0] if exc.args else exc).removeprefix('KeyError: ')}"
        ) from None
    if task.metadata.type != "Retrieval":
        raise R2MedError(f"--mteb-task {name}: a {task.metadata.type} task; r2med results are retrieval results")
    return task


@dataclass(frozen=True)
class MtebCounts:
    """The counts an MTEB task's descriptive statistics truly determine: each is None where the statistics say two
    different things (PMC-Treatment's ``num_queries`` 5 beside query-text statistics of 150 texts) or nothing, with
    the reason in ``undetermined``."""

    documents: int | None
    queries: int | None
    judgments: int | None
    undetermined: tuple[str, ...] = ()

    def differences(self, local: CollectionCounts) -> list[str]:
        """Each determined count that ``local`` does not have, in words."""
        out = []
        for what, theirs, ours in (
            ("documents", self.documents, local.documents),
            ("queries", self.queries, local.queries),
            ("non-zero judgments", self.judgments, local.judgments),
        ):
            if theirs is not None and theirs != ours:
                out.append(f"{ours:,} {what} where MTEB's statistics have {theirs:,}")
        return out


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _texts_counted(stats: object) -> int | None:
    """How many texts a ``*_text_statistics`` block describes: its total length over its average length (the
    statistics have no count of their own in every mteb version)."""
    if not isinstance(stats, dict):
        return None
    total, average = stats.get("total_text_length"), stats.get("average_text_length")
    if not isinstance(total, (int, float)) or not isinstance(average, (int, float)) or average <= 0:
        return None
    n = total / average
    return round(n) if abs(n - round(n)) < 1e-6 * max(1.0, n) else None


def mteb_task_counts(task: AbsTask, split: str) -> MtebCounts | None:
    """The counts of ``task``'s ``split`` that the descriptive statistics shipped in the installed mteb package
    determine (no download), or None when it has none for that split.

    A count is determined when the statistics give it once, or several times alike: documents from
    ``num_documents`` and the document-text statistics (total length / average length), queries from
    ``num_queries`` and the query-text statistics, judgments from ``num_relevant_docs``.  Where two of them
    disagree (mteb's R2MED PMC-Treatment: ``num_queries`` 5, 150 query texts), the count is not determined and is
    not compared."""
    try:
        stats = task.metadata.descriptive_stats
    except Exception:
        return None
    block = (stats or {}).get(split)
    if not isinstance(block, dict):
        return None
    relevant = block.get("relevant_docs_statistics")
    relevant = relevant if isinstance(relevant, dict) else block  # older mteb: the keys at the top
    undetermined: list[str] = []

    def agreed(what: str, *values: int | None) -> int | None:
        given = {v for v in values if v is not None}
        if len(given) == 1:
            return given.pop()
        if given:
            undetermined.append(f"{what}: the statistics say {' and '.join(f'{v:,}' for v in sorted(given))}")
        else:
            undetermined.append(f"{what}: the statistics do not say")
        return None

    counts = MtebCounts(
        agreed("documents", _count(block.get("num_documents")), _texts_counted(block.get("documents_text_statistics"))),
        agreed("queries", _count(block.get("num_queries")), _texts_counted(block.get("queries_text_statistics"))),
        agreed("non-zero judgments", _count(relevant.get("num_relevant_docs"))),
    )
    if counts.documents is None and counts.queries is None and counts.judgments is None:
        return None
    return MtebCounts(counts.documents, counts.queries, counts.judgments, tuple(undetermined))


def check_mteb_task(task: AbsTask, split: str, local: CollectionCounts, collection: str) -> list[str]:
    """A one-line error unless ``collection`` (its ``split``) has every count of MTEB's ``task`` that its statistics
    determine; returns the counts they leave undetermined (said as warnings by the caller)."""
    name = task.metadata.name
    if split not in task.metadata.eval_splits:
        raise R2MedError(
            f"--mteb-task {name}: the results are on the {split} split, MTEB evaluates "
            f"{name} on {', '.join(task.metadata.eval_splits)}"
        )
    if list(task.metadata.hf_subsets) != [SUBSET]:
        raise R2MedError(
            f"--mteb-task {name}: it has subsets ({', '.join(task.metadata.hf_subsets)}); "
            "only tasks with one subset can be matched to one local collection"
        )
    expected = mteb_task_counts(task, split)
    if expected is None:
        raise R2MedError(
            f"--mteb-task {name}: the installed mteb has no descriptive statistics for its {split} "
            "split, so the collection cannot be checked against it"
        )
    differences = expected.differences(local)
    if differences:
        raise R2MedError(
            f"--mteb-task {name}: {collection} ({split}) has {'; '.join(differences)}: "
            "not the same collection, not exported"
        )
    return [f"--mteb-task {name}: not compared, {reason}" for reason in expected.undetermined]


@dataclass
class ExportedTask:
    task: str
    """r2med's task name."""
    mteb_task: str
    dataset_revision: str
    """The revision written into the result (MTEB's pin, unless forced past a mismatch)."""
    path: Path
    scores: MtebScores


@dataclass
class MtebExport:
    """What :func:`export_mteb` wrote."""

    out: Path
    model_name: str
    model_revision: str
    folder: Path
    """``out/results/<model>/<revision>``: the task files, ``model_meta.json`` and ``run_settings.jsonl``."""
    tasks: list[ExportedTask] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """r2med task name -> why it was not exported."""
    warnings: list[str] = field(default_factory=list)


def _import_mteb() -> ModuleType:
    """``import mteb``, which makes its default results cache folder (``~/.cache/mteb``) as it loads:
    pointed into the r2med home for the import (unless ``MTEB_CACHE`` is set), so r2med writes nowhere else."""
    if sys.modules.get("mteb") is not None:
        return sys.modules["mteb"]

    unset = "MTEB_CACHE" not in os.environ
    try:
        if unset:
            os.environ["MTEB_CACHE"] = str(cache_dir("mteb"))
        import mteb
    except ImportError:
        raise MissingExtraError("mteb", "mteb", "Exporting results for MTEB") from None
    finally:
        if unset:
            os.environ.pop("MTEB_CACHE", None)
    return mteb


def mteb_task_names() -> dict[str, AbsTask]:
    """r2med task name -> the installed mteb's task object for the same hub dataset, over the families MTEB has a
    benchmark of (:attr:`r2med.data.benchmarks.Benchmark.mteb_benchmark`; R2MED's: ``R2MED/<Task>``)."""
    mteb = _import_mteb()
    found: dict[str, AbsTask] = {}
    for family in benchmarks():
        if family.mteb_benchmark is None:
            continue
        try:
            tasks = mteb.get_benchmark(family.mteb_benchmark).tasks
        except Exception:
            retrieval = mteb.get_tasks(task_types=["Retrieval"])
            tasks = [t for t in retrieval if t.metadata.name.startswith(family.mteb_benchmark)]
        by_repo = {t.metadata.dataset.get("path"): t for t in tasks}
        for name in family.task_names():
            repo = family.hub_request(name, None, corpus=False).repo_id
            if repo in by_repo:
                found[name] = by_repo[repo]
    return found


def _model_meta(name: str, revision: str | None, overrides: Mapping[str, JsonValue] | None) -> ModelMeta:
    """MTEB's registry entry for ``name`` when mteb knows the model, else an empty ModelMeta named ``name``."""
    _import_mteb()
    import mteb
    from mteb.models.model_meta import ModelMeta

    if "/" not in name:
        name = MODEL_PREFIX + name
    updates = dict(overrides or {})
    updates.pop("name", None)
    try:
        meta = mteb.get_model_meta(name)
    except (KeyError, ValueError):
        meta = None
    if meta is not None and revision and meta.revision and meta.revision != revision:
        log.warning(
            "model %s: exporting for revision %s; MTEB's registry knows it at %s", name, revision, meta.revision
        )
    if revision:
        updates["revision"] = revision
    if meta is None:
        meta = ModelMeta.create_empty(overwrites={"name": name, **updates})
    elif updates:
        meta = meta.model_copy(update=updates)
    try:  # create_empty/model_copy do not validate: do it here, so a bad field fails before anything is written
        ModelMeta.model_validate(meta.model_dump())
    except Exception as exc:
        first = str(exc).strip().splitlines()
        raise R2MedError(f"model metadata for {name!r} is not valid for MTEB: {' '.join(first[:3])}") from None
    return meta


def _task_name(record: RunRecord) -> str | None:
    task = record.task
    if task is None:
        return None
    if task in TASKS:
        return task
    lowered = {k.lower(): k for k in TASKS}
    return lowered.get(task.lower(), task)


def export_mteb(
    results: Iterable[RunRecord | Mapping[str, JsonValue]],
    out: str | os.PathLike[str],
    model_name: str,
    model_revision: str | None = None,
    *,
    depths: Mapping[str, int] | None = None,
    force: bool = False,
    model_meta: Mapping[str, JsonValue] | None = None,  # ModelMeta's fields, as the user gives them
    mteb_task: str | None = None,
    counts: Mapping[str, CollectionCounts] | None = None,
) -> MtebExport:
    """Write r2med results as MTEB results under ``out`` (see the module docstring for the layout).

    ``results``: one record per task (:func:`r2med.runs.record.read_record`), or its ``metrics.json`` payload
    (``task``, ``aggregate``, ``per_query``, ``revision``, ``timing``...: JSON, read by the one reader,
    :func:`r2med.runs.record.parse_record`, a fault one line naming the task).  Tasks that are not R2MED
    tasks are skipped with a warning; the same task twice is an error.
    ``model_name``: MTEB's ``org/name`` (a name without ``/`` gets ``r2med/`` before it); a model
    MTEB's registry knows starts from its registry metadata.  ``model_revision``: the model's commit
    (else the registry's, else ``no_revision_available``).  ``model_meta``: further ``ModelMeta``
    fields (``reference``, ``similarity_fn_name``, ``n_parameters``...).
    ``depths``: r2med task -> the most docs any query has in its run (:func:`run_depth`); needed to
    export ``recip_rank`` as ``mrr_at_k``.

    Data revision: each result must record (``revision``) the hub commit MTEB pins for its task.
    Otherwise the export refuses, naming every such task, before anything is written; with
    ``force`` it goes on: a result recorded at another revision is written with *that* revision (the
    truth, which MTEB's results repository will not compare with its pinned results), and a result
    with no recorded revision (data from a local folder) is written with MTEB's pin, on the word of
    whoever forced it (a warning says so).

    ``mteb_task``: file a local collection's results as this MTEB task (one task in ``results``); its
    ``counts`` (r2med task -> :class:`CollectionCounts` of the collection the results were made on)
    must equal the task's descriptive statistics (:func:`check_mteb_task`), and the result is then
    written with MTEB's pinned dataset revision and the results' split.

    The model's revision folder is rebuilt beside itself and swapped in at the end, keeping the
    other tasks' files already there: an interrupted export leaves the previous folder whole.
    """
    mteb = _import_mteb()
    out = Path(out)
    names = mteb_task_names()
    meta = _model_meta(model_name, model_revision, model_meta)
    _check_folder_names(meta)
    # model_name_as_path() raises on a missing name and name_problem() refuses a missing revision
    assert meta.name is not None and meta.revision is not None
    report = MtebExport(
        out=out,
        model_name=meta.name,
        model_revision=meta.revision,
        folder=out / "results" / meta.model_name_as_path() / meta.revision,
    )
    records = [_checked(r) for r in results]
    named = find_mteb_task(mteb_task) if mteb_task is not None else None
    if named is not None and len(records) != 1:
        raise R2MedError(
            f"--mteb-task {mteb_task} names one collection, but the results hold {len(records)} "
            "tasks: export the system folder's one task (OUT/<system>/<task>)"
        )
    refused: list[str] = []
    built: list[tuple[TaskResult, ExportedTask]] = []
    seen: set[str] = set()
    for record in records:
        chosen = _choose_task(record, names, named, mteb_task, counts, report, mteb.__version__)
        if chosen is None:
            continue
        task, mtask = chosen
        if task in seen:
            raise R2MedError(f"two results for {task}: export one system's results at a time")
        seen.add(task)
        revision = _dataset_revision(task, mtask, record, named is not None, counts, force, report, refused)
        if revision is None:
            continue
        depth = (depths or {}).get(str(record.task) if named else task)
        built.append(_built_task(task, mtask, record, revision, depth, named is not None, report))
    _check_something_to_write(refused, report, built)
    _write_results(out, report, built, meta)
    report.tasks = [exported for _, exported in built]
    absent = [key for key in mteb_score_keys() if any(key in t.scores.absent for t in report.tasks)]
    log.info(
        "MTEB export: %d task(s) in %s; MTEB keys not exported (r2med did not compute them): %s",
        len(report.tasks),
        report.folder,
        summarize_keys(absent),
    )
    return report


def _check_folder_names(meta: ModelMeta) -> None:
    """The model's name and revision become folder names: each must be a safe one."""
    for part, what in ((meta.model_name_as_path(), "model name"), (meta.revision, "model revision")):
        problem = name_problem(part)
        if problem is not None:
            raise R2MedError(f"{what} {problem}; it becomes a folder name in MTEB's layout")


def _checked(result: RunRecord | Mapping[str, JsonValue]) -> RunRecord:
    """A result as its record: a payload (JSON: open until read) read by the one reader, a fault naming its task."""
    if isinstance(result, RunRecord):
        return result
    task = result.get("task")
    return parse_record(result, f"results for {task if isinstance(task, str) else '(no task name)'}")


def _choose_task(
    record: RunRecord,
    names: dict[str, AbsTask],
    named: AbsTask | None,
    mteb_task: str | None,
    counts: Mapping[str, CollectionCounts] | None,
    report: MtebExport,
    mteb_version: str,
) -> tuple[str, AbsTask] | None:
    """(r2med task, MTEB task) a checked result is filed under; None: skipped (the reason in ``report``).
    ``named``: the ``--mteb-task`` a local collection is filed as (its counts checked against it)."""

    task = _task_name(record)
    label = task if task is not None else "(no task name)"
    if named is not None:
        split = record.split or SPLIT
        local = (counts or {}).get(str(record.task))
        if local is None:
            raise R2MedError(f"--mteb-task {mteb_task}: the collection of {label} could not be counted")
        report.warnings.extend(check_mteb_task(named, split, local, label))
        return label, named
    if task is None or task not in TASKS:
        report.skipped[label] = "not an R2MED task: MTEB has no task for it"
        return None
    if task not in names:
        report.skipped[task] = f"the installed mteb {mteb_version} has no task for R2MED/{task}"
        return None
    return task, names[task]


def _dataset_revision(
    task: str,
    mtask: AbsTask,
    record: RunRecord,
    named: bool,
    counts: Mapping[str, CollectionCounts] | None,
    force: bool,
    report: MtebExport,
    refused: list[str],
) -> str | None:
    """The data revision a result is written with (see :func:`export_mteb`); None: refused (why, in ``refused``).
    Warnings go to ``report``."""
    pin: str = mtask.metadata.revision
    recorded = record.revision
    if named and recorded is None:
        report.warnings.append(
            f"{task}: local data with the counts of MTEB's {mtask.metadata.name} "
            f"({(counts or {})[str(record.task)]}); written with MTEB's dataset revision "
            f"{pin} on that evidence"
        )
        return pin
    if recorded == pin:
        return pin
    if recorded is None:
        why = (
            f"{task}: the results record no data revision (data from a local folder), "
            f"MTEB's {mtask.metadata.name} is pinned at {pin}"
        )
    else:
        why = (
            f"{task}: the results were made on data revision {recorded}, MTEB's {mtask.metadata.name} "
            f"is pinned at {pin}"
        )
    if not force:
        refused.append(why)
        return None
    if recorded is not None:
        report.warnings.append(
            f"{why}; written with revision {recorded} (forced): MTEB's results "
            f"repository compares only results at its pinned revision"
        )
        return recorded
    report.warnings.append(f"{why}; written with MTEB's pin on your word (forced)")
    return pin


def _built_task(
    task: str,
    mtask: AbsTask,
    record: RunRecord,
    revision: str,
    depth: int | None,
    named: bool,
    report: MtebExport,
) -> tuple[TaskResult, ExportedTask]:
    """MTEB's ``TaskResult`` of one result, and what :func:`export_mteb` reports of it."""
    from mteb import TaskResult

    split = record.split or SPLIT
    k_values = tuple(getattr(mtask, "k_values", K_VALUES))
    scores = mteb_scores(record, k_values, depth)
    if mtask.metadata.main_score != MAIN_SCORE:
        raise R2MedError(
            f"{task}: MTEB's main score for {mtask.metadata.name} is {mtask.metadata.main_score}, "
            f"which r2med does not compute"
        )
    if "main_score" not in scores.values:
        raise R2MedError(f"{task}: the results have no ndcg_cut_10, MTEB's main score for {mtask.metadata.name}")
    judged = len(record.per_query)
    if not named and judged and judged != TASKS[task].queries:
        report.warnings.append(
            f"{task}: {judged} queries scored, the R2MED task has {TASKS[task].queries} "
            f"(a subset, or queries without results)"
        )
    seconds = (record.timing or {}).get("total_s")
    result = TaskResult.from_task_results(
        mtask,
        {split: {SUBSET: dict(scores.values)}},
        # mteb types the parameter float, but its TaskResult field is float | None and None is passed through
        evaluation_time=float(seconds) if seconds is not None and math.isfinite(seconds) else None,  # type: ignore[arg-type]
    )
    if revision != result.dataset_revision:
        result = result.model_copy(update={"dataset_revision": revision})
    path = report.folder / f"{mtask.metadata.name}.json"
    return result, ExportedTask(task, mtask.metadata.name, revision, path, scores)


def _check_something_to_write(
    refused: list[str], report: MtebExport, built: list[tuple[TaskResult, ExportedTask]]
) -> None:
    """Refuse before writing when a revision differs (unforced) or nothing is left; log skips and warnings."""
    if refused:
        raise R2MedError(
            "not exported, the data revision differs from MTEB's (re-run on the hub data at "
            "MTEB's pin, or force it): " + "; ".join(refused)
        )
    for task, why in report.skipped.items():
        log.warning("%s: skipped (%s)", task, why)
    if not built:
        raise R2MedError(
            "nothing to export: none of the results is for an R2MED task (a local collection "
            "can be named as an MTEB task with --mteb-task)"
        )
    for message in report.warnings:
        log.warning("%s", message)


def _write_results(
    out: Path, report: MtebExport, built: list[tuple[TaskResult, ExportedTask]], meta: ModelMeta
) -> None:
    """The model's revision folder rebuilt beside itself (keeping the tasks exported before) and swapped in."""
    from mteb import ResultCache

    # the folder is merged with what it holds, not written whole: a link there (or above) is refused, never read
    final = refuse_links(out, ensure_within(out, report.folder), include_last=True)
    with atomic_dir(final) as tmp:
        cache = ResultCache(cache_path=tmp / "stage")
        staged = cache.get_task_result_path(built[0][0].task_name, meta).parent
        if final.is_dir():  # keep the tasks exported before (and merge run_settings.jsonl as mteb does)
            shutil.copytree(final, staged, symlinks=True)
        for result, _ in built:
            cache.save_to_cache(result, meta)
        for child in staged.iterdir():
            os.replace(child, tmp / child.name)
        shutil.rmtree(tmp / "stage")
