"""``r2med rerank``: rerank the runs of first-stage systems, each into a system folder of its own.

:func:`load_inputs` reads a system folder (``OUT/<system>/``, found by :func:`~r2med.results.folders.find_runs`), finds
each task's collection (:func:`r2med.data.locate`: ``--data-dir``, else the recorded source folder,
else the hub at the recorded commit) and validates the runs against it *before* any model is loaded,
so bad input fails at once with nothing written.  :func:`rerank_inputs` reranks each task and writes
``OUT/<name>/<task>/`` through :func:`~r2med.results.folders.finish_task`; a task whose folder holds
results for the same configuration, data and input run is reused, so an interrupted job resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import Collection, locate
from ..data.resolve import require, task_filter
from ..errors import DataError, R2MedError, shown
from ..evaluation.metrics import DEFAULT_MEASURES
from ..infra.containment import plain_name, system_folder
from ..reranking.base import RERANKERS, Reranker, make_reranker, rerank, reranker_meta
from ..results.folders import (
    SystemRef,
    SystemResults,
    TaskResult,
    file_fingerprint,
    find_runs,
    finish_task,
    read_run_folder,
    reuse,
)
from ..runs.run import RUN_FILE, Run, read_trec

log = logging.getLogger(__name__)


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

    def describe(self) -> dict[str, Any]:
        """What a result made from this input records about it (part of its configuration)."""
        return {
            "retriever": self.retriever,
            "folder": str(self.folder),
            "run_fingerprint": self.run_fingerprint,
            "config": self.meta.get("config"),
        }


def _line_of(path: Path, qid: str, did: str) -> int | None:
    from ..runs.run import trec_lines

    return next((line[0] for line in trec_lines(path) if line[1] == qid and line[2] == did), None)


def load_inputs(
    run: str | Path | SystemRef,
    data_dir: str | Path | None = None,
    revision: str | None = None,
    tasks: str | None = None,
    require_docs: bool = True,
    collections: dict[tuple[str, str, str], Collection] | None = None,
    strict: bool = False,
) -> list[TaskInput]:
    """Read and validate the finished tasks of one system (a :class:`~r2med.results.folders.SystemRef`, a
    system folder or a task folder).

    ``tasks``: ``all`` or comma-separated names.  ``require_docs``: a run naming docs missing from the
    corpus is an error (rerankers need the texts); otherwise it is a counted warning.
    ``collections`` caches loaded collections across calls (fusion reads several systems).  ``strict``:
    a collection with repeated ids or judgments is an error (``--strict``).
    """
    if isinstance(run, SystemRef):
        ref = run
    else:
        refs = find_runs([run]).systems
        if len(refs) > 1:
            raise R2MedError(
                f"{run}: holds {len(refs)} systems ({', '.join(r.folder.name for r in refs)}); pass one system folder"
            )
        ref = refs[0]
    wanted = task_filter(tasks)
    found = [t for path in ref.task_paths() for t in read_run_folder(path)]
    cache = collections if collections is not None else {}
    inputs = []
    for item in found:
        if wanted is not None and item.task.lower() not in wanted:
            continue
        meta = item.metrics
        path = item.folder / RUN_FILE
        run_ = read_trec(path)
        key = (
            item.task,
            str(data_dir) if data_dir is not None else str(meta.get("source") or ""),
            str(meta.get("split") or ""),
        )
        if key not in cache:
            found_ref = locate(item.task, data_dir, revision, recorded=meta, alone=len(found) == 1, strict=strict)
            cache[key] = require(found_ref, item.task, meta, data_dir).load()
        collection = cache[key]
        recorded = meta.get("dataset_fingerprint")
        if recorded and recorded != collection.dataset_fingerprint:
            log.warning(
                "%s: the run was made on a different version of the corpus (fingerprint %s, now %s)",
                item.folder,
                recorded,
                collection.dataset_fingerprint,
            )
        missing = [(qid, did) for qid, docs in run_.items() for did in docs if did not in collection.corpus]
        if missing:
            qid, did = missing[0]
            message = (
                f"doc {did!r} (query {qid!r}) is not in the corpus of {collection.name}"
                f" ({len(missing)} unknown doc entr{'y' if len(missing) == 1 else 'ies'} in all)"
            )
            if require_docs:
                raise DataError(
                    path,
                    _line_of(path, qid, did),
                    message + "; this run was made on another collection: pass the right --data-dir",
                )
            log.warning("%s: %s; they count as non-relevant", path, message)
        inputs.append(TaskInput(item.task, item.folder, run_, meta, collection, file_fingerprint(path)))
    if wanted is not None and not inputs:
        raise R2MedError(f"{ref.folder}: none of the tasks {tasks} is in this system folder")
    return inputs


def rerank_inputs(
    inputs: Sequence[TaskInput],
    reranker: Reranker,
    name: str,
    out: str | Path | None,
    top_k: int = 10,
    keep_tail: bool = True,
    measures: Iterable[str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
) -> list[TaskResult]:
    """Rerank each task's first-stage run and write ``out/<task>/`` (rerankers load their model lazily,
    so a fully reused job loads none)."""
    rconfig = reranker.config()
    encoding = reranker_encoding(rconfig)
    results = []
    for item in inputs:
        config = {"reranker": rconfig, "top_k": top_k, "keep_tail": keep_tail, "first_stage": item.describe()}
        reused = reuse(out, config, item.collection, measures, count_missing, overwrite)
        if reused is not None:
            results.append(reused)
            continue
        item.collection.warn_about_qrels()
        t0 = time.perf_counter()
        run = rerank(
            item.run, item.collection.queries, item.collection.corpus, reranker, top_k=top_k, keep_tail=keep_tail
        )
        timing = {"rerank_s": time.perf_counter() - t0}
        timing["total_s"] = timing["rerank_s"]
        facts = {**encoding, **getattr(reranker, "used", {})} if encoding is not None else None  # as loaded
        results.append(finish_task(item.collection, name, run, config, out, measures, count_missing, timing, facts))
        log.info("%s: reranked top-%d of %d queries", item.task, top_k, len(run))
    return results


def folder_name(name: str) -> str:
    """A reranker or model name as a folder name (``org/model`` -> ``model``): the one rule a model is named by
    in results, as a retriever's (:func:`r2med.jobs.evaluate.model_name`) or a reranker's."""
    from .evaluate import model_name

    return model_name(name)


def result_name(name: str | None, default: str) -> str:
    """The result folder name: ``name`` (``--name``) or the default, a plain name usable as a TREC run tag."""
    if name is not None:
        return plain_name(name, "--name", run_name=True)
    return plain_name(default, f"result name {shown(default)} (pass --name):", run_name=True)


def default_name(
    retriever: str, reranker: str, model: str | None = None, top_k: int | None = None, made_as: str | None = None
) -> str:
    """The result's default name: ``<retriever>+<reranker>``, plus the model an LLM reranker was served as
    (``listwise-<model>``) unless it is the record's own checkpoint (``reasonrank-32b``), plus ``-top<k>``
    when a reranker whose record names its published depth reranked another depth (``reasonrank-32b-top20``)."""
    meta = reranker_meta(reranker)
    suffix = made_as if made_as is not None and reranker == "custom" else folder_name(reranker)
    if meta.llm and model and folder_name(str(model)).lower() != folder_name(meta.hub_id or "").lower():
        suffix += f"-{folder_name(str(model))}"
    if meta.depth is not None and top_k is not None and top_k != meta.depth:
        suffix += f"-top{top_k}"
    return f"{retriever}+{suffix}"


def rerank_folder(
    runs: str | Path | Sequence[str | Path],
    reranker: str,
    options: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    name: str | None = None,
    tasks: str | None = None,
    data_dir: str | Path | None = None,
    revision: str | None = None,
    top_k: int | None = None,
    keep_tail: bool = True,
    measures: Iterable[str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
    strict: bool = False,
) -> list[SystemResults]:
    """``r2med rerank``: every system in ``runs`` (results roots, system or task folders:
    :func:`~r2med.results.folders.find_runs`; a root's reranked systems are left out) reranked into
    ``<out>/<name>/`` (default ``out``: the results root of the first system; default ``name``:
    :func:`default_name`).  ``top_k`` (None): the depth of the reranker's published figures
    (:func:`r2med.results.published.published_depth`).
    """
    from ..infra.containment import check_output_dir
    from ..results.published import published_depth

    if top_k is None:
        meta = reranker_meta(reranker)
        top_k = published_depth(meta.name)
        if meta.depth is not None:  # not the paper's usual 10: say so
            log.info("%s: reranking each query's top %d (the depth of its published figures)", reranker, top_k)
    if name is not None:
        plain_name(name, "--name", run_name=True)
    selection = find_runs([runs] if isinstance(runs, (str, Path)) else runs, skip_from_root=("rerank",))
    if name is not None and len(selection.systems) > 1:
        raise R2MedError(
            f"--name names one result, but there are {len(selection.systems)} systems to rerank "
            f"({', '.join(s.folder.name for s in selection.systems)}); pass one system folder"
        )
    out = Path(out) if out is not None else selection.out
    check_output_dir(out)
    groups = [
        load_inputs(ref, data_dir, revision, tasks, strict=strict) for ref in selection.systems
    ]  # before any model loads
    selection.announce()
    options = dict(options or {})
    try:
        made = make_reranker(reranker, **options)
    except TypeError as exc:
        raise R2MedError(f"reranker {reranker!r} does not take that option ({exc})") from None
    done = []
    for inputs in groups:
        label = result_name(
            name,
            default_name(
                inputs[0].retriever, reranker, options.get("model"), top_k, made_as=getattr(made, "name", None)
            ),
        )
        target = system_folder(out, label)
        results = rerank_inputs(
            inputs,
            made,
            label,
            target,
            top_k=top_k,
            keep_tail=keep_tail,
            measures=measures,
            count_missing=count_missing,
            overwrite=overwrite,
        )
        done.append(SystemResults(label, target, results))
    return done


def reranker_encoding(rconfig: Mapping[str, Any]) -> dict[str, Any] | None:
    """What ``metrics.json`` records of the packages that made a reranker's scores (``encoding.versions``: torch,
    transformers, tokenizers, sentence-transformers, and peft for a LoRA reranker; openai for an LLM one); None
    for your own scorer (its module's hash is in the config)."""
    from ..infra.versions import package_versions

    name = rconfig.get("reranker")
    if not isinstance(name, str) or name == "custom":
        return None
    if name in RERANKERS.all():
        meta = reranker_meta(name)
        groups = ["openai"] if meta.llm else ["torch", *(["peft"] if "peft" in meta.packages else [])]
    else:  # a model folder or hub id: a cross-encoder run with torch
        groups = ["torch"]
    facts: dict[str, Any] = {"versions": package_versions(groups), "made_by": "this run"}
    if rconfig.get("dtype"):
        facts["dtype"] = rconfig["dtype"]
    return facts
