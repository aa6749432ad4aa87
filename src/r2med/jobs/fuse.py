"""``r2med fuse``: fuse the runs of several systems, task by task, into a system folder of its own.

Each input system is read and validated as ``rerank`` reads its input (:func:`r2med.jobs.rerank.load_inputs`;
docs missing from the corpus only warn here); the tasks every folder has are fused with
:func:`r2med.runs.fusion.fuse` and written through :func:`~r2med.results.folders.finish_task`, which scores the
fused run as written (fusion sums differ by less than the written precision can show).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import R2MedError
from ..evaluation.metrics import DEFAULT_MEASURES
from ..infra.containment import plain_name, system_folder
from ..results.folders import SystemResults, TaskResult, find_runs, finish_task, reuse
from ..results.published import different_data

if TYPE_CHECKING:
    from ..data import Collection
from ..runs.fusion import check_fusion, fuse
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
    name: str,
    out: str | Path | None,
    method: str = "rrf",
    k: float = 60,
    norm: str = "minmax",
    weights: Sequence[float] | None = None,
    depth: int | None = 100,
    measures: Iterable[str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
) -> list[TaskResult]:
    """Fuse the runs of each common task of ``groups`` (one group per input run folder)."""
    check_fusion(len(groups), method, k=k, norm=norm, weights=weights)
    results = []
    for items in match_tasks(groups, labels):
        collection = items[0].collection
        splits = {str(i.collection.split or "test") for i in items}
        if len(splits) > 1:
            raise R2MedError(
                f"{collection.name}: the input runs are on different splits ({', '.join(sorted(splits))});"
                " fuse runs of one split"
            )
        problem = different_data(collection.name, {str(i.folder): i.meta for i in items})
        if problem is None and any(
            other.collection.dataset_fingerprint != collection.dataset_fingerprint for other in items[1:]
        ):
            problem = f"{collection.name}: the input runs were made on different corpora"
        if problem is not None:
            raise R2MedError(problem)
        config = {
            "fusion": method,
            "k": k if method == "rrf" else None,
            "norm": None if method == "rrf" else norm,
            "weights": list(weights) if weights else None,
            "depth": depth,
            "inputs": [i.describe() for i in items],
        }
        reused = reuse(out, config, collection, measures, count_missing, overwrite)
        if reused is not None:
            results.append(reused)
            continue
        t0 = time.perf_counter()
        run = fuse([i.run for i in items], method, k=k, norm=norm, weights=weights, depth=depth)
        timing = {"fuse_s": time.perf_counter() - t0}
        timing["total_s"] = timing["fuse_s"]
        results.append(finish_task(collection, name, run, config, out, measures, count_missing, timing))
    return results


def fuse_folders(
    runs: Sequence[str | Path],
    method: str = "rrf",
    weights: Sequence[float] | None = None,
    k: float = 60,
    norm: str = "minmax",
    depth: int = 100,
    out: str | Path | None = None,
    name: str | None = None,
    tasks: str | None = None,
    data_dir: str | Path | None = None,
    revision: str | None = None,
    measures: Iterable[str] = DEFAULT_MEASURES,
    count_missing: bool = False,
    overwrite: bool = False,
    strict: bool = False,
) -> SystemResults:
    """``r2med fuse``: the systems in ``runs`` (results roots, system or task folders:
    :func:`~r2med.results.folders.find_runs`; a root's fused systems are left out) fused into ``<out>/<name>/``.

    Default ``out``: the results root of the first system; default ``name``: ``<method>-<system>+<system>...``.
    """
    from ..infra.containment import check_output_dir

    check_fusion(max(len(runs), 2), method, k=k, norm=norm)
    if name is not None:
        plain_name(name, "--name", run_name=True)
    selection = find_runs(runs, skip_from_root=("fuse",))
    systems = selection.systems
    if len(systems) < 2:
        raise R2MedError(
            f"fuse needs at least two systems; found {len(systems)} ({', '.join(s.folder.name for s in systems)})"
        )
    check_fusion(len(systems), method, k=k, norm=norm, weights=weights)
    out = Path(out) if out is not None else systems[0].root
    check_output_dir(out)
    collections: dict[tuple[str, str, str], Collection] = {}
    groups = [
        load_inputs(ref, data_dir, revision, tasks, require_docs=False, collections=collections, strict=strict)
        for ref in systems
    ]
    selection.announce()
    label = result_name(name, f"{method}-" + "+".join(folder_name(str(ref.folder)) for ref in systems))
    target = system_folder(out, label)
    results = fuse_inputs(
        groups,
        [str(ref.folder) for ref in systems],
        label,
        target,
        method=method,
        k=k,
        norm=norm,
        weights=weights,
        depth=depth,
        measures=measures,
        count_missing=count_missing,
        overwrite=overwrite,
    )
    return SystemResults(label, target, results)
