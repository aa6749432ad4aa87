"""(retriever x task) evaluation matrices as Ray tasks with resource requests.

Each cell is one :func:`r2med.pipeline.run_collection` call -- load the task, index, search,
score, write ``OUT/<retriever>/<task>/`` atomically -- run as a Ray task that asks for one GPU
(dense retrievers, when the cluster has GPUs) or a few CPUs (lexical ones).  Finished cells are
reused by ``run_collection`` itself, so a matrix that was interrupted resumes where it stopped.
The run folders must be on storage every node can write (a shared filesystem).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data import Collection
from ..pipeline import QueryBuilder, TaskResult, run_collection
from .cluster import cluster_gpus, connect, driver_env

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cell:
    """One (retriever, task) job of a matrix."""

    retriever: str
    task: str
    load: Callable[[], Collection]
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None
    query_builder: QueryBuilder | None = None  # None: the matrix-wide one


def default_resources(retriever: str, gpus_available: float, lexical_cpus: float = 1.0) -> dict[str, float]:
    """What one cell asks Ray for: a GPU for a local neural model on a GPU cluster, else CPUs."""
    from ..retrieval.registry import RETRIEVERS

    meta = RETRIEVERS.get(retriever)
    if meta is None or not meta.local_model or gpus_available <= 0:
        return {"num_cpus": lexical_cpus}
    return {"num_cpus": 1.0, "num_gpus": 1.0}


def run_cell(cell: Cell, k: int, out: str | None, measures: Sequence[str], count_missing: bool,
             overwrite: bool, query_builder: QueryBuilder | None, env: Mapping[str, str] | None = None
             ) -> TaskResult:
    """Evaluate one cell (the body of a Ray task; also callable in-process) under the driver's ``env``."""
    with _environment(env or {}):
        collection = cell.load()
        folder = Path(out) / (cell.label or cell.retriever) if out else None
        return run_collection(collection, cell.retriever, dict(cell.options), k=k, out=folder, measures=measures,
                              count_missing=count_missing, overwrite=overwrite, label=cell.label,
                              query_builder=cell.query_builder or query_builder)


@contextlib.contextmanager
def _environment(env: Mapping[str, str]):
    """Set ``env`` for the duration of one task and restore the worker's own values after it.

    (Passing it as an argument rather than a Ray ``runtime_env`` lets Ray reuse its idle workers.)
    """
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def evaluate_matrix(cells: Sequence[Cell], k: int = 100, out: str | Path | None = None,
                    measures: Sequence[str] | None = None, count_missing: bool = False, overwrite: bool = False,
                    query_builder: QueryBuilder | None = None, address: str | None = "local",
                    resources: Callable[[str, float], Mapping[str, float]] | None = None,
                    on_done: Callable[[Cell, TaskResult], None] | None = None) -> list[TaskResult]:
    """Run every cell as a Ray task and return the results in ``cells`` order.

    ``resources(retriever, cluster_gpus) -> {"num_cpus": .., "num_gpus": ..}`` overrides
    :func:`default_resources`; ``on_done`` is called as each cell finishes (progress bars).
    """
    from ..metrics import DEFAULT_MEASURES

    ray = connect(address)
    gpus = cluster_gpus()
    pick = resources or default_resources
    remote = ray.remote(run_cell)
    env = driver_env()["env_vars"]
    pending = {}
    for i, cell in enumerate(cells):
        ask = dict(pick(cell.retriever, gpus))
        ref = remote.options(name=f"r2med:{cell.retriever}:{cell.task}", max_retries=1, **ask).remote(
            cell, k, str(out) if out else None, tuple(measures or DEFAULT_MEASURES), count_missing, overwrite,
            query_builder, env)
        pending[ref] = i
    results: list[TaskResult | None] = [None] * len(cells)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            i = pending.pop(ref)
            results[i] = ray.get(ref)
            log.info("%s x %s: nDCG@10 = %.4f%s", cells[i].retriever, results[i].task, results[i].headline,
                     " (reused)" if results[i].reused else "")
            if on_done:
                on_done(cells[i], results[i])
    return results  # type: ignore[return-value]
