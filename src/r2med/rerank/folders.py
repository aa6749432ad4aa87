"""Run folders in, run folders out: reranking and fusing what ``r2med evaluate`` wrote.

A first-stage run folder (``OUT/<retriever>/``) holds one task folder per task with
``run.trec`` and ``metrics.json`` (which names the ``task``, its data ``source`` and the
``dataset_fingerprint``).  :func:`load_inputs` reads them, finds each task's collection
(``--data-dir``, else the recorded source folder, else the hub -- as ``evaluate`` does) and
validates the runs against it *before* any model is loaded, so bad input fails at once
with nothing written.  :func:`rerank_inputs` and :func:`fuse_inputs` write
``OUT/<name>/<task>/{run.trec,metrics.json,r2med_results.json}`` atomically, evaluated like
any other run; a task whose folder already holds results for the same configuration,
data and input runs is reused, so an interrupted job resumes.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import Collection
from ..data.loaders import load_demo, load_folder
from ..errors import DataError, R2MedError
from ..metrics import DEFAULT_MEASURES, evaluate
from ..paths import task_folder
from ..pipeline import TaskResult, metrics_payload, resolve_collections, reuse_finished
from ..run import RUN_FILE, as_written, Run, read_metrics, read_trec, task_folders, write_task_results
from .base import Reranker, rerank_run

log = logging.getLogger(__name__)

DEMO_SOURCE = "built-in demo collection"


@dataclass
class TaskInput:
    """One task of a first-stage run folder, matched to its collection."""

    task: str
    folder: Path
    run: Run
    meta: dict[str, Any]
    collection: Collection
    run_fingerprint: str

    @property
    def retriever(self) -> str:
        return str(self.meta.get("retriever") or self.folder.parent.name)


def _file_fingerprint(path: Path) -> str:
    h = hashlib.blake2b(digest_size=10)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def collection_for(task: str, meta: Mapping[str, Any], data_dir: str | Path | None = None,
                   revision: str | None = None) -> Collection:
    """The collection a first-stage task folder was made on."""
    if data_dir is not None:
        return resolve_collections([task], data_dir, revision)[0]()
    source = str(meta.get("source") or "")
    if source == DEMO_SOURCE or task == "demo":
        return load_demo()
    if source and Path(source).is_dir():
        return load_folder(source, name=task)
    from ..tasks import TASK_NAMES

    if task.lower() not in {t.lower() for t in TASK_NAMES}:
        raise R2MedError(f"cannot find the collection of task {task!r} (recorded source {source!r} is gone); "
                         "pass --data-dir")
    from ..data import load_task

    # the hub commit the first stage used (metrics.json "revision"), unless --revision says otherwise
    recorded = meta.get("revision") if isinstance(meta.get("revision"), str) else None
    return load_task(task, revision=revision or recorded)


def _line_of(path: Path, qid: str, did: str) -> int | None:
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if len(fields) >= 4 and fields[0] == qid and (fields[2] == did or (len(fields) == 4 and fields[1] == did)):
                return number
    return None


def unknown_docs(run: Mapping[str, Mapping[str, float]], corpus: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(qid, did) for qid, docs in run.items() for did in docs if did not in corpus]


def load_inputs(run_dir: str | Path, data_dir: str | Path | None = None, revision: str | None = None,
                tasks: Sequence[str] | None = None, require_docs: bool = True,
                collections: dict[tuple[str, str], Collection] | None = None) -> list[TaskInput]:
    """Read and validate every finished task of a run folder (or one task folder).

    ``require_docs``: a run naming docs missing from the corpus is an error (rerankers need
    the texts); otherwise it is a counted warning.  ``collections`` caches loaded
    collections across calls (fusion reads several run folders of the same tasks).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise R2MedError(f"{run_dir}: no such run folder")
    folders = task_folders(run_dir)
    if not folders:
        raise R2MedError(f"{run_dir}: no finished task folders (with metrics.json); run `r2med evaluate` first")
    wanted = {t.lower() for t in tasks} if tasks else None
    cache = collections if collections is not None else {}
    inputs = []
    for folder in folders:
        meta = read_metrics(folder)
        task = str(meta.get("task") or folder.name)
        if wanted is not None and task.lower() not in wanted:
            continue
        path = folder / RUN_FILE
        run = read_trec(path)
        key = (task, str(data_dir) if data_dir is not None else str(meta.get("source") or ""))
        if key not in cache:
            cache[key] = collection_for(task, meta, data_dir, revision)
        collection = cache[key]
        recorded = meta.get("dataset_fingerprint")
        if recorded and recorded != collection.fingerprint:
            log.warning("%s: the run was made on a different version of the corpus (fingerprint %s, now %s)",
                        folder, recorded, collection.fingerprint)
        missing = unknown_docs(run, collection.corpus)
        if missing:
            qid, did = missing[0]
            message = (f"doc {did!r} (query {qid!r}) is not in the corpus of {collection.name}"
                       f" ({len(missing)} unknown doc entr{'y' if len(missing) == 1 else 'ies'} in all)")
            if require_docs:
                raise DataError(path, _line_of(path, qid, did),
                                message + "; this run was made on another collection: pass the right --data-dir")
            log.warning("%s: %s; they count as non-relevant", path, message)
        inputs.append(TaskInput(task, folder, run, meta, collection, _file_fingerprint(path)))
    if wanted is not None and not inputs:
        raise R2MedError(f"{run_dir}: none of the tasks {', '.join(sorted(tasks or []))} is in this run folder")
    return inputs


