"""``r2med rerank``: rerank the runs of first-stage systems, each into a system folder of its own.

:func:`load_inputs` reads a system folder (``OUT/<system>/``, found by :func:`~r2med.results.folders.find_runs`), finds
each task's collection (:func:`r2med.data.locate`: ``--data-dir``, else the recorded source folder,
else the hub at the recorded commit) and validates the runs against it *before* any model is loaded,
so bad input fails at once with nothing written; a document the task's protocol excludes for a query (BRIGHT's
``excluded_ids``) is left out of its input run, so no reranker ever surfaces one.  :func:`rerank_inputs` reranks
each task and writes
``OUT/<name>/<task>/`` through :func:`~r2med.results.folders.finish_task`; a task whose folder holds
results for the same configuration, data and input run is reused, so an interrupted job resumes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data import Collection, locate
from ..data.resolve import require, task_filter
from ..errors import DataError, R2MedError, shown
from ..infra.containment import SystemFolder, check_output_dir, plain_name, system_folder
from ..infra.file_hash import file_fingerprint
from ..infra.json_types import JsonObject, JsonValue
from ..infra.user_code import short_name
from ..infra.versions import package_versions
from ..reranking.base import RERANKERS, Reranker, make_reranker, rerank, reranker_meta
from ..results.folders import (
    SystemRef,
    SystemResults,
    TaskResult,
    find_runs,
    finish_task,
    read_run_folder,
    reuse,
)
from ..runs.record import RunRecord
from ..runs.run import RUN_FILE, Run, read_trec, trec_lines
from ..steps import RerankStep
from .evaluate import model_name

log = logging.getLogger(__name__)


@dataclass
class TaskInput:
    """One task of a first-stage run folder, matched to its collection."""

    task: str
    folder: Path
    run: Run
    record: RunRecord
    collection: Collection
    run_fingerprint: str

    @property
    def retriever(self) -> str:
        return self.record.retriever or self.folder.parent.name

    def describe(self) -> JsonObject:
        """What a result made from this input records about it (part of its configuration)."""
        return {
            "retriever": self.retriever,
            "folder": str(self.folder),
            "run_fingerprint": self.run_fingerprint,
            "config": self.record.config.as_json() if self.record.config is not None else None,
        }


def _line_of(path: Path, qid: str, did: str) -> int | None:
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
        meta = item.record
        path = item.folder / RUN_FILE
        run_ = read_trec(path)
        key = (
            item.task,
            str(data_dir) if data_dir is not None else (meta.source or ""),
            meta.split or "",
        )
        if key not in cache:
            recorded = meta.recorded_source()  # what the data resolver (a layer below the record) reads
            found_ref = locate(item.task, data_dir, revision, recorded=recorded, alone=len(found) == 1, strict=strict)
            cache[key] = require(found_ref, item.task, recorded, data_dir).load()
        collection = cache[key]
        if collection.exclusions:  # never reranked into a run: the protocol removes them before any cut
            run_, removed = collection.exclusions.drop_from(run_)
            if removed:
                log.warning(
                    "%s: %d entr%s the protocol of %s excludes left out (each query's excluded_ids)",
                    path,
                    removed,
                    "y" if removed == 1 else "ies",
                    collection.name,
                )
        fingerprint = meta.dataset_fingerprint
        if fingerprint and fingerprint != collection.dataset_fingerprint:
            log.warning(
                "%s: the run was made on a different version of the corpus (fingerprint %s, now %s)",
                item.folder,
                fingerprint,
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
    inputs: Sequence[TaskInput], reranker: Reranker, step: RerankStep, name: str, out: SystemFolder | str | Path | None
) -> list[TaskResult]:
    """Rerank each task's first-stage run as ``step`` says and write ``out/<task>/`` (``out``: the system folder;
    rerankers load their model lazily, so a fully reused job loads none)."""
    rconfig = reranker.config()
    encoding = reranker_encoding(rconfig)
    top_k, output = step.depth(), step.output
    results = []
    for item in inputs:
        config = {**step.record(), "reranker": rconfig, "first_stage": item.describe()}
        reused = reuse(out, config, item.collection, output.measures, output.count_missing, output.overwrite)
        if reused is not None:
            results.append(reused)
            continue
        item.collection.warn_about_qrels()
        t0 = time.perf_counter()
        run = rerank(
            item.run, item.collection.queries, item.collection.corpus, reranker, top_k=top_k, keep_tail=step.keep_tail
        )
        timing = {"rerank_s": time.perf_counter() - t0}
        timing["total_s"] = timing["rerank_s"]
        facts = {**encoding, **getattr(reranker, "used", {})} if encoding is not None else None  # as loaded
        results.append(
            finish_task(item.collection, name, run, config, out, output.measures, output.count_missing, timing, facts)
        )
        log.info("%s: reranked top-%d of %d queries", item.task, top_k, len(run))
    return results


def folder_name(name: str) -> str:
    """A reranker or model name as a folder name (``org/model`` -> ``model``): the one rule a model is named by
    in results, as a retriever's (:func:`r2med.jobs.evaluate.model_name`) or a reranker's."""
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
    when a reranker whose record names its published depth reranked another depth (``reasonrank-32b-top20``);
    ``made_as``: your scorer's name (``custom-<name>``: :func:`scorer_name`)."""
    meta = reranker_meta(reranker)
    suffix = made_as if made_as is not None and reranker == "custom" else folder_name(reranker)
    if meta.llm and model and folder_name(str(model)).lower() != folder_name(meta.hub_id or "").lower():
        suffix += f"-{folder_name(str(model))}"
    if meta.depth is not None and top_k is not None and top_k != meta.depth:
        suffix += f"-top{top_k}"
    return f"{retriever}+{suffix}"


