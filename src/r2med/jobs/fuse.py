"""``r2med fuse``: fuse the runs of several systems, task by task, into a system folder of its own.

Each input system is read and validated as ``rerank`` reads its input (:func:`r2med.jobs.rerank.load_inputs`;
docs missing from the corpus only warn here); the tasks every folder has are fused with
:func:`r2med.runs.fusion.fuse` and written through :func:`~r2med.results.folders.finish_task`, which scores the
fused run as written (fusion sums differ by less than the written precision can show).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.benchmarks import protocol_of
from ..errors import R2MedError
from ..infra.containment import SystemFolder, check_output_dir, plain_name, system_folder
from ..results.folders import SystemResults, TaskResult, find_runs, finish_task, reuse
from ..results.published import different_data

if TYPE_CHECKING:
    from ..data import Collection
from ..runs.fusion import check_weights, fuse_cut
from ..steps import FuseStep
from .rerank import TaskInput, folder_name, load_inputs, result_name

log = logging.getLogger(__name__)


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


def fuse_inputs(
    groups: Sequence[Sequence[TaskInput]],
    labels: Sequence[str],
    step: FuseStep,
    name: str,
    out: SystemFolder | str | Path | None,
) -> list[TaskResult]:
    """Fuse the runs of each common task of ``groups`` (one group per input run folder) as ``step`` says, into
    ``out`` (the system folder)."""
    o, output = step.options, step.output
    check_weights(len(groups), o.weights)  # the rest FusionOptions checked; how many runs it could not know
    results = []
    for items in match_tasks(groups, labels):
        collection = items[0].collection
        splits = {str(i.collection.split or "test") for i in items}
        if len(splits) > 1:
            raise R2MedError(
                f"{collection.name}: the input runs are on different splits ({', '.join(sorted(splits))});"
                " fuse runs of one split"
            )
        problem = different_data(collection.name, {str(i.folder): i.record for i in items})
        if problem is None and any(
            other.collection.dataset_fingerprint != collection.dataset_fingerprint for other in items[1:]
        ):
            problem = f"{collection.name}: the input runs were made on different corpora"
        if problem is not None:
            raise R2MedError(problem)
        depth = step.depth(protocol_of(collection).depth)
        config = {**step.record(depth), "inputs": [i.describe() for i in items]}
        reused = reuse(out, config, collection, output.measures, output.count_missing, output.overwrite)
        if reused is not None:
            results.append(reused)
            continue
        t0 = time.perf_counter()
        run, cut = fuse_cut([i.run for i in items], o.method, k=o.k, norm=o.norm, weights=o.weights, depth=depth)
        timing = {"fuse_s": time.perf_counter() - t0}
        timing["total_s"] = timing["fuse_s"]
        results.append(
            finish_task(collection, name, run, config, out, output.measures, output.count_missing, timing, cut=cut)
        )
    return results


def system_name(step: FuseStep, systems: Sequence[str | Path]) -> str:
    """The name of the result of ``step`` over ``systems`` (folders): its ``name``, else
    ``<method>-<system>+<system>...`` (the same from the command line, a file and Python)."""
    return result_name(step.name, f"{step.options.method}-" + "+".join(folder_name(str(s)) for s in systems))


def fuse_folders(step: FuseStep) -> SystemResults:
    """``r2med fuse``: the systems in ``step.systems`` (results roots, system or task folders:
    :func:`~r2med.results.folders.find_runs`; a root's fused systems are left out) fused into ``<out>/<name>/``.

    Default ``out``: the results root of the first system; default ``name``: :func:`system_name`.
    """
    o = step.options
    if step.name is not None:
        plain_name(step.name, "--name", run_name=True)
    selection = find_runs(list(step.systems), skip_from_root=("fuse",))
    systems = selection.systems
    if len(systems) < 2:
        raise R2MedError(
            f"fuse needs at least two systems; found {len(systems)} ({', '.join(s.folder.name for s in systems)})"
        )
    check_weights(len(systems), o.weights)  # the rest FusionOptions checked; how many runs it could not know
    out = Path(step.output.out) if step.output.out is not None else systems[0].root
    check_output_dir(out)
    label = system_name(step, [ref.folder for ref in systems])
    target = system_folder(out, label)  # a link there: refused before any input is read
    collections: dict[tuple[str, str, str], Collection] = {}
    data = step.data
    groups = [
        load_inputs(
            ref,
            data.data_dir,
            data.revision,
            data.task_text,
            require_docs=False,
            collections=collections,
            strict=data.strict,
        )
        for ref in systems
    ]
    selection.announce()
    results = fuse_inputs(groups, [str(ref.folder) for ref in systems], step, label, target)
    return SystemResults(label, target.path, results)