def _finish(collection: Collection, name: str, run: Run, config: Mapping[str, Any], out: Path | None,
            measures, count_missing: bool, timing: dict[str, float]) -> TaskResult:
    # Score what the file will hold (run.as_written), so metrics.json always matches re-scoring run.trec
    # there; rounding first keeps metrics.json equal to scoring run.trec.
    run = as_written(run)
    metrics = evaluate(run, collection.qrels, measures=measures, count_missing=count_missing)
    folder = task_folder(out, collection.name) if out is not None else None
    if folder is not None:
        payload = metrics_payload(collection, name, config, metrics, timing, count_missing)
        write_task_results(folder, run, payload, tag=name, root=out)
    return TaskResult(collection.name, metrics, folder, timing, run=run)


def rerank_inputs(inputs: Sequence[TaskInput], reranker: Reranker, name: str, out: str | Path | None,
                  top_k: int = 10, keep_tail: bool = True, measures=DEFAULT_MEASURES, count_missing: bool = False,
                  overwrite: bool = False) -> list[TaskResult]:
    """Rerank each task's first-stage run and write ``out/<task>/`` (rerankers load their model lazily,
    so a fully reused job loads none)."""
    out = Path(out) if out is not None else None
    rconfig = reranker.config()
    results = []
    for item in inputs:
        config = {"reranker": rconfig, "top_k": top_k, "keep_tail": keep_tail,
                  "first_stage": {"retriever": item.retriever, "folder": str(item.folder),
                                  "run_fingerprint": item.run_fingerprint}}
        if out is not None and not overwrite:
            reused = reuse_finished(task_folder(out, item.collection.name), config, item.collection, measures, count_missing)
            if reused is not None:
                results.append(reused)
                continue
        item.collection.warn_about_qrels()
        t0 = time.perf_counter()
        run = rerank_run(item.run, item.collection.queries, item.collection.corpus, reranker, top_k=top_k,
                         keep_tail=keep_tail)
        timing = {"rerank_s": time.perf_counter() - t0}
        timing["total_s"] = timing["rerank_s"]
        results.append(_finish(item.collection, name, run, config, out, measures, count_missing, timing))
        log.info("%s: reranked top-%d of %d queries", item.task, top_k, len(run))
    return results


def match_tasks(groups: Sequence[Sequence[TaskInput]], labels: Sequence[str]) -> list[list[TaskInput]]:
    """Tasks present in every run folder, each as [input of run 1, input of run 2, ...]."""
    by_task = [{i.task: i for i in group} for group in groups]
    common = [t for t in by_task[0] if all(t in other for other in by_task[1:])]
    for label, tasks in zip(labels, by_task):
        extra = sorted(set(tasks) - set(common))
        if extra:
            log.warning("%s: task(s) %s are not in every run folder and are not fused", label, ", ".join(extra))
    if not common:
        raise R2MedError("the run folders share no task; fuse runs of the same tasks")
    return [[tasks[t] for tasks in by_task] for t in common]


def fuse_inputs(groups: Sequence[Sequence[TaskInput]], labels: Sequence[str], name: str, out: str | Path | None,
                method: str = "rrf", k: float = 60, norm: str = "minmax", weights: Sequence[float] | None = None,
                depth: int | None = 100, measures=DEFAULT_MEASURES, count_missing: bool = False,
                overwrite: bool = False) -> list[TaskResult]:
    """Fuse the runs of each common task of ``groups`` (one group per input run folder)."""
    from ..fusion import fuse

    out = Path(out) if out is not None else None
    fuse([{}] * len(groups), method, k=k, norm=norm, weights=weights)  # validate the settings up front
    results = []
    for items in match_tasks(groups, labels):
        collection = items[0].collection
        for other in items[1:]:
            if other.collection.fingerprint != collection.fingerprint:
                log.warning("%s: the input runs were made on different corpora", collection.name)
        config = {"fusion": method, "k": k if method == "rrf" else None, "norm": None if method == "rrf" else norm,
                  "weights": list(weights) if weights else None, "depth": depth,
                  "inputs": [{"retriever": i.retriever, "folder": str(i.folder), "run_fingerprint": i.run_fingerprint}
                             for i in items]}
        if out is not None and not overwrite:
            reused = reuse_finished(task_folder(out, collection.name), config, collection, measures, count_missing)
            if reused is not None:
                results.append(reused)
                continue
        t0 = time.perf_counter()
        run = fuse([i.run for i in items], method, k=k, norm=norm, weights=weights, depth=depth)
        timing = {"fuse_s": time.perf_counter() - t0}
        timing["total_s"] = timing["fuse_s"]
        results.append(_finish(collection, name, run, config, out, measures, count_missing, timing))
    return results