def scorer_name(step: RerankStep) -> str | None:
    """``custom-<name>`` for your own scorer (its declared ``name``, else the spec's OBJ, else its class), read from
    the spec alone -- the same from the command line, a file and Python; None for any other reranker."""
    scorer = getattr(step.options, "scorer", None)
    return f"custom-{short_name(scorer)}" if step.reranker_name == "custom" and scorer is not None else None


def system_name(step: RerankStep, first_stage: str) -> str:
    """The name of the result of ``step`` over ``first_stage``: its ``name``, else :func:`default_name`."""
    return result_name(
        step.name,
        default_name(
            first_stage,
            step.reranker_name,
            getattr(step.options, "model", None),
            step.depth(),
            made_as=scorer_name(step),
        ),
    )


def rerank_folder(step: RerankStep) -> list[SystemResults]:
    """``r2med rerank``: every system in ``step.runs`` (results roots, system or task folders:
    :func:`~r2med.results.folders.find_runs`; a root's reranked systems are left out) reranked into
    ``<out>/<name>/`` (default ``out``: the results root of the first system; default ``name``:
    :func:`system_name`).  Without ``top_k``: the depth of the reranker's published figures
    (:func:`r2med.reranking.base.published_depth`).
    """
    meta = reranker_meta(step.reranker_name)
    if step.top_k is None and meta.depth is not None:  # not the paper's usual 10: say so
        log.info("%s: reranking each query's top %d (the depth of its published figures)", meta.name, step.depth())
    if step.name is not None:
        plain_name(step.name, "--name", run_name=True)
    selection = find_runs(list(step.runs), skip_from_root=("rerank",))
    if step.name is not None and len(selection.systems) > 1:
        raise R2MedError(
            f"--name names one result, but there are {len(selection.systems)} systems to rerank "
            f"({', '.join(s.folder.name for s in selection.systems)}); pass one system folder"
        )
    out = Path(step.output.out) if step.output.out is not None else selection.out
    check_output_dir(out)
    data = step.data
    groups = [
        load_inputs(ref, data.data_dir, data.revision, data.task_text, strict=data.strict) for ref in selection.systems
    ]  # before any model loads
    targets = [system_folder(out, system_name(step, inputs[0].retriever)) for inputs in groups]  # before any model
    selection.announce()
    made = make_reranker(meta.name, options=step.options)
    return [
        SystemResults(target.name, target.path, rerank_inputs(inputs, made, step, target.name, target))
        for inputs, target in zip(groups, targets)
    ]


def reranker_encoding(rconfig: Mapping[str, JsonValue]) -> JsonObject | None:
    """What ``metrics.json`` records of the packages that made a reranker's scores (``encoding.versions``: torch,
    transformers, tokenizers, sentence-transformers, and peft for a LoRA reranker; openai for an LLM one); None
    for your own scorer (its module's hash is in the config)."""
    name = rconfig.get("reranker")
    if not isinstance(name, str) or name == "custom":
        return None
    if name in RERANKERS.all():
        meta = reranker_meta(name)
        groups = ["openai"] if meta.llm else ["torch", *(["peft"] if "peft" in meta.packages else [])]
    else:  # a model folder or hub id: a cross-encoder run with torch
        groups = ["torch"]
    facts: JsonObject = {"versions": {**package_versions(groups)}, "made_by": "this run"}
    if rconfig.get("dtype"):
        facts["dtype"] = rconfig["dtype"]
    return facts
